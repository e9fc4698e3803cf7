package dataset

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/suggest"
)

// TagSeparator separates the tags of a CSV "tags" cell ("smoke|math"); a
// comma is not used because it would need quoting in CSV.
const TagSeparator = "|"

// parseCSV reads a header row (columns id, input, expected_output, tags,
// any order; only input is required) and one item per record. A cell of
// input or expected_output that parses as a JSON object or array is that
// JSON; any other cell is a JSON string of its text. An empty
// expected_output is absent. tags are split on [TagSeparator] into
// metadata.tags. Every other column goes to metadata as a string (empty
// cells omitted), except a column named like a misspelt known column
// ("expected"), which is rejected.
func parseCSV(w *window, file string, emit func(record) error) error {
	r := csv.NewReader(w)
	r.FieldsPerRecord = 0
	csvErr := func(err error) error {
		if errors.Is(err, errTooLong) {
			return tooLong(file, w.itemLine(), "a record")
		}
		if uerr := checkUTF8(file, w.buf, w.line, w.base+w.start); uerr != nil {
			return uerr // invalid UTF-8 explains more than the syntax
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return errorf(file, pe.Line, "malformed CSV: %v", pe.Err)
		}
		return errorf(file, 0, "malformed CSV: %v", err)
	}
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return w.advance(w.start + int64(len(w.buf)))
	}
	if err != nil {
		return csvErr(err)
	}
	if err := w.advance(r.InputOffset()); err != nil {
		return err
	}
	col := map[string]int{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		header[i] = h
		if h == "" {
			return errorf(file, 1, "column %d has no name", i+1)
		}
		if _, dup := col[h]; dup {
			return errorf(file, 1, "duplicate column %q", h)
		}
		switch h {
		case "id", "input", "expected_output", "tags", "metadata", "tool_mocks", "expected_trajectory":
		default:
			if s := suggest.Key(h, knownKeys); s != "" {
				return errorf(file, 1, `unknown column %q (did you mean %q? other columns go to metadata: rename it if it is one)`, h, s)
			}
		}
		col[h] = i
	}
	if _, ok := col["input"]; !ok {
		return errorf(file, 1, `missing column "input"`)
	}
	if _, ok := col["metadata"]; ok {
		return errorf(file, 1, `column "metadata" is not allowed: every column other than id, input, expected_output, tags, tool_mocks and expected_trajectory is metadata`)
	}
	for {
		fields, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return csvErr(err)
		}
		if err := w.advance(r.InputOffset()); err != nil {
			return err
		}
		line, _ := r.FieldPos(0)
		rec := record{item: &evalrun.Item{}, line: line}
		for i, cell := range fields {
			switch name := header[i]; name {
			case "id":
				if cell = strings.TrimSpace(cell); cell != "" {
					rec.item.ID, rec.givenID = cell, true
				}
			case "input":
				if strings.TrimSpace(cell) == "" {
					return errorf(file, line, `empty "input"`)
				}
				rec.item.Input = cellValue(cell)
				if err := checkDepth(rec.item.Input); err != nil {
					return errorf(file, line, `"input": %v`, err)
				}
			case "expected_output":
				if strings.TrimSpace(cell) != "" {
					rec.item.Expected = cellValue(cell)
					if err := checkDepth(rec.item.Expected); err != nil {
						return errorf(file, line, `"expected_output": %v`, err)
					}
				}
			case "tool_mocks", "expected_trajectory":
				// A JSON list in the cell, as in a JSONL line.
				if strings.TrimSpace(cell) == "" {
					continue
				}
				if err := checkDepth([]byte(cell)); err != nil {
					return errorf(file, line, "%q: %v", name, err)
				}
				var err error
				if name == "tool_mocks" {
					rec.item.ToolMocks, err = parseToolMocks(json.RawMessage(cell))
				} else {
					rec.item.ExpectedTrajectory, err = parseExpectedTrajectory(json.RawMessage(cell))
				}
				if err != nil {
					return errorf(file, line, "%v", err)
				}
			case "tags":
				var tags []any
				for _, t := range strings.Split(cell, TagSeparator) {
					if t = strings.TrimSpace(t); t != "" {
						tags = append(tags, t)
					}
				}
				if len(tags) > 0 {
					meta(rec.item)["tags"] = tags
				}
			default:
				if cell != "" {
					meta(rec.item)[name] = cell
				}
			}
		}
		if err := emit(rec); err != nil {
			return err
		}
	}
	return w.advance(w.start + int64(len(w.buf)))
}

func meta(it *evalrun.Item) map[string]any {
	if it.Metadata == nil {
		it.Metadata = map[string]any{}
	}
	return it.Metadata
}

// cellValue is the JSON of a cell: the cell itself when it is a JSON object
// or array, a JSON string of its text otherwise.
func cellValue(cell string) json.RawMessage {
	t := strings.TrimSpace(cell)
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	return evalrun.String(cell)
}
