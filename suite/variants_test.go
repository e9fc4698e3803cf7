package suite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/suite"
	"github.com/evalrun/evalrun/target"
)

const openaiVariants = `dataset: {file: data.jsonl}
target: {kind: openai, model: gpt-4o-mini, prompt: "{{ .Input }}", base_url: "http://127.0.0.1:1/v1", rate_limit: 10/s}
variants:
  - name: mini
  - name: big
    target: {model: gpt-4o}
  - name: terse
    target: {prompt: "Answer in one word: {{ .Input }}", rate_limit: 2/s}
scorers: [exact_match]
`

var openaiEnv = []string{"OPENAI_API_KEY=sk-test"}

func view(t *testing.T, s *suite.Suite, name string) *suite.Suite {
	t.Helper()
	v, err := s.ForVariant(name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// rebuild returns the suite rebuilt from v's stored run config (with
// openaiEnv), as resume rebuilds it; it is closed when the test ends.
func rebuild(t *testing.T, v *suite.Suite) *suite.Suite {
	t.Helper()
	rc, err := v.RunConfig()
	if err != nil {
		t.Fatal(err)
	}
	back, err := suite.FromRunConfig(rc, suite.Options{Env: suite.EnvList(openaiEnv)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { back.Close() })
	return back
}

func TestVariantsParse(t *testing.T) {
	s, err := parse(t, openaiVariants, openaiEnv...)
	if err != nil {
		t.Fatal(err)
	}
	vs := s.Variants()
	if len(vs) != 3 || vs[0].Name != "mini" || vs[1].Name != "big" || vs[2].Name != "terse" {
		t.Fatalf("variants = %v", vs)
	}
	for i, want := range []struct {
		name string
		rate string
	}{{"gpt-4o-mini", "10/s"}, {"gpt-4o", "10/s"}, {"gpt-4o-mini", "2/s"}} {
		v := vs[i]
		if v.TargetInfo != (evalrun.TargetInfo{Kind: "openai", Name: want.name}) {
			t.Errorf("%s: TargetInfo = %+v", v.Name, v.TargetInfo)
		}
		if v.RateLimit == nil || v.RateLimit.String() != want.rate {
			t.Errorf("%s: RateLimit = %v, want %s", v.Name, v.RateLimit, want.rate)
		}
	}
	if s.VariantName() != "" || s.TargetInfo.Name != "gpt-4o-mini" {
		t.Errorf("the suite itself: %q %+v", s.VariantName(), s.TargetInfo)
	}
	plain, err := parse(t, minimal)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Variants() != nil {
		t.Errorf("a suite without variants has %v", plain.Variants())
	}
	if _, err := plain.ForVariant("a"); !errors.Is(err, evalrun.ErrInvalid) || !strings.Contains(err.Error(), "it has no variants") {
		t.Errorf("ForVariant on a suite without variants: %v", err)
	}
}

// The view's target, info, plan and rate are the variant's; the dry-run
// plan renders the variant's prompt.
func TestVariantView(t *testing.T) {
	s, err := parse(t, openaiVariants, openaiEnv...)
	if err != nil {
		t.Fatal(err)
	}
	big, terse := view(t, s, "big"), view(t, s, "terse")
	if big.VariantName() != "big" || big.ChatPlan().Model != "gpt-4o" || big.TargetInfo.Name != "gpt-4o" {
		t.Errorf("big: %q %q %+v", big.VariantName(), big.ChatPlan().Model, big.TargetInfo)
	}
	prompt, err := terse.ChatPlan().Prompt(&evalrun.Item{Input: []byte(`"capital of France"`)})
	if err != nil || prompt != "Answer in one word: capital of France" {
		t.Errorf("terse prompt %q, %v", prompt, err)
	}
	if big.RateLimit.String() != "10/s" || terse.RateLimit.String() != "2/s" {
		t.Errorf("rates %v %v", big.RateLimit, terse.RateLimit)
	}
	if _, ok := terse.Target().(*target.RateLimitedTarget); !ok {
		t.Errorf("terse's Target() is %T, not rate limited", terse.Target())
	}
	if terse.Target() != terse.Target() || terse.Target() == big.Target() {
		t.Error("a view's Target() is not its own, stable, limited target")
	}
	if big.Variants() != nil {
		t.Error("a view lists variants")
	}
	if v, err := big.ForVariant("big"); err != nil || v != big {
		t.Errorf("ForVariant of its own name on a view: %v", err)
	}
	if _, err := big.ForVariant("terse"); !errors.Is(err, evalrun.ErrInvalid) {
		t.Errorf("ForVariant of another name on a view: %v", err)
	}
	_, err = s.ForVariant("bigg")
	if !errors.Is(err, evalrun.ErrInvalid) || !strings.Contains(err.Error(), `has no variant "bigg" (did you mean "big"? its variants: mini, big, terse)`) {
		t.Errorf("unknown variant: %v", err)
	}
}

// --rate applies to every variant, also to one with its own rate_limit,
// and survives the run config.
func TestVariantsRateOverride(t *testing.T) {
	s, err := parse(t, openaiVariants, openaiEnv...)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(suite.Overrides{Rate: ptr("50/m")}); err != nil {
		t.Fatal(err)
	}
	for _, v := range s.Variants() {
		if v.RateLimit == nil || v.RateLimit.String() != "50/m" {
			t.Errorf("%s: rate %v after --rate 50/m", v.Name, v.RateLimit)
		}
	}
	terse := view(t, s, "terse")
	if terse.RateLimit.String() != "50/m" {
		t.Errorf("terse view rate %v", terse.RateLimit)
	}
	back := rebuild(t, terse)
	if back.RateLimit.String() != "50/m" {
		t.Errorf("rebuilt terse rate %v", back.RateLimit)
	}
}

func TestVariantsRunConfigRoundTrip(t *testing.T) {
	s, err := parse(t, openaiVariants, openaiEnv...)
	if err != nil {
		t.Fatal(err)
	}
	s.Selection = suite.Selection{Tags: []string{"a"}, Limit: 3}
	if err := s.Apply(suite.Overrides{Concurrency: ptr(7)}); err != nil {
		t.Fatal(err)
	}
	env := suite.Options{Env: suite.EnvList(openaiEnv)}
	for _, name := range []string{"mini", "big", "terse"} {
		v := view(t, s, name)
		rc, err := v.RunConfig()
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(rc, &m); err != nil || m["variant"] != name || m["evalrun_suite"] != float64(1) {
			t.Errorf("%s: stored variant %v, format %v (%v)", name, m["variant"], m["evalrun_suite"], err)
		}
		if got, err := suite.VariantOf(rc); got != name || err != nil {
			t.Errorf("VariantOf = %q, %v; want %q", got, err, name)
		}
		back, err := suite.FromRunConfig(rc, env)
		if err != nil {
			t.Fatal(err)
		}
		if back.VariantName() != name || back.CacheKey() != v.CacheKey() || back.TargetInfo != v.TargetInfo ||
			back.ChatPlan().Model != v.ChatPlan().Model || back.Execution.Concurrency != 7 ||
			back.Selection.Limit != 3 || len(back.Selection.Tags) != 1 || back.Variants() != nil {
			t.Errorf("%s: rebuilt %q key %v target %+v concurrency %d selection %+v", name, back.VariantName(),
				back.CacheKey() == v.CacheKey(), back.TargetInfo, back.Execution.Concurrency, back.Selection)
		}
		again, err := back.RunConfig()
		if err != nil || string(again) != string(rc) {
			t.Errorf("%s: the rebuilt view stores another config:\n%s\n%s", name, again, rc)
		}
		back.Close()
	}
	// The plain suite's config has no variant and rebuilds the suite with
	// its variants.
	rc, err := s.RunConfig()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rc), `"variant"`) {
		t.Errorf("plain config names a variant: %s", rc)
	}
	back, err := suite.FromRunConfig(rc, env)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if got, err := suite.VariantOf(rc); got != "" || err != nil {
		t.Errorf("VariantOf(plain) = %q, %v", got, err)
	}
	if _, err := suite.VariantOf([]byte(`{"evalrun_suite": 2}`)); !errors.Is(err, evalrun.ErrInvalid) {
		t.Errorf("VariantOf(format 2): %v", err)
	}
	if back.VariantName() != "" || len(back.Variants()) != 3 {
		t.Errorf("rebuilt plain suite: %q, %d variants", back.VariantName(), len(back.Variants()))
	}
	// A config naming a variant the suite does not have is refused.
	var m map[string]any
	_ = json.Unmarshal(rc, &m)
	m["variant"] = "huge"
	bad, _ := json.Marshal(m)
	if _, err := suite.FromRunConfig(bad, env); !errors.Is(err, evalrun.ErrInvalid) || !strings.Contains(err.Error(), `no variant "huge"`) {
		t.Errorf("unknown stored variant: %v", err)
	}
}

func TestVariantsCacheKey(t *testing.T) {
	s, err := parse(t, openaiVariants, openaiEnv...)
	if err != nil {
		t.Fatal(err)
	}
	mini, big, terse := view(t, s, "mini"), view(t, s, "big"), view(t, s, "terse")
	if mini.CacheKey() != s.CacheKey() {
		t.Error("a variant without overrides does not share the suite's cache key")
	}
	keys := map[string]bool{s.CacheKey(): true, big.CacheKey(): true, terse.CacheKey(): true}
	if len(keys) != 3 {
		t.Error("variants with different targets share a cache key")
	}
	// The key is the merged target's: the same target written without
	// variants has big's key.
	plainBig, err := parse(t, `dataset: {file: data.jsonl}
target: {kind: openai, model: gpt-4o, prompt: "{{ .Input }}", base_url: "http://127.0.0.1:1/v1", rate_limit: 10/s}
scorers: [exact_match]
`, openaiEnv...)
	if err != nil {
		t.Fatal(err)
	}
	if plainBig.CacheKey() != big.CacheKey() {
		t.Error("big's key is not the key of its merged target")
	}
}

// Merging replaces a key wholesale: a variant's headers replace the
// target's, they are not merged entry by entry.
func TestVariantsMergeShallow(t *testing.T) {
	var mu sync.Mutex
	var got []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	}))
	defer srv.Close()
	s, err := parse(t, `dataset: {file: data.jsonl}
target:
  kind: http
  url: `+srv.URL+`
  headers: {X-A: "1", X-B: "2"}
  body: '{{ .Input }}'
variants:
  - name: base
  - name: other-headers
    target:
      headers: {X-C: "3"}
      url: `+srv.URL+`/c
scorers: [exact_match]
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"base", "other-headers"} {
		out, err := view(t, s, name).Target().Execute(context.Background(), &evalrun.Item{ID: "i", Input: []byte(`"hi"`)})
		if err != nil || string(out.Value) != `"hi"` {
			t.Fatalf("%s: %s, %v", name, out.Value, err)
		}
	}
	if len(got) != 2 {
		t.Fatalf("%d requests", len(got))
	}
	if got[0].Get("X-A") != "1" || got[0].Get("X-B") != "2" || got[0].Get("X-C") != "" {
		t.Errorf("base headers %v", got[0])
	}
	if got[1].Get("X-A") != "" || got[1].Get("X-B") != "" || got[1].Get("X-C") != "3" {
		t.Errorf("other-headers headers %v: want X-C alone", got[1])
	}
	if n := view(t, s, "other-headers").TargetInfo.Name; n != srv.URL+"/c" {
		t.Errorf("other-headers target name %q", n)
	}
}

func TestVariantsProblems(t *testing.T) {
	src := `dataset: {file: data.jsonl}
target: {kind: openai, model: m, base_url: "http://127.0.0.1:1/v1"}
variants:
  - name: a
  - name: a
  - name: ""
  - name: "has space"
  - name: ` + strings.Repeat("x", 65) + `
  - target: {model: x}
  - name: k
    target: {kind: http}
  - name: u
    target: {modl: x, temprature: 1}
  - name: e
    extra: 1
  - just-a-name
  - name: t
    target: [model]
  - name: n
    target:
  - name: ok
    target: {temperature: hot}
  - name: ${NAME}
  - name: [a]
  - name: A
  - name: ..
  - name: -x
  - name: ok.2_b-c
  - name: ` + strings.Repeat("y", 1000) + `
scorers: [exact_match]
`
	_, err := parse(t, src, "OPENAI_API_KEY=x", "NAME=env")
	openaiKeys := "name, rate_limit, base_url, api_key_env, model, system, prompt, temperature, max_tokens, seed, params, price, max_response_bytes, tools, max_steps"
	compareLines(t, problems(t, err), []string{
		`suite.yaml:5:11: variants[1].name: duplicate variant name "a": already used on line 4 (give each variant its own name)`,
		`suite.yaml:6:11: variants[2].name: must not be empty (give the variant a name: letters, digits, '.', '_', '-')`,
		`suite.yaml:7:11: variants[3].name: invalid variant name "has space": use 1 to 64 letters, digits, '.', '_' or '-', beginning with a letter or digit (the name is used in --variant flags, file names, URLs and report keys)`,
		`suite.yaml:8:11: variants[4].name: invalid variant name "` + strings.Repeat("x", 65) + `": use 1 to 64 letters, digits, '.', '_' or '-', beginning with a letter or digit (the name is used in --variant flags, file names, URLs and report keys)`,
		`suite.yaml:9:5: variants[5].name: missing (add name: NAME (letters, digits, '.', '_', '-'))`,
		`suite.yaml:11:14: variants[6].target.kind: a variant cannot change the target's kind (make it a separate suite)`,
		`suite.yaml:13:14: variants[7].target.modl: unknown key: a target of kind "openai" has no such key (did you mean "model"? known keys: ` + openaiKeys + `)`,
		`suite.yaml:13:23: variants[7].target.temprature: unknown key: a target of kind "openai" has no such key (did you mean "temperature"? known keys: ` + openaiKeys + `)`,
		`suite.yaml:15:5: variants[8].extra: unknown key (known keys: name, target)`,
		`suite.yaml:16:5: variants[9]: a variant must be a mapping, got "just-a-name" (write - name: NAME, with target: {...} for the keys it changes)`,
		`suite.yaml:18:13: variants[10].target: must be a mapping of the target keys the variant changes, got a list (e.g. target: {model: gpt-4o}; remove it for a variant that changes nothing)`,
		`suite.yaml:20:12: variants[11].target: must be a mapping of the target keys the variant changes, got nothing (e.g. target: {model: gpt-4o}; remove it for a variant that changes nothing)`,
		`suite.yaml:22:27: variants[12].target.temperature: invalid value "hot": cannot unmarshal !!str into float64`,
		`suite.yaml:23:11: variants[13].name: a variant name cannot come from the environment (write the name out)`,
		`suite.yaml:24:11: variants[14].name: must be a string, got a list`,
		`suite.yaml:25:11: variants[15].name: duplicate variant name "A": "a" is already used on line 4 (give each variant its own name; names differing only in case would share a file name)`,
		`suite.yaml:26:11: variants[16].name: invalid variant name "..": use 1 to 64 letters, digits, '.', '_' or '-', beginning with a letter or digit (the name is used in --variant flags, file names, URLs and report keys)`,
		`suite.yaml:27:11: variants[17].name: invalid variant name "-x": use 1 to 64 letters, digits, '.', '_' or '-', beginning with a letter or digit (the name is used in --variant flags, file names, URLs and report keys)`,
		`suite.yaml:29:11: variants[19].name: invalid variant name "` + strings.Repeat("y", 64) + `"... (1000 bytes): use 1 to 64 letters, digits, '.', '_' or '-', beginning with a letter or digit (the name is used in --variant flags, file names, URLs and report keys)`,
	})
}

