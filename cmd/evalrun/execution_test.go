package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/report"
)

// reply is what a fake answers to one request.
type reply struct {
	status int    // 0: 200
	answer string // the "answer" field of a 200
	hang   bool   // wait until the client gives up, answer nothing
	// delay is the fake's latency before it answers (so that requests
	// overlap); it is not how the test waits for anything.
	delay time.Duration
}

// fake is an HTTP target that answers per item and per call, counting
// requests (in all, per item, and the most in flight at once).
type fake struct {
	*httptest.Server
	mu          sync.Mutex
	n           int
	calls       map[string]int
	inFlight    int
	maxInFlight int
	// answer gives the reply to the call-th request (1-based) for item id,
	// with in the number of requests in flight, this one included.
	answer func(id string, call, in int) reply
}

func newFake(t *testing.T, answer func(id string, call, in int) reply) *fake {
	f := &fake{calls: map[string]int{}, answer: answer}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ ID string }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.n++
		f.calls[body.ID]++
		f.inFlight++
		f.maxInFlight = max(f.maxInFlight, f.inFlight)
		rep := f.answer(body.ID, f.calls[body.ID], f.inFlight)
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			f.inFlight--
			f.mu.Unlock()
		}()
		if rep.delay > 0 {
			time.Sleep(rep.delay)
		}
		switch {
		case rep.hang:
			<-r.Context().Done()
		case rep.status != 0 && rep.status != http.StatusOK:
			http.Error(w, "fake says no", rep.status)
		default:
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]string{"answer": rep.answer})
		}
	}))
	t.Cleanup(f.Close)
	return f
}

// requests returns the number of requests so far and a copy of the
// per-item counts.
func (f *fake) requests() (int, map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	calls := make(map[string]int, len(f.calls))
	for k, v := range f.calls {
		calls[k] = v
	}
	return f.n, calls
}

// suite returns a suite over data.jsonl whose http target is the fake;
// headers are extra target headers (a target parameter), execution the
// execution mapping's content.
func (f *fake) suite(headers, execution string) string {
	return fmt.Sprintf(`name: exec
dataset: {name: exec, file: data.jsonl}
target:
  kind: http
  url: %s/answer
  output: answer
  headers: {%s}
scorers: [exact_match]
execution: {%s}
`, f.URL, headers, execution)
}

// outputs maps "id#repeat" to the output of each item row.
func outputs(rep *report.Report) map[string]string {
	m := map[string]string{}
	for _, it := range rep.Items {
		m[fmt.Sprintf("%s#%d", it.ID, it.Repeat)] = string(it.Output)
	}
	return m
}

