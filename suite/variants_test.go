package suite_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/suite"
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

func TestVariantsBasic(t *testing.T) {
	s, err := parse(t, openaiVariants, "OPENAI_API_KEY=sk-test")
	if err != nil {
		t.Fatal(err)
	}
	vs := s.Variants()
	if len(vs) != 3 || vs[0].Name != "mini" || vs[1].Name != "big" || vs[2].Name != "terse" {
		t.Fatalf("variants = %v", vs)
	}
	if vs[1].TargetInfo != (evalrun.TargetInfo{Kind: "openai", Name: "gpt-4o"}) {
		t.Errorf("big TargetInfo = %+v", vs[1].TargetInfo)
	}
	big, err := s.ForVariant("big")
	if err != nil {
		t.Fatal(err)
	}
	if big.VariantName() != "big" || big.ChatPlan().Model != "gpt-4o" || big.TargetInfo.Name != "gpt-4o" {
		t.Errorf("view: %q %q %+v", big.VariantName(), big.ChatPlan().Model, big.TargetInfo)
	}
	if _, err := s.ForVariant("bigg"); !errors.Is(err, evalrun.ErrInvalid) || !strings.Contains(err.Error(), `did you mean "big"? its variants: mini, big, terse`) {
		t.Errorf("unknown variant: %v", err)
	}
	rc, err := big.RunConfig()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(rc, &m)
	if m["variant"] != "big" {
		t.Errorf("run config variant = %v", m["variant"])
	}
	back, err := suite.FromRunConfig(rc, suite.Options{Env: suite.EnvList([]string{"OPENAI_API_KEY=sk-test"})})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if back.VariantName() != "big" || back.CacheKey() != big.CacheKey() || back.TargetInfo != big.TargetInfo {
		t.Errorf("round trip: %q", back.VariantName())
	}
}
