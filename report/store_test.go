package report

import (
	"context"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/inmem"
	"github.com/google/go-cmp/cmp"
)

// TestFromStoreInmem rebuilds the fixture's report through a real store:
// the same report as from memory (results written out of order, items
// filled by the store).
func TestFromStoreInmem(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	t.Cleanup(func() { st.Close() })
	rs := fixtureResults()
	items := make([]*evalrun.Item, len(rs))
	for i, r := range rs {
		items[i] = r.Item
	}
	if _, _, err := st.ImportDataset(ctx, "support", items); err != nil {
		t.Fatal(err)
	}
	run := fixtureRun()
	run.DatasetVersion = 1
	if err := st.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	// Written in two batches, the second first.
	stored := fixtureResults()
	for _, r := range stored {
		r.Item = nil
	}
	if err := st.WriteResults(ctx, stored[3:]); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteResults(ctx, stored[:3]); err != nil {
		t.Fatal(err)
	}
	got, err := FromStore(ctx, st, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := Build(run, rs)
	if diff := cmp.Diff(want, got, cmp.Comparer(sameJSON)); diff != "" {
		t.Errorf("report from the store differs (-memory +store):\n%s", diff)
	}
}
