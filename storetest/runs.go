package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// base is a fixed instant with nanoseconds, so that precision loss shows.
var base = time.Date(2026, 11, 22, 10, 15, 0, 123456789, time.FixedZone("CET", 3600))

func testRun(id, dataset string, version int, created time.Time) *evalrun.Run {
	return &evalrun.Run{
		ID:             id,
		Name:           "nightly " + id,
		Dataset:        dataset,
		DatasetVersion: version,
		Target:         evalrun.TargetInfo{Kind: "openai", Name: "gpt-x"},
		Scorers: []evalrun.ScorerInfo{
			{Name: "exact", Kind: "exact_match", Threshold: 1},
			{Name: "judge", Kind: "llm_judge", Threshold: 0.7},
		},
		Config:    json.RawMessage(`{"concurrency": 8, "target": {"model":"gpt-x"}}`),
		Status:    evalrun.RunPending,
		Total:     10,
		CreatedAt: created,
	}
}

func mustCreateRun(t *testing.T, s evalrun.Store, r *evalrun.Run) {
	t.Helper()
	if err := s.CreateRun(t.Context(), r); err != nil {
		t.Fatalf("CreateRun(%q): %v", r.ID, err)
	}
}

func checkRun(t *testing.T, got, want *evalrun.Run) {
	t.Helper()
	if got.ID != want.ID || got.Name != want.Name || got.Dataset != want.Dataset || got.DatasetVersion != want.DatasetVersion ||
		got.Target != want.Target || got.Status != want.Status || got.Total != want.Total || got.Succeeded != want.Succeeded ||
		got.Failed != want.Failed || got.Skipped != want.Skipped || got.PersistErrors != want.PersistErrors || got.Error != want.Error ||
		got.Concurrency != want.Concurrency || got.Experiment != want.Experiment || got.Variant != want.Variant ||
		got.VariantIndex != want.VariantIndex {
		t.Fatalf("run:\n got  %+v\n want %+v", got, want)
	}
	if !equalRaw(got.Config, want.Config) {
		t.Fatalf("run config = %q, want %q byte for byte", got.Config, want.Config)
	}
	if len(got.Scorers) != len(want.Scorers) {
		t.Fatalf("run scorers = %+v, want %+v", got.Scorers, want.Scorers)
	}
	for i := range want.Scorers {
		if got.Scorers[i] != want.Scorers[i] {
			t.Fatalf("run scorer %d = %+v, want %+v", i, got.Scorers[i], want.Scorers[i])
		}
	}
	checkTime(t, "run CreatedAt", got.CreatedAt, want.CreatedAt)
	checkTime(t, "run StartedAt", got.StartedAt, want.StartedAt)
	checkTime(t, "run CompletedAt", got.CompletedAt, want.CompletedAt)
}

func testRunRoundTrip(t *testing.T, s evalrun.Store) {
	r := testRun("r1", "qa", 3, base)
	mustCreateRun(t, s, r)
	got, err := s.GetRun(t.Context(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, got, r)

	// A run with the fewest fields set.
	min := &evalrun.Run{ID: "r2", Status: evalrun.RunPending, CreatedAt: base}
	mustCreateRun(t, s, min)
	got, err = s.GetRun(t.Context(), "r2")
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, got, min)
	if got.Config != nil || len(got.Scorers) != 0 {
		t.Fatalf("minimal run came back with config %q and scorers %v", got.Config, got.Scorers)
	}

	// A zero CreatedAt is set by the store.
	before := time.Now().Add(-time.Second)
	mustCreateRun(t, s, &evalrun.Run{ID: "r3", Status: evalrun.RunPending})
	got, err = s.GetRun(t.Context(), "r3")
	if err != nil {
		t.Fatal(err)
	}
	if got.CreatedAt.Before(before) || got.CreatedAt.Location() != time.UTC {
		t.Fatalf("CreatedAt of a run created without one = %v, want now in UTC", got.CreatedAt)
	}
}

func testCreateRunInvalid(t *testing.T, s evalrun.Store) {
	r := testRun("r1", "qa", 1, base)
	mustCreateRun(t, s, r)
	dup := testRun("r1", "other", 2, base)
	wantErr(t, "CreateRun of an existing id", s.CreateRun(t.Context(), dup), evalrun.ErrInvalid)
	wantErr(t, "CreateRun without id", s.CreateRun(t.Context(), &evalrun.Run{Status: evalrun.RunPending}), evalrun.ErrInvalid)
	got, err := s.GetRun(t.Context(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, got, r)
}

func testUpdateRun(t *testing.T, s evalrun.Store) {
	r := testRun("r1", "qa", 1, base)
	mustCreateRun(t, s, r)
	up := *r
	up.Name = "renamed, ignored"
	up.Dataset = "other, ignored"
	up.Status = evalrun.RunCompleted
	up.Total, up.Succeeded, up.Failed, up.Skipped, up.PersistErrors = 10, 7, 2, 1, 3
	up.Concurrency = 5
	up.Error = "boom"
	up.StartedAt = base.Add(time.Second)
	up.CompletedAt = base.Add(time.Minute)
	if err := s.UpdateRun(t.Context(), &up); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetRun(t.Context(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	want := up
	want.Name, want.Dataset = r.Name, r.Dataset
	checkRun(t, got, &want)

	// Timestamps and the error can be cleared again.
	up.Error, up.CompletedAt, up.Status = "", time.Time{}, evalrun.RunRunning
	if err := s.UpdateRun(t.Context(), &up); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetRun(t.Context(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	want.Error, want.CompletedAt, want.Status = "", time.Time{}, evalrun.RunRunning
	checkRun(t, got, &want)
}

func testListRuns(t *testing.T, s evalrun.Store) {
	runs, err := s.ListRuns(t.Context(), evalrun.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 0 {
		t.Fatalf("empty store lists %d runs", len(runs))
	}
	// Created out of order; r5 is the newest.
	for i, n := range []int{3, 1, 5, 2, 4} {
		ds := "qa"
		if n%2 == 0 {
			ds = "other"
		}
		mustCreateRun(t, s, testRun(fmt.Sprintf("r%d", n), ds, i+1, base.Add(time.Duration(n)*time.Second)))
	}
	ids := func(f evalrun.RunFilter) string {
		t.Helper()
		runs, err := s.ListRuns(t.Context(), f)
		if err != nil {
			t.Fatal(err)
		}
		out := ""
		for _, r := range runs {
			out += r.ID + " "
		}
		return out
	}
	for _, c := range []struct {
		f    evalrun.RunFilter
		want string
	}{
		{evalrun.RunFilter{}, "r5 r4 r3 r2 r1 "},
		{evalrun.RunFilter{Limit: 2}, "r5 r4 "},
		{evalrun.RunFilter{Dataset: "qa"}, "r5 r3 r1 "},
		{evalrun.RunFilter{Dataset: "other", Limit: 1}, "r4 "},
		{evalrun.RunFilter{Dataset: "none"}, ""},
	} {
		if got := ids(c.f); got != c.want {
			t.Fatalf("ListRuns(%+v) = %q, want %q", c.f, got, c.want)
		}
	}
	runs, err = s.ListRuns(t.Context(), evalrun.RunFilter{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, runs[0], testRun("r5", "qa", 3, base.Add(5*time.Second)))
}
