package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// variantRun returns a run of experiment exp, variant name at index i.
func variantRun(id, dataset, exp, name string, i int, created time.Time) *evalrun.Run {
	r := testRun(id, dataset, 1, created)
	r.Experiment, r.Variant, r.VariantIndex = exp, name, i
	return r
}

// listIDs returns the ids ListRuns(f) gives, in order, space-separated.
func listIDs(t *testing.T, s evalrun.Store, f evalrun.RunFilter) string {
	t.Helper()
	runs, err := s.ListRuns(t.Context(), f)
	if err != nil {
		t.Fatalf("ListRuns(%+v): %v", f, err)
	}
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	return strings.Join(ids, " ")
}

// testExperimentFieldsRoundTrip: a run's experiment id, variant name and
// index read back through GetRun and ListRuns; a run on its own reads back
// with none; UpdateRun leaves them as created.
func testExperimentFieldsRoundTrip(t *testing.T, s evalrun.Store) {
	v := variantRun("v1", "qa", "exp-20261122T101500-3f9a1c2b", "small model", 2, base)
	mustCreateRun(t, s, v)
	alone := testRun("alone", "qa", 1, base.Add(time.Second))
	mustCreateRun(t, s, alone)
	// A variant name, as a suite may spell it, with NUL and non-ASCII.
	odd := variantRun("v2", "qa", "exp-odd", "gpt \"4o\" / prompt ✓ "+nulText, 0, base.Add(2*time.Second))
	mustCreateRun(t, s, odd)
	for _, want := range []*evalrun.Run{v, alone, odd} {
		got, err := s.GetRun(t.Context(), want.ID)
		if err != nil {
			t.Fatal(err)
		}
		checkRun(t, got, want)
	}
	runs, err := s.ListRuns(t.Context(), evalrun.RunFilter{})
	if err != nil || len(runs) != 3 {
		t.Fatalf("ListRuns = %d runs, %v; want 3", len(runs), err)
	}
	checkRun(t, runs[0], odd)
	checkRun(t, runs[1], alone)
	checkRun(t, runs[2], v)

	// UpdateRun changes the status and counts, never the experiment fields.
	up := *v
	up.Experiment, up.Variant, up.VariantIndex = "exp-other", "renamed", 9
	up.Status, up.Succeeded, up.Concurrency = evalrun.RunCompleted, 10, 4
	if err := s.UpdateRun(t.Context(), &up); err != nil {
		t.Fatal(err)
	}
	want := up
	want.Experiment, want.Variant, want.VariantIndex = v.Experiment, v.Variant, v.VariantIndex
	got, err := s.GetRun(t.Context(), v.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, got, &want)
	// Nor do CancelRun and ClaimRun.
	c, _, err := s.CancelRun(t.Context(), odd.ID, "stop")
	if err != nil || c.Experiment != odd.Experiment || c.Variant != odd.Variant {
		t.Fatalf("CancelRun returned %+v, %v; want the experiment fields kept", c, err)
	}
	c, claimed, err := s.ClaimRun(t.Context(), odd.ID, evalrun.RunClaim{Owner: "me", TTL: time.Hour})
	if err != nil || !claimed || c.Experiment != odd.Experiment || c.Variant != odd.Variant || c.VariantIndex != 0 {
		t.Fatalf("ClaimRun returned %+v, %v, %v; want the experiment fields kept", c, claimed, err)
	}
	if got := listIDs(t, s, evalrun.RunFilter{Experiment: "exp-other"}); got != "" {
		t.Fatalf("runs of the experiment UpdateRun tried to set: %q, want none", got)
	}
}

// testListRunsExperiment: RunFilter.Experiment keeps exactly one
// experiment's runs (not those of an experiment whose id extends or
// prefixes it), InExperiment keeps every experiment's, both combine with
// Dataset and Limit, newest first as always.
func testListRunsExperiment(t *testing.T, s evalrun.Store) {
	at := func(n int) time.Time { return base.Add(time.Duration(n) * time.Second) }
	const a, ab = "exp-a", "exp-ab" // ids prefixes of one another
	for _, r := range []*evalrun.Run{
		variantRun("a0", "qa", a, "base", 0, at(1)),
		variantRun("a1", "qa", a, "big", 1, at(1)), // same instant as a0: id breaks the tie
		variantRun("a2", "other", a, "odd", 2, at(2)),
		variantRun("ab0", "qa", ab, "base", 0, at(3)),
		variantRun("ab1", "qa", ab, "big", 1, at(4)),
		variantRun("x0", "qa", "exp-", "base", 0, at(5)),
		testRun("solo1", "qa", 1, at(6)),
		testRun("solo2", "other", 1, at(7)),
	} {
		mustCreateRun(t, s, r)
	}
	for _, c := range []struct {
		f    evalrun.RunFilter
		want string
	}{
		{evalrun.RunFilter{}, "solo2 solo1 x0 ab1 ab0 a2 a1 a0"},
		{evalrun.RunFilter{Experiment: a}, "a2 a1 a0"},
		{evalrun.RunFilter{Experiment: ab}, "ab1 ab0"},
		{evalrun.RunFilter{Experiment: "exp-"}, "x0"},
		{evalrun.RunFilter{Experiment: "exp"}, ""},
		{evalrun.RunFilter{Experiment: "exp-a%"}, ""},
		{evalrun.RunFilter{Experiment: "exp-a_"}, ""},
		{evalrun.RunFilter{Experiment: "EXP-A"}, ""},
		{evalrun.RunFilter{Experiment: "exp-none"}, ""},
		{evalrun.RunFilter{Experiment: "exp-a" + nulText}, ""},
		{evalrun.RunFilter{Experiment: a, Dataset: "qa"}, "a1 a0"},
		{evalrun.RunFilter{Experiment: a, Dataset: "other"}, "a2"},
		{evalrun.RunFilter{Experiment: ab, Dataset: "other"}, ""},
		{evalrun.RunFilter{Experiment: a, Limit: 2}, "a2 a1"},
		{evalrun.RunFilter{Experiment: a, Dataset: "qa", Limit: 1}, "a1"},
		{evalrun.RunFilter{InExperiment: true}, "x0 ab1 ab0 a2 a1 a0"},
		{evalrun.RunFilter{InExperiment: true, Limit: 3}, "x0 ab1 ab0"},
		{evalrun.RunFilter{InExperiment: true, Dataset: "other"}, "a2"},
		{evalrun.RunFilter{InExperiment: true, Experiment: ab}, "ab1 ab0"},
		{evalrun.RunFilter{Dataset: "other"}, "solo2 a2"},
	} {
		if got := listIDs(t, s, c.f); got != c.want {
			t.Errorf("ListRuns(%+v) = %q, want %q", c.f, got, c.want)
		}
		// The reference semantics agree (the case table is right).
		var all []*evalrun.Run
		all, _ = s.ListRuns(t.Context(), evalrun.RunFilter{})
		var kept []string
		for _, r := range all {
			if c.f.Keeps(r) && (c.f.Limit <= 0 || len(kept) < c.f.Limit) {
				kept = append(kept, r.ID)
			}
		}
		if ref := strings.Join(kept, " "); ref != c.want {
			t.Errorf("RunFilter%+v.Keeps keeps %q, the case wants %q", c.f, ref, c.want)
		}
	}
}