func TestVariantsListProblems(t *testing.T) {
	const head = "dataset: {file: data.jsonl}\ntarget: {kind: echo}\nscorers: [exact_match]\n"
	many := "variants:\n"
	for i := range suite.MaxVariants + 1 {
		many += fmt.Sprintf("  - name: v%d\n", i)
	}
	for _, tc := range []struct{ name, src, want string }{
		{"not a list", head + "variants: {name: a}\n",
			`suite.yaml:4:11: variants: must be a list of variants, got a mapping (e.g. variants: [{name: mini}, {name: big, target: {model: gpt-4o}}])`},
		{"empty", head + "variants: []\n",
			`suite.yaml:4:11: variants: must not be empty (list at least one variant, or remove variants for a plain run)`},
		{"too many", head + many,
			`suite.yaml:5:3: variants: 33 variants, more than the limit of 32 (compare fewer variants at once, or split them over several suites)`},
		{"echo has no model", head + "variants: [{name: a, target: {model: x}}]\n",
			`suite.yaml:4:31: variants[0].target.model: unknown key: a target of kind "echo" has no such key (known keys: name, rate_limit)`},
		{"http url", "dataset: {file: data.jsonl}\ntarget: {kind: http, url: \"http://x\"}\nscorers: [exact_match]\nvariants: [{name: a, target: {url: ftp://x}}]\n",
			`suite.yaml:4:36: variants[0].target.url: "ftp://x": scheme must be http or https (e.g. http://127.0.0.1:8080/answer)`},
		{"bad rate", head + "variants: [{name: a, target: {rate_limit: 5/h0ur}}]\n",
			`suite.yaml:4:43: variants[0].target.rate_limit: rate "5/h0ur": unit "h0ur" is not s or m (e.g. 20/s or 600/m)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, tc.src)
			compareLines(t, problems(t, err), []string{tc.want})
		})
	}
	s, err := parse(t, head+strings.Replace(many, "  - name: v32\n", "", 1))
	if err != nil || len(s.Variants()) != suite.MaxVariants {
		t.Errorf("%d variants: %v", suite.MaxVariants, err)
	}
}

// Without a valid target, the variants' own problems are reported, not
// consequences of the target's.
func TestVariantsWithoutTarget(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"missing", "dataset: {file: data.jsonl}\nscorers: [exact_match]\nvariants: [{name: a, target: {model: x}}, {name: a}]\n", []string{
			`suite.yaml:1:1: target: missing (add target: {kind: ...}; kinds: echo, exec, http, openai, scorer, workflow)`,
			`suite.yaml:3:50: variants[1].name: duplicate variant name "a": already used on line 3 (give each variant its own name)`,
		}},
		{"invalid", "dataset: {file: data.jsonl}\ntarget: {kind: http}\nscorers: [exact_match]\nvariants: [{name: a, target: {model: x}}]\n", []string{
			`suite.yaml:2:9: target.url: required (e.g. http://127.0.0.1:8080/answer)`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, tc.src)
			compareLines(t, problems(t, err), tc.want)
		})
	}
}

