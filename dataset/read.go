package dataset

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/suggest"
)

// Error is a rejected dataset file: where and why. It wraps
// [evalrun.ErrInvalid].
type Error struct {
	// File is the file's name as given.
	File string
	// Line is the 1-based line of the problem, 0 when it concerns the
	// whole file.
	Line   int
	Reason string
}

// Error returns "file:line: reason", or "file: reason" without a line.
func (e *Error) Error() string {
	if e.Line == 0 {
		return e.File + ": " + e.Reason
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason)
}

// Unwrap returns [evalrun.ErrInvalid].
func (e *Error) Unwrap() error { return evalrun.ErrInvalid }

func errorf(file string, line int, format string, args ...any) error {
	return &Error{File: file, Line: line, Reason: fmt.Sprintf(format, args...)}
}

// Format is a dataset file format.
type Format string

// The formats. [ReadFile] picks one by the file's extension: .jsonl and
// .ndjson are JSONL, .json is JSON, .csv is CSV.
const (
	// JSONL: one JSON object per line, blank lines ignored.
	JSONL Format = "jsonl"
	// JSON: one JSON array of objects.
	JSON Format = "json"
	// CSV: a header row naming the columns, then one item per record.
	CSV Format = "csv"
)

// FormatOf returns the format of a file name by its extension.
func FormatOf(path string) (Format, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".jsonl", ".ndjson":
		return JSONL, nil
	case ".json":
		return JSON, nil
	case ".csv":
		return CSV, nil
	default:
		return "", errorf(path, 0, "unknown dataset format %q (want .jsonl, .json or .csv)", ext)
	}
}

// ReadFile reads the dataset file at path, in the format its extension
// names (see [FormatOf]). The file is read whole or rejected: any problem
// gives an [*Error] ("file:line: reason", wrapping [evalrun.ErrInvalid])
// and no items.
//
// Every item is an object with the keys "id" (optional: a string or an
// integer), "input" (required, any JSON but null), "expected_output"
// (optional) and "metadata" (optional object; "tags" in it defines
// cohorts). Any other key is rejected as a likely typo. An item without an
// id gets one derived from its content (see [DeriveID]).
func ReadFile(path string) ([]*evalrun.Item, error) {
	format, err := FormatOf(path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read dataset: %w", err)
	}
	defer f.Close()
	return Read(f, path, format)
}

// Read reads a dataset in the given format from r; name is the file name
// used in errors. See [ReadFile]. It holds one item's bytes at a time
// besides the items: an item longer than [MaxItemBytes], nested deeper
// than [MaxDepth] or with invalid UTF-8 is refused with its line.
func Read(r io.Reader, name string, format Format) ([]*evalrun.Item, error) {
	var recs []record
	if err := scan(r, name, format, func(rec record) error {
		recs = append(recs, rec)
		return nil
	}); err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, errorf(name, 0, "no items")
	}
	return assignIDs(recs, name)
}

// scan parses r and calls emit with each record in file order, holding
// one item's bytes at a time; it stops at the first problem or at emit's
// first error, returning it. Ids are as given: [assignIDs] or an
// [idPlan] derives the missing ones.
func scan(r io.Reader, name string, format Format, emit func(record) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var base int64
	if b, _ := br.Peek(3); bytes.Equal(b, []byte("\xef\xbb\xbf")) { // a UTF-8 byte order mark
		n, _ := br.Discard(3)
		base = int64(n)
	}
	switch format {
	case JSONL:
		return parseJSONL(br, name, base, emit)
	case JSON:
		return parseJSONArray(newWindow(br, name, base), name, emit)
	case CSV:
		return parseCSV(newWindow(br, name, base), name, emit)
	default:
		return errorf(name, 0, "unknown dataset format %q (want jsonl, json or csv)", format)
	}
}

// record is an item as read, with its line and whether its id was given.
type record struct {
	item    *evalrun.Item
	line    int
	givenID bool
}

// The top-level keys of an item.
var knownKeys = []string{"id", "input", "expected_output", "metadata", "tool_mocks", "expected_trajectory"}

