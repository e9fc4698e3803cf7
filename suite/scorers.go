package suite

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/suggest"
	"github.com/evalrun/evalrun/scorer"
	"github.com/evalrun/evalrun/target"
)

// scorerKeys is every key a scorers entry may have (of any kind).
var scorerKeys = func() []string {
	t := reflect.TypeFor[scorer.Config]()
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); tag != "" && tag != "-" && f.IsExported() {
			keys = append(keys, tag)
		}
	}
	return keys
}()

// scorerHints say what to do about a bad value of a scorer key, by
// "kind.key" ("*.key": every kind).
var scorerHints = map[string]string{
	"*.threshold":             "use a number between 0 and 1",
	"regex.pattern":           "use Go RE2 syntax, see https://github.com/google/re2/wiki/Syntax",
	"expr.expression":         "expr-lang syntax over input, output, expected, metadata, trajectory and steps, giving a bool or a number in [0,1]",
	"tool_called.tool":        "the name of a tool the agent may call, e.g. tool: get_weather",
	"tool_called.args":        "a mapping the call's arguments must contain, e.g. args: {city: Paris}",
	"tool_called.count":       "the exact number of matching calls, e.g. count: 1",
	"tool_called.never":       "never: true passes when there is no matching call; for an exact number use count",
	"trajectory.mode":         "in_order, the default, lets other calls come between the expected ones; see docs/suite.md",
	"json_schema.schema":      "give a valid JSON Schema",
	"json_schema.schema_file": "the path is relative to the suite file's directory",
	"contains.mode":           "use any or all",
	"llm_judge.rubric":        "describe what a good answer is",
	"exec.command":            "a list: the program and its arguments, e.g. command: [python3, score.py]",
	"*.price":                 "USD per million tokens, e.g. price: {input_per_mtok: 0.15, output_per_mtok: 0.6}",
}

// scorers parses and builds every entry of the scorers list.
func (p *parser) scorers(n *yaml.Node) {
	if n.Kind != yaml.SequenceNode {
		p.ps.at(n, "scorers", "e.g. scorers: [exact_match]", "must be a list, got %s", p.kindName(n))
		return
	}
	if len(n.Content) == 0 {
		p.ps.at(n, "scorers", "add at least one scorer, e.g. exact_match", "empty")
		return
	}
	before := len(p.ps.list)
	deps := p.deps()
	seen := map[string]string{}
	for i, e := range n.Content {
		path := fmt.Sprintf("scorers[%d]", i)
		s, cfg := p.scorer(e, path, deps)
		if s == nil {
			continue
		}
		if prev, ok := seen[s.Name()]; ok {
			at := keyNode(e, "name")
			if at == nil {
				at = e
			}
			p.ps.at(at, path+".name", "give each scorer a unique name with name: NAME",
				"duplicate scorer name %q, already used by %s", s.Name(), prev)
			continue
		}
		if cfg.Kind == scorer.KindToolCalled && !p.toolCalledKnown(e, path, cfg.Tool) {
			continue
		}
		seen[s.Name()] = path
		p.suite.scorers = append(p.suite.scorers, s)
		p.suite.scorerKinds = append(p.suite.scorerKinds, cfg.Kind)
		if j, ok := s.(*scorer.LLMJudge); ok {
			p.suite.judgePlans = append(p.suite.judgePlans, &JudgePlan{Scorer: s.Name(), Model: cfg.Model,
				MaxTokens: cfg.MaxTokens, Price: cfg.Price, judge: j})
		}
		if c, ok := s.(evalrun.Closer); ok {
			p.suite.closers = append(p.suite.closers, c)
		}
	}
	p.scorersOK = len(p.ps.list) == before
}

// toolCalledKnown checks a tool_called scorer's tool against the openai
// target's tools: a name that is not one of them but is one edit or two
// from one is a typo, which would make `never: true` pass whatever the
// agent does. Any other name is accepted: a model may call a tool it was
// not given, and a suite may check that it never does.
func (p *parser) toolCalledKnown(e *yaml.Node, path, tool string) bool {
	if len(p.targetTools) == 0 || slices.Contains(p.targetTools, tool) {
		return true
	}
	near := suggest.Nearest(tool, p.targetTools)
	if near == "" {
		return true
	}
	at := p.value(e, "tool")
	if at == nil {
		at = e
	}
	p.ps.at(at, path+".tool", fmt.Sprintf("did you mean %q? the target's tools: %s", near, strings.Join(p.targetTools, ", ")),
		"%q is not one of the target's tools", tool)
	return false
}

