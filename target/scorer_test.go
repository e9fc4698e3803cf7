package target

import (
	"encoding/json"
	"testing"

	"github.com/evalrun/evalrun"
)

// A scorer under calibration grades the case the item's input describes and
// never sees the item's expected output, the grade it is asked to predict.
func TestCalibrationInput(t *testing.T) {
	meta := map[string]any{"tags": []any{"polite"}}
	for _, tc := range []struct {
		name, input                    string
		wantInput, wantOutput, wantExp string // "" means absent
	}{
		{"text is the output", `"Sure, happy to help."`, "", `"Sure, happy to help."`, ""},
		{"input and output", `{"input": "2+2?", "output": "5"}`, `"2+2?"`, `"5"`, ""},
		{"output alone", `{"output": {"a": 1}}`, "", `{"a": 1}`, ""},
		{"with a reference answer", `{"input": "2+2?", "output": "5", "expected_output": "4"}`, `"2+2?"`, `"5"`, `"4"`},
		// Not a case spelled out: graded whole, so that no key is dropped.
		{"other keys", `{"output": "5", "confidence": 0.9}`, "", `{"output": "5", "confidence": 0.9}`, ""},
		{"no output key", `{"input": "2+2?", "answer": "5"}`, "", `{"input": "2+2?", "answer": "5"}`, ""},
		{"array", `[1, 2]`, "", `[1, 2]`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			item := &evalrun.Item{ID: "c1", Input: json.RawMessage(tc.input), Expected: json.RawMessage(`1`), Metadata: meta}
			in := CalibrationInput(item)
			if in.Item == item || in.Item.ID != "c1" || in.Item.Metadata["tags"] == nil {
				t.Fatalf("item = %+v, want a copy with the ID and metadata", in.Item)
			}
			if string(in.Item.Input) != tc.wantInput || string(in.Output) != tc.wantOutput || string(in.Item.Expected) != tc.wantExp {
				t.Errorf("input %q output %q expected %q; want %q %q %q",
					in.Item.Input, in.Output, in.Item.Expected, tc.wantInput, tc.wantOutput, tc.wantExp)
			}
		})
	}
}
