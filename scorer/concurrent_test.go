package scorer_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/scorer"
)

// TestAllKindsConcurrent scores with one scorer of every kind from many
// goroutines at once (run with -race) and checks every goroutine gets the
// same verdicts as a sequential pass.
func TestAllKindsConcurrent(t *testing.T) {
	t.Parallel()
	// The http scorer's grading service: 1 when output equals expected.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Output   json.RawMessage `json:"output"`
			Expected json.RawMessage `json:"expected_output"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		fmt.Fprintf(w, `{"score": %d, "reason": "compared"}`, map[bool]int{true: 1}[string(req.Output) == string(req.Expected)])
	}))
	defer srv.Close()
	var cfgs []scorer.Config
	err := yaml.Unmarshal([]byte(`
- exact_match
- {kind: contains, values: [cat]}
- {kind: regex, pattern: "^c"}
- json_valid
- {kind: json_schema, schema: {type: string}}
- json_equal
- levenshtein
- {kind: expr, expression: "output == expected"}
- {kind: llm_judge, rubric: "is it a cat?"}
- embedding_similarity
- {kind: tool_called, tool: search, args: {q: cat}}
- {kind: trajectory, mode: f1}
- kind: exec
  persistent: true
  processes: 2
  command:
    - python3
    - -c
    - |
      import json, sys
      for l in sys.stdin:
          r = json.loads(l)
          print(json.dumps({"score": int(r["output"] == r["expected_output"])}), flush=True)
- {kind: http, url: "`+srv.URL+`"}
`), &cfgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != len(scorer.Kinds())-1 { // numeric needs numbers; tested on its own
		t.Fatalf("%d configs, want one per kind but numeric", len(cfgs))
	}
	deps := scorer.Deps{
		ChatModel: func(scorer.ModelConfig) (evalrun.ChatModel, error) { return &fakeChat{}, nil },
		Embedder:  func(scorer.ModelConfig) (evalrun.Embedder, error) { return newFakeEmbedder(), nil },
	}
	items := []evalrun.ScoreInput{
		input("a", `"q"`, `"cat"`, `"cat"`),
		input("b", `"q"`, `"kitten"`, `"cat"`),
		input("c", `"q"`, `"dog"`, `"cat"`),
		input("d", `"q"`, `{"x":1}`, `"cat"`),
	}
	// The scorers over trajectories see what an agent did.
	for i := range items {
		in := &items[i]
		in.Trajectory = &evalrun.Trajectory{Steps: 2, Calls: []evalrun.ToolCall{
			{Name: "search", Args: json.RawMessage(`{"q":"cat"}`)},
			{Name: "fetch", Args: json.RawMessage(fmt.Sprintf(`{"page":%d}`, i))}}}
		in.Item.ExpectedTrajectory = []evalrun.ExpectedCall{{Name: "search"}, {Name: "fetch", Args: json.RawMessage(`{"page":1}`)}}
	}
	scorers := make([]evalrun.Scorer, len(cfgs))
	for i, cfg := range cfgs {
		scorers[i] = mustNew(t, cfg, deps)
		if c, ok := scorers[i].(evalrun.Closer); ok {
			defer c.Close()
		}
	}
	verdicts := func() string {
		var out string
		for _, s := range scorers {
			for _, in := range items {
				sc, err := s.Score(t.Context(), in)
				out += fmt.Sprintf("%s/%s=%v,%v;", s.Name(), in.Item.ID, sc.Value, err)
			}
		}
		return out
	}
	want := verdicts()
	var wg sync.WaitGroup
	got := make([]string, 8)
	for g := range got {
		wg.Go(func() { got[g] = verdicts() })
	}
	wg.Wait()
	for g, v := range got {
		if v != want {
			t.Errorf("goroutine %d verdicts differ:\n got %s\nwant %s", g, v, want)
		}
	}
}
