package suite_test

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/inmem"
	"github.com/evalrun/evalrun/suite"
)

// fakeModelAPI is an OpenAI-compatible server: chat completions answer a
// verdict (score 0 when the graded output is "5", else 1) and embeddings a
// fixed vector, each reporting the usage it was built with. It records the
// user message of every chat request.
type fakeModelAPI struct {
	*httptest.Server
	mu      sync.Mutex
	prompts []string
}

func newFakeModelAPI(t *testing.T) *fakeModelAPI {
	t.Helper()
	f := &fakeModelAPI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/chat/completions"):
			var req struct {
				Messages []struct{ Role, Content string }
			}
			if err := json.Unmarshal(body, &req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			var user string
			for _, m := range req.Messages {
				if m.Role == "user" {
					user = m.Content
				}
			}
			f.mu.Lock()
			f.prompts = append(f.prompts, user)
			f.mu.Unlock()
			score := 1
			if strings.Contains(user, "<output>\n5\n</output>") {
				score = 0
			}
			verdict, _ := json.Marshal(map[string]any{"score": score, "reason": "checked"})
			json.NewEncoder(w).Encode(map[string]any{
				"id": "c", "object": "chat.completion", "model": "judge-1",
				"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
					"message": map[string]any{"role": "assistant", "content": string(verdict)}}},
				"usage": map[string]any{"prompt_tokens": 200, "completion_tokens": 20, "total_tokens": 220},
			})
		case strings.HasSuffix(r.URL.Path, "/embeddings"):
			var req struct{ Input []string }
			if err := json.Unmarshal(body, &req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			data := make([]any, len(req.Input))
			for i := range req.Input {
				data[i] = map[string]any{"object": "embedding", "index": i, "embedding": []float64{1, float64(i)}}
			}
			json.NewEncoder(w).Encode(map[string]any{"object": "list", "model": "emb-1", "data": data,
				"usage": map[string]any{"prompt_tokens": 30, "total_tokens": 30}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeModelAPI) recorded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.prompts...)
}

