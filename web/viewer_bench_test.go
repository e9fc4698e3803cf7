package web

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/postgres"
	"github.com/evalrun/evalrun/postgres/pgtest"
	"github.com/evalrun/evalrun/sqlite"
)

// fill100kBig stores a 100,000-item dataset (four tags) and a finished run
// over it with 10 KB outputs, three scorers (exact 0/1, judge 0–0.9,
// length: missing on one result in three) and 2% target failures.
func fill100kBig(b *testing.B, st evalrun.Store) {
	b.Helper()
	ctx := context.Background()
	const n = 100_000
	run := createBenchRun(b, st, n, nil,
		evalrun.ScorerInfo{Name: "exact", Kind: "exact_match", Threshold: 0.5},
		evalrun.ScorerInfo{Name: "judge", Kind: "llm_judge", Threshold: 0.7},
		evalrun.ScorerInfo{Name: "length", Kind: "custom", Threshold: 0.5})
	words := strings.Fields("the quick brown fox jumps over a lazy dog while the model answers every question about billing refunds and shipping")
	batch := make([]*evalrun.ItemResult, 0, 500)
	for i := range n {
		r := &evalrun.ItemResult{
			RunID: benchRun, Index: i, ItemID: benchItemID(i), Attempts: 1,
			Latency:   time.Duration(100+(i*7919)%900) * time.Millisecond,
			StartedAt: t0, CompletedAt: t0.Add(time.Second),
		}
		if i%50 == 7 {
			r.Error, r.ErrorKind = "HTTP 503", evalrun.ErrorTransient
		} else {
			var sb strings.Builder
			for k := i; sb.Len() < 10_000; k = k*31 + 7 {
				sb.WriteString(words[(k&0x7fffffff)%len(words)])
				sb.WriteByte(' ')
			}
			if i == 54321 {
				sb.WriteString("zanzibar") // the rare term
			}
			r.Output = evalrun.String(sb.String())
			ex, j, l := float64(i%2), float64(i%10)/10, float64(i%7)/7
			r.Scores = []evalrun.ScorerResult{
				{Scorer: "exact", Score: &ex, Passed: ex >= 0.5},
				{Scorer: "judge", Score: &j, Passed: j >= 0.7, Reason: "a reason"},
			}
			if i%3 != 0 {
				r.Scores = append(r.Scores, evalrun.ScorerResult{Scorer: "length", Score: &l, Passed: l >= 0.5})
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
}

// BenchmarkViewer100k times warm items pages (the HTML table, through the
// handler) of a 100,000-item run with 10 KB outputs, on SQLite and, when
// TEST_DATABASE_URL is set, PostgreSQL. The deep page follows next links
// (size 500) to result 90,000 of the slowest-first listing, or uses
// page=1801 where the listing has no cursor.
//
//	go test -run '^$' -bench Viewer100k -benchtime 10x -timeout 1h ./web/
func BenchmarkViewer100k(b *testing.B) {
	vacuum := func(*testing.B) {}
	stores := map[string]func(b *testing.B) evalrun.Store{
		"sqlite": func(b *testing.B) evalrun.Store {
			st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), sqlite.MappedReads())
			if err != nil {
				b.Fatal(err)
			}
			return st
		},
	}
	if os.Getenv("TEST_DATABASE_URL") != "" {
		stores["postgres"] = func(b *testing.B) evalrun.Store {
			dbURL := pgtest.NewDatabase(b)
			st, err := postgres.Open(context.Background(), dbURL)
			if err != nil {
				b.Fatal(err)
			}
			vacuum = func(b *testing.B) {
				// What autovacuum does soon after 100,000 inserts: without it
				// counts read the heap to check visibility (~0.5 s here).
				conn, err := pgx.Connect(context.Background(), dbURL)
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Close(context.Background())
				if _, err := conn.Exec(context.Background(), "VACUUM ANALYZE"); err != nil {
					b.Fatal(err)
				}
			}
			return st
		}
	}
	for _, name := range []string{"sqlite", "postgres"} {
		open := stores[name]
		if open == nil {
			continue
		}
		b.Run(name, func(b *testing.B) {
			st := open(b)
			b.Cleanup(func() { _ = st.Close() })
			start := time.Now()
			fill100kBig(b, st)
			vacuum(b)
			b.Logf("%s: stored 100,000 results in %v", name, time.Since(start))
			srv, err := New(st, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ListWait: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = srv.Close() })
			get := func(b *testing.B, path string) []byte {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.Host = "127.0.0.1"
				rec := httptest.NewRecorder()
				srv.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body.String())
				}
				return rec.Body.Bytes()
			}
			items := "/runs/" + benchRun + "/items"
			deep := items + "?sort=-latency&page=1801"
			api := "/api/runs/" + benchRun + "/items?sort=-latency&size=500"
			from := ""
			for range 180 {
				var p ItemsJSON
				if err := json.Unmarshal(get(b, api+from), &p); err != nil {
					b.Fatal(err)
				}
				if p.Next == nil {
					break
				}
				from = "&from=" + url.QueryEscape(*p.Next)
			}
			if from != "" {
				deep = items + "?sort=-latency" + from
			}
			for _, bc := range []struct{ name, path string }{
				{"default", items},
				{"deep-page", deep},
				{"sort-score", items + "?sort=score:judge"},
				{"sort-score-desc", items + "?sort=-score:judge"},
				{"sort-latency-desc", items + "?sort=-latency"},
				{"failed", items + "?failed=1"},
				{"below-threshold", items + "?scorer=length"},
				{"tag", items + "?tag=refund&sort=-score:judge"},
				{"search-rare", items + "?q=zanzibar"},
				{"search-common", items + "?q=fox"},
				{"search-rare-sorted", items + "?q=zanzibar&sort=-score:judge"},
				{"search-rare-api", "/api/runs/" + benchRun + "/items?q=zanzibar"},
			} {
				b.Run(bc.name, func(b *testing.B) {
					get(b, bc.path) // warm
					var times []time.Duration
					cpu0 := processCPU()
					for b.Loop() {
						start := time.Now()
						get(b, bc.path)
						times = append(times, time.Since(start))
					}
					// Medians and CPU time: steadier than means on a shared
					// machine (the CPU time is this process's: for
					// PostgreSQL the server's is not in it).
					slices.Sort(times)
					b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "median-ms/req")
					b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/1000/float64(len(times)), "cpu-ms/req")
				})
			}
		})
	}
}

// processCPU returns the CPU time (user and system) this process used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
