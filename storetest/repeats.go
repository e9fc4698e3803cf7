package storetest

import (
	"testing"

	"github.com/evalrun/evalrun"
)

func testRepeatsDistinct(t *testing.T, s evalrun.Store) {
	setupRun(t, s, 5)
	// Repeats 0..2 of item 3 written out of order, in two batches, with
	// neighbours on both sides.
	mustWrite(t, s, result("run-1", 3, 2), result("run-1", 4, 0))
	mustWrite(t, s, result("run-1", 3, 0), result("run-1", 1, 0), result("run-1", 3, 1))
	got := scanResults(t, s, "run-1", evalrun.ResultQuery{})
	if keysOf(got) != "1/0 3/0 3/1 3/2 4/0 " {
		t.Fatalf("results = %s, want 1/0 3/0 3/1 3/2 4/0", keysOf(got))
	}
	for i, rep := range []int{0, 1, 2} {
		r := got[1+i]
		checkResult(t, r, result("run-1", 3, rep))
		if r.Item == nil || r.Item.ID != "item-0003" {
			t.Fatalf("result 3/%d item = %+v, want item-0003", rep, r.Item)
		}
	}

	// Rewriting (3, 1) replaces that row only.
	mustWrite(t, s, failed("run-1", 3, 1))
	got = scanResults(t, s, "run-1", evalrun.ResultQuery{})
	if keysOf(got) != "1/0 3/0 3/1 3/2 4/0 " {
		t.Fatalf("results after rewriting 3/1 = %s", keysOf(got))
	}
	checkResult(t, got[1], result("run-1", 3, 0))
	checkResult(t, got[2], failed("run-1", 3, 1))
	checkResult(t, got[3], result("run-1", 3, 2))
	var keys []evalrun.ResultKey
	if err := s.ScanResultKeys(t.Context(), "run-1", func(k evalrun.ResultKey) error {
		if k.Index == 3 {
			keys = append(keys, k)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []evalrun.ResultKey{{Index: 3}, {Index: 3, Repeat: 1, Failed: true}, {Index: 3, Repeat: 2}}
	if len(keys) != len(want) || keys[0] != want[0] || keys[1] != want[1] || keys[2] != want[2] {
		t.Fatalf("keys of item 3 = %v, want %v", keys, want)
	}
	// Paging by index keeps an item's repeats together and in order.
	if got := keysOf(scanResults(t, s, "run-1", evalrun.ResultQuery{FromIndex: 2, Limit: 3})); got != "3/0 3/1 3/2 " {
		t.Fatalf("ScanResults(FromIndex 2, Limit 3) = %q", got)
	}
}

func testCacheHitRoundTrip(t *testing.T, s evalrun.Store) {
	setupRun(t, s, 3)
	hit := result("run-1", 0, 0)
	hit.CacheHit = true
	miss := result("run-1", 0, 1)
	hitRepeat := result("run-1", 0, 2)
	hitRepeat.CacheHit = true
	mustWrite(t, s, hit, miss, hitRepeat)
	got := scanResults(t, s, "run-1", evalrun.ResultQuery{})
	if len(got) != 3 || !got[0].CacheHit || got[1].CacheHit || !got[2].CacheHit {
		t.Fatalf("cache hits read back = %v, want [true false true]", cacheHits(got))
	}
	checkResult(t, got[0], hit)
	checkResult(t, got[1], miss)
	// A rewrite flips it both ways.
	hit.CacheHit, miss.CacheHit = false, true
	mustWrite(t, s, hit, miss)
	got = scanResults(t, s, "run-1", evalrun.ResultQuery{})
	if got[0].CacheHit || !got[1].CacheHit || !got[2].CacheHit {
		t.Fatalf("cache hits after rewrite = %v, want [false true true]", cacheHits(got))
	}
}

func cacheHits(rs []*evalrun.ItemResult) []bool {
	out := make([]bool, len(rs))
	for i, r := range rs {
		out[i] = r.CacheHit
	}
	return out
}

func testRunConcurrency(t *testing.T, s evalrun.Store) {
	r := testRun("r1", "qa", 1, base)
	mustCreateRun(t, s, r)
	got, err := s.GetRun(t.Context(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Concurrency != 0 {
		t.Fatalf("Concurrency of a new run = %d, want 0", got.Concurrency)
	}
	// The engine sets the settled concurrency when the run ends.
	r.Status, r.Concurrency = evalrun.RunCompleted, 7
	if err := s.UpdateRun(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetRun(t.Context(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Concurrency != 7 {
		t.Fatalf("Concurrency after UpdateRun = %d, want 7", got.Concurrency)
	}
	// Set at creation, it reads back, also through ListRuns.
	r2 := testRun("r2", "qa", 1, base.Add(1))
	r2.Concurrency = 32
	mustCreateRun(t, s, r2)
	runs, err := s.ListRuns(t.Context(), evalrun.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	conc := map[string]int{}
	for _, x := range runs {
		conc[x.ID] = x.Concurrency
	}
	if len(conc) != 2 || conc["r1"] != 7 || conc["r2"] != 32 {
		t.Fatalf("ListRuns concurrency = %v, want r1:7 r2:32", conc)
	}
}
