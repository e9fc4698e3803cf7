package sqlstore

import (
	"reflect"
	"testing"
)

// TestMetaCacheCopies decodes the same value twice: each call returns its
// own deep copy, so changing one leaves the next untouched.
func TestMetaCacheCopies(t *testing.T) {
	var c MetaCache
	b := []byte(`{"tags":["a","b"],"level":{"n":1}}`)
	want := map[string]any{"tags": []any{"a", "b"}, "level": map[string]any{"n": float64(1)}}
	for i := range 3 {
		got, err := c.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decode %d = %v, want %v", i, got, want)
		}
		got["tags"].([]any)[0] = "changed"
		got["level"].(map[string]any)["n"] = float64(2)
		got["new"] = true
	}
	if m, err := c.Decode(nil); m != nil || err != nil {
		t.Errorf("Decode(nil) = %v, %v; want nil, nil", m, err)
	}
}
