package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// result returns a successful result with one score per scorer of testRun,
// in the run's order.
func result(runID string, index, repeat int) *evalrun.ItemResult {
	started := base.Add(time.Duration(index) * time.Second)
	return &evalrun.ItemResult{
		RunID:       runID,
		Index:       index,
		Repeat:      repeat,
		ItemID:      fmt.Sprintf("item-%04d", index),
		Output:      evalrun.String(fmt.Sprintf("output %d/%d", index, repeat)),
		Attempts:    1,
		Latency:     1234567 * time.Nanosecond,
		StartedAt:   started,
		CompletedAt: started.Add(1234567 * time.Nanosecond),
		Scores: []evalrun.ScorerResult{
			{Scorer: "exact", Score: evalrun.Float64(1), Passed: true},
			{Scorer: "judge", Score: evalrun.Float64(0.25), Reason: "meh", Usage: evalrun.Usage{InputTokens: evalrun.Int64(100)}},
		},
	}
}

func failed(runID string, index, repeat int) *evalrun.ItemResult {
	r := result(runID, index, repeat)
	r.Output, r.Scores = nil, nil
	r.Error, r.ErrorKind, r.Attempts, r.RetryCount = "HTTP 500: boom", evalrun.ErrorTransient, 3, 2
	return r
}

func mustWrite(t *testing.T, s evalrun.Store, rs ...*evalrun.ItemResult) {
	t.Helper()
	if err := s.WriteResults(t.Context(), rs); err != nil {
		t.Fatalf("WriteResults(%d results): %v", len(rs), err)
	}
}

