package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// MigratedRun checks a store opened on a database that was left at schema
// version 1 with the run runID in it (stored before the later migrations
// added the concurrency, the response cache and the stored reports): the
// run reads back with concurrency 0 and completed, UpdateRun stores a
// concurrency, and the response cache and the report store work, also for
// that run. s must implement [evalrun.ResponseCache] and
// [evalrun.ReportStore]; it is not closed.
func MigratedRun(t *testing.T, s evalrun.Store, runID string) {
	t.Helper()
	ctx := context.Background()
	old, err := s.GetRun(ctx, runID)
	if err != nil || old.Concurrency != 0 || old.Status != evalrun.RunCompleted {
		t.Fatalf("run stored before the migration: %+v, %v", old, err)
	}
	old.Concurrency = 6
	if err := s.UpdateRun(ctx, old); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetRun(ctx, runID); got == nil || got.Concurrency != 6 {
		t.Fatalf("concurrency after UpdateRun = %+v, want 6", got)
	}
	c := responseCache(t, s)
	if err := c.PutCached(ctx, "k", []byte("v"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := c.GetCached(ctx, "k"); err != nil || !ok || string(v) != "v" {
		t.Fatalf("GetCached after the migration = %q, %v, %v", v, ok, err)
	}
	rs := reportStore(t, s)
	report := `{"run":{"id":"` + runID + `"}}`
	if err := rs.PutReportJSON(ctx, runID, []byte(report)); err != nil {
		t.Fatalf("PutReportJSON of a run stored before the migration: %v", err)
	}
	if v, err := rs.GetReportJSON(ctx, runID); err != nil || string(v) != report {
		t.Fatalf("GetReportJSON after the migration = %q, %v", v, err)
	}
}

// MigratedAgents checks a store opened on a database that was left at
// schema version 4 (before agents) holding the dataset "old" (version 1,
// one item "a") and the run runID on it with a result at index 0: the item
// reads back without tool mocks or expected trajectory, the result without
// a trajectory, and the migrated tables take the new values (a version
// adding mocks, a result with a trajectory). s is not closed.
func MigratedAgents(t *testing.T, s evalrun.Store, runID string) {
	t.Helper()
	ctx := context.Background()
	items := scanAll(t, s, "old", 1)
	if len(items) != 1 || items[0].ID != "a" || items[0].ToolMocks != nil || items[0].ExpectedTrajectory != nil {
		t.Fatalf("item stored before the migration: %+v", items)
	}
	res := scanResults(t, s, runID, evalrun.ResultQuery{})
	if len(res) != 1 || res[0].Trajectory != nil || res[0].Item == nil || res[0].Item.ToolMocks != nil {
		t.Fatalf("result stored before the migration: %+v", res)
	}
	// The same item without agent keys is no change (its hash did not move).
	same := &evalrun.Item{ID: "a", Input: items[0].Input, Expected: items[0].Expected}
	if _, created, err := s.ImportDataset(ctx, "old", []*evalrun.Item{same}); err != nil || created {
		t.Fatalf("re-import of the unchanged item after the migration: created %v, %v", created, err)
	}
	withMocks := *same
	withMocks.ToolMocks = []evalrun.ToolMock{{Name: "t", Output: []byte(`1`)}}
	v, created, err := s.ImportDataset(ctx, "old", []*evalrun.Item{&withMocks})
	if err != nil || !created || v.Changed != 1 {
		t.Fatalf("import with mocks after the migration: %+v, %v, %v", v, created, err)
	}
	diffItems(t, scanAll(t, s, "old", 0), []*evalrun.Item{&withMocks})
	r := res[0]
	r.Item = nil
	r.Trajectory = &evalrun.Trajectory{Steps: 1}
	mustWrite(t, s, r)
	if got := scanResults(t, s, runID, evalrun.ResultQuery{}); len(got) != 1 || got[0].Trajectory == nil || got[0].Trajectory.Steps != 1 {
		t.Fatalf("result rewritten with a trajectory after the migration: %+v", got)
	}
}