// testGetExperiment: evalrun.GetExperiment over the store gathers an
// experiment's runs in variant order (VariantIndex, not creation order),
// and an unknown id is ErrNotFound.
func testGetExperiment(t *testing.T, s evalrun.Store) {
	const id = "exp-20261122T101500-00000001"
	// Created in an order unlike the variants' order, the baseline last.
	mustCreateRun(t, s, variantRun("r-c", "qa", id, "c", 2, base))
	mustCreateRun(t, s, variantRun("r-b", "qa", id, "b", 1, base.Add(time.Second)))
	mustCreateRun(t, s, variantRun("r-a", "qa", id, "baseline", 0, base.Add(2*time.Second)))
	mustCreateRun(t, s, variantRun("r-other", "qa", id+"0", "baseline", 0, base.Add(3*time.Second)))
	mustCreateRun(t, s, testRun("r-solo", "qa", 1, base.Add(4*time.Second)))
	exp, err := evalrun.GetExperiment(t.Context(), s, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(exp.Variants(), " "); got != "baseline b c" {
		t.Fatalf("experiment variants = %q, want %q", got, "baseline b c")
	}
	if exp.ID != id || exp.Baseline().ID != "r-a" || exp.Dataset != "qa" || exp.DatasetVersion != 1 {
		t.Fatalf("experiment = %+v (baseline %s)", exp, exp.Baseline().ID)
	}
	checkTime(t, "experiment CreatedAt (its first run's)", exp.CreatedAt, base)
	for _, missing := range []string{"exp-missing", "r-solo", ""} {
		if _, err := evalrun.GetExperiment(t.Context(), s, missing); !errors.Is(err, evalrun.ErrNotFound) {
			t.Fatalf("GetExperiment(%q): %v, want ErrNotFound", missing, err)
		}
	}
}

// MigratedExperimentFields checks a store opened on a database that was
// left at schema version 5 (before experiments) with the run runID in it:
// it reads back as a run on its own (no experiment, variant or index),
// through GetRun and ListRuns, no experiment lists it, UpdateRun works, and
// runs of an experiment can be created beside it. s is not closed.
func MigratedExperimentFields(t *testing.T, s evalrun.Store, runID string) {
	t.Helper()
	ctx := t.Context()
	old, err := s.GetRun(ctx, runID)
	if err != nil {
		t.Fatalf("run stored before the migration: %v", err)
	}
	if old.Experiment != "" || old.Variant != "" || old.VariantIndex != 0 {
		t.Fatalf("run stored before the migration reads back in an experiment: %+v", old)
	}
	if got := listIDs(t, s, evalrun.RunFilter{InExperiment: true}); got != "" {
		t.Fatalf("runs in an experiment after the migration: %q, want none", got)
	}
	if got := listIDs(t, s, evalrun.RunFilter{}); got != runID {
		t.Fatalf("runs after the migration: %q, want %q", got, runID)
	}
	old.Status = evalrun.RunFailed
	if err := s.UpdateRun(ctx, old); err != nil {
		t.Fatal(err)
	}
	v := variantRun("new", old.Dataset, "exp-new", "big", 1, time.Now())
	mustCreateRun(t, s, v)
	if got := listIDs(t, s, evalrun.RunFilter{InExperiment: true}); got != "new" {
		t.Fatalf("runs in an experiment = %q, want %q", got, "new")
	}
	got, err := s.GetRun(ctx, "new")
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, got, v)
	if got, err := s.GetRun(ctx, runID); err != nil || got.Status != evalrun.RunFailed || got.Experiment != "" {
		t.Fatalf("old run after UpdateRun: %+v, %v", got, err)
	}
	if _, err := evalrun.GetExperiment(ctx, s, "exp-new"); err != nil {
		t.Fatal(fmt.Errorf("GetExperiment after the migration: %w", err))
	}
}
