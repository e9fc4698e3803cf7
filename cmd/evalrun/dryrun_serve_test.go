package main_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tiktoken-go/tokenizer"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/report"
	"github.com/evalrun/evalrun/scorer"
	"github.com/evalrun/evalrun/target"
)

// countingServer counts every request it gets and answers none usefully.
type countingServer struct {
	*httptest.Server
	mu sync.Mutex
	n  int
}

func newCountingServer(t *testing.T) *countingServer {
	s := &countingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.n++
		s.mu.Unlock()
		http.Error(w, "a dry run must not call anything", http.StatusTeapot)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *countingServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// openAISuite is a suite whose openai target, judge and embedder all point
// at url; target is extra target keys.
func openAISuite(url, target string) string {
	return fmt.Sprintf(`name: dry
dataset: {name: dry, file: data.jsonl}
target:
  kind: openai
  base_url: %[1]s/v1
  model: gpt-4o-mini
  system: Be brief.
%[2]s
scorers:
  - exact_match
  - {kind: llm_judge, rubric: "is it right?", model: judge, base_url: "%[1]s/v1", max_tokens: 30,
     price: {input_per_mtok: 0.5, output_per_mtok: 4}}
  - {kind: embedding_similarity, model: emb, base_url: "%[1]s/v1"}
execution: {repeat: 2}
`, url, target)
}

// countTokens counts s in the o200k encoding (gpt-4o-mini's).
func countTokens(t *testing.T, s string) int {
	t.Helper()
	c, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.Count(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDryRun(t *testing.T) {
	e := newEnv(t)
	srv := newCountingServer(t)
	e.write("data.jsonl", items(3))
	e.write("suite.yaml", openAISuite(srv.URL, "  price: {input_per_mtok: 1, output_per_mtok: 2}"))
	env := "OPENAI_API_KEY=placeholder"

	r := e.runEnv([]string{env}, "run", "suite.yaml", "--dry-run")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	in, out := 0, 0
	for i := range 3 {
		in += 2 * countTokens(t, fmt.Sprintf("Be brief.\nquestion %d", i))
		out += 2 * countTokens(t, fmt.Sprintf("answer %d", i))
	}
	cost := float64(in)*1/1e6 + float64(out)*2/1e6
	// The judge's prompts, the expected output standing in for the graded
	// output, twice (two repeats); its output is bounded by max_tokens 30.
	judge, err := scorer.NewLLMJudge(scorer.LLMJudgeOptions{Rubric: "is it right?", Model: nopChat{}, MaxTokens: 30})
	if err != nil {
		t.Fatal(err)
	}
	judgeIn := 0
	for i := range 3 {
		item := &evalrun.Item{Input: evalrun.String(fmt.Sprintf("question %d", i)), Expected: evalrun.String(fmt.Sprintf("answer %d", i))}
		req := judge.Request(evalrun.ScoreInput{Item: item, Output: item.Expected})
		judgeIn += 2 * countTokens(t, req.Messages[0].Content+"\n"+req.Messages[1].Content)
	}
	judgeCost := float64(judgeIn)*0.5/1e6 + 6*30*4/1e6
	for _, want := range []string{
		"dry run: suite dry is valid",
		"dataset dry: data.jsonl is valid, 3 items (not imported",
		"items: 3 selected × 2 repeats = 6 executions",
		"requests: 6 target + 6 llm_judge (1 scorer) = 12, before retries",
		"embedding requests: at most 9 (embedding_similarity, 1 scorer",
		fmt.Sprintf("tokens (estimated offline, o200k_base encoding): input %d; output %d (from expected outputs for 3 items)", in, out),
		"estimated cost: " + report.FormatUSD(cost),
		fmt.Sprintf("judge llm_judge tokens (estimated offline, o200k_base encoding): input %d (from the expected outputs as the graded outputs); output at most 180 (max_tokens 30)", judgeIn),
		"judge llm_judge estimated cost: at most " + report.FormatUSD(judgeCost),
		"embedding calls are not estimated",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, r.stdout)
		}
	}

	// The selection flags count.
	r = e.runEnv([]string{env}, "run", "suite.yaml", "--dry-run", "--tag", "a", "--limit", "1", "--repeat", "3")
	if r.code != 0 || !strings.Contains(r.stdout, "items: 1 selected × 3 repeats = 3 executions") ||
		!strings.Contains(r.stdout, "requests: 3 target + 3 llm_judge (1 scorer) = 6") {
		t.Errorf("dry run with --tag a --limit 1 --repeat 3: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Without expected outputs nor max_tokens the output is stated unknown;
	// with max_tokens it is the estimate.
	e.write("data.jsonl", `{"id": "x", "input": "hello"}`+"\n")
	r = e.runEnv([]string{env}, "run", "suite.yaml", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "unknown for 1 item (no expected output, no max_tokens)") ||
		!strings.Contains(r.stdout, "plus the output of 1 item (unknown)") {
		t.Errorf("dry run without expected outputs: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	e.write("suite.yaml", openAISuite(srv.URL, "  max_tokens: 40"))
	r = e.runEnv([]string{env}, "run", "suite.yaml", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "output 80 (from max_tokens 40 for 1 item without an expected output)") ||
		!strings.Contains(r.stdout, "estimated cost: unknown (the target has no price table") {
		t.Errorf("dry run with max_tokens and no price: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// An agent makes up to max_steps model requests per execution: the
	// plan says so rather than count one.
	e.write("suite.yaml", openAISuite(srv.URL, "  max_steps: 4\n  tools: [{name: get_weather}]"))
	r = e.runEnv([]string{env}, "run", "suite.yaml", "--dry-run")
	if want := "agent: each execution makes 1 to 4 model requests (max_steps 4), so at most 8 target requests; the token and cost estimates are of the first turn only"; r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Errorf("dry run of an agent: exit %d, want %q\n%s%s", r.code, want, r.stdout, r.stderr)
	}
	e.write("suite.yaml", openAISuite(srv.URL, "  tools: [{name: get_weather}]"))
	r = e.runEnv([]string{env}, "run", "suite.yaml", "--dry-run")
	if want := "agent: each execution makes 1 to 10 model requests (max_steps 10), so at most 20 target requests"; r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Errorf("dry run of an agent with the default max_steps: exit %d, want %q\n%s%s", r.code, want, r.stdout, r.stderr)
	}
	e.write("suite.yaml", openAISuite(srv.URL, "  max_tokens: 40"))
	if r = e.runEnv([]string{env}, "run", "suite.yaml", "--dry-run"); strings.Contains(r.stdout, "agent:") {
		t.Errorf("dry run of a target without tools speaks of an agent:\n%s", r.stdout)
	}

	// Judge calibration: the judge is the target, estimated on the cases
	// the items' inputs spell out.
	e.write("calib.jsonl", `{"id": "c1", "input": {"input": "2+2?", "output": "5"}, "expected_output": 0}`+"\n")
	e.write("calib.yaml", `dataset: {name: calib, file: calib.jsonl}
target:
  kind: scorer
  scorer: {kind: llm_judge, rubric: "is it right?", model: judge, base_url: "`+srv.URL+`/v1", max_tokens: 50,
           price: {input_per_mtok: 1, output_per_mtok: 1}}
scorers: [{kind: expr, expression: "output.score == expected"}]
`)
	r = e.runEnv([]string{env}, "run", "calib.yaml", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "estimated cost: unknown (the target is a judge under calibration: see its estimate below)") ||
		!strings.Contains(r.stdout, "(from the cases the items' inputs spell out; this judge is the target, under calibration); output at most 50 (max_tokens 50)") ||
		!strings.Contains(r.stdout, "judge llm_judge estimated cost: at most $") {
		t.Errorf("dry run of a judge calibration: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Invalid dataset and invalid suite: exit 2.
	e.write("data.jsonl", `{"input": "a"}`+"\n"+`{"input": }`+"\n")
	if r := e.runEnv([]string{env}, "run", "suite.yaml", "--dry-run"); r.code != 2 || !strings.Contains(r.stderr, "data.jsonl:2:") {
		t.Errorf("dry run of a malformed dataset: exit %d, want 2 naming data.jsonl:2\n%s", r.code, r.stderr)
	}
	e.write("bad.yaml", "dataset: {file: data.jsonl}\ntarget: {kind: echo}\nscorers: [exact_macth]\n")
	if r := e.run("run", "bad.yaml", "--dry-run"); r.code != 2 || !strings.Contains(r.stderr, "bad.yaml:3:") {
		t.Errorf("dry run of an invalid suite: exit %d, want 2\n%s", r.code, r.stderr)
	}

	if n := srv.count(); n != 0 {
		t.Errorf("dry runs made %d requests, want none", n)
	}
	st := e.openStore()
	ds, _ := st.ListDatasets(context.Background())
	runs, _ := st.ListRuns(context.Background(), evalrun.RunFilter{})
	if len(ds) != 0 || len(runs) != 0 {
		t.Errorf("dry runs stored %d datasets and %d runs, want none", len(ds), len(runs))
	}
}

// runEnv is run with extra environment variables (KEY=value), set for
// the rest of the test.
func (e *env) runEnv(vars []string, args ...string) result {
	e.t.Helper()
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		e.t.Setenv(k, v)
	}
	return e.run(args...)
}

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServe(t *testing.T) {
	e := newEnv(t)
	e.write("data.jsonl", items(2))
	e.write("suite.yaml", "dataset: {file: data.jsonl}\ntarget: {kind: echo}\nscorers: [exact_match]\n")
	r := e.run("run", "suite.yaml", "-q")
	id := runID(t, r.stderr)

	cmd := e.command("serve", "--addr", "127.0.0.1:0", "--token", "s3cret-viewer-token-0123")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), "evalrun viewer: "); ok {
				u, _, _ := strings.Cut(rest, " ")
				urls <- strings.TrimSuffix(u, ";")
				break
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	var url string
	select {
	case url = <-urls:
	case <-time.After(30 * time.Second):
		t.Fatal("evalrun serve printed no URL within 30s")
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/") {
		t.Fatalf("printed URL %q, want http://127.0.0.1:PORT/", url)
	}
	if code, _ := get(t, url+"api/runs", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /api/runs without the token: %d, want 401", code)
	}
	if code, body := get(t, url, "s3cret-viewer-token-0123"); code != http.StatusOK || !strings.Contains(body, id) {
		t.Errorf("GET /: %d, want 200 listing run %s\n%.500s", code, id, body)
	}
	if code, body := get(t, url+"api/runs", "s3cret-viewer-token-0123"); code != http.StatusOK || !strings.Contains(body, `"`+id+`"`) {
		t.Errorf("GET /api/runs: %d, want 200 with run %s\n%.500s", code, id, body)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("serve exited %d after Ctrl-C, want 0", code)
	}

	// Off loopback without a token: refused before listening.
	r = e.run("serve", "--addr", "0.0.0.0:0")
	if r.code != 2 || !strings.Contains(r.stderr, "without a token") {
		t.Errorf("serve --addr 0.0.0.0:0 without a token: exit %d, want 2\n%s", r.code, r.stderr)
	}
}

// evalrun report stores the final report of a run that has none.
func TestReportStoresMissingReport(t *testing.T) {
	e := newEnv(t)
	st := e.openStore()
	rs, ok := any(st).(evalrun.ReportStore)
	if !ok {
		t.Skip("the SQLite store does not keep reports (evalrun.ReportStore) yet")
	}
	ctx := context.Background()
	its := []*evalrun.Item{{ID: "a", Input: []byte(`"x"`), Expected: []byte(`"x"`)}, {ID: "b", Input: []byte(`"y"`), Expected: []byte(`"z"`)}}
	v, _, err := st.ImportDataset(ctx, "d", its)
	if err != nil {
		t.Fatal(err)
	}
	exact, err := scorer.New(scorer.Config{Kind: "exact_match"}, scorer.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	run := &evalrun.Run{ID: evalrun.NewRunID(time.Now()), Dataset: "d", DatasetVersion: v.Version,
		Target: evalrun.TargetInfo{Kind: "echo", Name: "echo"}}
	if _, err := engine.Run(ctx, st, engine.Spec{Run: run, Items: its, Target: target.Echo{}, Scorers: []evalrun.Scorer{exact}}); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.GetReportJSON(ctx, run.ID); err == nil {
		t.Fatal("a run made by the engine alone has a stored report already")
	}
	if r := e.run("report", run.ID, "-o", filepath.Join(e.dir, "r.json")); r.code != 0 {
		t.Fatalf("report: exit %d\n%s", r.code, r.stderr)
	}
	data, err := rs.GetReportJSON(ctx, run.ID)
	if err != nil {
		t.Fatalf("evalrun report stored no report: %v", err)
	}
	rep, err := report.ReadJSON(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Run.ID != run.ID || rep.Run.Succeeded != 2 || rep.Items != nil {
		t.Errorf("stored report: %+v with %d rows; want run %s, 2 succeeded, no rows", rep.Run, len(rep.Items), run.ID)
	}
}

// nopChat is a chat model that is never called.
type nopChat struct{}

func (nopChat) Chat(context.Context, evalrun.ChatRequest) (evalrun.ChatResponse, error) {
	return evalrun.ChatResponse{}, errors.New("a dry run must not call the judge")
}
