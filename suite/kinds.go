package suite

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/openai"
	"github.com/evalrun/evalrun/scorer"
	"github.com/evalrun/evalrun/target"
)

// buildOpenAI builds a chat model target; the API key is read from the
// suite's environment (api_key_env, default OPENAI_API_KEY).
func buildOpenAI(p *parser, path string, n, raw *yaml.Node) (evalrun.Target, string) {
	var cfg openai.ChatTargetConfig
	before := len(p.ps.list)
	// Decoding ignores unknown keys of the nested price mapping: a misspelt
	// one would be a price of 0 and every cost $0.
	if v := p.value(n, "price"); v != nil && v.Kind == yaml.MappingNode {
		p.fields(v, path+".price", priceKeys, func(string, *yaml.Node, *yaml.Node) {})
	}
	p.decodeFields(n, path, &cfg, targetCommonKeys)
	if len(p.ps.list) > before {
		return nil, ""
	}
	cfg.LookupEnv = p.opts.Env
	if cfg.LookupEnv == nil {
		cfg.LookupEnv = func(string) (string, bool) { return "", false }
	}
	t, err := openai.NewChatTarget(cfg)
	if err != nil {
		p.targetProblem(n, path, err)
		return nil, ""
	}
	if path == "target" {
		p.suite.chatPlan = newChatPlan(cfg)
	}
	name := cfg.Model
	if v := p.value(raw, "model"); v != nil {
		name = v.Value
	}
	return t, name
}

var (
	stepKeys  = []string{"name", "target", "guard"}
	guardKeys = []string{"scorer", "min"}
)

// buildWorkflow builds a workflow of steps, each a target or a guard.
func buildWorkflow(p *parser, path string, n, raw *yaml.Node) (evalrun.Target, string) {
	stepsNode := p.value(n, "steps")
	if stepsNode == nil || stepsNode.Kind != yaml.SequenceNode || len(stepsNode.Content) == 0 {
		at := stepsNode
		if at == nil {
			at = n
		}
		p.ps.at(at, path+".steps", "e.g. steps: [{name: answer, target: {kind: http, url: ...}}]", "a workflow needs a list of steps")
		return nil, ""
	}
	rawSteps := p.value(raw, "steps")
	before := len(p.ps.list)
	var steps []target.Step
	for i, sn := range stepsNode.Content {
		sp := fmt.Sprintf("%s.steps[%d]", path, i)
		var step target.Step
		var rawStep *yaml.Node
		if rawSteps != nil && i < len(rawSteps.Content) {
			rawStep = rawSteps.Content[i]
		}
		p.fields(sn, sp, stepKeys, func(key string, _, v *yaml.Node) {
			switch key {
			case "name":
				step.Name, _ = p.str(v, sp+".name")
			case "target":
				t, _, r := p.buildTarget(v, sp+".target", p.value(rawStep, "target"))
				if t != nil {
					step.Target = limited(t, r)
				}
			case "guard":
				step.Guard = p.guard(v, sp+".guard")
			}
		})
		steps = append(steps, step)
	}
	if len(p.ps.list) > before {
		return nil, ""
	}
	w, err := target.NewSteps(steps...)
	if err != nil {
		p.targetProblem(n, path, err)
		return nil, ""
	}
	return target.NewWorkflow(w), fmt.Sprintf("%d steps", len(steps))
}

// guard builds a workflow guard: a scorer and a minimum score (default:
// the scorer's threshold).
func (p *parser) guard(n *yaml.Node, path string) *target.Guard {
	g := &target.Guard{Min: -1}
	ok := p.fields(n, path, guardKeys, func(key string, _, v *yaml.Node) {
		switch key {
		case "scorer":
			g.Scorer, _ = p.scorer(v, path+".scorer", p.deps())
		case "min":
			var f float64
			if v.Kind != yaml.ScalarNode || v.Decode(&f) != nil || f < 0 || f > 1 {
				p.ps.at(v, path+".min", "", "must be a number in [0,1], got %s", p.describe(v))
				return
			}
			g.Min = f
		}
	})
	if !ok {
		return nil
	}
	if g.Scorer == nil {
		if p.value(n, "scorer") == nil {
			p.ps.at(n, path+".scorer", "e.g. scorer: {kind: regex, pattern: ...}", "missing")
		}
		return nil
	}
	if g.Min < 0 {
		g.Min = evalrun.ThresholdOf(g.Scorer)
	}
	return g
}

// buildScorerTarget builds a target running a scorer (judge calibration).
func buildScorerTarget(p *parser, path string, n, _ *yaml.Node) (evalrun.Target, string) {
	v := p.value(n, "scorer")
	if v == nil {
		p.ps.at(n, path+".scorer", "e.g. scorer: {kind: llm_judge, rubric: ...}", "missing")
		return nil, ""
	}
	s, cfg := p.scorer(v, path+".scorer", p.deps())
	if s == nil {
		return nil, ""
	}
	if j, ok := s.(*scorer.LLMJudge); ok {
		p.suite.judgePlans = append(p.suite.judgePlans, &JudgePlan{Scorer: s.Name(), Model: cfg.Model,
			MaxTokens: cfg.MaxTokens, Price: cfg.Price, Calibration: true, judge: j})
	}
	return target.NewScorerTarget(s), s.Name()
}

// priceKeys are the keys of a price mapping ({input_per_mtok,
// output_per_mtok}, USD per million tokens).
var priceKeys = []string{"input_per_mtok", "output_per_mtok"}
