package target

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/evalrun/evalrun"
)

func TestEcho(t *testing.T) {
	item := &evalrun.Item{ID: "a", Input: json.RawMessage(`{"x":1}`)}
	ctx := context.Background()
	out, err := Echo{}.Execute(ctx, item)
	if err != nil || string(out.Value) != `{"x":1}` {
		t.Fatalf("Execute = %s, %v", out.Value, err)
	}
	var tgt evalrun.Target = Echo{}
	allocs := testing.AllocsPerRun(100, func() {
		out, _ = tgt.Execute(ctx, item)
	})
	if allocs != 0 {
		t.Errorf("Echo allocates %v times per call, want 0", allocs)
	}
}

func BenchmarkEcho(b *testing.B) {
	item := &evalrun.Item{ID: "a", Input: json.RawMessage(`"hi"`)}
	var tgt evalrun.Target = Echo{}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = tgt.Execute(ctx, item)
	}
}