func parseWith(t *testing.T, src string, api *fakeModelAPI, c evalrun.ResponseCache) *suite.Suite {
	t.Helper()
	s, err := suite.Parse([]byte(src), "suite.yaml", t.TempDir(), suite.Options{Cache: c,
		Env: suite.EnvList([]string{"MODEL_URL=" + api.URL + "/v1", "OPENAI_API_KEY=test-key"})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func runSuite(t *testing.T, s *suite.Suite, items []*evalrun.Item) *evalrun.Summary {
	t.Helper()
	sum, err := engine.Run(context.Background(), inmem.New(), engine.Spec{Items: items, Target: s.Target(),
		Scorers: s.Scorers(), Options: engine.Options{Concurrency: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != evalrun.RunCompleted || sum.Failed != 0 {
		t.Fatalf("run %s with %d failed: %v", sum.Status, sum.Failed, sum.Err)
	}
	return sum
}

// Judge calibration: the judge under test is asked about the case the
// item's input spells out and never sees the item's expected output, the
// grade people gave; the suite's scorers still compare its score to that
// grade.
func TestCalibrationHidesTheGrade(t *testing.T) {
	api := newFakeModelAPI(t)
	s := parseWith(t, `
dataset: {name: calibration}
target:
  kind: scorer
  scorer:
    kind: llm_judge
    model: judge-1
    base_url: ${MODEL_URL}
    rubric: Is the answer correct?
    price: {input_per_mtok: 1, output_per_mtok: 2}
scorers:
  - kind: expr
    name: agrees
    expression: "output.score == expected"
`, api, nil)
	items := []*evalrun.Item{
		{ID: "pair", Input: json.RawMessage(`{"input": "What is 2+2?", "output": "5"}`), Expected: json.RawMessage(`0`)},
		{ID: "text", Input: json.RawMessage(`"Your refund is on its way."`), Expected: json.RawMessage(`1`)},
		{ID: "reference", Input: json.RawMessage(`{"input": "Capital of France?", "output": "Paris", "expected_output": "Paris, France"}`),
			Expected: json.RawMessage(`1`)},
	}
	sum := runSuite(t, s, items)

	prompts := api.recorded()
	if len(prompts) != 3 {
		t.Fatalf("judge got %d requests, want 3", len(prompts))
	}
	for _, tc := range []struct {
		graded, input, expected string // "" for none
	}{
		{"5", "What is 2+2?", ""},
		{"Your refund is on its way.", "", ""},
		{"Paris", "Capital of France?", "Paris, France"},
	} {
		var prompt string
		for _, p := range prompts {
			if strings.Contains(p, "<output>\n"+tc.graded+"\n</output>") {
				prompt = p
			}
		}
		if prompt == "" {
			t.Errorf("no judge prompt grades %q: %q", tc.graded, prompts)
			continue
		}
		if n := strings.Count(prompt, tc.graded); n != 1 && tc.graded != "Paris" {
			t.Errorf("graded text %q appears %d times in the prompt, want once:\n%s", tc.graded, n, prompt)
		}
		if got := section(prompt, "input"); got != tc.input {
			t.Errorf("input section %q, want %q:\n%s", got, tc.input, prompt)
		}
		// The grade is never shown: the only expected output is a
		// reference answer the case itself gives.
		if got := section(prompt, "expected_output"); got != tc.expected {
			t.Errorf("expected_output section %q, want %q:\n%s", got, tc.expected, prompt)
		}
	}

	for _, r := range sum.Results {
		if len(r.Scores) != 1 || r.Scores[0].Score == nil || *r.Scores[0].Score != 1 {
			t.Errorf("%s: output %s, scores %+v; want the judge to agree with the grade", r.ItemID, r.Output, r.Scores)
		}
		// The judge under test is the target: its spend is the target's.
		u := r.Usage
		if u.InputTokens == nil || *u.InputTokens != 200 || u.OutputTokens == nil || *u.OutputTokens != 20 ||
			u.CostUSD == nil || math.Abs(*u.CostUSD-(200*1+20*2)/1e6) > 1e-15 {
			t.Errorf("%s: usage %+v, want 200 in, 20 out, $0.00024", r.ItemID, u)
		}
	}
}

// section returns the body of <tag>…</tag> in a judge prompt, "" when absent.
func section(prompt, tag string) string {
	_, rest, ok := strings.Cut(prompt, "<"+tag+">\n")
	if !ok {
		return ""
	}
	body, _, _ := strings.Cut(rest, "\n</"+tag+">")
	return body
}

// pricedJudgeSuite is a suite with an echo target and a priced judge on
// the fake model API; more scorers or sections may follow.
const pricedJudgeSuite = `
dataset: {name: d}
target: {kind: echo}
scorers:
  - kind: llm_judge
    model: judge-1
    base_url: ${MODEL_URL}
    rubric: Is the answer correct?
    price: {input_per_mtok: 0.5, output_per_mtok: 4}
`

// Judges and embedders with a price have their tokens turned into a cost,
// recorded on each score apart from the target's usage.
func TestScorerModelsArePriced(t *testing.T) {
	api := newFakeModelAPI(t)
	s := parseWith(t, pricedJudgeSuite+`  - kind: embedding_similarity
    model: emb-1
    base_url: ${MODEL_URL}
    price: {input_per_mtok: 0.02}
  - kind: llm_judge
    name: unpriced
    model: judge-1
    base_url: ${MODEL_URL}
    rubric: Is the answer correct?
`, api, nil)
	sum := runSuite(t, s, []*evalrun.Item{{ID: "q", Input: json.RawMessage(`"hello"`), Expected: json.RawMessage(`"bye"`)}})
	r := sum.Results[0]
	if !r.Usage.IsZero() {
		t.Errorf("echo target usage %+v, want none", r.Usage)
	}
	for i, want := range []struct {
		in, out int64 // -1: not reported
		cost    float64
	}{
		{200, 20, (200*0.5 + 20*4) / 1e6},
		{60, -1, 60 * 0.02 / 1e6}, // two calls: expected, then output
		{200, 20, -1},
	} {
		u := r.Scores[i].Usage
		if got := ptrOr(u.InputTokens); got != want.in {
			t.Errorf("%s input tokens %d, want %d", r.Scores[i].Scorer, got, want.in)
		}
		if got := ptrOr(u.OutputTokens); got != want.out {
			t.Errorf("%s output tokens %d, want %d", r.Scores[i].Scorer, got, want.out)
		}
		switch {
		case want.cost < 0 && u.CostUSD != nil:
			t.Errorf("%s cost %v, want none (no price)", r.Scores[i].Scorer, *u.CostUSD)
		case want.cost >= 0 && (u.CostUSD == nil || math.Abs(*u.CostUSD-want.cost) > 1e-15):
			t.Errorf("%s cost %v, want %v", r.Scores[i].Scorer, u.CostUSD, want.cost)
		}
	}
}

func ptrOr(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

// A verdict served from the response cache calls no model: it reports no
// usage, so a re-run that only changed scorers costs nothing.
func TestCachedVerdictReportsNoUsage(t *testing.T) {
	api := newFakeModelAPI(t)
	s := parseWith(t, pricedJudgeSuite+`execution: {cache: true}
`, api, inmem.New())
	items := []*evalrun.Item{{ID: "q", Input: json.RawMessage(`"hello"`)}}
	first := runSuite(t, s, items).Results[0].Scores[0]
	if first.Usage.CostUSD == nil || *first.Usage.CostUSD == 0 {
		t.Fatalf("first verdict usage %+v, want a cost", first.Usage)
	}
	again := runSuite(t, s, items).Results[0].Scores[0]
	if len(api.recorded()) != 1 || again.Score == nil || *again.Score != *first.Score || !again.Usage.IsZero() {
		t.Errorf("cached verdict: %d judge calls, score %v, usage %+v; want 1 call, the same score, no usage",
			len(api.recorded()), again.Score, again.Usage)
	}
}