// parseObject turns one JSON object into an item. raw is valid JSON (the
// readers check it first), so its members are found by a scan of the top
// level instead of a decoder's tokens: most of the time of a large import
// is here.
func parseObject(raw []byte, file string, line int) (record, error) {
	if err := checkDepth(raw); err != nil {
		return record{}, errorf(file, line, "%v", err)
	}
	if len(raw) == 0 || raw[0] != '{' {
		return record{}, errorf(file, line, "want a JSON object, got %s", kindOf(raw))
	}
	rec := record{item: &evalrun.Item{}, line: line}
	var seen uint // a bit per known key
	err := eachMember(raw, func(key string, val []byte) error {
		k := slices.Index(knownKeys, key)
		if k < 0 {
			return errors.New(unknownKey(key))
		}
		if seen&(1<<k) != 0 {
			return fmt.Errorf("duplicate key %q", key)
		}
		seen |= 1 << k
		isNull := string(val) == "null"
		var err error
		switch key {
		case "id":
			if rec.item.ID, err = parseID(val); err != nil {
				return err
			}
			rec.givenID = true
		case "input":
			if isNull {
				return errors.New(`"input" is null`)
			}
			rec.item.Input = bytes.Clone(val)
		case "expected_output":
			if !isNull {
				rec.item.Expected = bytes.Clone(val)
			}
		case "metadata":
			if isNull {
				return nil
			}
			if err := json.Unmarshal(val, &rec.item.Metadata); err != nil {
				return fmt.Errorf(`"metadata" must be a JSON object, got %s`, kindOf(val))
			}
		case "tool_mocks":
			rec.item.ToolMocks, err = parseToolMocks(val)
		case "expected_trajectory":
			rec.item.ExpectedTrajectory, err = parseExpectedTrajectory(val)
		}
		return err
	})
	if err != nil {
		return record{}, errorf(file, line, "%v", err)
	}
	if rec.item.Input == nil {
		return record{}, errorf(file, line, `missing "input"`)
	}
	return rec, nil
}

// eachMember calls fn with the key and the raw value of each member of
// the JSON object obj, which must be valid JSON, in order; it stops at
// fn's first error.
func eachMember(obj []byte, fn func(key string, val []byte) error) error {
	malformed := errors.New("malformed JSON object")
	i := 1
	ws := func() {
		for i < len(obj) && (obj[i] == ' ' || obj[i] == '\t' || obj[i] == '\n' || obj[i] == '\r') {
			i++
		}
	}
	// end returns the index just past the value starting at obj[j].
	end := func(j int) int {
		depth, inString := 0, false
		for ; j < len(obj); j++ {
			c := obj[j]
			switch {
			case inString && c == '\\':
				j++
			case inString:
				if c == '"' {
					inString = false
					if depth == 0 {
						return j + 1
					}
				}
			case c == '"':
				inString = true
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				if depth == 0 {
					return j // the end of a scalar at the object's end
				}
				depth--
				if depth == 0 {
					return j + 1
				}
			case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'):
				return j
			}
		}
		return j
	}
	ws()
	if i < len(obj) && obj[i] == '}' {
		return nil
	}
	for i < len(obj) {
		if obj[i] != '"' {
			return malformed
		}
		k := end(i)
		rawKey := obj[i:k]
		key := string(rawKey[1 : len(rawKey)-1])
		if bytes.IndexByte(rawKey, '\\') >= 0 {
			if err := json.Unmarshal(rawKey, &key); err != nil {
				return malformed
			}
		}
		i = k
		ws()
		if i >= len(obj) || obj[i] != ':' {
			return malformed
		}
		i++
		ws()
		v := end(i)
		if v <= i || v > len(obj) {
			return malformed
		}
		if err := fn(key, obj[i:v]); err != nil {
			return err
		}
		i = v
		ws()
		if i >= len(obj) {
			return malformed
		}
		switch obj[i] {
		case ',':
			i++
			ws()
		case '}':
			return nil
		default:
			return malformed
		}
	}
	return malformed
}

func parseID(val json.RawMessage) (string, error) {
	if len(val) > 2 && val[0] == '"' && bytes.IndexByte(val, '\\') < 0 {
		return string(val[1 : len(val)-1]), nil // a plain string, the usual id
	}
	var s string
	if err := json.Unmarshal(val, &s); err == nil {
		if s == "" {
			return "", errors.New(`"id" is empty`)
		}
		return s, nil
	}
	if _, err := strconv.ParseInt(string(val), 10, 64); err == nil {
		return string(val), nil
	}
	return "", fmt.Errorf(`"id" must be a string or an integer, got %s`, kindOf(val))
}

// kindOf names the kind of a JSON value, for errors.
func kindOf(raw []byte) string { return evalrun.JSONKind(raw) }

