package report

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/bounded"
)

// Streaming renderers.
//
// A report built [WithoutItems] costs memory in its scores and failures
// only; the renderers that list every result (the JSON "items", JUnit test
// cases) can still write it by reading the rows from storage while they
// write, one at a time: [WriteJSONStream], [WriteJUnitStream] and
// [WriteStream]. Their output is byte for byte that of [WriteJSON] and
// [WriteJUnit] on the report with its item rows, provided the run's stored
// results do not change in between (a finished run's do not).

// ItemSource is where the streaming renderers read a report's item rows:
// the results of run RunID in Store, in (index, repeat) order as
// [evalrun.RunStore.ScanResults] yields them.
type ItemSource struct {
	Store evalrun.RunStore
	RunID string
}

// scan calls fn with the row of every stored result of the run, in order.
// The row is only valid during the call.
func (src ItemSource) scan(ctx context.Context, fn func(*ItemRow) error) error {
	kinds := make(kindSet)
	err := src.Store.ScanResults(ctx, src.RunID, evalrun.ResultQuery{}, func(r *evalrun.ItemResult) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		row := rowOf(r, kinds)
		return fn(&row)
	})
	if err != nil {
		return fmt.Errorf("report: results of run %s: %w", src.RunID, err)
	}
	return nil
}

// WriteStream renders rep in format f to w like [Write], reading the item
// rows the format needs (JSON, JUnit, HTML) from src instead of rep.Items,
// which is ignored for them. Table and Markdown need no rows: they are written
// from rep alone.
func WriteStream(ctx context.Context, w io.Writer, rep *Report, f Format, src ItemSource) error {
	switch f {
	case FormatJSON:
		return WriteJSONStream(ctx, w, rep, src)
	case FormatJUnit:
		return WriteJUnitStream(ctx, w, rep, src)
	case FormatHTML:
		return WriteHTMLStream(ctx, w, rep, src, HTMLOptions{})
	}
	return Write(w, rep, f)
}

// itemsTail is how [WriteJSON] ends a report without item rows: "items" is
// the last field of [Report], written at depth 1. A raw newline cannot
// occur inside a JSON string, so the text can only be that field.
const itemsTail = "\n  \"items\": null\n}\n"

// WriteJSONStream writes the JSON report of rep (built [WithoutItems] or
// not: rep.Items is ignored) with the item rows of src, reading them one at
// a time while writing. The output is that of [WriteJSON] on the report
// with its rows. On an error part of the report may have been written.
func WriteJSONStream(ctx context.Context, w io.Writer, rep *Report, src ItemSource) error {
	head := *rep
	head.Items = nil
	var buf bytes.Buffer
	if err := WriteJSON(&buf, &head); err != nil {
		return err
	}
	text, ok := bytes.CutSuffix(buf.Bytes(), []byte(itemsTail))
	if !ok {
		return fmt.Errorf("report: the JSON report does not end with its items") // a change of Report's fields
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(text)
	bw.WriteString("\n  \"items\": [")

	// Each row as WriteJSON writes an element of the array at depth 2:
	// the same options, the indentation (and its depth cap) two levels
	// down.
	n := 0
	write := jsonArrayRows[*ItemRow](bw)
	err := src.scan(ctx, func(it *ItemRow) error {
		n++
		return write(it)
	})
	if err != nil {
		return err
	}
	if n > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("]\n}\n")
	return bw.Flush()
}

// WriteJUnitStream writes rep as JUnit XML like [WriteJUnit], with one test
// case per item row of src (rep.Items is ignored). It reads the rows twice:
// once to count the cases, errors and failures the root elements carry,
// then to write the cases one at a time.
func WriteJUnitStream(ctx context.Context, w io.Writer, rep *Report, src ItemSource) error {
	j := newJUnitWriter(rep)
	var n junitCounts
	if err := src.scan(ctx, func(it *ItemRow) error {
		n.add(j.testCase(it))
		return nil
	}); err != nil {
		return err
	}
	return j.write(w, n, func(fn func(*ItemRow) error) error { return src.scan(ctx, fn) })
}

// jsonArrayRows returns a function writing each row it is given to bw as
// the next element of an open JSON array, indented two levels down with
// the report's options (and their depth cap). A write error sticks in bw,
// and is returned: the caller's scan stops at the first.
func jsonArrayRows[T any](bw *bufio.Writer) func(T) error {
	n := 0
	return func(it T) error {
		row, err := bounded.MarshalIndent(it, "    ", bounded.IndentDepth-2, false)
		if err != nil {
			return err
		}
		if n > 0 {
			bw.WriteByte(',')
		}
		n++
		bw.WriteString("\n    ")
		_, err = bw.Write(row)
		return err
	}
}
