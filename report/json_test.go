package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

const schemaPath = "../docs/report.schema.json"

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	return compileSchemaFile(t, schemaPath)
}

// compileSchemaFile compiles the JSON Schema at path (the current one, or
// an older version kept in testdata/).
func compileSchemaFile(t *testing.T, path string) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("report.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("report.schema.json")
	if err != nil {
		t.Fatalf("schema does not compile: %v", err)
	}
	return sch
}

func renderJSON(t *testing.T, rep *Report) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// schemaRejects checks that sch refuses good with each mutation applied:
// mutations maps a name to {text in good, its replacement}.
func schemaRejects(t *testing.T, sch *jsonschema.Schema, good string, mutations map[string][2]string) {
	t.Helper()
	for name, m := range mutations {
		if !strings.Contains(good, m[0]) {
			t.Errorf("%s: %q not in the report", name, m[0])
			continue
		}
		bad := strings.Replace(good, m[0], m[1], 1)
		if err := validate(t, sch, []byte(bad)); err == nil {
			t.Errorf("%s: the schema accepts the mutated report", name)
		}
	}
}

func validate(t *testing.T, sch *jsonschema.Schema, data []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return sch.Validate(v)
}

func TestJSONValidAgainstSchema(t *testing.T) {
	sch := compileSchema(t)
	repeated := fixtureResults()
	for _, r := range repeated {
		r.Repeat = 1
	}
	reports := map[string]*Report{
		"fixture":       fixtureReport(t),
		"without items": fixtureReport(t, WithoutItems()),
		"empty run":     Build(&evalrun.Run{ID: "x", Status: evalrun.RunFailed}, nil),
		"repeats":       Build(fixtureRun(), repeated),
	}
	for name, rep := range reports {
		if err := validate(t, sch, renderJSON(t, rep)); err != nil {
			t.Errorf("%s: report does not match the schema: %v", name, err)
		}
	}
}

func TestSchemaRejectsDrift(t *testing.T) {
	// The schema must be strict enough to catch a renamed, missing or
	// mistyped field.
	sch := compileSchema(t)
	good := string(renderJSON(t, fixtureReport(t)))
	mutations := map[string][2]string{
		"renamed field":         {`"pass_rate"`, `"passrate"`},
		"histogram length":      {`"histogram": [`, `"histogram": [1,`},
		"0 for null":            {`"mean": null`, `"mean": "n/a"`},
		"unknown stage":         {`"stage": "persist"`, `"stage": "storage"`},
		"schema version":        {`"schema_version": 3`, `"schema_version": 4`},
		"v2 without cache_hits": {`"cache_hits": 0,`, ``},
		"negative cache_hits":   {`"cache_hits": 0`, `"cache_hits": -1`},
		"zero concurrency":      {`"concurrency": null`, `"concurrency": 0`},
		"persist with kind":     {`"stage": "persist",` + "\n      \"scorer\": null,\n      \"kind\": null", `"stage": "persist",` + "\n      \"scorer\": null,\n      \"kind\": \"timeout\""},
		"bad severity":          {`"high": 1`, `"high": -1`},
		"negative reported":     {`"reported": 3`, `"reported": -3`},
		"non-date timestamp":    {`"started_at": "2026-01-02T03:04:05Z"`, `"started_at": "yesterday"`},
	}
	schemaRejects(t, sch, good, mutations)
}

func TestJSONShape(t *testing.T) {
	data := renderJSON(t, fixtureReport(t))
	golden(t, "report.json", data)

	// Top-level field order is stable, as in the contract.
	var order []string
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.Token()
	for dec.More() {
		k, _ := dec.Token()
		order = append(order, k.(string))
		var skip json.RawMessage
		dec.Decode(&skip)
	}
	want := []string{"schema_version", "run", "scorers", "macro_pass_rate", "cohorts", "usage", "failures", "adversarial", "items"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("top-level order (-want +got):\n%s", diff)
	}

	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	broken := m["scorers"].(map[string]any)["broken"].(map[string]any)
	for _, k := range []string{"mean", "p50", "p95", "pass_rate"} {
		if v, ok := broken[k]; !ok || v != nil {
			t.Errorf("broken.%s = %v (present %v), want null", k, v, ok)
		}
	}
	if broken["count"] != 0.0 || broken["errors"] != 5.0 {
		t.Errorf("broken count/errors = %v/%v", broken["count"], broken["errors"])
	}
	out := m["usage"].(map[string]any)["output_tokens"].(map[string]any)
	if out["total"] != 5.0 || out["reported"] != 1.0 {
		t.Errorf("usage.output_tokens = %v", out)
	}
	item := m["items"].([]any)[4].(map[string]any)
	if item["output"] != nil || item["error_kind"] != "timeout" || item["expected_output"] != "answer q5" {
		t.Errorf("items[4] = %v", item)
	}
	if _, ok := item["repeat"]; ok {
		t.Error("repeat 0 is written; want it omitted")
	}
	if strings.Contains(string(data), "never reported") {
		t.Error("adversarial metadata outside the safe subset leaked into the report")
	}

	noItems := renderJSON(t, fixtureReport(t, WithoutItems()))
	if !bytes.Contains(noItems, []byte(`"items": null`)) {
		t.Errorf("report without items has no \"items\": null")
	}
}

