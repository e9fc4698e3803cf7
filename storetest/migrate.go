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
