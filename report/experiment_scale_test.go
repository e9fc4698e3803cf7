package report

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/inmem"
	"github.com/evalrun/evalrun/sqlite"
)

// scaleExperiment stores an experiment of three variants over n items
// with repeats repeats in a real store: more results than a page
// (expPageSize), pages ending inside an index's repeats, variants without
// some items, target failures, and many items on which the variants
// disagree (more than Markdown lists).
func scaleExperiment(t *testing.T, n, repeats int) (evalrun.RunStore, *evalrun.Experiment) {
	t.Helper()
	st := inmem.New()
	t.Cleanup(func() { st.Close() })
	return scaleExperimentIn(t, st, n, repeats)
}

// scaleExperimentIn is scaleExperiment in st.
func scaleExperimentIn(t *testing.T, st evalrun.Store, n, repeats int) (evalrun.RunStore, *evalrun.Experiment) {
	t.Helper()
	ctx := context.Background()
	items := make([]*evalrun.Item, n)
	for i := range items {
		items[i] = item(fmt.Sprintf("q%04d", i), []any{"t" + fmt.Sprint(i%3)})
	}
	if _, _, err := st.ImportDataset(ctx, "support", items); err != nil {
		t.Fatal(err)
	}
	var runs []*evalrun.Run
	for v, name := range []string{"mini", "big", "terse"} {
		run := expRun(name, v)
		run.DatasetVersion, run.Total = 1, 0
		if err := st.CreateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		var rs []*evalrun.ItemResult
		for i := range n {
			if v == 2 && i%23 == 5 {
				continue // terse has no result for these items
			}
			for r := range repeats {
				res := expResult(run, i, (i*7+v*3+r)%5 < 2, (i+v)%4 != 0, v == 1 && i%17 == 3)
				res.ItemID, res.Repeat, res.Item = items[i].ID, r, nil
				if res.Output != nil {
					res.Output = evalrun.String(fmt.Sprintf("%s says %s #%d %s", name, items[i].ID, r, strings.Repeat("x", i%50)))
				}
				rs = append(rs, res)
				run.Total++
				if res.Failed() {
					run.Failed++
				} else {
					run.Succeeded++
				}
			}
		}
		// Written out of order, in two batches.
		half := len(rs) / 2
		if err := st.WriteResults(ctx, rs[half:]); err != nil {
			t.Fatal(err)
		}
		if err := st.WriteResults(ctx, rs[:half]); err != nil {
			t.Fatal(err)
		}
		if err := st.UpdateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
	}
	exp, err := evalrun.GetExperiment(ctx, st, runs[0].Experiment)
	if err != nil {
		t.Fatal(err)
	}
	return st, exp
}

// TestExperimentStreamSameBytes: the experiment built for streaming
// writes the same JSON, Markdown and table as the one holding its items,
// and holds none of them.
func TestExperimentStreamSameBytes(t *testing.T) {
	type tcase struct {
		n, repeats int
		sqlite     bool
	}
	for _, tc := range []tcase{{0, 1, false}, {5, 1, false}, {400, 1, false}, {150, 3, false}, {4, 200, false}, {300, 2, true}} {
		t.Run(fmt.Sprintf("n%d_r%d_sqlite%v", tc.n, tc.repeats, tc.sqlite), func(t *testing.T) {
			ctx := context.Background()
			var st evalrun.RunStore
			var exp *evalrun.Experiment
			if tc.sqlite {
				db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "e.db"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				st, exp = scaleExperimentIn(t, db, tc.n, tc.repeats)
			} else {
				st, exp = scaleExperiment(t, tc.n, tc.repeats)
			}
			want, err := BuildExperimentStore(ctx, st, exp, CompareOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := BuildExperimentStreamStore(ctx, st, exp, CompareOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Items != nil {
				t.Fatalf("the streamed experiment holds %d items", len(got.Items))
			}
			if got.ItemCount() != len(want.Items) {
				t.Errorf("ItemCount %d, want %d", got.ItemCount(), len(want.Items))
			}
			if tc.n >= 400 {
				_, nd := want.disagreeRows(0)
				if nd <= maxDisagreeRows {
					t.Fatalf("the fixture has %d disagreeing items: not more than Markdown lists", nd)
				}
			}
			for _, f := range []Format{FormatJSON, FormatMarkdown, FormatTable} {
				var w, g bytes.Buffer
				if err := WriteExperiment(&w, want, f); err != nil {
					t.Fatal(err)
				}
				if err := WriteExperiment(&g, got, f); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(w.Bytes(), g.Bytes()) {
					t.Errorf("%s differs:\n--- in memory (%d bytes)\n%s\n--- streamed (%d bytes)\n%s", f,
						w.Len(), head(w.String()), g.Len(), head(g.String()))
				}
			}
			// The variants' reports are those of the in-memory build.
			for _, v := range want.Variants {
				var w, g bytes.Buffer
				if err := WriteJSON(&w, want.Report(v.Name)); err != nil {
					t.Fatal(err)
				}
				if err := WriteJSON(&g, got.Report(v.Name)); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(w.Bytes(), g.Bytes()) {
					t.Errorf("variant %s: run report differs", v.Name)
				}
			}
		})
	}
}

func head(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}

// limitStore records the largest page (ResultQuery.Limit, unlimited
// counting as 1<<30) and the number of scans asked of its store.
type limitStore struct {
	evalrun.RunStore
	maxLimit int
	scans    int
}

func (s *limitStore) ScanResults(ctx context.Context, id string, q evalrun.ResultQuery, fn func(*evalrun.ItemResult) error) error {
	s.scans++
	if q.Limit <= 0 || q.Limit > s.maxLimit {
		s.maxLimit = max(s.maxLimit, q.Limit)
		if q.Limit <= 0 {
			s.maxLimit = 1 << 30
		}
	}
	return s.RunStore.ScanResults(ctx, id, q, fn)
}

// TestExperimentStreamBounded: the streamed build and JSON read every
// run's results in pages (never a whole run at once), a larger page only
// for an index with more repeats than a page.
func TestExperimentStreamBounded(t *testing.T) {
	ctx := context.Background()
	st, exp := scaleExperiment(t, 1000, 1)
	ls := &limitStore{RunStore: st}
	e, err := BuildExperimentStreamStore(ctx, ls, exp, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteExperimentJSON(&bytes.Buffer{}, e); err != nil {
		t.Fatal(err)
	}
	if ls.maxLimit != expPageSize {
		t.Errorf("largest page %d results, want %d", ls.maxLimit, expPageSize)
	}
	if min := 2 * 3 * 1000 / expPageSize; ls.scans < min {
		t.Errorf("%d scans: fewer than %d pages", ls.scans, min)
	}
}

// TestExperimentStreamChanged: results stored after the report was built
// make the JSON fail rather than disagree with its own numbers.
func TestExperimentStreamChanged(t *testing.T) {
	ctx := context.Background()
	st, exp := scaleExperiment(t, 10, 1)
	e, err := BuildExperimentStreamStore(ctx, st, exp, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run := exp.Runs[0]
	extra := expResult(run, 10, true, true, false)
	extra.Item = nil
	extra.ItemID = "q0010"
	extra.Latency = time.Millisecond
	if err := st.(interface {
		WriteResults(context.Context, []*evalrun.ItemResult) error
	}).WriteResults(ctx, []*evalrun.ItemResult{extra}); err != nil {
		t.Fatal(err)
	}
	err = WriteExperimentJSON(&bytes.Buffer{}, e)
	if err == nil || !strings.Contains(err.Error(), "changed") {
		t.Errorf("error %v, want one saying the runs changed", err)
	}
}
