package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// variantServer is a fake target for experiments: variant NAME's target
// posts to /v/NAME, and the answer is the item's input ({"out": input}),
// except for variant "wrong" (items a and i01 answer "nope") and "broken" (HTTP
// 400 for every item, a permanent error). It counts requests and answers
// per (variant, item) and in-flight requests per variant; hook, when set,
// runs before each answer (tests hold requests there) and may return
// false to drop the answer (the client has gone).
type variantServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests map[string]int // "variant/item" → requests
	answered map[string]int // "variant/item" → answers sent
	inFlight map[string]int
	done     map[string]int // answers per variant
	hook     func(r *http.Request, variant, item string) bool
	// onAnswer, when set, is called after an answer is counted.
	onAnswer func()
}

func newVariantServer(t *testing.T) *variantServer {
	s := &variantServer{requests: map[string]int{}, answered: map[string]int{}, inFlight: map[string]int{}, done: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		variant := strings.TrimPrefix(r.URL.Path, "/v/")
		var body struct{ ID, Input string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		key := variant + "/" + body.ID
		s.mu.Lock()
		s.requests[key]++
		s.inFlight[variant]++
		hook := s.hook
		s.mu.Unlock()
		answer := hook == nil || hook(r, variant, body.ID)
		s.mu.Lock()
		s.inFlight[variant]--
		s.mu.Unlock()
		if !answer || r.Context().Err() != nil {
			return
		}
		switch {
		case variant == "broken":
			http.Error(w, "bad request", http.StatusBadRequest)
		case variant == "wrong" && (body.ID == "a" || body.ID == "i01"):
			json.NewEncoder(w).Encode(map[string]string{"out": "nope"})
		default:
			json.NewEncoder(w).Encode(map[string]string{"out": body.Input})
		}
		s.mu.Lock()
		s.answered[key]++
		s.done[variant]++
		onAnswer := s.onAnswer
		s.mu.Unlock()
		if onAnswer != nil {
			onAnswer()
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// setHook sets the hook under the lock.
func (s *variantServer) setHook(h func(r *http.Request, variant, item string) bool) {
	s.mu.Lock()
	s.hook = h
	s.mu.Unlock()
}

// counts returns copies of the request and answer counts.
func (s *variantServer) counts() (requests, answered map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	requests, answered = map[string]int{}, map[string]int{}
	for k, v := range s.requests {
		requests[k] = v
	}
	for k, v := range s.answered {
		answered[k] = v
	}
	return requests, answered
}

// variantSuite writes a suite over n items (ids i00, i01, … or data3's
// a, b, c when n is 0) whose http target has one variant per name, each
// posting to /v/NAME; extra is added at the end (fail_on, execution).
func (b *bundle) variantSuite(url string, n int, names []string, extra string) string {
	if n == 0 {
		b.write("d.jsonl", data3)
	} else {
		var data strings.Builder
		for i := range n {
			fmt.Fprintf(&data, `{"id": "i%02d", "input": "in%d", "expected_output": "in%d"}`+"\n", i, i, i)
		}
		b.write("d.jsonl", data.String())
	}
	var vs strings.Builder
	for _, name := range names {
		fmt.Fprintf(&vs, "  - name: %s\n    target: {url: %s/v/%s}\n", name, url, name)
	}
	if extra == "" {
		extra = "execution: {concurrency: 1}\n"
	}
	return b.write("suite.yaml", `name: exp-test
dataset: {name: d, file: d.jsonl}
target:
  kind: http
  url: `+url+`/v/none
  output: out
scorers: [exact_match]
variants:
`+vs.String()+extra)
}

var (
	expLine = regexp.MustCompile(`(?m)^experiment (exp-\S+) (started|resumed): `)
	runLine = regexp.MustCompile(`(?m)^run (\S+) variant (\S+)( resumed)?: `)
)

// experimentIDs returns the experiment id and the variants' run ids (by
// variant) printed on stderr.
func experimentIDs(t *testing.T, stderr string) (string, map[string]string) {
	t.Helper()
	m := expLine.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no experiment line:\n%s", stderr)
	}
	runs := map[string]string{}
	for _, r := range runLine.FindAllStringSubmatch(stderr, -1) {
		runs[r[2]] = r[1]
	}
	return m[1], runs
}

// expReport is the part of the experiment JSON report the tests read.
type expReport struct {
	SchemaVersion int `json:"schema_version"`
	Experiment    struct {
		ID, Name, Baseline string
		Dataset            struct {
			Name    string
			Version int
		}
	}
	Variants []struct {
		Name      string `json:"name"`
		RunID     string `json:"run_id"`
		Status    string `json:"status"`
		Total     int    `json:"total"`
		Succeeded int    `json:"succeeded"`
		Failed    int    `json:"failed"`
		Scorers   map[string]struct {
			PassRate   *float64   `json:"pass_rate"`
			PassRateCI []*float64 `json:"pass_rate_ci"`
		} `json:"scorers"`
		MacroPassRate *float64                   `json:"macro_pass_rate"`
		VsBaseline    map[string]json.RawMessage `json:"vs_baseline"`
	}
	Items []struct {
		Index    int    `json:"index"`
		ID       string `json:"id"`
		Variants map[string]struct {
			Output json.RawMessage     `json:"output"`
			Error  string              `json:"error"`
			Scores map[string]*float64 `json:"scores"`
		} `json:"variants"`
	}
}

func readExpReport(t *testing.T, path string) (*expReport, []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r expReport
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &r, data
}

// An experiment of three variants: one run per variant, stored with the
// experiment's fields; the experiment report has every variant (the one
// whose target fails on every item with null numbers), the matrix is
// printed, the exit code is 1 for the failing variant, and evalrun report
// --experiment rebuilds the same JSON from storage.
func TestExperimentRun(t *testing.T) {
	b := setup(t)
	srv := newVariantServer(t)
	suite := b.variantSuite(srv.URL, 0, []string{"good", "wrong", "broken"}, "")
	out := filepath.Join(b.dir, "exp.json")
	code, stdout, stderr := b.run("run", suite, "-q", "-o", out, "-o", filepath.Join(b.dir, "exp.md"))
	if code != 1 {
		t.Fatalf("exit %d, want 1 (variant broken fails every item)\n%s", code, stderr)
	}
	expID, runs := experimentIDs(t, stderr)
	if !strings.HasPrefix(stderr, "experiment "+expID+" started: suite exp-test, dataset d v1, 3 items, variants good, wrong, broken\n") {
		t.Errorf("first stderr line:\n%s", stderr)
	}
	for _, want := range []string{
		"baseline: good",
		"variant broken (run " + runs["broken"] + "): 3 of 3 items failed (target errors)",
		"wrote " + out + " (experiment, json)",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "variant good (run") || strings.Contains(stderr, "variant wrong (run") {
		t.Errorf("a clean variant is listed as a problem (wrong's low score is not an error):\n%s", stderr)
	}
	// The terminal matrix: a row per variant.
	for _, want := range []string{"experiment " + expID, "good (baseline)", "wrong", "broken"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the matrix lacks %q:\n%s", want, stdout)
		}
	}

	// The stored runs carry the experiment.
	_, list, _ := b.run("runs", "list", "--json")
	var stored []evalrun.Run
	if err := json.Unmarshal([]byte(list), &stored); err != nil || len(stored) != 3 {
		t.Fatalf("runs list: %v\n%s", err, list)
	}
	for _, r := range stored {
		want := map[string]int{"good": 0, "wrong": 1, "broken": 2}
		if r.Experiment != expID || r.ID != runs[r.Variant] || r.VariantIndex != want[r.Variant] || r.Total != 3 {
			t.Errorf("stored run %s: experiment %q variant %q index %d total %d", r.ID, r.Experiment, r.Variant, r.VariantIndex, r.Total)
		}
		if r.Target.Name != srv.URL+"/v/"+r.Variant {
			t.Errorf("run of variant %s has target %+v", r.Variant, r.Target)
		}
	}

	rep, data := readExpReport(t, out)
	if rep.SchemaVersion != 3 || rep.Experiment.ID != expID || rep.Experiment.Baseline != "good" ||
		rep.Experiment.Dataset.Name != "d" || rep.Experiment.Dataset.Version != 1 {
		t.Errorf("experiment block %+v", rep.Experiment)
	}
	var names []string
	for _, v := range rep.Variants {
		names = append(names, v.Name)
		if v.RunID != runs[v.Name] {
			t.Errorf("variant %s run_id %s, want %s", v.Name, v.RunID, runs[v.Name])
		}
	}
	if !slices.Equal(names, []string{"good", "wrong", "broken"}) {
		t.Fatalf("variants %v", names)
	}
	pr := func(i int) *float64 { return rep.Variants[i].Scorers["exact_match"].PassRate }
	// data3's item b expects "z" for input "y": the echo fails it.
	if p := pr(0); p == nil || *p < 0.66 || *p > 0.67 {
		t.Errorf("good pass rate %v, want 2/3", p)
	}
	if p := pr(1); p == nil || *p < 0.33 || *p > 0.34 {
		t.Errorf("wrong pass rate %v, want 1/3", p)
	}
	broken := rep.Variants[2]
	// Every item failed: the run failed (engine.Decide), and has no numbers.
	if broken.Status != "failed" || broken.Failed != 3 || pr(2) != nil || broken.MacroPassRate != nil {
		t.Errorf("broken variant: status %s failed %d pass rate %v macro %v, want failed, 3, null, null",
			broken.Status, broken.Failed, pr(2), broken.MacroPassRate)
	}
	if len(rep.Variants[0].VsBaseline) != 0 || len(rep.Variants[1].VsBaseline) == 0 {
		t.Errorf("vs_baseline: baseline %v, wrong %v", rep.Variants[0].VsBaseline, rep.Variants[1].VsBaseline)
	}
	if len(rep.Items) != 3 {
		t.Fatalf("%d item rows, want 3", len(rep.Items))
	}
	for _, it := range rep.Items {
		if len(it.Variants) != 3 || it.Variants["broken"].Error == "" || it.Variants["good"].Error != "" {
			t.Errorf("item %s: %+v", it.ID, it.Variants)
		}
	}
	if b := rep.Items[0].Variants["wrong"]; string(b.Output) != `"nope"` || b.Scores["exact_match"] == nil || *b.Scores["exact_match"] != 0 {
		t.Errorf("item a of variant wrong: %+v", b)
	}

	// Rebuilt from storage: the same JSON.
	code, rebuilt, errs := b.run("report", "--experiment", expID, "--format", "json")
	if code != 0 {
		t.Fatalf("report --experiment: exit %d\n%s", code, errs)
	}
	if rebuilt != string(data) {
		t.Errorf("report --experiment differs from the run's -o JSON:\n%s\nwant\n%s", rebuilt, data)
	}
	// An experiment id as the argument is the same.
	if _, again, _ := b.run("report", expID, "--format", "json"); again != rebuilt {
		t.Errorf("report EXP_ID differs from report --experiment EXP_ID")
	}
	// A variant's run still has its own report.
	code, one, _ := b.run("report", runs["wrong"], "--format", "json")
	if code != 0 || !strings.Contains(one, `"id": "`+runs["wrong"]+`"`) {
		t.Errorf("report of a variant's run: exit %d\n%s", code, one)
	}
	if md, err := os.ReadFile(filepath.Join(b.dir, "exp.md")); err != nil || !strings.Contains(string(md), "evalrun experiment") {
		t.Errorf("exp.md: %v\n%s", err, md)
	}
	code, _, errs = b.run("report", "--experiment", "exp-20990101T000000-00000000")
	if code != 2 || !strings.Contains(errs, "experiment exp-20990101T000000-00000000 not found (evalrun runs list") {
		t.Errorf("unknown experiment: exit %d\n%s", code, errs)
	}
}

// The variants run at once: each variant's requests wait until every
// variant has one in flight, and the slow variant's wait until the others
// have answered all their items, which they could not if it held them
// back.
func TestExperimentVariantsRunConcurrently(t *testing.T) {
	const n = 6
	b := setup(t)
	srv := newVariantServer(t)
	names := []string{"fast1", "slow", "fast2"}
	suite := b.variantSuite(srv.URL, n, names, "execution: {concurrency: 2}\n")
	allIn := make(chan struct{})
	othersDone := make(chan struct{})
	var allOnce, doneOnce sync.Once
	var failures []string
	srv.setHook(func(r *http.Request, variant, item string) bool {
		srv.mu.Lock()
		if srv.inFlight["fast1"] > 0 && srv.inFlight["slow"] > 0 && srv.inFlight["fast2"] > 0 {
			allOnce.Do(func() { close(allIn) })
		}
		srv.mu.Unlock()
		wait, what := allIn, "every variant to have a request in flight"
		if variant == "slow" {
			wait, what = othersDone, "the fast variants to finish"
		}
		select {
		case <-wait:
		case <-r.Context().Done():
			return false
		case <-time.After(20 * time.Second):
			srv.mu.Lock()
			failures = append(failures, fmt.Sprintf("variant %s item %s waited 20s for %s", variant, item, what))
			srv.mu.Unlock()
		}
		return true
	})
	// The fast variants' last answers release the slow one.
	srv.mu.Lock()
	srv.onAnswer = func() {
		srv.mu.Lock()
		d := srv.done["fast1"] == n && srv.done["fast2"] == n
		srv.mu.Unlock()
		if d {
			doneOnce.Do(func() { close(othersDone) })
		}
	}
	srv.mu.Unlock()
	code, _, stderr := b.run("run", suite, "-q", "-o", filepath.Join(b.dir, "exp.json"))
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, f := range failures {
		t.Error(f)
	}
	for _, v := range names {
		if srv.done[v] != n {
			t.Errorf("variant %s answered %d items, want %d", v, srv.done[v], n)
		}
	}
	rep, _ := readExpReport(t, filepath.Join(b.dir, "exp.json"))
	for _, v := range rep.Variants {
		if v.Status != "completed" || v.Succeeded != n {
			t.Errorf("variant %s: %s, %d succeeded", v.Name, v.Status, v.Succeeded)
		}
	}
}

// Ctrl-C while every variant is mid-run: exit 130, a partial experiment
// report, the resume command of the experiment. --resume RUN_ID of one
// variant's run finishes that run alone; --resume EXP_ID then keeps it and
// runs the other variants' missing items; every item of every variant is
// answered exactly once, and the full experiment report is written.
func TestExperimentInterruptThenResume(t *testing.T) {
	const n = 5
	b := setup(t)
	srv := newVariantServer(t)
	names := []string{"a", "b", "c"}
	suite := b.variantSuite(srv.URL, n, names, "execution: {concurrency: 1}\n")
	held := map[string]bool{}
	allHeld := make(chan struct{})
	var once sync.Once
	srv.setHook(func(r *http.Request, variant, item string) bool {
		if item < "i02" {
			return true // the first two items of each variant answer
		}
		srv.mu.Lock()
		held[variant] = true
		if len(held) == len(names) {
			once.Do(func() { close(allHeld) })
		}
		srv.mu.Unlock()
		<-r.Context().Done()
		return false
	})
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	partial := filepath.Join(b.dir, "partial.json")
	type outcome struct {
		code   int
		stderr string
	}
	done := make(chan outcome, 1)
	go func() {
		code, _, stderr := b.main(ctx, nil, "run", suite, "-q", "-o", partial)
		done <- outcome{code, stderr}
	}()
	select {
	case <-allHeld:
	case o := <-done:
		t.Fatalf("the experiment ended (exit %d) before every variant was held\n%s", o.code, o.stderr)
	case <-time.After(30 * time.Second):
		t.Fatal("the variants never all reached their held item")
	}
	cancel(ErrInterrupted) // what cmd/evalrun does on SIGINT
	o := <-done
	if o.code != ExitInterrupted {
		t.Fatalf("exit %d, want 130\n%s", o.code, o.stderr)
	}
	expID, runs := experimentIDs(t, o.stderr)
	if !strings.Contains(o.stderr, "resume with: evalrun run --resume "+expID) {
		t.Errorf("no resume command for the experiment:\n%s", o.stderr)
	}
	for _, v := range names {
		if !strings.Contains(o.stderr, "run "+runs[v]+" variant "+v+" interrupted: 2 of 5 items done") {
			t.Errorf("no interruption line for variant %s:\n%s", v, o.stderr)
		}
	}
	rep, _ := readExpReport(t, partial)
	for _, v := range rep.Variants {
		if v.Status != "canceled" || v.Succeeded != 2 {
			t.Errorf("partial report: variant %s %s with %d succeeded, want canceled with 2", v.Name, v.Status, v.Succeeded)
		}
	}

	srv.setHook(nil)
	// One variant's run resumes alone, as any run: its own report.
	code, one, stderr := b.run("run", "--resume", runs["a"], "-q", "--format", "json")
	if code != 0 || !strings.HasPrefix(stderr, "run "+runs["a"]+" resumed: ") ||
		!strings.Contains(stderr, ", variant a of experiment "+expID+"\n") {
		t.Fatalf("resume of variant a's run: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(one, `"id": "`+runs["a"]+`"`) || !strings.Contains(one, `"succeeded": 5`) {
		t.Errorf("resume of variant a's run: its report is not the run's:\n%s", one)
	}
	full := filepath.Join(b.dir, "full.json")
	code, _, stderr = b.run("run", "--resume", expID, "-q", "-o", full)
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, stderr)
	}
	if !strings.HasPrefix(stderr, "experiment "+expID+" resumed: suite exp-test, dataset d v1, 5 items, variants b, c\n") {
		t.Errorf("resume's first line:\n%s", stderr)
	}
	for _, v := range []string{"b", "c"} {
		if !strings.Contains(stderr, "run "+runs[v]+" variant "+v+" resumed: ") {
			t.Errorf("resume lacks the line of variant %s:\n%s", v, stderr)
		}
	}
	if !strings.Contains(stderr, "run "+runs["a"]+" variant a: already completed, kept as it is") ||
		!strings.Contains(stderr, "baseline: a") {
		t.Errorf("resume does not keep the finished variant a as the baseline:\n%s", stderr)
	}
	rep, _ = readExpReport(t, full)
	if len(rep.Variants) != 3 || len(rep.Items) != n {
		t.Fatalf("full report: %d variants, %d items", len(rep.Variants), len(rep.Items))
	}
	for _, v := range rep.Variants {
		if v.Status != "completed" || v.Succeeded != n || v.RunID != runs[v.Name] {
			t.Errorf("variant %s: %s %d succeeded run %s", v.Name, v.Status, v.Succeeded, v.RunID)
		}
	}
	requests, answered := srv.counts()
	for _, v := range names {
		for i := range n {
			key := fmt.Sprintf("%s/i%02d", v, i)
			if answered[key] != 1 {
				t.Errorf("%s answered %d times, want exactly once", key, answered[key])
			}
			want := 1
			if i == 2 { // held, then asked again by the resume
				want = 2
			}
			if requests[key] != want {
				t.Errorf("%s requested %d times, want %d", key, requests[key], want)
			}
		}
	}
	// Nothing left to resume.
	code, _, stderr = b.run("run", "--resume", expID)
	if code != 2 || !strings.Contains(stderr, "has nothing to resume") {
		t.Errorf("resuming a finished experiment: exit %d\n%s", code, stderr)
	}
}

// evalrun runs cancel of one variant's run stops that variant only; the
// others finish, the exit code is 130, and --resume EXP_ID then runs only
// the cancelled variant's missing items.
func TestExperimentCancelOneVariant(t *testing.T) {
	const n = 4
	b := setup(t)
	srv := newVariantServer(t)
	names := []string{"a", "b", "c"}
	suite := b.variantSuite(srv.URL, n, names, "execution: {concurrency: 1}\n")
	heldB := make(chan struct{})
	var once sync.Once
	srv.setHook(func(r *http.Request, variant, item string) bool {
		if variant != "b" || item < "i01" {
			return true
		}
		once.Do(func() { close(heldB) })
		<-r.Context().Done()
		return false
	})
	type outcome struct {
		code   int
		stderr string
	}
	done := make(chan outcome, 1)
	go func() {
		code, _, stderr := b.main(context.Background(), func(st *State) { st.CancelPoll = 5 * time.Millisecond },
			"run", suite, "-q", "-o", filepath.Join(b.dir, "exp.json"))
		done <- outcome{code, stderr}
	}()
	select {
	case <-heldB:
	case o := <-done:
		t.Fatalf("the experiment ended (exit %d) before variant b was held\n%s", o.code, o.stderr)
	case <-time.After(30 * time.Second):
		t.Fatal("variant b never reached its held item")
	}
	_, list, _ := b.run("runs", "list", "--json")
	var stored []evalrun.Run
	if err := json.Unmarshal([]byte(list), &stored); err != nil {
		t.Fatal(err)
	}
	idx := slices.IndexFunc(stored, func(r evalrun.Run) bool { return r.Variant == "b" })
	if idx < 0 {
		t.Fatalf("no run of variant b:\n%s", list)
	}
	runB := stored[idx].ID
	if code, out, errs := b.run("runs", "cancel", runB); code != 0 {
		t.Fatalf("runs cancel: %d %s %s", code, out, errs)
	}
	o := <-done
	if o.code != ExitInterrupted || !strings.Contains(o.stderr, "run "+runB+" variant b canceled (evalrun runs cancel): 1 of 4 items done") {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	_, answered := srv.counts()
	for _, v := range []string{"a", "c"} {
		for i := range n {
			if k := fmt.Sprintf("%s/i%02d", v, i); answered[k] != 1 {
				t.Errorf("%s answered %d times: variant %s should have finished", k, answered[k], v)
			}
		}
	}
	expID, _ := experimentIDs(t, o.stderr)
	srv.setHook(nil)
	code, _, stderr := b.run("run", "--resume", expID, "-q", "-o", filepath.Join(b.dir, "full.json"))
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, stderr)
	}
	for _, v := range []string{"a", "c"} {
		if !regexp.MustCompile(`run \S+ variant ` + v + `: already completed, kept`).MatchString(stderr) {
			t.Errorf("resume does not keep variant %s:\n%s", v, stderr)
		}
	}
	requests, answered := srv.counts()
	for _, v := range names {
		for i := range n {
			k := fmt.Sprintf("%s/i%02d", v, i)
			if answered[k] != 1 {
				t.Errorf("%s answered %d times, want once", k, answered[k])
			}
			if want := 1 + btoi(k == "b/i01"); requests[k] != want {
				t.Errorf("%s requested %d times, want %d", k, requests[k], want)
			}
		}
	}
	rep, _ := readExpReport(t, filepath.Join(b.dir, "full.json"))
	for _, v := range rep.Variants {
		if v.Status != "completed" || v.Succeeded != n {
			t.Errorf("variant %s: %s %d", v.Name, v.Status, v.Succeeded)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fail_on is checked on every variant and the breach names the variant.
func TestExperimentFailOnNamesVariant(t *testing.T) {
	b := setup(t)
	srv := newVariantServer(t)
	suite := b.variantSuite(srv.URL, 4, []string{"good", "wrong"},
		"execution: {concurrency: 1}\nfail_on: [\"pass_rate(exact_match) < 0.9\"]\n")
	code, _, stderr := b.run("run", suite, "-q")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "fail_on breached: variant wrong: pass_rate(exact_match) < 0.9 (actual 0.75") {
		t.Errorf("the breach does not name variant wrong:\n%s", stderr)
	}
	if strings.Contains(stderr, "breached: variant good") {
		t.Errorf("variant good is named though it holds:\n%s", stderr)
	}
	// The same through --fail-on, on a selection where it holds.
	code, _, stderr = b.run("run", suite, "-q", "--variant", "good", "--fail-on", "pass_rate(exact_match) < 0.9")
	if code != 0 {
		t.Errorf("variant good alone: exit %d\n%s", code, stderr)
	}
}

// --variant runs only the named variants, in suite order, the first of
// them the baseline; bad usage is refused before anything runs.
func TestExperimentVariantSelection(t *testing.T) {
	b := setup(t)
	srv := newVariantServer(t)
	suite := b.variantSuite(srv.URL, 0, []string{"a", "b", "c"}, "")
	out := filepath.Join(b.dir, "exp.json")
	code, _, stderr := b.run("run", suite, "-q", "--variant", "c", "--variant", "b", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, ", variants b, c\n") || !strings.Contains(stderr, "baseline: b") {
		t.Errorf("stderr:\n%s", stderr)
	}
	rep, _ := readExpReport(t, out)
	if len(rep.Variants) != 2 || rep.Variants[0].Name != "b" || rep.Variants[1].Name != "c" || rep.Experiment.Baseline != "b" {
		t.Errorf("variants %+v baseline %s", rep.Variants, rep.Experiment.Baseline)
	}
	requests, _ := srv.counts()
	for k := range requests {
		if strings.HasPrefix(k, "a/") {
			t.Errorf("variant a was called: %s", k)
		}
	}

	plain := b.write("plain.yaml", "name: plain\ndataset: {name: d, file: d.jsonl}\ntarget: {kind: echo}\nscorers: [exact_match]\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{suite, "--variant", "zz"}, `--variant "zz": suite exp-test has no such variant (its variants: a, b, c)`},
		{[]string{plain, "--variant", "a"}, "--variant a: suite plain has no variants"},
		{[]string{"--resume", "exp-20990101T000000-00000000", "--variant", "a"}, "--variant cannot be used with --resume"},
		{[]string{suite, "-o", filepath.Join(b.dir, "junit.xml")}, "JUnit has no form for an experiment"},
		{[]string{suite, "--format", "junit"}, "--format junit: JUnit has no form for an experiment"},
		{[]string{suite, "--outputs", filepath.Join(b.dir, "o.jsonl")}, "--outputs cannot be used with a suite with variants"},
		// Distributed mode runs experiments (experiment_distributed.go), on PostgreSQL only.
		{[]string{suite, "--distributed"}, "distributed mode needs PostgreSQL"},
		{[]string{"--resume", "exp-20990101T000000-00000000"}, "experiment exp-20990101T000000-00000000 not found"},
	} {
		code, _, stderr := b.run(append([]string{"run", "-q"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("run %v: exit %d, want 2 saying %q\n%s", tc.args, code, tc.want, stderr)
		}
	}
	_, list, _ := b.run("runs", "list", "--json")
	var stored []evalrun.Run
	if err := json.Unmarshal([]byte(list), &stored); err != nil || len(stored) != 2 {
		t.Errorf("refused commands stored runs: %v\n%s", err, list)
	}
}

// --cache: a second experiment calls nothing, and each variant gets its
// own cached answers (the cache key is the variant's); --repeat runs every
// variant's items that many times.
func TestExperimentCacheAndRepeat(t *testing.T) {
	b := setup(t)
	srv := newVariantServer(t)
	suite := b.variantSuite(srv.URL, 0, []string{"good", "wrong"}, "")
	first := filepath.Join(b.dir, "first.json")
	if code, _, stderr := b.run("run", suite, "-q", "--cache", "-o", first); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	before, _ := srv.counts()
	second := filepath.Join(b.dir, "second.json")
	if code, _, stderr := b.run("run", suite, "-q", "--cache", "-o", second); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	after, _ := srv.counts()
	if !mapsEqual(before, after) {
		t.Errorf("the cached experiment called the target: %v then %v", before, after)
	}
	r1, _ := readExpReport(t, first)
	r2, _ := readExpReport(t, second)
	if r1.Experiment.ID == r2.Experiment.ID {
		t.Errorf("both experiments have id %s", r1.Experiment.ID)
	}
	for i, it := range r2.Items {
		for _, v := range []string{"good", "wrong"} {
			if got, want := string(it.Variants[v].Output), string(r1.Items[i].Variants[v].Output); got != want {
				t.Errorf("item %s variant %s: cached output %s, want %s", it.ID, v, got, want)
			}
		}
	}
	if got := string(r2.Items[0].Variants["wrong"].Output); got != `"nope"` {
		t.Errorf("variant wrong's cached output of item a is %s: the variants share cache entries", got)
	}

	rep := filepath.Join(b.dir, "repeat.json")
	code, _, stderr := b.run("run", suite, "-q", "--repeat", "2", "--variant", "good", "--variant", "wrong", "-o", rep)
	if code != 0 {
		t.Fatalf("--repeat 2: exit %d\n%s", code, stderr)
	}
	r3, _ := readExpReport(t, rep)
	for _, v := range r3.Variants {
		if v.Total != 6 || v.Succeeded != 6 {
			t.Errorf("variant %s with --repeat 2: total %d succeeded %d, want 6", v.Name, v.Total, v.Succeeded)
		}
	}
	final, _ := srv.counts()
	for k, n := range final {
		if n != after[k]+2 {
			t.Errorf("%s: %d requests after --repeat 2, want %d", k, n, after[k]+2)
		}
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// --no-retain: the experiment report is built from storage, and is the
// one evalrun report --experiment rebuilds.
func TestExperimentNoRetain(t *testing.T) {
	b := setup(t)
	srv := newVariantServer(t)
	suite := b.variantSuite(srv.URL, 0, []string{"good", "wrong"}, "")
	out := filepath.Join(b.dir, "exp.json")
	code, _, stderr := b.run("run", suite, "-q", "--no-retain", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	rep, data := readExpReport(t, out)
	if len(rep.Items) != 3 || len(rep.Variants) != 2 {
		t.Fatalf("report: %d items, %d variants", len(rep.Items), len(rep.Variants))
	}
	_, rebuilt, _ := b.run("report", "--experiment", rep.Experiment.ID, "--format", "json")
	if rebuilt != string(data) {
		t.Errorf("report --experiment differs from the --no-retain run's:\n%s\nwant\n%s", rebuilt, data)
	}
}

// The progress display sums the variants and says how far each is.
func TestExperimentProgress(t *testing.T) {
	var buf bytes.Buffer
	st := &State{Stderr: &buf, ProgressEvery: time.Hour, Now: time.Now}
	prog := st.newProgress(20, false)
	agg := &experimentProgress{prog: prog, names: []string{"a", "b"}, last: []evalrun.Progress{{Total: 10}, {Total: 10}}}
	agg.update(0)(evalrun.Progress{Total: 10, Done: 3, Succeeded: 2, Failed: 1})
	agg.update(1)(evalrun.Progress{Total: 10, Done: 4, Succeeded: 4})
	prog.printLine()
	prog.finish()
	got := buf.String()
	if !strings.Contains(got, "progress: 7/20 items (ok 6, failed 1)") || !strings.HasSuffix(got, "; a 3/10, b 4/10\n") {
		t.Errorf("progress line: %q", got)
	}
}

// A dry run of a suite with variants estimates each variant and the total.
func TestExperimentDryRun(t *testing.T) {
	b := setup(t)
	b.write("d.jsonl", data3)
	suite := b.write("suite.yaml", `name: dry
dataset: {name: d, file: d.jsonl}
target:
  kind: openai
  base_url: http://127.0.0.1:1/v1
  model: gpt-4o-mini
  max_tokens: 10
  price: {input_per_mtok: 1000, output_per_mtok: 2000}
scorers: [exact_match]
variants:
  - name: mini
  - name: big
    target: {model: gpt-4o, price: {input_per_mtok: 10000, output_per_mtok: 20000}}
`)
	code, out, stderr := b.run("run", suite, "--dry-run", "--repeat", "2")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{
		"experiment: 2 variants (mini, big), each a run over the same items; baseline: mini",
		"variant mini:\n  target: openai (gpt-4o-mini)",
		"variant big:\n  target: openai (gpt-4o)",
		"  items: 3 selected × 2 repeats = 6 executions",
		"total: 12 executions; requests: 12 target + 0 llm_judge = 12, before retries; estimated cost: $",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	// The big variant costs ten times the mini one: its estimate and the
	// total say so.
	costs := regexp.MustCompile(`(?m)^  estimated cost: \$([0-9.]+)`).FindAllStringSubmatch(out, -1)
	total := regexp.MustCompile(`estimated cost: \$([0-9.]+)\n$`).FindStringSubmatch(out)
	if len(costs) != 2 || total == nil {
		t.Fatalf("costs %v total %v:\n%s", costs, total, out)
	}
	var mini, big, sum float64
	fmt.Sscan(costs[0][1], &mini)
	fmt.Sscan(costs[1][1], &big)
	fmt.Sscan(total[1], &sum)
	if mini <= 0 || big < 9.9*mini || big > 10.1*mini || sum < 0.999*(mini+big) || sum > 1.001*(mini+big) {
		t.Errorf("costs mini %g big %g total %g", mini, big, sum)
	}
	code, out, _ = b.run("run", suite, "--dry-run", "--variant", "big")
	if code != 0 || strings.Contains(out, "variant mini:") || !strings.Contains(out, "variant big:") {
		t.Errorf("--variant big dry run: exit %d\n%s", code, out)
	}
}
