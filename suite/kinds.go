package suite

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/openai"
	"github.com/evalrun/evalrun/scorer"
	"github.com/evalrun/evalrun/target"
)

// buildOpenAI builds a chat model target; the API key is read from the
// suite's environment (api_key_env, default OPENAI_API_KEY). Its tools are
// parsed here (their run targets are targets of the suite) and validated
// by package openai, whose errors are placed at the key they name.
func buildOpenAI(p *parser, path string, n, raw *yaml.Node) (evalrun.Target, string) {
	var cfg openai.ChatTargetConfig
	before := len(p.ps.list)
	// Decoding ignores unknown keys of the nested price mapping: a misspelt
	// one would be a price of 0 and every cost $0.
	if v := p.value(n, "price"); v != nil && v.Kind == yaml.MappingNode {
		p.fields(v, path+".price", priceKeys, func(string, *yaml.Node, *yaml.Node) {})
	}
	p.decodeFields(n, path, &cfg, append(slices.Clone(targetCommonKeys), "tools", "max_steps"))
	if v := p.value(n, "max_steps"); v != nil {
		if m, ok := p.integer(v, path+".max_steps", 1); ok && m > openai.MaxMaxSteps {
			p.ps.at(v, path+".max_steps", "", "must be in [1,%d], got %d", openai.MaxMaxSteps, m)
		} else {
			cfg.MaxSteps = m
		}
	}
	if v := p.value(n, "tools"); v != nil {
		cfg.Tools = p.tools(v, path+".tools", p.value(raw, "tools"))
		// Every tool's definition problems now, beside the others: the
		// constructor below runs only on a file without problems.
		if err := openai.ValidateTools(cfg.Tools); err != nil {
			p.openaiProblem(n, path, err)
		}
	}
	closeRuns := func() {
		for _, tl := range cfg.Tools {
			if c, ok := tl.Run.(evalrun.Closer); ok {
				_ = c.Close()
			}
		}
	}
	if len(p.ps.list) > before {
		closeRuns()
		return nil, ""
	}
	cfg.LookupEnv = p.opts.Env
	if cfg.LookupEnv == nil {
		cfg.LookupEnv = func(string) (string, bool) { return "", false }
	}
	t, err := openai.NewChatTarget(cfg)
	if err != nil {
		closeRuns()
		p.openaiProblem(n, path, err)
		return nil, ""
	}
	if path == "target" || path == p.variantPath {
		plan := newChatPlan(cfg)
		if path == "target" {
			p.suite.chatPlan = plan
		} else {
			p.variantPlan = plan
		}
		// The tools of every variant: a tool_called scorer checks them all.
		for _, tl := range cfg.Tools {
			if !slices.Contains(p.targetTools, tl.Name) {
				p.targetTools = append(p.targetTools, tl.Name)
			}
		}
	}
	name := cfg.Model
	if v := p.value(raw, "model"); v != nil {
		name = v.Value
	}
	return t, name
}

var (
	toolKeys = []string{"name", "description", "parameters", "run"}
	// toolRunKinds are the target kinds a tool's run may be: a tool is a
	// service or a program; a model or a workflow behind a tool is an
	// agent of its own.
	toolRunKinds = []string{"http", "exec"}
)

// tools parses an openai target's tools (raw: the list unexpanded). The
// definitions are checked by openai.NewChatTarget; a run target is built
// here like any target of the suite (a relative exec path is relative to
// the suite file).
func (p *parser) tools(n *yaml.Node, path string, raw *yaml.Node) []openai.Tool {
	if n.Kind != yaml.SequenceNode {
		p.ps.at(n, path, "e.g. tools: [{name: get_weather, parameters: {type: object, properties: {city: {type: string}}}}]",
			"must be a list of tools, got %s", p.kindName(n))
		return nil
	}
	if len(n.Content) > openai.MaxTools {
		p.ps.at(n, path, "offer the model fewer tools", "%d tools, more than the limit of %d", len(n.Content), openai.MaxTools)
		return nil
	}
	tools := make([]openai.Tool, len(n.Content))
	for i, tn := range n.Content {
		tp := fmt.Sprintf("%s[%d]", path, i)
		var rawTool *yaml.Node
		if raw != nil && raw.Kind == yaml.SequenceNode && i < len(raw.Content) {
			rawTool = raw.Content[i]
		}
		tl := &tools[i]
		p.fields(tn, tp, toolKeys, func(key string, _, v *yaml.Node) {
			switch key {
			case "name":
				tl.Name, _ = p.str(v, tp+".name")
			case "description":
				tl.Description, _ = p.str(v, tp+".description")
			case "parameters":
				tl.Parameters = p.schemaJSON(v, tp+".parameters")
			case "run":
				tl.Run = p.toolRun(v, tp+".run", p.value(rawTool, "run"))
			}
		})
		if tn.Kind == yaml.MappingNode && !p.has(tn, "name") {
			p.ps.at(tn, tp+".name", "e.g. name: get_weather", "missing")
		}
	}
	return tools
}