func TestCache(t *testing.T) {
	e := newEnv(t)
	// Every call gets a new answer, so repeats differ and a cached re-run
	// is told apart from a fresh one; q1 always fails (500).
	f := newFake(t, func(id string, call, _ int) reply {
		if id == "q1" {
			return reply{status: http.StatusInternalServerError}
		}
		return reply{answer: fmt.Sprintf("%s call %d", id, call)}
	})
	e.write("data.jsonl", items(4))
	e.write("suite.yaml", f.suite(`X-Temperature: "0.2"`, "concurrency: 2, repeat: 2, max_retries: 0"))

	r := e.run("run", "suite.yaml", "--cache", "-q", "-o", "first.json")
	if r.code != 1 { // q1 fails
		t.Fatalf("first run: exit %d, want 1 (q1 fails)\n%s", r.code, r.stderr)
	}
	n1, calls1 := f.requests()
	if n1 != 8 {
		t.Fatalf("first run made %d requests, want 4 items × 2 repeats = 8", n1)
	}
	first := outputs(e.readReport("first.json"))
	for _, id := range []string{"q0", "q2", "q3"} {
		if a, b := first[id+"#0"], first[id+"#1"]; a == b || a == "" || a == "null" {
			t.Errorf("%s: repeats answered %s and %s, want two distinct answers", id, a, b)
		}
	}

	// The same run again: every success is served from the cache, the
	// failed item is requested again (errors are not cached).
	r = e.run("run", "suite.yaml", "--cache", "-o", "second.json")
	if r.code != 1 {
		t.Fatalf("second run: exit %d, want 1\n%s", r.code, r.stderr)
	}
	n2, calls2 := f.requests()
	if n2-n1 != 2 || calls2["q1"]-calls1["q1"] != 2 {
		t.Errorf("second run made %d requests (%d for q1), want only q1's 2: successes come from the cache, errors were not cached",
			n2-n1, calls2["q1"]-calls1["q1"])
	}
	secondRep := e.readReport("second.json")
	second := outputs(secondRep)
	for k, v := range first {
		if !strings.HasPrefix(k, "q1#") && second[k] != v {
			t.Errorf("%s: cached re-run answered %s, first run %s: want the same per-repeat answer", k, second[k], v)
		}
	}
	if secondRep.Run.CacheHits != 6 {
		t.Errorf("report run.cache_hits = %d, want 6", secondRep.Run.CacheHits)
	}
	if !strings.Contains(r.stdout, "cache hits 6") {
		t.Errorf("the summary table does not show the cache hits:\n%s", r.stdout)
	}

	// A changed target parameter misses the cache.
	e.write("suite.yaml", f.suite(`X-Temperature: "0.7"`, "concurrency: 2, repeat: 2, max_retries: 0"))
	e.run("run", "suite.yaml", "--cache", "-q")
	n3, _ := f.requests()
	if n3-n2 != 8 {
		t.Errorf("after changing a target header the run made %d requests, want 8 (a cache miss for every result)", n3-n2)
	}
	// --no-cache overrides execution.cache: true.
	e.write("suite.yaml", f.suite(`X-Temperature: "0.7"`, "concurrency: 2, repeat: 2, max_retries: 0, cache: true"))
	e.run("run", "suite.yaml", "--no-cache", "-q")
	n4, _ := f.requests()
	if n4-n3 != 8 {
		t.Errorf("--no-cache run made %d requests, want 8", n4-n3)
	}
	// Contradicting flags are a usage error.
	if r := e.run("run", "suite.yaml", "--cache", "--no-cache"); r.code != 2 || !strings.Contains(r.stderr, "--cache and --no-cache") {
		t.Errorf("--cache --no-cache: exit %d\n%s", r.code, r.stderr)
	}
}

