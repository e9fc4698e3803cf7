package report

import (
	"fmt"
	"slices"
	"testing"

	"github.com/evalrun/evalrun"
)

// An item's tags become its cohorts once each, in their first order,
// trimmed, empty ones dropped, whatever their number: an item of 300,000
// tags (a 10 MB line, within the dataset limits) took minutes per result
// when each tag was looked up among the ones kept before it.
func TestTagsOfManyTags(t *testing.T) {
	const n = 300_000
	raw := make([]any, 0, 2*n+2)
	for i := range n {
		raw = append(raw, fmt.Sprintf("t%d", i))
	}
	for i := n - 1; i >= 0; i-- {
		raw = append(raw, fmt.Sprintf(" t%d ", i)) // repeats, padded
	}
	raw = append(raw, "", "  ")
	got := tagsOf(&evalrun.Item{Metadata: map[string]any{"tags": raw}})
	if len(got) != n {
		t.Fatalf("%d tags, want %d", len(got), n)
	}
	for _, i := range []int{0, 1, n / 2, n - 1} {
		if want := fmt.Sprintf("t%d", i); got[i] != want {
			t.Errorf("tag %d is %q, want %q", i, got[i], want)
		}
	}
	if small := tagsOf(&evalrun.Item{Metadata: map[string]any{"tags": []any{" b", "a", "b ", "", "a"}}}); !slices.Equal(small, []string{"b", "a"}) {
		t.Errorf("tags %q, want [b a]", small)
	}
}