// A target of many nodes times many variants is refused rather than built
// again and again.
func TestVariantsHostile(t *testing.T) {
	// The most variants, each changing a target of a few thousand nodes,
	// are built.
	build := func(headers int) string {
		var b strings.Builder
		b.WriteString("dataset: {file: data.jsonl}\nscorers: [exact_match]\ntarget:\n  kind: http\n  url: http://127.0.0.1:1/x\n  headers:\n")
		for i := range headers {
			fmt.Fprintf(&b, "    X-H%d: v\n", i)
		}
		b.WriteString("variants:\n")
		for i := range suite.MaxVariants {
			fmt.Fprintf(&b, "  - {name: v%d, target: {method: PUT}}\n", i)
		}
		return b.String()
	}
	s, err := parse(t, build(1000))
	if err != nil || len(s.Variants()) != suite.MaxVariants {
		t.Fatalf("32 variants of a 2,000-node target: %v", err)
	}
	_, err = parse(t, build(4000))
	got := problems(t, err)
	if len(got) != 1 || !strings.Contains(got[0], "the variants' targets hold more than 100000 YAML nodes together (limit 100000)") ||
		!strings.Contains(got[0], "].target: ") {
		t.Errorf("32 variants of a large target: %q", got)
	}
}

func TestVariantsAliases(t *testing.T) {
	s, err := parse(t, `dataset: {file: data.jsonl}
target: {kind: http, url: "http://127.0.0.1:1/x", name: &u "svc"}
variants:
  - &first {name: a}
  - {name: b, target: &o {url: "http://127.0.0.1:2/y"}}
  - {name: c, target: *o}
scorers: [exact_match]
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Variants()) != 3 || s.Variants()[2].TargetInfo.Name != "svc" {
		t.Errorf("aliased variants: %v", s.Variants())
	}
	if view(t, s, "b").CacheKey() != view(t, s, "c").CacheKey() || view(t, s, "a").CacheKey() == view(t, s, "b").CacheKey() {
		t.Error("cache keys of aliased overrides")
	}
}

// A tool_called scorer's tool is checked against every variant's tools.
func TestVariantsToolCalled(t *testing.T) {
	src := `dataset: {file: data.jsonl}
target: {kind: openai, model: m, base_url: "http://127.0.0.1:1/v1"}
variants:
  - name: plain
  - name: agent
    target:
      tools:
        - {name: get_weather, parameters: {type: object, properties: {city: {type: string}}}}
scorers:
  - {kind: tool_called, tool: get_weather}
  - {kind: tool_called, name: typo, tool: get_wether}
`
	_, err := parse(t, src, openaiEnv...)
	compareLines(t, problems(t, err), []string{
		`suite.yaml:11:43: scorers[1].tool: "get_wether" is not one of the target's tools (did you mean "get_weather"? the target's tools: get_weather)`,
	})
	s, err := parse(t, strings.Replace(src, "get_wether", "get_weather", 1), openaiEnv...)
	if err != nil {
		t.Fatal(err)
	}
	if view(t, s, "agent").ChatPlan().MaxSteps == 0 || view(t, s, "plain").ChatPlan().MaxSteps != 0 {
		t.Error("the agent variant's plan is not an agent's")
	}
}

// A secret written in a variant, literally or as ${VAR}, is handled as one
// in target: scrubbed from names and errors, not stored, and reported by
// CheckStorable at its place.
func TestVariantsSecrets(t *testing.T) {
	const (
		literal = "sk-literal-7f6e5d4c"
		fromEnv = "sk-env-3c2b1a09"
		query   = "query-tok-5a4b3c2d"
	)
	refused := httptest.NewServer(http.NotFoundHandler())
	refused.Close()
	s, err := parse(t, `dataset: {file: data.jsonl}
target: {kind: http, url: "`+refused.URL+`/x"}
variants:
  - name: lit
    target:
      headers: {Authorization: "Bearer `+literal+`"}
      url: "`+refused.URL+`/x?token=`+query+`"
  - name: env
    target:
      headers: {Authorization: "Bearer ${TOKEN}"}
      url: "`+refused.URL+`/x?api_key=${TOKEN}"
scorers: [exact_match]
`, "TOKEN="+fromEnv)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{literal, fromEnv, query} {
		if got := s.Scrubber().String(secret); got == secret {
			t.Errorf("the scrubber does not know %s", secret)
		}
	}
	for _, name := range []string{"lit", "env"} {
		v := view(t, s, name)
		rc, err := v.RunConfig()
		if err != nil {
			t.Fatal(err)
		}
		_, execErr := v.Target().Execute(context.Background(), &evalrun.Item{ID: "a", Input: []byte(`"x"`)})
		if execErr == nil {
			t.Fatalf("%s: no error from a closed server", name)
		}
		for _, secret := range []string{literal, fromEnv, query} {
			for what, text := range map[string]string{"name": v.TargetInfo.Name, "stored config": string(rc), "error": execErr.Error()} {
				if strings.Contains(text, secret) {
					t.Errorf("%s: the %s holds %s: %s", name, what, secret, text)
				}
			}
		}
	}
	if got := view(t, s, "lit").TargetInfo.Name; got != refused.URL+"/x?token=[redacted]" {
		t.Errorf("lit name %q", got)
	}
	compareLines(t, problems(t, s.CheckStorable()), []string{
		`suite.yaml:6:32: variants[0].target.headers.Authorization: a literal secret is not stored with the run, so workers cannot run it (put the secret in an environment variable, write ${VAR} here and export it on every worker)`,
		`suite.yaml:7:12: variants[0].target.url: a literal secret is not stored with the run, so workers cannot run it (put the secret in an environment variable, write ${VAR} here and export it on every worker)`,
	})
	// A stored config whose variant lost a literal secret is refused at
	// its place; the env one is rebuilt with the worker's value.
	rc, _ := view(t, s, "env").RunConfig()
	if _, err := suite.FromRunConfig(rc, suite.Options{Env: suite.EnvList([]string{"TOKEN=x"})}); err == nil ||
		!strings.Contains(err.Error(), "variants[0].target.headers.Authorization: a literal secret here was not stored with the run") {
		t.Errorf("rebuilding with a redacted variant secret: %v", err)
	}
}

// Overrides applied to a view are the view's: its suite's execution, rates
// and stored config do not change.
func TestVariantViewOverridesAreItsOwn(t *testing.T) {
	s, err := parse(t, openaiVariants, openaiEnv...)
	if err != nil {
		t.Fatal(err)
	}
	before, err := s.RunConfig()
	if err != nil {
		t.Fatal(err)
	}
	terse := view(t, s, "terse")
	if err := terse.Apply(suite.Overrides{Concurrency: ptr(3), Rate: ptr("1/s")}); err != nil {
		t.Fatal(err)
	}
	after, err := s.RunConfig()
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) || s.Execution.Concurrency != suite.DefaultExecution().Concurrency ||
		s.RateLimit.String() != "10/s" || s.Variants()[2].RateLimit.String() != "2/s" {
		t.Errorf("applying to a view changed its suite: concurrency %d, rate %v, terse %v",
			s.Execution.Concurrency, s.RateLimit, s.Variants()[2].RateLimit)
	}
	if other := view(t, s, "terse"); other.RateLimit.String() != "2/s" || other.Execution.Concurrency != suite.DefaultExecution().Concurrency {
		t.Errorf("a new view has the other view's overrides: %v %d", other.RateLimit, other.Execution.Concurrency)
	}
	back := rebuild(t, terse)
	if back.RateLimit.String() != "1/s" || back.Execution.Concurrency != 3 {
		t.Errorf("rebuilt view: rate %v, concurrency %d", back.RateLimit, back.Execution.Concurrency)
	}
}
