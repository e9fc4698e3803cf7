package sqlstore

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/evalrun/evalrun"
)

func TestMarshalTrajectory(t *testing.T) {
	tests := []struct {
		name string
		in   *evalrun.Trajectory
		want string // "" for NULL
	}{
		{"none", nil, ""},
		{"no calls", &evalrun.Trajectory{Steps: 1}, `{"steps":1,"calls":[]}`},
		{"steps unknown", &evalrun.Trajectory{Calls: []evalrun.ToolCall{}}, `{"calls":[]}`},
		{"html kept, json compacted", &evalrun.Trajectory{Steps: 2, Calls: []evalrun.ToolCall{
			{Name: "s", Args: json.RawMessage(`{ "q": "a<b&c" }`), Output: json.RawMessage(`"\u0000"`), Mocked: true},
		}}, `{"steps":2,"calls":[{"name":"s","args":{"q":"a<b&c"},"output":"\u0000","mocked":true,"latency_ms":null}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := MarshalTrajectory(tt.in)
			if err != nil || string(b) != tt.want || (tt.want == "") != (b == nil) {
				t.Fatalf("MarshalTrajectory = %q, %v; want %q", b, err, tt.want)
			}
			back, err := UnmarshalTrajectory(b)
			if err != nil || (back == nil) != (tt.in == nil) {
				t.Fatalf("UnmarshalTrajectory(%q) = %+v, %v", b, back, err)
			}
			if back != nil && (back.Calls == nil || back.Steps != tt.in.Steps) {
				t.Fatalf("UnmarshalTrajectory(%q) = %+v", b, back)
			}
		})
	}
}

func TestMarshalTrajectoryRefusesNonJSON(t *testing.T) {
	_, err := MarshalTrajectory(&evalrun.Trajectory{Calls: []evalrun.ToolCall{{Name: "x", Output: json.RawMessage(`{oops`)}}})
	if !errors.Is(err, evalrun.ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
}

func TestUnmarshalTrajectoryNullArgs(t *testing.T) {
	tr, err := UnmarshalTrajectory([]byte(`{"calls":[{"name":"x","args":null}]}`))
	if err != nil || tr.Calls[0].Args != nil {
		t.Fatalf("args null read back as %q, %v; want nil", tr.Calls[0].Args, err)
	}
	if _, err := UnmarshalTrajectory([]byte(`{"calls":`)); err == nil {
		t.Fatal("a damaged stored trajectory read back without error")
	}
}