func TestRepeatsPassAtK(t *testing.T) {
	e := newEnv(t)
	// q0 and q1 answer right 2 times in 3; q2 and q3 always; q4 never.
	f := newFake(t, func(id string, call, _ int) reply {
		right := strings.Replace(id, "q", "answer ", 1)
		switch {
		case id == "q4", (id == "q0" || id == "q1") && call == 2:
			return reply{answer: "wrong"}
		}
		return reply{answer: right}
	})
	e.write("data.jsonl", items(5))
	e.write("suite.yaml", f.suite("", "concurrency: 4"))
	r := e.run("run", "suite.yaml", "--repeat", "3", "-q", "-o", "rep.json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	rep := e.readReport("rep.json")
	if len(rep.Items) != 15 || rep.Run.Total != 15 {
		t.Fatalf("%d item rows, total %d; want 5 items × 3 repeats = 15", len(rep.Items), rep.Run.Total)
	}
	s := rep.Scorer("exact_match")
	if s == nil || s.RepeatStats == nil {
		t.Fatalf("exact_match has no repeat statistics: %+v", s)
	}
	// By hand: 4 of 5 items pass at least once, 2 of 5 pass every time,
	// 2 items (q0, q1) are flaky with 2 of 3 passes.
	rs := s.RepeatStats
	if rs.K != 3 || rs.Items != 5 || !near(rs.PassAtK, 0.8) || !near(rs.PassAllK, 0.4) || rs.FlakyCount != 2 {
		t.Errorf("exact_match repeats: k %d, items %d, pass@3 %v, pass^3 %v, flaky %d; want 3, 5, 0.8, 0.4, 2",
			rs.K, rs.Items, deref(rs.PassAtK), deref(rs.PassAllK), rs.FlakyCount)
	}
	want := []report.FlakyItem{{ItemID: "q0", Scorer: "exact_match", Passed: 2, Runs: 3}, {ItemID: "q1", Scorer: "exact_match", Passed: 2, Runs: 3}}
	if len(rep.Flaky) != len(want) {
		t.Fatalf("flaky list %+v, want %+v", rep.Flaky, want)
	}
	for i, w := range want {
		g := rep.Flaky[i]
		if g.ItemID != w.ItemID || g.Scorer != w.Scorer || g.Passed != w.Passed || g.Runs != w.Runs {
			t.Errorf("flaky[%d] = %+v, want %+v", i, g, w)
		}
	}
}

func TestResumeWithRepeats(t *testing.T) {
	e := newEnv(t)
	const total, repeats = 10, 3
	held := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	blocking := true
	// The first 7 requests are answered; later ones hang until the run is
	// interrupted, then every request is answered.
	answered := 0 // guarded by the fake's lock, like every answer call
	f := newFake(t, func(id string, _, _ int) reply {
		answered++
		mu.Lock()
		hang := blocking && answered > 7
		mu.Unlock()
		if hang {
			once.Do(func() { close(held) })
		}
		return reply{answer: strings.Replace(id, "q", "answer ", 1), hang: hang}
	})
	e.write("data.jsonl", items(total))
	e.write("suite.yaml", f.suite("", "concurrency: 2, item_timeout: 60s"))
	cmd := e.command("run", "suite.yaml", "--repeat", "3", "-o", "partial.json")
	stderr := signalWhen(t, cmd, held, syscall.SIGINT)
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, stderr)
	}
	id := runID(t, stderr)
	part := e.readReport("partial.json")
	done := len(part.Items)
	if done == 0 || done >= total*repeats {
		t.Fatalf("the interrupted run finished %d of %d executions; want some but not all", done, total*repeats)
	}

	mu.Lock()
	blocking = false
	mu.Unlock()
	before, _ := f.requests()
	r := e.run("run", "--resume", id, "-q", "-o", "full.json")
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	after, _ := f.requests()
	if got, want := after-before, total*repeats-done; got != want {
		t.Errorf("resume made %d requests, want %d: one per (item, repeat) without a stored result", got, want)
	}
	full := e.readReport("full.json")
	if len(full.Items) != total*repeats || full.Run.Succeeded != total*repeats {
		t.Fatalf("resumed report: %+v with %d rows, want %d", full.Run, len(full.Items), total*repeats)
	}
	for i, it := range full.Items {
		if want := fmt.Sprintf("q%d#%d", i/repeats, i%repeats); fmt.Sprintf("%s#%d", it.ID, it.Repeat) != want {
			t.Errorf("row %d is %s#%d, want %s: each (item, repeat) exactly once, in order", i, it.ID, it.Repeat, want)
		}
	}
}

