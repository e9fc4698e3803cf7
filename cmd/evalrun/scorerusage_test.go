package main_test

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/evalrun/evalrun/report"
)

// newPricedModelAPI is an OpenAI-compatible server reporting usage: every
// chat completion costs 120 prompt and 15 completion tokens and answers a
// passing verdict, except for the item whose input is "question 1" (a
// malformed verdict, still paid for); every embedding call costs 7 prompt
// tokens.
func newPricedModelAPI(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		var reply any
		switch {
		case strings.HasSuffix(r.URL.Path, "/chat/completions"):
			verdict := `{"score": 1, "reason": "fine"}`
			if bytes.Contains(body, []byte("question 1")) {
				verdict = "not a verdict"
			}
			reply = map[string]any{"id": "c", "object": "chat.completion", "model": "judge",
				"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
					"message": map[string]any{"role": "assistant", "content": verdict}}},
				"usage": map[string]any{"prompt_tokens": 120, "completion_tokens": 15, "total_tokens": 135}}
		case strings.HasSuffix(r.URL.Path, "/embeddings"):
			reply = map[string]any{"object": "list", "model": "emb",
				"data":  []any{map[string]any{"object": "embedding", "index": 0, "embedding": []float64{1, 0.5}}},
				"usage": map[string]any{"prompt_tokens": 7, "total_tokens": 7}}
		default:
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(reply)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The judges' and embedders' spend is priced and reported beside the
// target's, the same in the terminal summary, the JSON and Markdown files,
// a --no-retain run's files and `evalrun report`.
func TestScorerUsageAndCost(t *testing.T) {
	e := newEnv(t)
	api := newPricedModelAPI(t)
	e.write("data.jsonl", items(3))
	e.write("suite.yaml", `dataset: {name: priced, file: data.jsonl}
target: {kind: echo}
scorers:
  - exact_match
  - {kind: llm_judge, rubric: "is it right?", model: judge, base_url: "`+api.URL+`/v1",
     price: {input_per_mtok: 2, output_per_mtok: 8}}
  - {kind: embedding_similarity, model: emb, base_url: "`+api.URL+`/v1", price: {input_per_mtok: 0.1}}
`)
	env := []string{"OPENAI_API_KEY=placeholder"}
	r := e.runEnv(env, "run", "suite.yaml", "-o", "report.json", "-o", "report.md")
	if r.code != 1 { // the malformed verdict is a scorer error
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	id := runID(t, r.stderr)

	// By hand: 3 judge calls of 120 + 15 tokens at $2 / $8 per million
	// ($0.00036 each), the malformed one included; 3 × 2 embedding calls
	// of 7 tokens at $0.1 per million.
	const wantCost = 3*(120*2+15*8)/1e6 + 42*0.1/1e6
	if want := "scorer tokens in 402 (6 reported)  out 45 (3 reported)  cost $0.0011 (6 reported)"; !strings.Contains(r.stdout, want) {
		t.Errorf("summary lacks %q:\n%s", want, r.stdout)
	}
	rep := e.readReport("report.json")
	s := rep.Usage.Scorers
	if s.InputTokens.Total == nil || *s.InputTokens.Total != 402 || s.InputTokens.Reported != 6 ||
		s.OutputTokens.Total == nil || *s.OutputTokens.Total != 45 || s.OutputTokens.Reported != 3 ||
		s.CostUSD.Total == nil || math.Abs(*s.CostUSD.Total-wantCost) > 1e-12 || s.CostUSD.Reported != 6 {
		t.Errorf("usage.scorers = in %v/%d out %v/%d cost %v/%d; want 402/6, 45/3, %v/6", s.InputTokens.Total, s.InputTokens.Reported,
			s.OutputTokens.Total, s.OutputTokens.Reported, s.CostUSD.Total, s.CostUSD.Reported, wantCost)
	}
	if rep.Usage.InputTokens.Reported != 0 || rep.Usage.CostUSD.Total != nil {
		t.Errorf("the echo target reported usage: %+v", rep.Usage)
	}
	md, err := os.ReadFile(filepath.Join(e.dir, "report.md"))
	if err != nil || !bytes.Contains(md, []byte("| input tokens | — | 0 | 402 | 6 |")) || !bytes.Contains(md, []byte("| cost (USD) | — | 0 | 0.0011 | 6 |")) {
		t.Errorf("report.md lacks the scorer usage (%v):\n%s", err, md)
	}

	// From storage: `evalrun report` of that run, and a --no-retain run.
	stored := e.runEnv(env, "report", id, "--format", "json")
	if stored.code != 0 {
		t.Fatalf("report: exit %d\n%s", stored.code, stored.stderr)
	}
	fromStore, err := report.ReadJSON(strings.NewReader(stored.stdout))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromStore.Usage, rep.Usage) {
		t.Errorf("evalrun report usage %+v, want the run's %+v", fromStore.Usage, rep.Usage)
	}
	r = e.runEnv(env, "run", "suite.yaml", "--no-retain", "-o", "noretain.json")
	if r.code != 1 {
		t.Fatalf("--no-retain: exit %d\n%s", r.code, r.stderr)
	}
	if got := e.readReport("noretain.json").Usage.Scorers; !reflect.DeepEqual(got, rep.Usage.Scorers) {
		t.Errorf("--no-retain usage.scorers %+v, want %+v", got, rep.Usage.Scorers)
	}
}
