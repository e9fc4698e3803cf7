package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// server answers {"out": input}; with hold set, every request after the
// first waits for its client to give up, and held is closed then.
type server struct {
	*httptest.Server
	mu      sync.Mutex
	auth    []string
	n       int
	hold    bool
	held    chan struct{}
	heldOne sync.Once
}

func newServer(t *testing.T, hold bool) *server {
	s := &server{hold: hold, held: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Input string }
		json.NewDecoder(r.Body).Decode(&body)
		s.mu.Lock()
		s.n++
		n := s.n
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		s.mu.Unlock()
		if s.hold && n > 1 {
			s.heldOne.Do(func() { close(s.held) })
			<-r.Context().Done()
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"out": body.Input})
	}))
	t.Cleanup(s.Close)
	return s
}

func (b *bundle) httpSuite(url string) string {
	b.write("d.jsonl", data3)
	return b.write("suite.yaml", `name: cli-test
dataset: {name: d, file: d.jsonl}
target:
  kind: http
  url: `+url+`
  output: out
  headers: {Authorization: "Bearer ${TOKEN:-none}"}
scorers: [exact_match]
execution: {concurrency: 1}
`)
}

// A secret from the environment reaches the target but never the stored
// run config nor any report.
func TestSecretNeverStored(t *testing.T) {
	const secret = "tok-9f8e7d6c5b4a"
	b := setup(t)
	b.env = append(b.env, "TOKEN="+secret)
	srv := newServer(t, false)
	suite := b.httpSuite(srv.URL)
	out := func(name string) string { return filepath.Join(b.dir, name) }
	code, stdout, stderr := b.run("run", suite, "-q", "-o", out("r.json"), "-o", out("r.md"), "-o", out("r.xml"), "--format", "json")
	if code != 0 { // item b fails exact_match: a low score, not an error
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if srv.auth[0] != "Bearer "+secret {
		t.Fatalf("the target got Authorization %q, want the expanded secret", srv.auth[0])
	}
	id := strings.Fields(stderr)[1]
	_, show, _ := b.run("runs", "show", id, "--json")
	_, rebuilt, _ := b.run("report", id, "--format", "markdown")
	texts := map[string]string{"stdout": stdout, "stderr": stderr, "runs show": show, "report": rebuilt}
	for _, f := range []string{"r.json", "r.md", "r.xml", "db.sqlite"} {
		data, err := os.ReadFile(filepath.Join(b.dir, f))
		if err != nil {
			t.Fatal(err)
		}
		texts[f] = string(data)
	}
	for name, text := range texts {
		if strings.Contains(text, secret) {
			t.Errorf("%s contains the secret", name)
		}
	}
	if !strings.Contains(show, `Bearer ${TOKEN:-none}`) {
		t.Errorf("the stored config lacks the unexpanded reference:\n%s", show)
	}
}

func TestRunsListJSON(t *testing.T) {
	b := setup(t)
	srv := newServer(t, false)
	suite := b.httpSuite(srv.URL)
	var ids []string
	for range 2 {
		_, _, stderr := b.run("run", suite, "-q", "--limit", "2")
		ids = append(ids, strings.Fields(stderr)[1])
	}
	_, out, _ := b.run("runs", "list", "--json")
	var runs []map[string]any
	if err := json.Unmarshal([]byte(out), &runs); err != nil || len(runs) != 2 {
		t.Fatalf("runs list --json: %v\n%s", err, out)
	}
	for i, want := range []string{ids[1], ids[0]} { // newest first
		r := runs[i]
		if r["id"] != want || r["status"] != "completed" || r["dataset"] != "d" || r["created_at"] == nil || r["total"] != 2.0 {
			t.Errorf("run %d = %v, want id %s completed on d with 2 items", i, r, want)
		}
		if _, ok := r["config"]; ok {
			t.Errorf("runs list --json includes the config")
		}
	}
}

// evalrun runs cancel from another process marks the run; the running
// process notices on its next poll and stops like on Ctrl-C.
func TestRunsCancelStopsTheRun(t *testing.T) {
	b := setup(t)
	srv := newServer(t, true)
	suite := b.httpSuite(srv.URL)
	type outcome struct {
		code           int
		stdout, stderr string
	}
	done := make(chan outcome, 1)
	go func() {
		code, out, errs := b.main(context.Background(), func(st *State) { st.CancelPoll = 5 * time.Millisecond },
			"run", suite, "-q", "-o", filepath.Join(b.dir, "partial.json"))
		done <- outcome{code, out, errs}
	}()
	select {
	case <-srv.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the run never reached its second item")
	}
	_, out, _ := b.run("runs", "list", "--json")
	var runs []evalrun.Run
	if err := json.Unmarshal([]byte(out), &runs); err != nil || len(runs) != 1 || runs[0].Status != evalrun.RunRunning {
		t.Fatalf("runs list: %v %s", err, out)
	}
	code, out, errs := b.run("runs", "cancel", runs[0].ID)
	if code != 0 || !strings.Contains(out, "marked canceled") {
		t.Fatalf("runs cancel: %d %s %s", code, out, errs)
	}
	var o outcome
	select {
	case o = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not stop after runs cancel")
	}
	if o.code != 130 || !strings.Contains(o.stderr, "canceled (evalrun runs cancel)") ||
		!strings.Contains(o.stderr, "resume with: evalrun run --resume "+runs[0].ID) {
		t.Errorf("exit %d\n%s", o.code, o.stderr)
	}
	if _, err := os.Stat(filepath.Join(b.dir, "partial.json")); err != nil {
		t.Errorf("the partial report was not written: %v", err)
	}
	if code, _, errs := b.run("runs", "cancel", runs[0].ID); code != 2 || !strings.Contains(errs, "already canceled") {
		t.Errorf("cancelling a finished run: %d %s", code, errs)
	}
}

func TestOutputsScoresSavedOutputs(t *testing.T) {
	b := setup(t)
	srv := newServer(t, false)
	suite := b.httpSuite(srv.URL)
	outs := b.write("outs.jsonl", `{"id": "a", "output": "x"}`+"\n"+`{"id": "b", "output": "z"}`+"\n")
	code, _, stderr := b.run("run", suite, "-q", "--outputs", outs, "-o", filepath.Join(b.dir, "r.json"))
	if code != 1 || !strings.Contains(stderr, "1 of 3 items failed") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if srv.n != 0 {
		t.Errorf("the target was called %d times with --outputs", srv.n)
	}
	data, _ := os.ReadFile(filepath.Join(b.dir, "r.json"))
	if !strings.Contains(string(data), `no saved output for item \"c\"`) || !strings.Contains(string(data), `"kind": "outputs"`) {
		t.Errorf("report lacks item c's error or the outputs target:\n%s", data)
	}
	// Looking an output up measures nothing: no latency is reported.
	var rep struct {
		Usage struct {
			Latency struct {
				Reported int      `json:"reported"`
				Mean     *float64 `json:"mean"`
			} `json:"latency_ms"`
		} `json:"usage"`
		Items []struct {
			LatencyMS *float64 `json:"latency_ms"`
		} `json:"items"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if l := rep.Usage.Latency; l.Reported != 0 || l.Mean != nil || len(rep.Items) != 3 || rep.Items[0].LatencyMS != nil {
		t.Errorf("saved outputs report a latency: %+v, first item %v", l, rep.Items[0].LatencyMS)
	}
	bad := b.write("bad.jsonl", `{"id": "a", "output": "x"}`+"\n"+`{"id": "b", "outptu": "z"}`+"\n")
	code, _, stderr = b.run("run", suite, "--outputs", bad)
	if code != 2 || !strings.Contains(stderr, `bad.jsonl:2: unknown key "outptu"`) {
		t.Errorf("bad outputs file: exit %d %s", code, stderr)
	}
}

func TestRunSelectionAndOverrides(t *testing.T) {
	b := setup(t)
	srv := newServer(t, false)
	suite := b.httpSuite(srv.URL)
	code, _, stderr := b.run("run", suite, "-q", "--tag", "t2", "--tag", "t1", "--concurrency", "3", "--format", "json")
	if code != 0 || !strings.Contains(stderr, "dataset d v1, 2 items") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	id := strings.Fields(stderr)[1]
	_, show, _ := b.run("runs", "show", id, "--json")
	var rec struct {
		Config struct {
			Suite struct {
				Execution struct{ Concurrency int }
			}
			Selection struct{ Tags []string }
		}
	}
	if err := json.Unmarshal([]byte(show), &rec); err != nil || rec.Config.Suite.Execution.Concurrency != 3 ||
		strings.Join(rec.Config.Selection.Tags, ",") != "t2,t1" {
		t.Errorf("stored config lacks the override or the selection (%v):\n%s", err, show)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", suite, "--tag", "nope"}, "no item of dataset d v1 (3 items) has a tag among nope"},
		{[]string{"run", suite, "--concurrency", "0"}, "--concurrency 0: must be at least 1"},
		{[]string{"run", suite, "--fail-on", "mean(nope) < 1"}, `--fail-on: condition "mean(nope) < 1": column 6: unknown scorer "nope" (scorers: exact_match)`},
		{[]string{"run", "--resume", id, "--limit", "1"}, "--limit cannot be used with --resume"},
		{[]string{"run", "--resume", "nope"}, "run nope not found"},
	} {
		code, _, errs := b.run(tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d %q, want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// With execution.cache, a second identical run calls the target for
// nothing.
func TestCacheAvoidsSecondCalls(t *testing.T) {
	b := setup(t)
	srv := newServer(t, false)
	suite := b.httpSuite(srv.URL)
	data, _ := os.ReadFile(suite)
	b.write("suite.yaml", strings.Replace(string(data), "execution: {concurrency: 1}", "execution: {concurrency: 1, cache: true}", 1))
	for i := range 2 {
		if code, _, errs := b.run("run", suite, "-q"); code != 0 {
			t.Fatalf("run %d: exit %d %s", i, code, errs)
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.n != 3 {
		t.Errorf("the target got %d requests over two cached runs of 3 items, want 3", srv.n)
	}
}

// A worker rebuilds a stored run from its record alone, with its own
// environment.
func TestSuiteBuilder(t *testing.T) {
	b := setup(t)
	srv := newServer(t, false)
	suite := b.httpSuite(srv.URL)
	_, _, stderr := b.run("run", suite, "-q", "--tag", "t2", "--tag", "t1")
	id := strings.Fields(stderr)[1]
	st, err := openStore(context.Background(), b.db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	run, err := st.GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	rb := &suiteBuilder{st: &State{}, store: st}
	items, err := rb.Items(context.Background(), run)
	if err != nil || items.Len() != 2 {
		t.Fatalf("Items: %v %v", items, err)
	}
	for i, want := range []string{"a", "b"} {
		if it, err := items.Item(context.Background(), i); err != nil || it.ID != want {
			t.Fatalf("Item(%d) = %v, %v; want %s", i, it, err, want)
		}
	}
	target, scorers, opts, err := rb.Build(context.Background(), run)
	if err != nil || target == nil || len(scorers) != 1 || scorers[0].Name() != "exact_match" || opts.Concurrency != 1 {
		t.Fatalf("Build: %v %v %+v %v", target, scorers, opts, err)
	}
	first, err := items.Item(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	out, err := target.Execute(context.Background(), first)
	if err != nil || string(out.Value) != `"x"` {
		t.Errorf("rebuilt target: %s %v", out.Value, err)
	}
}

// The report `run -o` writes and the one `report RUN --format json` rebuilds
// from SQLite are the same bytes (timestamps at the store's microsecond
// precision in both).
func TestReportJSONSameBytesAsRunOutput(t *testing.T) {
	b := setup(t)
	srv := newServer(t, false)
	suite := b.httpSuite(srv.URL)
	file := filepath.Join(b.dir, "r.json")
	code, _, stderr := b.run("run", suite, "-q", "-o", file)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	written, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Run struct {
			ID        string `json:"id"`
			StartedAt string `json:"started_at"`
		} `json:"run"`
	}
	if err := json.Unmarshal(written, &rec); err != nil {
		t.Fatal(err)
	}
	code, rebuilt, stderr := b.run("report", rec.Run.ID, "--format", "json")
	if code != 0 {
		t.Fatalf("report: exit %d\n%s", code, stderr)
	}
	if rebuilt != string(written) {
		t.Errorf("report --format json differs from the file run -o wrote\n--- run -o:\n%s\n--- report:\n%s", written, rebuilt)
	}
	if ts, err := time.Parse(time.RFC3339Nano, rec.Run.StartedAt); err != nil || ts.Nanosecond()%1000 != 0 {
		t.Errorf("started_at %q is not at microsecond precision (%v)", rec.Run.StartedAt, err)
	}
}