func TestJSONRoundTrip(t *testing.T) {
	for _, rep := range []*Report{fixtureReport(t), Build(&evalrun.Run{ID: "e"}, nil)} {
		got, err := ReadJSON(bytes.NewReader(renderJSON(t, rep)))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(rep, got, cmp.Comparer(sameJSON),
			cmpIgnoreIndex); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	}
	for _, v := range []string{`{"schema_version": 4}`, `{"schema_version": 0}`, `{}`} {
		if _, err := ReadJSON(strings.NewReader(v)); !errors.Is(err, evalrun.ErrInvalid) {
			t.Errorf("ReadJSON(%s): err = %v, want ErrInvalid", v, err)
		}
	}
}

// TestSchemaRejectsRepeatDrift mutates the version 2 fields of the repeats
// report.
func TestSchemaRejectsRepeatDrift(t *testing.T) {
	sch := compileSchema(t)
	good := string(renderJSON(t, Build(repeatsRun(), repeatsResults())))
	mutations := map[string][2]string{
		"pass_at_k above 1":  {`"pass_at_k": 0.75`, `"pass_at_k": 1.5`},
		"k without items":    {`"items": 4,`, ``},
		"flaky runs of 1":    {`"runs": 2`, `"runs": 1`},
		"flaky without id":   {`"item_id": "b",`, ``},
		"flaky in version 1": {`"schema_version": 3`, `"schema_version": 1`},
		"k of 1":             {`"k": 3`, `"k": 1`},
	}
	if err := validate(t, sch, []byte(good)); err != nil {
		t.Fatalf("repeats report does not match the schema: %v", err)
	}
	schemaRejects(t, sch, good, mutations)
}

// TestVersion1Compat proves that version 2 only adds: the fixture's report
// as version 1 wrote it (testdata/report-v1.json, kept from before version
// 2) still validates and reads, and today's report without the version 2
// additions is exactly it.
func TestVersion1Compat(t *testing.T) {
	v1, err := os.ReadFile("testdata/report-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(t, compileSchema(t), v1); err != nil {
		t.Fatalf("a version 1 report does not match the schema: %v", err)
	}
	old, err := ReadJSON(bytes.NewReader(v1))
	if err != nil {
		t.Fatalf("ReadJSON of a version 1 report: %v", err)
	}
	if old.SchemaVersion != 1 || old.Run.CacheHits != 0 || old.Run.Concurrency != nil || old.Flaky != nil || old.Repeats() != 0 {
		t.Errorf("version 1 report read as %+v", old.Run)
	}

	var now map[string]any
	if err := json.Unmarshal(renderJSON(t, fixtureReport(t)), &now); err != nil {
		t.Fatal(err)
	}
	if now["schema_version"] != 3.0 {
		t.Fatalf("schema_version = %v, want 3", now["schema_version"])
	}
	now["schema_version"] = 1.0
	run := now["run"].(map[string]any)
	for _, added := range []string{"cache_hits", "concurrency"} {
		if _, ok := run[added]; !ok {
			t.Errorf("run.%s missing from version 2", added)
		}
		delete(run, added)
	}
	var want map[string]any
	if err := json.Unmarshal(v1, &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, now); diff != "" {
		t.Errorf("version 2 minus its additions differs from version 1 (-v1 +v2):\n%s", diff)
	}
}

// cmpIgnoreIndex ignores Failure.Index, which is not written.
var cmpIgnoreIndex = cmp.FilterPath(func(p cmp.Path) bool {
	sf, ok := p.Last().(cmp.StructField)
	return ok && sf.Name() == "Index" && p.Index(-2).Type().Name() == "Failure"
}, cmp.Ignore())

// sameJSON compares raw values ignoring insignificant space.
func sameJSON(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && ca.String() == cb.String()
}