// unknownKey explains an unknown top-level key, suggesting the known key it
// likely misspells.
func unknownKey(key string) string {
	if s := suggest.Key(key, knownKeys); s != "" {
		return fmt.Sprintf(`unknown key %q (did you mean %q? extra fields belong in "metadata")`, key, s)
	}
	return fmt.Sprintf(`unknown key %q (extra fields belong in "metadata")`, key)
}

func parseJSONL(r *bufio.Reader, file string, off int64, emit func(record) error) error {
	lines := NewLines(r, file, off)
	for {
		t, line, err := lines.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(t) == 0 {
			continue
		}
		if !json.Valid(t) {
			var v any
			return errorf(file, line, "malformed JSON: %v", json.Unmarshal(t, &v))
		}
		rec, perr := parseObject(t, file, line)
		if perr != nil {
			return perr
		}
		if err := emit(rec); err != nil {
			return err
		}
	}
}

func parseJSONArray(w *window, file string, emit func(record) error) error {
	dec := json.NewDecoder(w)
	fail := func(err error) error {
		switch {
		case errors.Is(err, errTooLong):
			return tooLong(file, w.itemLine(), "an item")
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
			return errorf(file, w.line+bytes.Count(w.buf, []byte("\n")), "malformed JSON: unexpected end of file")
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			if uerr := checkUTF8(file, w.buf, w.line, w.base+w.start); uerr != nil {
				return uerr // invalid UTF-8 explains more than the syntax
			}
			return errorf(file, w.syntaxLine(), "malformed JSON: %v", err)
		}
		return fmt.Errorf("read dataset %s: %w", file, err)
	}
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return w.advance(w.start + int64(len(w.buf)))
		}
		return fail(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		hint := ""
		if d, ok := tok.(json.Delim); ok && d == '{' {
			hint = " (for one object per line, name the file .jsonl)"
		}
		return errorf(file, w.itemLine(), "want a JSON array of items%s", hint)
	}
	if err := w.advance(dec.InputOffset()); err != nil {
		return err
	}
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fail(err)
		}
		line := w.itemLine()
		if err := w.advance(dec.InputOffset()); err != nil {
			return err
		}
		rec, err := parseObject(raw, file, line)
		if err != nil {
			return err
		}
		if err := emit(rec); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return fail(err)
	}
	if err := w.advance(dec.InputOffset()); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if errors.Is(err, errTooLong) {
			return tooLong(file, w.itemLine(), "the content after the array")
		}
		return errorf(file, w.itemLine(), "malformed JSON: unexpected content after the array")
	}
	return w.advance(w.start + int64(len(w.buf)))
}

// DeriveID returns the id of an item that has none: the first 12 hex
// digits of the SHA-256 of its canonical input and expected output (see
// [evalrun.Canonical]), so that the same content gets the same id whatever
// its formatting. [ReadFile] numbers repeats of identical content "-2",
// "-3"… in file order.
func DeriveID(it *evalrun.Item) string {
	h := sha256.New()
	for _, v := range []json.RawMessage{it.Input, it.Expected} {
		c, err := evalrun.Canonical(v)
		if err != nil {
			c = bytes.TrimSpace(v)
		}
		h.Write(c)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func assignIDs(recs []record, file string) ([]*evalrun.Item, error) {
	given := make(map[string]int, len(recs))
	for _, r := range recs {
		if !r.givenID {
			continue
		}
		if first, dup := given[r.item.ID]; dup {
			return nil, errorf(file, r.line, "duplicate id %q (first on line %d)", r.item.ID, first)
		}
		given[r.item.ID] = r.line
	}
	used := make(map[string]bool, len(recs))
	// next is the suffix the next repeat of a content tries first: the
	// repeats before it hold -2 … -(next-1), so probing from -2 again
	// would make n repeats cost n² tries.
	next := map[string]int{}
	items := make([]*evalrun.Item, len(recs))
	for i, r := range recs {
		if !r.givenID {
			base := DeriveID(r.item)
			id, n := base, max(next[base], 2)
			if used[id] || given[id] != 0 {
				for id = fmt.Sprintf("%s-%d", base, n); used[id] || given[id] != 0; n++ {
					id = fmt.Sprintf("%s-%d", base, n+1)
				}
				next[base] = n + 1
			}
			r.item.ID = id
		}
		used[r.item.ID] = true
		items[i] = r.item
	}
	return items, nil
}