// scorer builds one entry and returns it with its config; nil when it has
// problems (recorded).
func (p *parser) scorer(e *yaml.Node, path string, deps scorer.Deps) (evalrun.Scorer, scorer.Config) {
	kindNode := e
	switch e.Kind {
	case yaml.ScalarNode:
	case yaml.MappingNode:
		ok := true
		kindNode = p.value(e, "kind")
		for i := 0; i+1 < len(e.Content); i += 2 {
			if k := e.Content[i]; !contains(scorerKeys, k.Value) {
				p.ps.at(k, path+"."+k.Value, p.scorerKeyHint(k.Value, kindNode), "unknown key")
				ok = false
			}
		}
		if kindNode == nil {
			p.ps.at(e, path+".kind", "known kinds: "+strings.Join(scorer.Kinds(), ", "), "missing")
			return nil, scorer.Config{}
		}
		if !ok {
			return nil, scorer.Config{}
		}
	default:
		p.ps.at(e, path, "write a kind (- exact_match) or a mapping with kind:", "must be a kind or a mapping, got %s", p.kindName(e))
		return nil, scorer.Config{}
	}
	kindPath := path
	if e.Kind == yaml.MappingNode {
		kindPath += ".kind"
	}
	if kind := kindNode.Value; !contains(scorer.Kinds(), kind) {
		hint := "known kinds: " + strings.Join(scorer.Kinds(), ", ")
		if s := didYouMean(kind, scorer.Kinds()); s != "" {
			hint = s + " " + hint
		}
		p.ps.at(kindNode, kindPath, hint, "unknown scorer kind %q", kind)
		return nil, scorer.Config{}
	}
	var cfg scorer.Config
	if err := e.Decode(&cfg); err != nil {
		p.scorerProblem(e, path, err)
		return nil, scorer.Config{}
	}
	s, err := scorer.New(cfg, deps)
	if err != nil {
		p.scorerProblem(e, path, err)
		return nil, scorer.Config{}
	}
	return s, cfg
}

// scorerKeyAliases are keys people write for a scorer key, by the other
// tools' names, with the key they mean.
var scorerKeyAliases = map[string]string{"arguments": "args", "times": "count", "tool_name": "tool"}

// scorerKeyHint is the hint for an unknown key of a scorer: the key of its
// kind it likely means, and that kind's keys (every key when the kind is
// unknown).
func (p *parser) scorerKeyHint(key string, kindNode *yaml.Node) string {
	known := scorerKeys
	if kindNode != nil {
		if keys := scorer.Keys(kindNode.Value); keys != nil {
			known = keys
		}
	}
	guess := scorerKeyAliases[key]
	if !contains(known, guess) {
		// Nearest misses a swap of two letters (mdoe); Key does not.
		if guess = suggest.Nearest(key, known); guess == "" {
			guess = suggest.Key(key, known)
		}
	}
	if guess == "" {
		return "known keys: " + strings.Join(known, ", ")
	}
	return fmt.Sprintf("did you mean %q? known keys: %s", guess, strings.Join(known, ", "))
}

// scorerProblem reports a scorer.ConfigError at its key.
func (p *parser) scorerProblem(e *yaml.Node, path string, err error) {
	var ce *scorer.ConfigError
	if !errors.As(err, &ce) {
		p.ps.at(e, path, "", "%v", err)
		return
	}
	// The model factories (package openai) name the connection setting
	// at fault (base_url, api_key_env): report it there, not at model.
	var tce *target.ConfigError
	if errors.As(ce.Err, &tce) {
		ce = &scorer.ConfigError{Scorer: ce.Scorer, Kind: ce.Kind, Key: tce.Key, Err: tce.Err}
	}
	at, keyPath := e, path
	if ce.Key != "" {
		keyPath = path + "." + ce.Key
		if v := p.value(e, ce.Key); v != nil {
			at = v
		} else if ce.Key == "kind" && e.Kind == yaml.ScalarNode {
			keyPath = path
		}
	}
	msg := "invalid"
	if ce.Err != nil {
		msg = ce.Err.Error()
	}
	// A yaml type error quotes an excerpt of the value, too short for the
	// scrubber to recognise: a value from the environment is named by its
	// reference instead, as for every other key.
	if v := p.expandedIn(at); v != nil && yamlValue.MatchString(msg) {
		msg = "invalid value " + p.describe(v) + ": " + strings.TrimSpace(yamlValue.ReplaceAllString(msg, ""))
	}
	hint := scorerHints[ce.Kind+"."+ce.Key]
	if hint == "" {
		hint = scorerHints["*."+ce.Key]
	}
	p.ps.at(at, keyPath, hint, "%s", msg)
}

// expandedIn returns n, or the first node under it, when it was expanded
// from the environment; else nil.
func (p *parser) expandedIn(n *yaml.Node) *yaml.Node {
	if _, ok := p.ps.expanded[n]; ok {
		return n
	}
	for _, c := range n.Content {
		if v := p.expandedIn(c); v != nil {
			return v
		}
	}
	return nil
}
