package report

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/bounded"
)

// Format names a renderer.
type Format string

// The formats.
const (
	FormatJSON     Format = "json"
	FormatMarkdown Format = "markdown"
	FormatJUnit    Format = "junit"
	// FormatTable is the terminal summary.
	FormatTable Format = "table"
	// FormatHTML is one self-contained HTML document ([WriteHTML]).
	FormatHTML Format = "html"
)

// Formats lists the formats, for help texts and errors.
var Formats = []Format{FormatTable, FormatJSON, FormatMarkdown, FormatJUnit, FormatHTML}

// ParseFormat returns the format with the given name ("table", "json",
// "markdown" or "md", "junit" or "xml", "html" or "htm"). An unknown name is an error
// wrapping [evalrun.ErrInvalid].
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "table", "terminal", "text":
		return FormatTable, nil
	case "json":
		return FormatJSON, nil
	case "markdown", "md":
		return FormatMarkdown, nil
	case "junit", "xml":
		return FormatJUnit, nil
	case "html", "htm":
		return FormatHTML, nil
	}
	return "", fmt.Errorf("%w: unknown report format %q (use table, json, markdown, junit or html)", evalrun.ErrInvalid, s)
}

// FormatForPath returns the format a file name's extension asks for: .json,
// .md or .markdown, .xml for JUnit, .txt for the table, .html or .htm;
// ok is false for any
// other extension.
func FormatForPath(path string) (f Format, ok bool) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		return FormatJSON, true
	case ".md", ".markdown":
		return FormatMarkdown, true
	case ".xml":
		return FormatJUnit, true
	case ".txt":
		return FormatTable, true
	case ".html", ".htm":
		return FormatHTML, true
	}
	return "", false
}

// Write renders rep in format f to w.
func Write(w io.Writer, rep *Report, f Format) error {
	switch f {
	case FormatJSON:
		return WriteJSON(w, rep)
	case FormatMarkdown:
		return WriteMarkdown(w, rep, MarkdownOptions{})
	case FormatJUnit:
		return WriteJUnit(w, rep)
	case FormatHTML:
		return WriteHTML(w, rep, HTMLOptions{})
	case FormatTable, "":
		return WriteTerminal(w, rep)
	}
	return fmt.Errorf("%w: unknown report format %q", evalrun.ErrInvalid, f)
}

// WriteJSON writes rep as the JSON report (schema_version 3), indented by
// two spaces, fields in a stable order, followed by a newline. Containers
// nested deeper than [bounded.IndentDepth] (inside item values) are written
// compact on one line, so that a deeply nested value costs its own size,
// not the square of its depth in indentation.
func WriteJSON(w io.Writer, rep *Report) error {
	out, err := bounded.MarshalIndent(rep, "", bounded.IndentDepth, false)
	if err != nil {
		return err
	}
	_, err = w.Write(append(out, '\n'))
	return err
}

// ReadJSON reads a JSON report written by [WriteJSON], of schema version
// [MinSchemaVersion] to [SchemaVersion]; the fields an older report lacks
// stay zero (version 1: CacheHits 0, Concurrency, RepeatStats and Flaky
// nil; version 2: Agent, item Steps and Trajectory).
// A report of another schema version is an error wrapping
// [evalrun.ErrInvalid].
func ReadJSON(r io.Reader) (*Report, error) {
	var rep Report
	if err := json.NewDecoder(r).Decode(&rep); err != nil {
		return nil, fmt.Errorf("%w: report: %v", evalrun.ErrInvalid, err)
	}
	if rep.SchemaVersion < MinSchemaVersion || rep.SchemaVersion > SchemaVersion {
		return nil, fmt.Errorf("%w: report schema_version %d (this evalrun reads %d to %d)", evalrun.ErrInvalid,
			rep.SchemaVersion, MinSchemaVersion, SchemaVersion)
	}
	if rep.Failures == nil {
		rep.Failures = []Failure{}
	}
	for i := range rep.Items {
		it := &rep.Items[i]
		it.Input, it.Expected, it.Output = nullToNil(it.Input), nullToNil(it.Expected), nullToNil(it.Output)
		for j := range it.Trajectory {
			it.Trajectory[j].Output = nullToNil(it.Trajectory[j].Output)
		}
	}
	return &rep, nil
}

// nullToNil maps a JSON null to nil, as the builder leaves absent values.
func nullToNil(v json.RawMessage) json.RawMessage {
	if string(v) == "null" {
		return nil
	}
	return v
}
