package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/evalrun/evalrun"
)

// testScanResultsScores: every result gets exactly its own scores, in the
// run's scorer order (unknown scorers last, as written), whatever its
// neighbours have: no scores, fewer, more, scores on a failed result; with
// repeats, and under every kind of query.
func testScanResultsScores(t *testing.T, s evalrun.Store) {
	setupRun(t, s, 12)
	var all []*evalrun.ItemResult
	for i := range 12 {
		for rep := range 2 {
			r := result("run-1", i, rep)
			switch (i + rep) % 6 {
			case 0: // no scores
				r.Scores = nil
			case 1: // one score
				r.Scores = r.Scores[1:]
			case 2: // an unknown scorer written first, then the run's in reverse order
				r.Scores = []evalrun.ScorerResult{
					{Scorer: "zz-extra", Score: evalrun.Float64(float64(i)), Reason: fmt.Sprintf("extra %d/%d", i, rep)},
					r.Scores[1], r.Scores[0],
				}
			case 3: // a failed target, with a scorer error recorded anyway
				r = failed("run-1", i, rep)
				r.Scores = []evalrun.ScorerResult{{Scorer: "judge", Error: "judge down", ErrorKind: evalrun.ErrorTransient}}
			case 4: // a failed target, no scores
				r = failed("run-1", i, rep)
			}
			r.Output = evalrun.String(fmt.Sprintf("output %d/%d", i, rep))
			if r.Failed() {
				r.Output = nil
			}
			all = append(all, r)
		}
	}
	// Written in reverse, in two batches.
	rev := slices.Clone(all)
	slices.Reverse(rev)
	mustWrite(t, s, rev[:9]...)
	mustWrite(t, s, rev[9:]...)
	want := func(r *evalrun.ItemResult) *evalrun.ItemResult {
		c := copyResult(r)
		if len(c.Scores) == 3 && c.Scores[0].Scorer == "zz-extra" {
			c.Scores = []evalrun.ScorerResult{c.Scores[2], c.Scores[1], c.Scores[0]}
		}
		return c
	}
	for _, q := range []evalrun.ResultQuery{
		{},
		{FromIndex: 5},
		{FromIndex: 3, Limit: 5},
		{Limit: 1},
		{FailedOnly: true},
		{FailedOnly: true, FromIndex: 4, Limit: 3},
		{FromIndex: 11, Limit: 10},
	} {
		var exp []*evalrun.ItemResult
		for _, r := range all {
			if r.Index < q.FromIndex || q.FailedOnly && !r.Failed() || q.Limit > 0 && len(exp) == q.Limit {
				continue
			}
			exp = append(exp, want(r))
		}
		got := scanResults(t, s, "run-1", q)
		if keysOf(got) != keysOf(exp) {
			t.Fatalf("ScanResults(%+v) = %s, want %s", q, keysOf(got), keysOf(exp))
		}
		for i := range exp {
			checkResult(t, got[i], exp[i])
			if got[i].Item == nil || got[i].Item.ID != exp[i].ItemID {
				t.Fatalf("ScanResults(%+v): result %d/%d item = %v, want %q", q, got[i].Index, got[i].Repeat, got[i].Item, exp[i].ItemID)
			}
		}
	}
}

// testScanResultsLong: a scan of more results than a store reads at a time
// gives them all, in order, each complete; a scan stopped by fn or by its
// context midway stops at once, and leaves the store fully usable (a write
// after it is seen by the next scan).
func testScanResultsLong(t *testing.T, s evalrun.Store) {
	const n = 1100
	setupRun(t, s, n)
	batch := make([]*evalrun.ItemResult, 0, n)
	for i := range n {
		if i%97 == 5 {
			batch = append(batch, failed("run-1", i, 0))
		} else {
			batch = append(batch, result("run-1", i, 0))
		}
	}
	mustWrite(t, s, batch...)
	got := scanResults(t, s, "run-1", evalrun.ResultQuery{})
	if len(got) != n {
		t.Fatalf("ScanResults gave %d results, want %d", len(got), n)
	}
	for i, r := range got {
		checkResult(t, r, batch[i])
		if r.Item == nil || string(r.Item.Input) != fmt.Sprintf(`"question %d"`, i) {
			t.Fatalf("result %d: item %v", i, r.Item)
		}
	}

	stop := errors.New("stop")
	calls := 0
	err := s.ScanResults(t.Context(), "run-1", evalrun.ResultQuery{}, func(r *evalrun.ItemResult) error {
		if calls++; calls == 300 {
			return stop
		}
		return nil
	})
	wantErr(t, "ScanResults stopped by fn", err, stop)
	if calls != 300 {
		t.Fatalf("fn called %d times after returning an error at 300", calls)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	calls = 0
	err = s.ScanResults(ctx, "run-1", evalrun.ResultQuery{}, func(r *evalrun.ItemResult) error {
		if calls++; calls == 400 {
			cancel()
		}
		return nil
	})
	wantErr(t, "ScanResults with its context canceled", err, context.Canceled)
	if calls != 400 {
		t.Fatalf("fn called %d times, want 400 (none after its context was canceled)", calls)
	}

	// Many stopped scans in a row (more than a store's pooled connections)
	// leave nothing held.
	for range 10 {
		err := s.ScanResults(t.Context(), "run-1", evalrun.ResultQuery{}, func(*evalrun.ItemResult) error { return stop })
		wantErr(t, "ScanResults stopped at the first result", err, stop)
	}
	mustWrite(t, s, result("run-1", n, 0))
	if got := scanResults(t, s, "run-1", evalrun.ResultQuery{FromIndex: n - 1}); keysOf(got) != fmt.Sprintf("%d/0 %d/0 ", n-1, n) {
		t.Fatalf("after stopped scans and a write, ScanResults from %d = %s", n-1, keysOf(got))
	}
}