// TestAdaptiveConcurrency runs against a server that takes 8 calls at once
// and refuses the others with 429: the report and the summary table give
// the concurrency the run settled at, below the configured 20.
//
// The first burst decides the outcome and is held, not timed: the server
// holds its first 8 calls unanswered until it has refused 12 others (what
// 20 in flight bring), so the client meets refusals before any success and
// cuts its cap; a cap cut from 20 never comes back to 20 within 120 items
// (the ceiling learnt is below it), and most attempts start after the cut.
// A client that cut its cap to 8 or less before sending 20 sends nothing
// more while the 8 are held: after two refusals, 100ms without a call also
// ends the burst (that wait only keeps the test live; the cut is done).
// Afterwards the server refuses whatever exceeds 8 in flight. (When the
// server answered from the start after 5 ms, a loaded machine kept the
// server's in-flight count far below the client's, refusals looked like
// noise, and the run reported 9 to 20.)
func TestAdaptiveConcurrency(t *testing.T) {
	e := newEnv(t)
	const total, capacity, configured = 120, 8, 20
	var (
		mu       sync.Mutex
		inFlight int
		held     int // accepted calls of the first burst
		rejected int
		burst    = make(chan struct{}) // closed when the first burst is released
		open     = true
		quiet    *time.Timer
	)
	// release ends the first burst; mu is held.
	release := func() {
		if open {
			open = false
			close(burst)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ ID string }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		inFlight++
		refuse, hold := false, false
		switch {
		case open && held < capacity:
			held++
			hold = true
		case open:
			refuse = true
			switch {
			case rejected+1 == configured-capacity:
				release()
			case rejected+1 >= 2:
				// Liveness only: a client that already cut its cap to 8 or
				// less sends nothing more while the burst is held, so the
				// burst also ends once refused twice and quiet for 100ms.
				if quiet != nil {
					quiet.Stop()
				}
				quiet = time.AfterFunc(100*time.Millisecond, func() {
					mu.Lock()
					defer mu.Unlock()
					release()
				})
			}
		default:
			refuse = inFlight > capacity
		}
		if refuse {
			rejected++
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			inFlight--
			mu.Unlock()
		}()
		switch {
		case refuse:
			http.Error(w, "fake says no", http.StatusTooManyRequests)
			return
		case hold:
			select {
			case <-burst:
			case <-r.Context().Done():
				return
			}
		default:
			time.Sleep(5 * time.Millisecond) // the fake's latency, so that calls overlap; nothing waits on it
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"answer": strings.Replace(body.ID, "q", "answer ", 1)})
	}))
	t.Cleanup(srv.Close)
	e.write("data.jsonl", items(total))
	e.write("suite.yaml", (&fake{Server: srv}).suite("", fmt.Sprintf("concurrency: %d, max_retries: 20, retry_delay: 5ms", configured)))
	r := e.run("run", "suite.yaml", "-o", "rep.json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	rep := e.readReport("rep.json")
	if rep.Run.Succeeded != total || len(rep.Items) != total {
		t.Fatalf("%d of %d items succeeded (%d rows): an item was lost", rep.Run.Succeeded, total, len(rep.Items))
	}
	mu.Lock()
	n429 := rejected
	mu.Unlock()
	if n429 < 2 {
		t.Fatalf("the fake answered %d 429s, want at least 2: the first burst was not refused", n429)
	}
	if c := rep.Run.Concurrency; c == nil || *c >= configured || *c < 1 {
		t.Errorf("report run.concurrency = %v, want 1..%d (cut below the configured %d) after %d 429s",
			deref(toFloat(c)), configured-1, configured, n429)
	} else if !strings.Contains(r.stdout, fmt.Sprintf("concurrency %d", *c)) {
		t.Errorf("the summary table does not show the settled concurrency %d:\n%s", *c, r.stdout)
	} else {
		t.Logf("settled at concurrency %d after %d 429s", *c, n429)
	}
}

func TestAttemptTimeout(t *testing.T) {
	e := newEnv(t)
	f := newFake(t, func(id string, call, _ int) reply {
		if id == "q1" || call == 1 { // q1 always hangs, the others on their first attempt
			return reply{hang: true}
		}
		return reply{answer: strings.Replace(id, "q", "answer ", 1)}
	})
	e.write("data.jsonl", items(3))
	e.write("suite.yaml", f.suite("", "concurrency: 3, item_timeout: 1s, max_retries: 50, retry_delay: 10ms"))
	r := e.run("run", "suite.yaml", "--attempt-timeout", "200ms", "-q", "-o", "rep.json")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (q1 fails)\n%s", r.code, r.stderr)
	}
	rep := e.readReport("rep.json")
	for _, it := range rep.Items {
		switch it.ID {
		case "q1":
			if it.Error == nil || !strings.Contains(*it.Error, "item timed out after 1s (") || !strings.Contains(*it.Error, " attempts)") {
				t.Errorf("q1 (always hangs) error %v, want the item timeout with the number of attempts", deref(it.Error))
			}
		default:
			if it.Error != nil || it.RetryCount != 1 {
				t.Errorf("%s (hangs once): error %v, %d retries; want success on the retry", it.ID, deref(it.Error), it.RetryCount)
			}
		}
	}
	_, calls := f.requests()
	if calls["q1"] < 2 {
		t.Errorf("q1 was tried %d times within its item timeout, want several attempts of 200ms", calls["q1"])
	}
	if r := e.run("run", "suite.yaml", "--attempt-timeout", "-1s"); r.code != 2 || !strings.Contains(r.stderr, "--attempt-timeout -1s: must not be negative") {
		t.Errorf("--attempt-timeout -1s: exit %d\n%s", r.code, r.stderr)
	}
}

