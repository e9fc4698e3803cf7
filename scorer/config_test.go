package scorer_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/scorer"
)

func TestKinds(t *testing.T) {
	t.Parallel()
	want := []string{"contains", "embedding_similarity", "exact_match", "expr", "json_equal",
		"json_schema", "json_valid", "levenshtein", "llm_judge", "numeric", "regex", "tool_called", "trajectory"}
	want = append(want, "exec", "http")
	slices.Sort(want)
	if got := scorer.Kinds(); !slices.Equal(got, want) {
		t.Errorf("Kinds() = %v, want %v", got, want)
	}
}

func TestConfigFromYAML(t *testing.T) {
	t.Parallel()
	const suite = `
scorers:
  - exact_match
  - kind: contains
    name: mentions-refund
    values: refund
    threshold: 1.0
  - kind: contains
    values: [a, b]
    mode: all
    case_sensitive: false
  - kind: expr
    name: short-enough
    expression: "len(output) < 200"
  - kind: json_schema
    schema:
      type: object
      required: [answer]
  - kind: numeric
    tolerance: 0.01
    relative: true
    threshold: 0
  - kind: llm_judge
    model: gpt-4o-mini
    base_url: http://judge.local/v1
    api_key_env: JUDGE_KEY
    rate_limit: 5/s
    rubric: Is the answer polite?
    max_retries: 3
    retry_delay: 250ms
    price: {input_per_mtok: 0.15, output_per_mtok: 0.6}
  - kind: embedding_similarity
    model: text-embedding-3-small
    price: {input_per_mtok: 0.02}
`
	var doc struct {
		Scorers []scorer.Config `yaml:"scorers"`
	}
	if err := yaml.Unmarshal([]byte(suite), &doc); err != nil {
		t.Fatal(err)
	}
	var models []scorer.ModelConfig
	deps := scorer.Deps{
		ChatModel: func(c scorer.ModelConfig) (evalrun.ChatModel, error) {
			models = append(models, c)
			return &fakeChat{}, nil
		},
		Embedder: func(c scorer.ModelConfig) (evalrun.Embedder, error) {
			models = append(models, c)
			return newFakeEmbedder(), nil
		},
	}
	want := []struct {
		name      string
		threshold float64
	}{
		{"exact_match", 0.5}, {"mentions-refund", 1}, {"contains", 0.5}, {"short-enough", 0.5},
		{"json_schema", 0.5}, {"numeric", 0}, {"llm_judge", 0.5}, {"embedding_similarity", 0.5},
	}
	if len(doc.Scorers) != len(want) {
		t.Fatalf("decoded %d scorers, want %d", len(doc.Scorers), len(want))
	}
	for i, cfg := range doc.Scorers {
		s := mustNew(t, cfg, deps)
		if s.Name() != want[i].name || evalrun.ThresholdOf(s) != want[i].threshold {
			t.Errorf("scorer %d = %s (threshold %v), want %s (%v)", i, s.Name(), evalrun.ThresholdOf(s), want[i].name, want[i].threshold)
		}
	}
	if c := doc.Scorers[1]; !slices.Equal(c.Values, []string{"refund"}) {
		t.Errorf("values: refund decoded as %q", c.Values)
	}
	if c := doc.Scorers[6]; c.MaxRetries == nil || *c.MaxRetries != 3 || c.RetryDelay == nil || *c.RetryDelay != 250*time.Millisecond {
		t.Errorf("llm_judge retry = %v, %v; want 3, 250ms", c.MaxRetries, c.RetryDelay)
	}
	wantModels := []scorer.ModelConfig{
		{Kind: "llm_judge", Model: "gpt-4o-mini", BaseURL: "http://judge.local/v1", APIKeyEnv: "JUDGE_KEY", RateLimit: "5/s",
			Price: &evalrun.Price{InputPerMTok: 0.15, OutputPerMTok: 0.6}},
		{Kind: "embedding_similarity", Model: "text-embedding-3-small", Price: &evalrun.Price{InputPerMTok: 0.02}},
	}
	if !slices.EqualFunc(models, wantModels, func(a, b scorer.ModelConfig) bool {
		pa, pb := a.Price, b.Price
		a.Price, b.Price = nil, nil
		return a == b && pa != nil && pb != nil && *pa == *pb
	}) {
		t.Errorf("factories got %+v, want %+v", models, wantModels)
	}
}

func TestConfigYAMLErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml, key string
		line            int
	}{
		{"unknown key", "- kind: regex\n  patern: x\n", "patern", 2},
		{"sequence", "- [exact_match]\n", "", 1},
		{"bad threshold", "- kind: numeric\n  threshold: abc\n", "threshold", 2},
		{"bad values", "- kind: contains\n  values: {a: 1}\n", "values", 2},
		{"bad retry_delay", "- kind: llm_judge\n  rubric: ok?\n  retry_delay: soon\n", "retry_delay", 3},
		// A misspelt price key would price every call at 0.
		{"misspelt price key", "- kind: llm_judge\n  rubric: ok?\n  price: {input_per_mtok: 1, ouput_per_mtok: 2}\n", "price", 3},
		{"price not a mapping", "- kind: embedding_similarity\n  price: 0.02\n", "price", 2},
		{"price not a number", "- kind: llm_judge\n  price:\n    input_per_mtok: cheap\n", "price", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var list []scorer.Config
			err := yaml.Unmarshal([]byte(tc.yaml), &list)
			ce := wantConfigError(t, err, tc.key)
			if ce.Line != tc.line {
				t.Errorf("Line = %d, want %d (%v)", ce.Line, tc.line, err)
			}
		})
	}
}

func TestNewConfigErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"type": 12}`), 0o600); err != nil {
		t.Fatal(err)
	}
	chat := func(scorer.ModelConfig) (evalrun.ChatModel, error) { return &fakeChat{}, nil }
	for _, tc := range []struct {
		name string
		cfg  scorer.Config
		deps scorer.Deps
		key  string
	}{
		{"unknown kind", scorer.Config{Kind: "exact"}, scorer.Deps{}, "kind"},
		{"missing kind", scorer.Config{}, scorer.Deps{}, "kind"},
		{"threshold above 1", scorer.Config{Kind: "exact_match", Threshold: new(1.5)}, scorer.Deps{}, "threshold"},
		{"threshold below 0", scorer.Config{Kind: "regex", Pattern: "x", Threshold: new(-0.1)}, scorer.Deps{}, "threshold"},
		{"threshold NaN", scorer.Config{Kind: "json_valid", Threshold: new(math.NaN())}, scorer.Deps{}, "threshold"},
		{"key of another kind", scorer.Config{Kind: "exact_match", Pattern: "x"}, scorer.Deps{}, "pattern"},
		{"mode on regex", scorer.Config{Kind: "regex", Pattern: "x", Mode: "all"}, scorer.Deps{}, "mode"},
		{"unknown mode", scorer.Config{Kind: "contains", Values: scorer.StringList{"a"}, Mode: "most"}, scorer.Deps{}, "mode"},
		{"empty value", scorer.Config{Kind: "contains", Values: scorer.StringList{"a", ""}}, scorer.Deps{}, "values[1]"},
		{"invalid regex", scorer.Config{Kind: "regex", Pattern: "a(b"}, scorer.Deps{}, "pattern"},
		{"missing pattern", scorer.Config{Kind: "regex"}, scorer.Deps{}, "pattern"},
		{"invalid schema", scorer.Config{Kind: "json_schema", Schema: map[string]any{"type": 12}}, scorer.Deps{}, "schema"},
		{"schema not an object", scorer.Config{Kind: "json_schema", Schema: "[1]"}, scorer.Deps{}, "schema"},
		{"schema string not JSON", scorer.Config{Kind: "json_schema", Schema: "{type: object"}, scorer.Deps{}, "schema"},
		{"schema and file", scorer.Config{Kind: "json_schema", Schema: "{}", SchemaFile: "x.json"}, scorer.Deps{}, "schema"},
		{"no schema", scorer.Config{Kind: "json_schema"}, scorer.Deps{}, "schema"},
		{"missing schema file", scorer.Config{Kind: "json_schema", SchemaFile: "nope.json"}, scorer.Deps{BaseDir: dir}, "schema_file"},
		{"invalid schema file", scorer.Config{Kind: "json_schema", SchemaFile: "bad.json"}, scorer.Deps{BaseDir: dir}, "schema_file"},
		{"negative tolerance", scorer.Config{Kind: "numeric", Tolerance: new(-1.0)}, scorer.Deps{}, "tolerance"},
		{"infinite tolerance", scorer.Config{Kind: "numeric", Tolerance: new(math.Inf(1))}, scorer.Deps{}, "tolerance"},
		{"expression syntax", scorer.Config{Kind: "expr", Expression: "output ==="}, scorer.Deps{}, "expression"},
		{"expression unknown variable", scorer.Config{Kind: "expr", Expression: "answer == 1"}, scorer.Deps{}, "expression"},
		{"missing expression", scorer.Config{Kind: "expr"}, scorer.Deps{}, "expression"},
		{"judge without rubric", scorer.Config{Kind: "llm_judge"}, scorer.Deps{ChatModel: chat}, "rubric"},
		{"judge without provider", scorer.Config{Kind: "llm_judge", Rubric: "ok?"}, scorer.Deps{}, "model"},
		{"judge negative retries", scorer.Config{Kind: "llm_judge", Rubric: "ok?", MaxRetries: new(-1)}, scorer.Deps{ChatModel: chat}, "max_retries"},
		{"judge negative max_tokens", scorer.Config{Kind: "llm_judge", Rubric: "ok?", MaxTokens: -5}, scorer.Deps{ChatModel: chat}, "max_tokens"},
		{"embedding without provider", scorer.Config{Kind: "embedding_similarity"}, scorer.Deps{}, "model"},
		{"rubric on embedding", scorer.Config{Kind: "embedding_similarity", Rubric: "x"}, scorer.Deps{}, "rubric"},
		{"price on exact_match", scorer.Config{Kind: "exact_match", Price: &evalrun.Price{}}, scorer.Deps{}, "price"},
		{"judge negative price", scorer.Config{Kind: "llm_judge", Rubric: "ok?", Price: &evalrun.Price{InputPerMTok: -1}}, scorer.Deps{ChatModel: chat}, "price"},
		{"embedding infinite price", scorer.Config{Kind: "embedding_similarity", Price: &evalrun.Price{OutputPerMTok: math.Inf(1)}},
			scorer.Deps{Embedder: func(scorer.ModelConfig) (evalrun.Embedder, error) { return newFakeEmbedder(), nil }}, "price"},
		{"judge NaN price", scorer.Config{Kind: "llm_judge", Rubric: "ok?", Price: &evalrun.Price{InputPerMTok: math.NaN()}}, scorer.Deps{ChatModel: chat}, "price"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := scorer.New(tc.cfg, tc.deps)
			if s != nil {
				t.Errorf("New returned a scorer with an error")
			}
			wantConfigError(t, err, tc.key)
		})
	}
}

func TestConfigErrorMessages(t *testing.T) {
	t.Parallel()
	_, err := scorer.New(scorer.Config{Kind: "exact"}, scorer.Deps{})
	if err == nil || !strings.Contains(err.Error(), `unknown scorer kind "exact"; known kinds: contains, embedding_similarity, exact_match,`) {
		t.Errorf("unknown kind: %v", err)
	}
	_, err = scorer.New(scorer.Config{Kind: "regex", Name: "phone", Pattern: "a(b"}, scorer.Deps{})
	if err == nil || !strings.HasPrefix(err.Error(), `scorer "phone" (regex): pattern: invalid regular expression: `) {
		t.Errorf("invalid regex: %v", err)
	}
	var se *syntax.Error
	if !errors.As(err, &se) {
		t.Errorf("invalid regex: %v does not wrap a *syntax.Error", err)
	}
	var list []scorer.Config
	err = yaml.Unmarshal([]byte("- kind: regex\n  name: phone\n  patern: x\n"), &list)
	if want := `line 3: scorer "phone" (regex): patern: unknown key; known keys: kind, name, threshold, pattern`; err == nil || err.Error() != want {
		t.Errorf("unknown key: %v, want %s", err, want)
	}
	err = yaml.Unmarshal([]byte("- kind: numeric\n  tolerance: lots\n"), &list)
	if want := "line 2: scorer numeric: tolerance: cannot unmarshal !!str `lots` into float64"; err == nil || err.Error() != want {
		t.Errorf("bad value: %v, want %s", err, want)
	}
	if err := yaml.Unmarshal([]byte("- kind: json_valid\n  threshold: 2\n"), &list); err != nil {
		t.Fatal(err)
	}
	_, err = scorer.New(list[0], scorer.Deps{})
	if err == nil || !strings.HasPrefix(err.Error(), `line 1: scorer "json_valid": threshold: 2 is outside [0,1]`) {
		t.Errorf("threshold from YAML: %v", err)
	}
}

func TestDepsFactoryError(t *testing.T) {
	t.Parallel()
	boom := errors.New("OPENAI_API_KEY is not set")
	_, err := scorer.New(scorer.Config{Kind: "llm_judge", Rubric: "ok?"}, scorer.Deps{
		ChatModel: func(scorer.ModelConfig) (evalrun.ChatModel, error) { return nil, boom },
	})
	wantConfigError(t, err, "model")
	if !errors.Is(err, boom) {
		t.Errorf("error %v does not wrap the factory's error", err)
	}
}
