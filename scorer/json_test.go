package scorer_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/scorer"
)

func TestJSONValid(t *testing.T) {
	t.Parallel()
	s := mustNew(t, scorer.Config{Kind: "json_valid"}, scorer.Deps{})
	runCases(t, s, []scoreCase{
		{name: "object output", output: `{"a":1}`, want: 1},
		{name: "number output", output: `3.5`, want: 1},
		{name: "string holding an object", output: `"{\"a\": [1, 2]}"`, want: 1},
		{name: "string holding JSON with space", output: `"  [1]\n"`, want: 1},
		{name: "plain text", output: `"hello"`, want: 0},
		{name: "truncated JSON text", output: `"{\"a\": "`, want: 0},
		{name: "empty string", output: `""`, want: 0},
		{name: "empty output", output: ``, want: 0},
		{name: "raw invalid", output: `{a:1}`, want: 0},
	})
}

func TestJSONEqual(t *testing.T) {
	t.Parallel()
	s := mustNew(t, scorer.Config{Kind: "json_equal"}, scorer.Deps{})
	runCases(t, s, []scoreCase{
		{name: "key order and spacing", output: `{"b": [1, 2], "a": {"x": null}}`, expected: `{"a":{"x":null},"b":[1,2]}`, want: 1},
		{name: "number spelling", output: `{"n": 1.0}`, expected: `{"n": 1e0}`, want: 1},
		{name: "output as JSON text", output: `"{\"b\":2, \"a\":1}"`, expected: `{"a":1,"b":2}`, want: 1},
		{name: "expected as JSON text", output: `[1,2]`, expected: `"[1, 2]"`, want: 1},
		{name: "array order matters", output: `[2,1]`, expected: `[1,2]`, want: 0},
		{name: "different value", output: `{"a":1}`, expected: `{"a":"1"}`, want: 0},
		{name: "plain strings", output: `"héllo"`, expected: `"héllo"`, want: 1},
		{name: "text is not JSON", output: `"{oops"`, expected: `{"a":1}`, want: 0},
		{name: "empty output", output: ``, expected: `{"a":1}`, want: 0},
		{name: "no expected", output: `{}`, wantKind: evalrun.ErrorPermanent, wantIs: scorer.ErrNoExpected},
	})
}

const personSchema = `{"type":"object","required":["name","age"],"properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0}}}`

func TestJSONSchema(t *testing.T) {
	t.Parallel()
	var inline map[string]any
	if err := json.Unmarshal([]byte(personSchema), &inline); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "person.json"), []byte(personSchema), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []scoreCase{
		{name: "valid object", output: `{"name":"Ann","age":30}`, want: 1},
		{name: "valid object as text", output: `"{\"name\":\"Ann\",\"age\":30}"`, want: 1},
		{name: "missing field", output: `{"name":"Ann"}`, want: 0},
		{name: "wrong type", output: `{"name":"Ann","age":-1}`, want: 0},
		{name: "plain text", output: `"Ann, 30"`, want: 0},
		{name: "empty output", output: ``, want: 0},
		{name: "array", output: `[1]`, want: 0},
	}
	for name, cfg := range map[string]scorer.Config{
		"inline map":    {Kind: "json_schema", Schema: inline},
		"inline string": {Kind: "json_schema", Schema: personSchema},
		"file":          {Kind: "json_schema", SchemaFile: "person.json"},
	} {
		t.Run(name, func(t *testing.T) {
			runCases(t, mustNew(t, cfg, scorer.Deps{BaseDir: dir}), cases)
		})
	}
}

func TestJSONSchemaReasonNamesTheViolation(t *testing.T) {
	t.Parallel()
	s, err := scorer.NewJSONSchema(scorer.JSONSchemaOptions{Schema: json.RawMessage(personSchema)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Score(t.Context(), input("q1", `1`, `{"name":"Ann"}`, ""))
	if err != nil {
		t.Fatal(err)
	}
	if got.Value != 0 || !strings.Contains(got.Reason, "age") || strings.Contains(got.Reason, "\n") {
		t.Errorf("Score = %v, %q; want 0 with a one-line reason naming age", got.Value, got.Reason)
	}
}

// A schema file is read up to scorer.MaxSchemaFileBytes: a larger one (or
// /dev/zero) is refused instead of exhausting memory.
func TestJSONSchemaFileBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.json")
	body := `{"description": "` + strings.Repeat("x", scorer.MaxSchemaFileBytes) + `"}`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := scorer.NewJSONSchema(scorer.JSONSchemaOptions{SchemaFile: path})
	var ce *scorer.ConfigError
	if !errors.As(err, &ce) || ce.Key != "schema_file" || !strings.Contains(err.Error(), "larger than 16777216 bytes") {
		t.Fatalf("NewJSONSchema of a schema over the limit: %v", err)
	}
}