func TestFinalReportStored(t *testing.T) {
	e := newEnv(t)
	f := newFake(t, func(id string, _, _ int) reply { return reply{answer: strings.Replace(id, "q", "answer ", 1)} })
	e.write("data.jsonl", items(3))
	e.write("suite.yaml", f.suite("", "concurrency: 2"))
	r := e.run("run", "suite.yaml", "-q")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	id := runID(t, r.stderr)
	rs, ok := any(e.openStore()).(evalrun.ReportStore)
	if !ok {
		t.Skip("the SQLite store does not keep reports (evalrun.ReportStore) yet")
	}
	data, err := rs.GetReportJSON(context.Background(), id)
	if err != nil {
		t.Fatalf("no final report stored for run %s: %v", id, err)
	}
	validateSchema(t, data)
	rep, err := report.ReadJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Run.ID != id || rep.Run.Succeeded != 3 || rep.Items != nil {
		t.Errorf("stored report: run %+v with %d item rows; want run %s, 3 succeeded, no item rows", rep.Run, len(rep.Items), id)
	}
}

// near reports whether p holds want (within rounding).
func near(p *float64, want float64) bool { return p != nil && math.Abs(*p-want) < 1e-9 }

// deref shows a pointer's value in messages ("<nil>" for nil).
func deref[T any](p *T) any {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func toFloat(p *int) *float64 {
	if p == nil {
		return nil
	}
	f := float64(*p)
	return &f
}

// With the cache on, judge verdicts are reused too: a second identical run
// calls neither the target nor the judge.
func TestJudgeCache(t *testing.T) {
	e := newEnv(t)
	f := newFake(t, func(id string, _, _ int) reply { return reply{answer: strings.Replace(id, "q", "answer ", 1)} })
	var mu sync.Mutex
	judged := 0
	judge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		judged++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id": "c", "object": "chat.completion", "created": 0, "model": "judge",
			"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "{\"score\": 1, \"reason\": \"right\"}"}}],
			"usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}`)
	}))
	t.Cleanup(judge.Close)
	e.write("data.jsonl", items(3))
	e.write("suite.yaml", fmt.Sprintf(`dataset: {name: j, file: data.jsonl}
target: {kind: http, url: %s/answer, output: answer}
scorers:
  - {kind: llm_judge, rubric: "is it right?", model: judge, base_url: "%s/v1", api_key_env: JUDGE_KEY}
execution: {concurrency: 2, cache: true}
`, f.URL, judge.URL))
	t.Setenv("JUDGE_KEY", "k1")
	judgedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return judged
	}
	if r := e.run("run", "suite.yaml", "-q"); r.code != 0 {
		t.Fatalf("first run: exit %d\n%s", r.code, r.stderr)
	}
	n1, _ := f.requests()
	j1 := judgedCount()
	if n1 != 3 || j1 != 3 {
		t.Fatalf("first run: %d target and %d judge requests, want 3 and 3", n1, j1)
	}
	// A rotated API key keeps the cache: the key is no part of it.
	t.Setenv("JUDGE_KEY", "k2")
	if r := e.run("run", "suite.yaml", "-q"); r.code != 0 {
		t.Fatalf("second run: exit %d\n%s", r.code, r.stderr)
	}
	n2, _ := f.requests()
	if n2 != n1 || judgedCount() != j1 {
		t.Errorf("second identical run: %d target and %d judge requests, want 0 and 0", n2-n1, judgedCount()-j1)
	}
	if r := e.run("run", "suite.yaml", "-q", "--no-cache"); r.code != 0 || judgedCount() != j1+3 {
		t.Errorf("--no-cache run: exit %d, %d judge requests, want 3\n%s", r.code, judgedCount()-j1, r.stderr)
	}
}
