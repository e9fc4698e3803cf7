package target

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"

	"github.com/evalrun/evalrun"
)

// Template is a Go text/template over an item, as used by the http target's
// body and the openai target's prompt. It is safe for concurrent use.
//
// The template sees a [TemplateData]: {{ .Input }} renders a string input as
// its text and any other input as compact JSON ([evalrun.Text]); {{
// .InputJSON }} is the input as JSON whatever its type; {{ .Expected }} and
// {{ .ExpectedJSON }} likewise for the expected output; {{ .Metadata.key }}
// reads metadata; {{ .ID }} is the item id. The function json encodes any
// value as JSON, so a JSON body template reads {"q": {{ json .Input }}}. A
// missing metadata key is an error of that item, not "<no value>".
type Template struct {
	t *template.Template
}

// TemplateData is what a [Template] is executed with.
type TemplateData struct {
	ID string
	// Input is the text of the input (see [evalrun.Text]).
	Input string
	// InputJSON is the input as compact JSON.
	InputJSON string
	// Expected is the text of the expected output, "" when absent.
	Expected string
	// ExpectedJSON is the expected output as compact JSON, "" when absent.
	ExpectedJSON string
	Metadata     map[string]any
}

// templateFuncs are the functions templates may call.
var templateFuncs = template.FuncMap{
	"json": func(v any) (string, error) {
		if raw, ok := v.(json.RawMessage); ok {
			return string(raw), nil
		}
		b, err := json.Marshal(v)
		return string(b), err
	},
}

// ParseTemplate parses text as a template named name, the config key it came
// from. A parse error is a *[ConfigError] for that key (so it matches
// [evalrun.ErrInvalid]).
func ParseTemplate(name, text string) (*Template, error) {
	t, err := template.New(name).Funcs(templateFuncs).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, &ConfigError{Key: name, Err: fmt.Errorf("bad template: %w", err)}
	}
	return &Template{t: t}, nil
}

// NewTemplateData returns the data a template sees for item.
func NewTemplateData(item *evalrun.Item) TemplateData {
	d := TemplateData{
		ID:        item.ID,
		Input:     evalrun.Text(item.Input),
		InputJSON: compactJSON(item.Input),
		Metadata:  item.Metadata,
	}
	if len(item.Expected) > 0 {
		d.Expected = evalrun.Text(item.Expected)
		d.ExpectedJSON = compactJSON(item.Expected)
	}
	if d.Metadata == nil {
		d.Metadata = map[string]any{}
	}
	return d
}

// compactJSON returns v as compact JSON: a JSON string as it is, anything
// else compacted by evalrun.Text.
func compactJSON(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) > 0 && v[0] == '"' {
		return string(v)
	}
	return evalrun.Text(v)
}

// Render executes the template over item. An execution error (a missing
// metadata key, a failing function) is a permanent *[evalrun.Error].
func (t *Template) Render(item *evalrun.Item) (string, error) {
	var b strings.Builder
	if err := t.t.Execute(&b, NewTemplateData(item)); err != nil {
		return "", evalrun.Permanent(fmt.Errorf("render template %s: %w", t.t.Name(), err))
	}
	return b.String(), nil
}
