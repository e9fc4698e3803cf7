package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/inmem"
	"github.com/evalrun/evalrun/sqlite"
)

// seedStore is what the streaming tests need of a store.
type seedStore interface {
	evalrun.RunStore
	ImportDataset(ctx context.Context, name string, items []*evalrun.Item) (evalrun.DatasetVersion, bool, error)
}

// streamStores are the stores the streaming tests run on.
var streamStores = []struct {
	name string
	open func(t *testing.T) seedStore
}{
	{"inmem", func(t *testing.T) seedStore {
		st := inmem.New()
		t.Cleanup(func() { st.Close() })
		return st
	}},
	{"sqlite", func(t *testing.T) seedStore {
		st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "evalrun.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}},
}

// seed stores run and its results (their items as the run's dataset), the
// results written in two batches, the second one first.
func seed(t *testing.T, st seedStore, run *evalrun.Run, rs []*evalrun.ItemResult) {
	t.Helper()
	ctx := context.Background()
	var items []*evalrun.Item
	seen := map[string]bool{}
	for _, r := range rs {
		if !seen[r.Item.ID] {
			seen[r.Item.ID] = true
			items = append(items, r.Item)
		}
	}
	if len(items) > 0 {
		v, _, err := st.ImportDataset(ctx, run.Dataset, items)
		if err != nil {
			t.Fatal(err)
		}
		run.DatasetVersion = v.Version
	}
	if err := st.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 {
		return
	}
	stored := make([]*evalrun.ItemResult, len(rs))
	for i, r := range rs {
		c := *r
		c.Item = nil
		stored[i] = &c
	}
	half := len(stored) / 2
	if err := st.WriteResults(ctx, stored[half:]); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteResults(ctx, stored[:half]); err != nil {
		t.Fatal(err)
	}
}

// bulkResults are n results of two scorers whose outputs and inputs carry
// what the JSON and XML encoders escape (HTML characters, control
// characters, invalid UTF-8, text that is not JSON), every tenth one a
// target failure, every seventh a scorer error.
func bulkResults(runID string, n int) []*evalrun.ItemResult {
	rs := make([]*evalrun.ItemResult, n)
	for i := range n {
		id := fmt.Sprintf("item-%03d", i)
		it := &evalrun.Item{ID: id, Input: evalrun.String(fmt.Sprintf("<q %d> & \"quotes\" \u2028", i)),
			Metadata: map[string]any{"tags": []any{[]string{"a", "b", "c"}[i%3]}}}
		if i%4 == 0 {
			it.Expected = evalrun.String(strings.Repeat("x", i))
		}
		r := &evalrun.ItemResult{RunID: runID, Index: i, ItemID: id, Item: it, Attempts: 1,
			Latency: time.Duration(i+1) * 1500 * time.Microsecond, RetryCount: i % 3}
		switch {
		case i%10 == 3:
			r.Error, r.ErrorKind = fmt.Sprintf("boom <%d>\x01 \xff", i), evalrun.ErrorTransient
		default:
			r.Output = json.RawMessage(fmt.Sprintf(`{"answer": "<b>%d</b> & \u00e9", "n": [1, 2, {"k": null}]}`, i))
			if i%5 == 1 {
				r.Output = json.RawMessage(fmt.Sprintf("not json %d", i)) // stored as a JSON string
			}
			exact := score("exact", float64(i%2), 0.5)
			judge := score("judge", float64(i%10)/10, 0.7)
			if i%7 == 2 {
				judge = evalrun.ScorerResult{Scorer: "judge", Error: "judge <timeout>", ErrorKind: evalrun.ErrorTimeout}
			}
			r.Scores = []evalrun.ScorerResult{exact, judge}
		}
		r.StartedAt, r.CompletedAt = t0, t0.Add(r.Latency)
		rs[i] = r
	}
	return rs
}

func bulkRun(n int) *evalrun.Run {
	return &evalrun.Run{
		ID: "20260102T030405-bulk0001", Name: "bulk <&> run", Dataset: "bulk",
		Target: evalrun.TargetInfo{Kind: "http", Name: "api"},
		Scorers: []evalrun.ScorerInfo{
			{Name: "exact", Kind: "exact_match", Threshold: 0.5},
			{Name: "judge", Kind: "llm_judge", Threshold: 0.7},
		},
		Status: evalrun.RunCompleted, Total: n + 2, Succeeded: n - n/10, Failed: n / 10, Skipped: 2,
		CreatedAt: t0, StartedAt: t0, CompletedAt: t0.Add(time.Minute),
	}
}

// streamCases are the runs the streaming renderers are checked on.
func streamCases() []struct {
	name    string
	run     *evalrun.Run
	results []*evalrun.ItemResult
} {
	rr := repeatsResults()
	return []struct {
		name    string
		run     *evalrun.Run
		results []*evalrun.ItemResult
	}{
		{"fixture", fixtureRun(), fixtureResults()},
		{"repeats", repeatsRun(), rr},
		{"bulk", bulkRun(250), bulkResults(bulkRun(0).ID, 250)},
		{"empty", bulkRun(0), nil},
	}
}

// TestStreamSameBytes checks that the streaming renderers write, for a run
// read from a store, byte for byte what the in-memory renderers write for
// the report with its item rows, in every format, on the in-memory store
// and on SQLite.
func TestStreamSameBytes(t *testing.T) {
	ctx := context.Background()
	for _, s := range streamStores {
		for _, c := range streamCases() {
			t.Run(s.name+"/"+c.name, func(t *testing.T) {
				st := s.open(t)
				seed(t, st, c.run, c.results)
				full, err := FromStore(ctx, st, c.run.ID)
				if err != nil {
					t.Fatal(err)
				}
				if len(full.Items) != len(c.results) {
					t.Fatalf("full report: %d item rows, want %d", len(full.Items), len(c.results))
				}
				slim, err := FromStore(ctx, st, c.run.ID, WithoutItems())
				if err != nil {
					t.Fatal(err)
				}
				src := ItemSource{Store: st, RunID: c.run.ID}
				for _, f := range Formats {
					var want, got bytes.Buffer
					if err := Write(&want, full, f); err != nil {
						t.Fatal(err)
					}
					if err := WriteStream(ctx, &got, slim, f, src); err != nil {
						t.Fatalf("%s: %v", f, err)
					}
					if want.Len() == 0 {
						t.Fatalf("%s: empty output", f)
					}
					if !bytes.Equal(got.Bytes(), want.Bytes()) {
						t.Errorf("%s: streamed output differs from the in-memory one\n--- streamed:\n%s\n--- in memory:\n%s",
							f, got.Bytes(), want.Bytes())
					}
				}
				// rep.Items is ignored: a full report streams the same.
				var again bytes.Buffer
				if err := WriteJSONStream(ctx, &again, full, src); err != nil {
					t.Fatal(err)
				}
				var want bytes.Buffer
				if err := WriteJSON(&want, full); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(again.Bytes(), want.Bytes()) {
					t.Error("WriteJSONStream of a report with items differs from WriteJSON")
				}
			})
		}
	}
}

// TestStreamJSONValid checks the streamed JSON of the bulk run against
// docs/report.schema.json and reads it back: every row in input order.
func TestStreamJSONValid(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	t.Cleanup(func() { st.Close() })
	rs := bulkResults(bulkRun(0).ID, 120)
	run := bulkRun(120)
	seed(t, st, run, rs)
	slim, err := FromStore(ctx, st, run.ID, WithoutItems())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteJSONStream(ctx, &buf, slim, ItemSource{Store: st, RunID: run.ID}); err != nil {
		t.Fatal(err)
	}
	if err := validate(t, compileSchema(t), buf.Bytes()); err != nil {
		t.Fatalf("streamed JSON does not validate against the schema: %v", err)
	}
	back, err := ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Items) != len(rs) {
		t.Fatalf("%d item rows, want %d", len(back.Items), len(rs))
	}
	for i, it := range back.Items {
		if it.Index != i || it.ID != rs[i].ItemID {
			t.Fatalf("row %d is item %d %q, want %d %q", i, it.Index, it.ID, i, rs[i].ItemID)
		}
	}
}

// failWriter fails every write after the first n bytes.
type failWriter struct{ n int }

var errWrite = errors.New("disk full")

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, errWrite
	}
	w.n -= len(p)
	return len(p), nil
}

// TestStreamErrors checks that a scan error and a write error are returned.
func TestStreamErrors(t *testing.T) {
	ctx := context.Background()
	run := fixtureRun()
	rep := fixtureReport(t, WithoutItems())
	broken := ItemSource{Store: &fakeStore{run: run, results: fixtureResults(), failAt: 3}, RunID: run.ID}
	for _, f := range []Format{FormatJSON, FormatJUnit} {
		if err := WriteStream(ctx, &bytes.Buffer{}, rep, f, broken); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s, scan failing: error %v, want the scan's", f, err)
		}
	}
	// Many rows, so that the write fails while they are written.
	bulk := bulkResults(run.ID, 2000)
	src := ItemSource{Store: &fakeStore{run: run, results: bulk}, RunID: run.ID}
	for _, f := range []Format{FormatJSON, FormatJUnit} {
		if err := WriteStream(ctx, &failWriter{n: 100 << 10}, rep, f, src); !errors.Is(err, errWrite) {
			t.Errorf("%s, writer failing: error %v, want the writer's", f, err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := WriteJSONStream(cancelled, &bytes.Buffer{}, rep, src); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: error %v, want context.Canceled", err)
	}
}
