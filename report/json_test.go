package report

import (
	"bytes"
	"encoding/json"
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
	f, err := os.Open(schemaPath)
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
		"renamed field":      {`"pass_rate"`, `"passrate"`},
		"histogram length":   {`"histogram": [`, `"histogram": [1,`},
		"0 for null":         {`"mean": null`, `"mean": "n/a"`},
		"unknown stage":      {`"stage": "persist"`, `"stage": "storage"`},
		"schema version":     {`"schema_version": 1`, `"schema_version": 2`},
		"persist with kind":  {`"stage": "persist",` + "\n      \"scorer\": null,\n      \"kind\": null", `"stage": "persist",` + "\n      \"scorer\": null,\n      \"kind\": \"timeout\""},
		"bad severity":       {`"high": 1`, `"high": -1`},
		"negative reported":  {`"reported": 3`, `"reported": -3`},
		"non-date timestamp": {`"started_at": "2026-01-02T03:04:05Z"`, `"started_at": "yesterday"`},
	}
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
	if _, err := ReadJSON(strings.NewReader(`{"schema_version": 2}`)); err == nil {
		t.Error("schema_version 2 accepted")
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