func scanResults(t *testing.T, s evalrun.Store, runID string, q evalrun.ResultQuery) []*evalrun.ItemResult {
	t.Helper()
	var out []*evalrun.ItemResult
	if err := s.ScanResults(t.Context(), runID, q, func(r *evalrun.ItemResult) error {
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatalf("ScanResults(%q, %+v): %v", runID, q, err)
	}
	return out
}

func keysOf(rs []*evalrun.ItemResult) string {
	out := ""
	for _, r := range rs {
		out += fmt.Sprintf("%d/%d ", r.Index, r.Repeat)
	}
	return out
}

func eqIntPtr(a, b *int64) bool     { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
func eqFloatPtr(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
func eqUsage(a, b evalrun.Usage) bool {
	return eqIntPtr(a.InputTokens, b.InputTokens) && eqIntPtr(a.OutputTokens, b.OutputTokens) && eqFloatPtr(a.CostUSD, b.CostUSD)
}

func showUsage(u evalrun.Usage) string {
	b, _ := json.Marshal(u)
	return string(b)
}

// checkResult compares every stored field of a result (not Item).
func checkResult(t *testing.T, got, want *evalrun.ItemResult) {
	t.Helper()
	if got.RunID != want.RunID || got.Index != want.Index || got.Repeat != want.Repeat || got.ItemID != want.ItemID ||
		got.Error != want.Error || got.ErrorKind != want.ErrorKind || got.Attempts != want.Attempts ||
		got.RetryCount != want.RetryCount || got.Latency != want.Latency || got.TraceID != want.TraceID || got.CacheHit != want.CacheHit {
		t.Fatalf("result:\n got  %+v\n want %+v", got, want)
	}
	if !equalRaw(got.Output, want.Output) {
		t.Fatalf("result %d/%d output = %q (nil=%v), want %q (nil=%v)", got.Index, got.Repeat, got.Output, got.Output == nil, want.Output, want.Output == nil)
	}
	if !eqUsage(got.Usage, want.Usage) {
		t.Fatalf("result %d/%d usage = %s, want %s", got.Index, got.Repeat, showUsage(got.Usage), showUsage(want.Usage))
	}
	checkTrajectory(t, fmt.Sprintf("result %d/%d", got.Index, got.Repeat), got.Trajectory, want.Trajectory)
	checkTime(t, "result StartedAt", got.StartedAt, want.StartedAt)
	checkTime(t, "result CompletedAt", got.CompletedAt, want.CompletedAt)
	if len(got.Scores) != len(want.Scores) {
		t.Fatalf("result %d/%d has %d scores, want %d: %+v", got.Index, got.Repeat, len(got.Scores), len(want.Scores), got.Scores)
	}
	for i := range want.Scores {
		g, w := got.Scores[i], want.Scores[i]
		if g.Scorer != w.Scorer || !eqFloatPtr(g.Score, w.Score) || g.Passed != w.Passed || g.Reason != w.Reason ||
			g.Error != w.Error || g.ErrorKind != w.ErrorKind || !eqUsage(g.Usage, w.Usage) {
			t.Fatalf("result %d/%d score %d:\n got  %+v (usage %s)\n want %+v (usage %s)", got.Index, got.Repeat, i, g, showUsage(g.Usage), w, showUsage(w.Usage))
		}
	}
}

func setupRun(t *testing.T, s evalrun.Store, items int) *evalrun.Run {
	t.Helper()
	mustImport(t, s, "qa", makeItems(items))
	r := testRun("run-1", "qa", 1, base)
	mustCreateRun(t, s, r)
	return r
}

func testWriteAndScanResults(t *testing.T, s evalrun.Store) {
	setupRun(t, s, 10)
	var want []*evalrun.ItemResult
	for i := range 10 {
		for rep := range 2 {
			if i == 3 {
				want = append(want, failed("run-1", i, rep))
			} else {
				want = append(want, result("run-1", i, rep))
			}
		}
	}
	// Written shuffled, in three batches, scores in reverse scorer order.
	shuffled := make([]*evalrun.ItemResult, len(want))
	copy(shuffled, want)
	rand.New(rand.NewPCG(7, 7)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	batches := [][]*evalrun.ItemResult{shuffled[:5], shuffled[5:6], shuffled[6:]}
	for _, b := range batches {
		rev := make([]*evalrun.ItemResult, len(b))
		for i, r := range b {
			c := copyResult(r)
			for x, y := 0, len(c.Scores)-1; x < y; x, y = x+1, y-1 {
				c.Scores[x], c.Scores[y] = c.Scores[y], c.Scores[x]
			}
			rev[i] = c
		}
		mustWrite(t, s, rev...)
	}
	got := scanResults(t, s, "run-1", evalrun.ResultQuery{})
	if len(got) != len(want) {
		t.Fatalf("ScanResults gave %d results, want %d: %s", len(got), len(want), keysOf(got))
	}
	for i := range want {
		checkResult(t, got[i], want[i])
		if got[i].Item == nil || got[i].Item.ID != want[i].ItemID {
			t.Fatalf("result %d/%d item = %v, want item %q", got[i].Index, got[i].Repeat, got[i].Item, want[i].ItemID)
		}
		if string(got[i].Item.Input) != fmt.Sprintf(`"question %d"`, got[i].Index) {
			t.Fatalf("result %d item input = %s", got[i].Index, got[i].Item.Input)
		}
	}
}

func copyResult(r *evalrun.ItemResult) *evalrun.ItemResult {
	c := *r
	c.Scores = append([]evalrun.ScorerResult(nil), r.Scores...)
	return &c
}

// testResultItemPinned: a result's Item is the item of the run's pinned
// version, not of the latest.
func testResultItemPinned(t *testing.T, s evalrun.Store) {
	setupRun(t, s, 3)
	changed := makeItems(3)
	changed[1].Input = evalrun.String("rewritten question")
	if _, created := mustImport(t, s, "qa", changed); !created {
		t.Fatal("changed import created no version")
	}
	r2 := testRun("run-2", "qa", 2, base.Add(time.Hour))
	mustCreateRun(t, s, r2)
	mustWrite(t, s, result("run-1", 1, 0), result("run-2", 1, 0))
	got := scanResults(t, s, "run-1", evalrun.ResultQuery{})
	if len(got) != 1 || got[0].Item == nil || string(got[0].Item.Input) != `"question 1"` || string(got[0].Item.Expected) != `"answer 1"` {
		t.Fatalf("run pinned to version 1: item = %+v", got[0].Item)
	}
	got = scanResults(t, s, "run-2", evalrun.ResultQuery{})
	if len(got) != 1 || got[0].Item == nil || string(got[0].Item.Input) != `"rewritten question"` {
		t.Fatalf("run pinned to version 2: item = %+v", got[0].Item)
	}

	// A result whose item is not in the dataset has no Item.
	orphan := result("run-1", 7, 0)
	orphan.ItemID = "not-in-dataset"
	mustWrite(t, s, orphan)
	got = scanResults(t, s, "run-1", evalrun.ResultQuery{FromIndex: 7})
	if len(got) != 1 || got[0].Item != nil {
		t.Fatalf("result of an unknown item: %d results, item %+v; want Item nil", len(got), got)
	}
}

func testWriteResultsReplaces(t *testing.T, s evalrun.Store) {
	setupRun(t, s, 5)
	mustWrite(t, s, result("run-1", 0, 0), result("run-1", 1, 0), result("run-1", 1, 1))
	// Rewrite 1/0 as a failure (no scores) and 0/0 with one score, twice
	// in one batch for 0/0: the last one wins.
	again := result("run-1", 0, 0)
	again.Output = evalrun.String("second")
	again.Scores = again.Scores[1:]
	last := copyResult(again)
	last.Output = evalrun.String("third")
	mustWrite(t, s, failed("run-1", 1, 0), again, last)
	got := scanResults(t, s, "run-1", evalrun.ResultQuery{})
	if keysOf(got) != "0/0 1/0 1/1 " {
		t.Fatalf("results after rewrites: %s, want 0/0 1/0 1/1", keysOf(got))
	}
	checkResult(t, got[0], last)
	checkResult(t, got[1], failed("run-1", 1, 0))
	checkResult(t, got[2], result("run-1", 1, 1))

	// And back to a success with both scores.
	mustWrite(t, s, result("run-1", 1, 0))
	got = scanResults(t, s, "run-1", evalrun.ResultQuery{})
	checkResult(t, got[1], result("run-1", 1, 0))
}

func testResultQuery(t *testing.T, s evalrun.Store) {
	setupRun(t, s, 10)
	var rs []*evalrun.ItemResult
	for i := range 10 {
		if i%3 == 0 {
			rs = append(rs, failed("run-1", i, 0))
		} else {
			rs = append(rs, result("run-1", i, 0))
		}
		rs = append(rs, result("run-1", i, 1))
	}
	mustWrite(t, s, rs...)
	for _, c := range []struct {
		q    evalrun.ResultQuery
		want string
	}{
		{evalrun.ResultQuery{FromIndex: 8}, "8/0 8/1 9/0 9/1 "},
		{evalrun.ResultQuery{Limit: 3}, "0/0 0/1 1/0 "},
		{evalrun.ResultQuery{FromIndex: 4, Limit: 3}, "4/0 4/1 5/0 "},
		{evalrun.ResultQuery{FailedOnly: true}, "0/0 3/0 6/0 9/0 "},
		{evalrun.ResultQuery{FailedOnly: true, FromIndex: 1, Limit: 2}, "3/0 6/0 "},
		{evalrun.ResultQuery{FromIndex: 10}, ""},
	} {
		if got := keysOf(scanResults(t, s, "run-1", c.q)); got != c.want {
			t.Fatalf("ScanResults(%+v) = %q, want %q", c.q, got, c.want)
		}
	}
	// Every paged result is complete.
	for _, r := range scanResults(t, s, "run-1", evalrun.ResultQuery{FromIndex: 2, Limit: 1}) {
		checkResult(t, r, result("run-1", 2, 0))
	}
}

func testScanResultKeys(t *testing.T, s evalrun.Store) {
	setupRun(t, s, 5)
	mustWrite(t, s, result("run-1", 4, 0), failed("run-1", 2, 1), result("run-1", 2, 0), result("run-1", 0, 0))
	var got []evalrun.ResultKey
	if err := s.ScanResultKeys(t.Context(), "run-1", func(k evalrun.ResultKey) error {
		got = append(got, k)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []evalrun.ResultKey{{Index: 0}, {Index: 2}, {Index: 2, Repeat: 1, Failed: true}, {Index: 4}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ScanResultKeys = %v, want %v", got, want)
	}
	stop := errors.New("stop")
	n := 0
	err := s.ScanResultKeys(t.Context(), "run-1", func(evalrun.ResultKey) error { n++; return stop })
	wantErr(t, "ScanResultKeys with a failing fn", err, stop)
	if n != 1 {
		t.Fatalf("fn called %d times after failing, want 1", n)
	}
	// A run without results has no keys.
	mustCreateRun(t, s, testRun("empty", "qa", 1, base))
	if err := s.ScanResultKeys(t.Context(), "empty", func(evalrun.ResultKey) error { return errors.New("called") }); err != nil {
		t.Fatalf("ScanResultKeys of a run without results: %v", err)
	}
}

func testResultFieldsRoundTrip(t *testing.T, s evalrun.Store) {
	setupRun(t, s, 5)
	full := result("run-1", 0, 0)
	full.Usage = evalrun.Usage{InputTokens: evalrun.Int64(0), OutputTokens: evalrun.Int64(1 << 40), CostUSD: evalrun.Float64(0)}
	full.TraceID, full.CacheHit, full.Attempts, full.RetryCount = "trace-abc", true, 4, 3
	full.Latency = 3*time.Second + 7*time.Nanosecond
	full.Scores = []evalrun.ScorerResult{
		{Scorer: "exact", Score: evalrun.Float64(0), Passed: false, Usage: evalrun.Usage{CostUSD: evalrun.Float64(0.000123)}},
		{Scorer: "judge", Score: nil, Error: "judge said: ???", ErrorKind: evalrun.ErrorInvalidOutput,
			Usage: evalrun.Usage{InputTokens: evalrun.Int64(12), OutputTokens: evalrun.Int64(0)}},
	}
	bare := result("run-1", 1, 0)
	bare.Usage = evalrun.Usage{}
	bare.StartedAt, bare.CompletedAt = time.Time{}, time.Time{}
	bare.Scores = []evalrun.ScorerResult{{Scorer: "exact", Score: evalrun.Float64(1), Passed: true}}
	// Scores of a scorer the run does not name come after the known ones.
	extra := result("run-1", 2, 0)
	extra.Scores = []evalrun.ScorerResult{
		{Scorer: "zz-extra", Score: evalrun.Float64(0.5)},
		{Scorer: "judge", Score: evalrun.Float64(0.5)},
		{Scorer: "aa-extra", Score: evalrun.Float64(0.5)},
		{Scorer: "exact", Score: evalrun.Float64(0.5)},
	}
	mustWrite(t, s, full, bare, extra)
	got := scanResults(t, s, "run-1", evalrun.ResultQuery{})
	checkResult(t, got[0], full)
	checkResult(t, got[1], bare)
	if got[1].Usage.InputTokens != nil || got[1].Usage.CostUSD != nil || got[1].Scores[0].Usage.OutputTokens != nil {
		t.Fatal("nil usage came back non-nil")
	}
	order := ""
	for _, sc := range got[2].Scores {
		order += sc.Scorer + " "
	}
	if order != "exact judge zz-extra aa-extra " {
		t.Fatalf("score order = %q, want the run's scorers first, then the others as written", order)
	}
}

func testOutputsByteExact(t *testing.T, s evalrun.Store) {
	setupRun(t, s, 10)
	outputs := []json.RawMessage{
		json.RawMessage(`{"b": 1,   "a": [1.50, 2e3, "\u00e9"]}`),
		json.RawMessage(`"tab\there \"quoted\" ünïcode"`),
		json.RawMessage(`null`),
		json.RawMessage(`0`),
		json.RawMessage("[\n  true\n]"),
		json.RawMessage(`""`),
		nil,
	}
	var rs []*evalrun.ItemResult
	for i, o := range outputs {
		r := result("run-1", i, 0)
		r.Output = o
		rs = append(rs, r)
	}
	mustWrite(t, s, rs...)
	got := scanResults(t, s, "run-1", evalrun.ResultQuery{})
	for i, o := range outputs {
		if !equalRaw(got[i].Output, o) {
			t.Fatalf("output %d = %q (nil=%v), want %q (nil=%v)", i, got[i].Output, got[i].Output == nil, o, o == nil)
		}
	}
}

func testScanResultsStops(t *testing.T, s evalrun.Store) {
	setupRun(t, s, 5)
	for i := range 5 {
		mustWrite(t, s, result("run-1", i, 0))
	}
	stop := errors.New("stop")
	n := 0
	err := s.ScanResults(t.Context(), "run-1", evalrun.ResultQuery{}, func(*evalrun.ItemResult) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	})
	wantErr(t, "ScanResults with a failing fn", err, stop)
	if n != 2 {
		t.Fatalf("fn called %d times, want 2", n)
	}
	// fn may call the store (no lock is held across fn).
	err = s.ScanResults(t.Context(), "run-1", evalrun.ResultQuery{Limit: 1}, func(r *evalrun.ItemResult) error {
		return s.WriteResults(t.Context(), []*evalrun.ItemResult{result("run-1", 9, 0)})
	})
	if err != nil {
		t.Fatalf("writing from inside ScanResults: %v", err)
	}
}

func testResultsOfRunsApart(t *testing.T, s evalrun.Store) {
	setupRun(t, s, 3)
	mustCreateRun(t, s, testRun("run-2", "qa", 1, base))
	mustWrite(t, s, result("run-1", 0, 0), result("run-2", 0, 0), result("run-2", 1, 0))
	if got := keysOf(scanResults(t, s, "run-1", evalrun.ResultQuery{})); got != "0/0 " {
		t.Fatalf("run-1 results = %q", got)
	}
	got := scanResults(t, s, "run-2", evalrun.ResultQuery{})
	if keysOf(got) != "0/0 1/0 " || got[0].RunID != "run-2" {
		t.Fatalf("run-2 results = %q", keysOf(got))
	}
}

func testWriteResultsConcurrent(t *testing.T, s evalrun.Store) {
	setupRun(t, s, 10)
	const writers, batches, perBatch = 6, 10, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				var rs []*evalrun.ItemResult
				for i := range perBatch {
					// Writers 0-2 and 3-5 write the same keys.
					rs = append(rs, result("run-1", (w%3)*batches*perBatch+b*perBatch+i, 0))
				}
				if err := s.WriteResults(t.Context(), rs); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent WriteResults: %v", err)
	}
	n := 0
	if err := s.ScanResultKeys(t.Context(), "run-1", func(k evalrun.ResultKey) error {
		if k.Index != n || k.Repeat != 0 {
			return fmt.Errorf("key %d is %+v", n, k)
		}
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 3*batches*perBatch {
		t.Fatalf("%d results after concurrent writes, want %d", n, 3*batches*perBatch)
	}
	for _, r := range scanResults(t, s, "run-1", evalrun.ResultQuery{FromIndex: 250, Limit: 3}) {
		checkResult(t, r, result("run-1", r.Index, 0))
	}
}

func testWriteResultsUnknownRun(t *testing.T, s evalrun.Store) {
	setupRun(t, s, 2)
	err := s.WriteResults(t.Context(), []*evalrun.ItemResult{result("run-1", 0, 0), result("nope", 0, 0)})
	wantErr(t, "WriteResults for an unknown run", err, evalrun.ErrNotFound)
	if got := scanResults(t, s, "run-1", evalrun.ResultQuery{}); len(got) != 0 {
		t.Fatalf("a failed batch wrote %d results, want none", len(got))
	}
	if err := s.WriteResults(t.Context(), nil); err != nil {
		t.Fatalf("WriteResults(nil): %v", err)
	}
}

func testCloseTwice(t *testing.T, s evalrun.Store) {
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
