package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalrun/evalrun/dataset"
)

// A saved-outputs file is refused where a dataset line would be: too long,
// not UTF-8, too deep, or a key given twice, each with its file and line.
func TestReadOutputsLimits(t *testing.T) {
	ok := `{"id": "a", "output": "x"}` + "\n"
	for _, tc := range []struct {
		name, content, want string
	}{
		{"too long", ok + `{"id": "b", "output": "` + strings.Repeat("x", dataset.MaxItemBytes) + `"}` + "\n",
			"outs.jsonl:2: line longer than 16777216 bytes"},
		{"invalid UTF-8", ok + "{\"id\": \"b\", \"output\": \"\xff\"}\n",
			"outs.jsonl:2: invalid UTF-8: byte 0xff"},
		{"too deep", ok + `{"id": "b", "output": ` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "}\n",
			"outs.jsonl:2: nested 201 levels deep (the limit is 128)"},
		{"duplicate key", ok + `{"id": "b", "output": "x", "id": "c"}` + "\n",
			`outs.jsonl:2: duplicate key "id"`},
		{"not an object", ok + "[1, 2]\n", `outs.jsonl:2: not a JSON object`},
		{"malformed", ok + `{"id": "b", "output": }` + "\n", `outs.jsonl:2: malformed JSON`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "outs.jsonl")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := readOutputs(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || ExitCode(err) != ExitUsage {
				t.Errorf("readOutputs: %v, want an invalid-input error containing %q", err, tc.want)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "outs.jsonl")
	if err := os.WriteFile(path, []byte("\ufeff"+ok+"\r\n"+`{"id": 7, "output": {"a": 1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := readOutputs(path)
	if err != nil || string(s.outputs["a"]) != `"x"` || string(s.outputs["7"]) != `{"a": 1}` {
		t.Errorf("readOutputs of a valid file: %v, %q", err, s)
	}
}