// schemaJSON returns a tool's parameters mapping as JSON.
func (p *parser) schemaJSON(v *yaml.Node, path string) json.RawMessage {
	const hint = "e.g. parameters: {type: object, properties: {city: {type: string}}, required: [city]}"
	if v.Kind != yaml.MappingNode {
		p.ps.at(v, path, hint, "must be a JSON Schema object, got %s", p.kindName(v))
		return nil
	}
	var tree any
	if err := v.Decode(&tree); err != nil {
		p.ps.at(v, path, hint, "%s", p.yamlCause(err, v))
		return nil
	}
	b, err := json.Marshal(jsonable(tree))
	if err != nil {
		p.ps.at(v, path, hint, "not expressible as JSON: %v", err)
		return nil
	}
	return b
}

// toolRun builds a tool's run target, of a kind in toolRunKinds.
func (p *parser) toolRun(v *yaml.Node, path string, raw *yaml.Node) evalrun.Target {
	if kind := p.value(v, "kind"); kind != nil && !contains(toolRunKinds, kind.Value) {
		p.ps.at(kind, path+".kind", "a tool runs as kind http (a service) or exec (a program)",
			"a tool's run target cannot be of kind %q", kind.Value)
		return nil
	}
	if tr := p.value(v, "trajectory"); tr != nil {
		// The agent's trajectory records the call of the tool, not what the
		// tool did inside: a run's trajectory would be dropped unseen while
		// still failing the calls whose response lacks the path.
		p.ps.at(tr, path+".trajectory", "remove trajectory from the run: the model gets the tool's output, which output: may pick",
			"a tool's run target cannot report a trajectory (the calls a tool makes are not recorded)")
	}
	t, _, r := p.buildTarget(v, path, raw)
	if t == nil {
		return nil
	}
	return limited(t, r)
}

// openaiProblem reports an openai target constructor's error at the key it
// names, down to a tool's own key (tools[1].parameters); an error joining
// several (openai.ValidateTools) is reported once per part. A problem
// already reported at the same key is not repeated.
func (p *parser) openaiProblem(n *yaml.Node, path string, err error) {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			p.openaiProblem(n, path, e)
		}
		return
	}
	var ce *target.ConfigError
	if !errors.As(err, &ce) || !strings.HasPrefix(ce.Key, "tools[") {
		p.targetProblem(n, path, err)
		return
	}
	for _, pr := range p.ps.list {
		if pr.Path == path+"."+ce.Key {
			return
		}
	}
	at := p.value(n, "tools")
	idx, sub, _ := strings.Cut(strings.TrimPrefix(ce.Key, "tools["), "]")
	if i, convErr := strconv.Atoi(idx); convErr == nil && at != nil && at.Kind == yaml.SequenceNode && i >= 0 && i < len(at.Content) {
		at = at.Content[i]
		if v := p.value(at, strings.TrimPrefix(sub, ".")); v != nil {
			at = v
		}
	}
	if at == nil {
		at = n
	}
	hint := ""
	if strings.HasSuffix(ce.Key, ".parameters") {
		hint = "a JSON Schema of the arguments object, e.g. {type: object, properties: {city: {type: string}}}"
	}
	p.ps.at(at, path+"."+ce.Key, hint, "%v", ce.Err)
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
