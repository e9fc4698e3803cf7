package sqlstore

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/evalrun/evalrun"
)

// MarshalTrajectory returns the JSON a store keeps of a result's
// trajectory ({"steps", "calls"}), or nil for none (a target that is not an
// agent), so that NULL stays apart from an agent that called nothing. JSON
// values (arguments, outputs) are kept as given, compacted, without the
// HTML escaping of json.Marshal: a tool output "a<b" reads back as "a<b". A
// value that is not JSON is refused with an error wrapping
// [evalrun.ErrInvalid].
func MarshalTrajectory(t *evalrun.Trajectory) ([]byte, error) {
	if t == nil {
		return nil, nil
	}
	// Not t itself: Trajectory's MarshalJSON escapes HTML before the
	// encoder could be told not to.
	st := storedTrajectory{Steps: t.Steps, Calls: t.Calls}
	if st.Calls == nil {
		st.Calls = []evalrun.ToolCall{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(st); err != nil {
		return nil, fmt.Errorf("trajectory: %v: %w", err, evalrun.ErrInvalid)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// storedTrajectory is the stored form of an [evalrun.Trajectory]: its
// JSON, without its MarshalJSON method.
type storedTrajectory struct {
	Steps int                `json:"steps,omitempty"`
	Calls []evalrun.ToolCall `json:"calls"`
}

// UnmarshalTrajectory is the inverse of [MarshalTrajectory]: nil or empty
// gives nil; a stored trajectory gives non-nil Calls ([] when the agent
// called nothing), and arguments stored as null (a call recorded without
// them) come back nil, as they were written.
func UnmarshalTrajectory(b []byte) (*evalrun.Trajectory, error) {
	if len(b) == 0 {
		return nil, nil
	}
	t := &evalrun.Trajectory{}
	if err := json.Unmarshal(b, t); err != nil {
		return nil, fmt.Errorf("stored trajectory: %w", err)
	}
	if t.Calls == nil {
		t.Calls = []evalrun.ToolCall{}
	}
	for i := range t.Calls {
		if string(t.Calls[i].Args) == "null" {
			t.Calls[i].Args = nil
		}
	}
	return t, nil
}
