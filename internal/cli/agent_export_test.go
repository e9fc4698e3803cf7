package cli

import (
	"strings"
	"testing"
)

// A dataset with agent keys survives export and re-import unchanged: []
// stays apart from absent in the export (it used to be dropped, so the
// re-import changed the item), and the stored mocks come back.
func TestDatasetExportKeepsAgentKeys(t *testing.T) {
	b := setup(t)
	in := b.write("d.jsonl", `{"id": "p", "input": "q", "tool_mocks": [{"name": "w", "args": {"c": "P"}, "output": {"t": 18}}], "expected_trajectory": [{"name": "w"}]}`+"\n"+
		`{"id": "n", "input": "q", "tool_mocks": [], "expected_trajectory": []}`+"\n"+
		`{"id": "x", "input": "q"}`+"\n")
	if code, _, errs := b.run("dataset", "import", "agents", in); code != 0 {
		t.Fatalf("import: %d %s", code, errs)
	}
	code, out, errs := b.run("dataset", "export", "agents")
	if code != 0 {
		t.Fatalf("export: %d %s", code, errs)
	}
	for _, want := range []string{
		`"tool_mocks":[{"name":"w","args":{"c":"P"},"output":{"t":18}}],"expected_trajectory":[{"name":"w"}]}`,
		`{"id":"n","input":"q","tool_mocks":[],"expected_trajectory":[]}`,
		`{"id":"x","input":"q"}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("export lacks %s:\n%s", want, out)
		}
	}
	again := b.write("e.jsonl", out)
	if code, out, errs := b.run("dataset", "import", "agents", again); code != 0 || !strings.Contains(out+errs, "unchanged") {
		t.Errorf("re-import of the export: %d %s %s, want unchanged", code, out, errs)
	}
}
