package suite

import (
	"testing"

	"github.com/evalrun/evalrun"
)

func unwrapTarget(t evalrun.Target) evalrun.Target {
	if st, ok := t.(scrubbedTarget); ok {
		return st.t
	}
	return t
}

// Every variant's target is closed by the suite exactly once: a variant
// without overrides shares the suite's target, the others are each in
// the suite's closers once; views own nothing, except the view
// FromRunConfig returns.
func TestVariantClosers(t *testing.T) {
	src := []byte(`dataset: {name: d}
target: {kind: http, url: "http://127.0.0.1:1/x"}
variants:
  - name: a
  - name: b
    target: {url: "http://127.0.0.1:1/b"}
  - name: c
    target: {method: PUT}
scorers: [exact_match]
`)
	s, err := Parse(src, "suite.yaml", t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	count := map[evalrun.Target]int{}
	for _, c := range s.closers {
		if tg, ok := c.(evalrun.Target); ok {
			count[tg]++
		}
	}
	if len(s.closers) != 3 || count[unwrapTarget(s.target)] != 1 {
		t.Fatalf("closers %d, suite target %d times", len(s.closers), count[unwrapTarget(s.target)])
	}
	vs := s.Variants()
	if unwrapTarget(vs[0].target) != unwrapTarget(s.target) {
		t.Error("a variant without overrides does not share the suite's target")
	}
	for _, v := range vs[1:] {
		if count[unwrapTarget(v.target)] != 1 {
			t.Errorf("variant %s's target is in the closers %d times", v.Name, count[unwrapTarget(v.target)])
		}
	}
	b, err := s.ForVariant("b")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil || len(s.closers) != 3 {
		t.Errorf("closing a view: %v, the suite has %d closers left", err, len(s.closers))
	}
	rc, err := b.RunConfig()
	if err != nil {
		t.Fatal(err)
	}
	back, err := FromRunConfig(rc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if back.variant != "b" || len(back.closers) != 3 {
		t.Errorf("rebuilt view %q owns %d closers", back.variant, len(back.closers))
	}
	if err := back.Close(); err != nil || back.closers != nil {
		t.Errorf("closing the rebuilt view: %v", err)
	}
	if err := s.Close(); err != nil || s.closers != nil {
		t.Errorf("closing the suite: %v", err)
	}
}
