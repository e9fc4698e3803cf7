package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/inmem"
)

var t0 = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

const (
	runA = "20260304T100000-aaaaaaaa"
	runB = "20260304T110000-bbbbbbbb"
)

func fptr(f float64) *float64 { return &f }
func iptr(n int64) *int64     { return &n }

// fixtureItems are six items of dataset "support", tagged.
func fixtureItems() []*evalrun.Item {
	tags := []any{"billing", "refund", "billing", "login", nil, "login"}
	var items []*evalrun.Item
	for i := range 6 {
		it := &evalrun.Item{
			ID:       fmt.Sprintf("q%d", i+1),
			Input:    evalrun.JSON(map[string]any{"question": fmt.Sprintf("question %d", i+1)}),
			Expected: evalrun.String(fmt.Sprintf("answer %d", i+1)),
		}
		if tags[i] != nil {
			it.Metadata = map[string]any{"tags": tags[i]}
		}
		items = append(items, it)
	}
	return items
}

func fixtureRun(id, name string, created time.Time) *evalrun.Run {
	return &evalrun.Run{
		ID: id, Name: name, Dataset: "support", DatasetVersion: 1,
		Target: evalrun.TargetInfo{Kind: "http", Name: "answer-api"},
		Scorers: []evalrun.ScorerInfo{
			{Name: "exact", Kind: "exact_match", Threshold: 0.5},
			{Name: "judge", Kind: "llm_judge", Threshold: 0.7},
		},
		Status: evalrun.RunCompleted, Total: 6,
		CreatedAt: created, StartedAt: created, CompletedAt: created.Add(90 * time.Second),
	}
}

// fixtureResult is item i of a run: exact and judge take the given scores;
// latency grows with i (and is reversed by slow).
func fixtureResult(runID string, i int, exact, judge float64, latency time.Duration) *evalrun.ItemResult {
	return &evalrun.ItemResult{
		RunID: runID, Index: i, ItemID: fmt.Sprintf("q%d", i+1),
		Output:   evalrun.String(fmt.Sprintf("output %d of %s", i+1, runID[len(runID)-4:])),
		Attempts: 1, Latency: latency,
		Usage:     evalrun.Usage{InputTokens: iptr(100), OutputTokens: iptr(20), CostUSD: fptr(0.001)},
		StartedAt: t0, CompletedAt: t0.Add(latency),
		Scores: []evalrun.ScorerResult{
			{Scorer: "exact", Score: &exact, Passed: exact >= 0.5, Reason: "exact compare"},
			{Scorer: "judge", Score: &judge, Passed: judge >= 0.7, Reason: fmt.Sprintf("judge says %.1f", judge)},
		},
	}
}

// seed stores dataset "support" and two finished runs: A (baseline) where
// every item passes exact, and B (newer) where q2 regresses, q4 failed with
// a timeout after two retries, and the judge scorer errs on q6.
func seed(t testing.TB, s evalrun.Store) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := s.ImportDataset(ctx, "support", fixtureItems()); err != nil {
		t.Fatal(err)
	}
	a := fixtureRun(runA, "baseline", t0)
	a.Succeeded = 6
	b := fixtureRun(runB, "candidate", t0.Add(time.Hour))
	b.Succeeded, b.Failed = 5, 1
	for _, r := range []*evalrun.Run{a, b} {
		if err := s.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	var ra, rb []*evalrun.ItemResult
	for i := range 6 {
		ra = append(ra, fixtureResult(runA, i, 1, 0.8, time.Duration(i+1)*100*time.Millisecond))
		switch i {
		case 1:
			rb = append(rb, fixtureResult(runB, i, 0, 0.3, 250*time.Millisecond))
		case 3:
			rb = append(rb, &evalrun.ItemResult{
				RunID: runB, Index: i, ItemID: "q4", Error: "deadline exceeded after 30s",
				ErrorKind: evalrun.ErrorTimeout, Attempts: 3, RetryCount: 2, Latency: 30 * time.Second,
				StartedAt: t0, CompletedAt: t0.Add(30 * time.Second),
			})
		case 5:
			r := fixtureResult(runB, i, 1, 0, 900*time.Millisecond)
			r.Scores[1] = evalrun.ScorerResult{Scorer: "judge", Error: "judge returned no JSON", ErrorKind: evalrun.ErrorInvalidOutput}
			rb = append(rb, r)
		default:
			rb = append(rb, fixtureResult(runB, i, 1, 0.9, time.Duration(6-i)*100*time.Millisecond))
		}
	}
	for _, rs := range [][]*evalrun.ItemResult{ra, rb} {
		if err := s.WriteResults(ctx, rs); err != nil {
			t.Fatal(err)
		}
	}
}

// bundle is a seeded server for handler tests.
type bundle struct {
	store evalrun.Store
	srv   *Server
}

func setup(t *testing.T, opts Options) *bundle {
	t.Helper()
	st := inmem.New()
	seed(t, st)
	return setupStore(t, st, opts)
}

func setupStore(t *testing.T, st evalrun.Store, opts Options) *bundle {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.ListWait == 0 {
		opts.ListWait = time.Minute // deterministic: the list waits for every report
	}
	srv, err := New(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(); _ = st.Close() })
	return &bundle{store: st, srv: srv}
}

// response is a recorded response.
type response struct {
	status int
	header http.Header
	body   string
}

// get serves a GET of path (addressed to 127.0.0.1) with the given request
// headers ("Name: value").
func (b *bundle) get(t *testing.T, path string, headers ...string) response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = "127.0.0.1:8080"
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Add(k, v)
	}
	rec := httptest.NewRecorder()
	b.srv.ServeHTTP(rec, req)
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.String()}
}

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

// mustGet is get that requires status want.
func (b *bundle) mustGet(t *testing.T, path string, want int) response {
	t.Helper()
	resp := b.get(t, path)
	if resp.status != want {
		t.Fatalf("GET %s: status %d, want %d; body:\n%s", path, resp.status, want, resp.body)
	}
	return resp
}

// decode unmarshals a JSON response body.
func decode[T any](t *testing.T, resp response) T {
	t.Helper()
	var v T
	if ct := resp.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want JSON", ct)
	}
	if err := json.Unmarshal([]byte(resp.body), &v); err != nil {
		t.Fatalf("decode %T: %v\n%s", v, err, resp.body)
	}
	return v
}

// contains fails unless body contains every want.
func contains(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s: missing %q", what, w)
		}
	}
	if t.Failed() {
		t.Logf("%s body:\n%s", what, body)
		t.FailNow()
	}
}

// lacks fails if body contains any of wants.
func lacks(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if strings.Contains(body, w) {
			t.Errorf("%s: unexpected %q", what, w)
		}
	}
}
