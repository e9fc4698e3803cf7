package scorer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/bounded"
)

// JSONSchemaOptions configure [NewJSONSchema]. Exactly one of Schema and
// SchemaFile is required.
type JSONSchemaOptions struct {
	// Name defaults to "json_schema".
	Name string
	// Threshold defaults to [evalrun.DefaultThreshold].
	Threshold *float64
	// Schema is the schema inline: a decoded JSON or YAML value (a
	// map[string]any), a json.RawMessage or []byte of JSON, or a string of
	// JSON.
	Schema any
	// SchemaFile is the path of a JSON schema file; $refs relative to it
	// resolve against its directory.
	SchemaFile string
}

// JSONSchema scores 1 when the output validates against a JSON Schema
// (draft 2020-12 unless the schema's $schema says otherwise; formats are
// asserted) and 0 otherwise, with the validation errors as the reason. A
// JSON string output whose text is JSON is validated as that JSON; any other
// output as it is. An empty output scores 0. Safe for concurrent use.
type JSONSchema struct {
	base
	schema *jsonschema.Schema
}

var (
	_ evalrun.Scorer      = (*JSONSchema)(nil)
	_ evalrun.Thresholder = (*JSONSchema)(nil)
)

// MaxSchemaFileBytes is the largest schema_file read: a schema is held
// and compiled in memory whole, and a suite from an untrusted pull request
// may name any file (/dev/zero).
const MaxSchemaFileBytes = 16 << 20

// readSchemaFile reads the schema file at path, refusing one larger than
// MaxSchemaFileBytes without reading past it.
func readSchemaFile(path string) ([]byte, error) {
	data, err := bounded.ReadFile(path, MaxSchemaFileBytes)
	if errors.Is(err, bounded.ErrTooLarge) {
		return nil, fmt.Errorf("%s is larger than %d bytes (the limit, %d MiB)", path, MaxSchemaFileBytes, MaxSchemaFileBytes>>20)
	}
	return data, err
}

// NewJSONSchema compiles the schema and returns a json_schema scorer. A
// missing, unreadable or invalid schema is a *[ConfigError] on key "schema"
// or "schema_file".
func NewJSONSchema(opts JSONSchemaOptions) (*JSONSchema, error) {
	b, err := newBase(KindJSONSchema, opts.Name, opts.Threshold)
	if err != nil {
		return nil, err
	}
	var (
		key = "schema"
		url string
		doc any
	)
	switch {
	case opts.Schema != nil && opts.SchemaFile != "":
		return nil, b.configError("schema", errors.New("give schema or schema_file, not both"))
	case opts.SchemaFile != "":
		key = "schema_file"
		path, err := filepath.Abs(opts.SchemaFile)
		if err != nil {
			return nil, b.configError(key, err)
		}
		data, err := readSchemaFile(path)
		if err != nil {
			return nil, b.configError(key, err)
		}
		if doc, err = jsonschema.UnmarshalJSON(bytes.NewReader(data)); err != nil {
			return nil, b.configError(key, fmt.Errorf("%s is not JSON: %w", opts.SchemaFile, err))
		}
		url = path
	case opts.Schema != nil:
		data, err := schemaJSON(opts.Schema)
		if err != nil {
			return nil, b.configError(key, err)
		}
		if doc, err = jsonschema.UnmarshalJSON(bytes.NewReader(data)); err != nil {
			return nil, b.configError(key, fmt.Errorf("not JSON: %w", err))
		}
		url = "urn:evalrun:inline-schema"
	default:
		return nil, b.configError("schema", errors.New("required (or schema_file)"))
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(url, doc); err != nil {
		return nil, b.configError(key, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, b.configError(key, fmt.Errorf("invalid schema: %w", err))
	}
	return &JSONSchema{base: b, schema: sch}, nil
}

// schemaJSON returns the JSON of an inline schema.
func schemaJSON(v any) ([]byte, error) {
	var data []byte
	switch s := v.(type) {
	case string:
		data = []byte(s)
	case json.RawMessage:
		data = s
	case []byte:
		data = s
	default:
		var err error
		if data, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("cannot be written as JSON: %w", err)
		}
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || (data[0] != '{' && !bytes.Equal(data, []byte("true")) && !bytes.Equal(data, []byte("false"))) {
		return nil, errors.New("a JSON Schema is an object (or true/false)")
	}
	return data, nil
}

func buildJSONSchema(c Config, b base, d Deps) (evalrun.Scorer, error) {
	file := c.SchemaFile
	if file != "" {
		file = resolvePath(d.BaseDir, file)
	}
	return NewJSONSchema(JSONSchemaOptions{Name: b.name, Threshold: &b.threshold, Schema: c.Schema, SchemaFile: file})
}

// Score validates the output against the schema.
func (s *JSONSchema) Score(_ context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
	out := jsonOf(in.Output)
	if len(out) == 0 {
		return passFail(false, "output is empty"), nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
	if err != nil {
		return passFail(false, fmt.Sprintf("output is not JSON: %v", err)), nil
	}
	if err := s.schema.Validate(v); err != nil {
		return passFail(false, oneLine(err.Error())), nil
	}
	return passFail(true, "output matches the schema"), nil
}

// oneLine flattens a multi-line message and bounds its length.
func oneLine(s string) string {
	const max = 500
	s = strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "…"
	}
	return s
}
