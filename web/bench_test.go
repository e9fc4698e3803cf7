package web

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/evalrun/evalrun/internal/resultq"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/report"
	"github.com/evalrun/evalrun/sqlite"
)

const benchRun = "20260304T100000-bench100"

// benchItemID is the id of item i of the viewer benchmarks' dataset.
func benchItemID(i int) string { return fmt.Sprintf("item-%06d", i) }

// createBenchRun imports the viewer benchmarks' dataset "big" (n items in
// four tag cohorts, each with expected output expected, nil for none) and
// creates run benchRun over it, running, with the given scorers.
func createBenchRun(b *testing.B, st evalrun.Store, n int, expected json.RawMessage, scorers ...evalrun.ScorerInfo) *evalrun.Run {
	b.Helper()
	ctx := context.Background()
	items := make([]*evalrun.Item, n)
	tags := []string{"billing", "refund", "login", "shipping"}
	for i := range items {
		items[i] = &evalrun.Item{
			ID:       benchItemID(i),
			Input:    evalrun.String(fmt.Sprintf("question number %d, asked with some context", i)),
			Expected: expected,
			Metadata: map[string]any{"tags": tags[i%4]},
		}
	}
	if _, _, err := st.ImportDataset(ctx, "big", items); err != nil {
		b.Fatal(err)
	}
	run := &evalrun.Run{
		ID: benchRun, Name: "bench", Dataset: "big", DatasetVersion: 1,
		Target:  evalrun.TargetInfo{Kind: "http", Name: "mock"},
		Scorers: scorers,
		Status:  evalrun.RunRunning, Total: n, CreatedAt: t0, StartedAt: t0,
	}
	if err := st.CreateRun(ctx, run); err != nil {
		b.Fatal(err)
	}
	return run
}

// build100k stores a 100,000-item dataset and a finished run over it (two
// scorers, 200-byte outputs, 2% target failures) in a new SQLite database.
func build100k(b *testing.B) evalrun.Store {
	b.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), sqlite.MappedReads())
	if err != nil {
		b.Fatal(err)
	}
	const n = 100_000
	run := createBenchRun(b, st, n, evalrun.String("an answer"),
		evalrun.ScorerInfo{Name: "exact", Kind: "exact_match", Threshold: 0.5},
		evalrun.ScorerInfo{Name: "judge", Kind: "llm_judge", Threshold: 0.7})
	output := evalrun.String(fmt.Sprintf("%0200d", 0)[:198])
	batch := make([]*evalrun.ItemResult, 0, 1000)
	for i := range n {
		r := &evalrun.ItemResult{
			RunID: benchRun, Index: i, ItemID: benchItemID(i), Attempts: 1,
			Latency:   time.Duration(100+i%900) * time.Millisecond,
			Usage:     evalrun.Usage{InputTokens: iptr(120), OutputTokens: iptr(40), CostUSD: fptr(0.0002)},
			StartedAt: t0, CompletedAt: t0.Add(time.Second),
		}
		if i%50 == 7 {
			r.Error, r.ErrorKind = "HTTP 503", evalrun.ErrorTransient
			run.Failed++
		} else {
			run.Succeeded++
			r.Output = output
			ex, j := float64(i%2), float64(i%10)/10
			r.Scores = []evalrun.ScorerResult{
				{Scorer: "exact", Score: &ex, Passed: ex >= 0.5},
				{Scorer: "judge", Score: &j, Passed: j >= 0.7, Reason: "a reason"},
			}
		}
		batch = append(batch, r)
		if len(batch) == cap(batch) {
			if err := st.WriteResults(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	run.Status, run.CompletedAt = evalrun.RunCompleted, t0.Add(10*time.Minute)
	if err := st.UpdateRun(ctx, run); err != nil {
		b.Fatal(err)
	}
	return st
}

// saveReport stores the report of run the way the CLI does when a run ends:
// built without item rows, written as JSON, put into the store.
func saveReport(b *testing.B, st evalrun.Store, run string) {
	b.Helper()
	rs, ok := st.(evalrun.ReportStore)
	if !ok {
		b.Fatalf("%T does not implement evalrun.ReportStore", st)
	}
	rep, err := report.FromStore(context.Background(), st, run, report.WithoutItems())
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, rep); err != nil {
		b.Fatal(err)
	}
	if err := rs.PutReportJSON(context.Background(), run, buf.Bytes()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRunPage100k serves the pages of a 100,000-item SQLite run. Cold
// requests use a new server each time: "run-page/cold" computes the run's
// report from the store (no report saved yet), "run-page/cold-stored-report"
// reads the report saved the way the CLI saves it when a run ends; warm ones
// reuse a server whose report is cached. Items pages are never cached: each
// request reads the store.
//
//	go test -run '^$' -bench RunPage100k -benchtime 10x ./web/
func BenchmarkRunPage100k(b *testing.B) {
	st := build100k(b)
	b.Cleanup(func() { _ = st.Close() })
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	newServer := func(b *testing.B) *Server {
		srv, err := New(st, Options{Logger: logger, ListWait: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = srv.Close() })
		return srv
	}
	get := func(b *testing.B, srv *Server, path string) {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Host = "127.0.0.1"
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body.String())
		}
	}
	report := func(b *testing.B, start time.Time) {
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/req")
	}
	runPage := "/runs/" + benchRun
	b.Run("run-page/cold", func(b *testing.B) {
		var elapsed time.Duration
		for b.Loop() {
			srv := newServer(b)
			start := time.Now()
			get(b, srv, runPage)
			elapsed += time.Since(start)
		}
		b.ReportMetric(float64(elapsed.Microseconds())/1000/float64(b.N), "ms/req")
	})
	// The CLI saves the final report of a run when it ends; the viewer reads
	// it instead of scanning the results.
	saveReport(b, st, benchRun)
	b.Run("run-page/cold-stored-report", func(b *testing.B) {
		var elapsed time.Duration
		for b.Loop() {
			srv := newServer(b)
			start := time.Now()
			get(b, srv, runPage)
			elapsed += time.Since(start)
		}
		b.ReportMetric(float64(elapsed.Microseconds())/1000/float64(b.N), "ms/req")
	})
	// The cursor of result 90,000 in the judge sort: a deep keyset page.
	deepCursor := base64.RawURLEncoding.EncodeToString(resultq.Cursor{Sort: "score:judge", Num: 0.5, Index: 90000}.Encode())
	warm := newServer(b)
	get(b, warm, runPage)
	for _, bc := range []struct{ name, path string }{
		{"run-page/warm", runPage},
		{"runs-list/warm", "/"},
		{"api-report/warm", "/api/runs/" + benchRun},
		{"items-page/first", runPage + "/items"},
		{"items-page/from-90000", runPage + "/items?from=90000"},
		{"items-page/failed", runPage + "/items?failed=1"},
		{"items-page/search", runPage + "/items?q=item-09999"},
		{"items-page/sorted-latency", runPage + "/items?sort=-latency"},
		{"items-page/sorted-page-100", runPage + "/items?sort=score:judge&page=100"},
		{"item-detail", runPage + "/items/54321"},
		{"items-page/sorted-score", runPage + "/items?sort=score:judge"},
		{"items-page/sorted-score-deep-keyset", runPage + "/items?sort=score:judge&from=" + deepCursor},
		{"items-page/below-threshold", runPage + "/items?scorer=judge"},
		{"items-page/tag", runPage + "/items?tag=refund"},
		{"items-page/search-common", runPage + "/items?q=item-0"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			start := time.Now()
			for b.Loop() {
				get(b, warm, bc.path)
			}
			report(b, start)
		})
	}
}
