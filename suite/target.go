package suite

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/redact"
	"github.com/evalrun/evalrun/target"
)

// targetCommonKeys are the keys of every target kind.
var targetCommonKeys = []string{"kind", "name", "rate_limit"}

// targetKind is how a suite builds one kind of target.
type targetKind struct {
	// keys are the kind's own keys, besides targetCommonKeys.
	keys []string
	// build makes the target from the expanded mapping n; raw is the same
	// mapping unexpanded (for a name that holds no secret). It records
	// problems and returns nil on any.
	build func(p *parser, path string, n, raw *yaml.Node) (t evalrun.Target, name string)
}

// targetKinds maps each kind of the suite file to its builder.
var targetKinds map[string]targetKind

func init() {
	targetKinds = map[string]targetKind{
		"echo": {nil, func(*parser, string, *yaml.Node, *yaml.Node) (evalrun.Target, string) { return target.Echo{}, "echo" }},
		"http": {[]string{"url", "method", "headers", "body", "output", "trajectory", "max_response_bytes"}, buildHTTP},
		"exec": {[]string{"command", "env", "dir", "output", "trajectory", "max_output_bytes"}, buildExec},
		"openai": {[]string{"base_url", "api_key_env", "model", "system", "prompt", "temperature",
			"max_tokens", "seed", "params", "price", "max_response_bytes", "tools", "max_steps"}, buildOpenAI},
		"workflow": {[]string{"steps"}, buildWorkflow},
		"scorer":   {[]string{"scorer"}, buildScorerTarget},
	}
}

// TargetKinds returns the target kinds a suite file may name, sorted.
func TargetKinds() []string {
	kinds := make([]string, 0, len(targetKinds))
	for k := range targetKinds {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return kinds
}

// target parses the suite's target mapping and builds the target.
func (p *parser) target(n *yaml.Node) {
	t, info, r := p.buildTarget(n, "target", p.value(p.suite.raw, "target"))
	if t == nil {
		return
	}
	p.suite.target, p.suite.TargetInfo, p.suite.RateLimit = t, info, r
	if c, ok := t.(evalrun.Closer); ok {
		p.suite.closers = append(p.suite.closers, c)
	}
}

// buildTarget builds the target of mapping n at path (raw: the same mapping
// unexpanded). It returns the target without its rate limit, which it
// returns apart (the suite's can be overridden). Problems are recorded;
// the target is nil on any.
func (p *parser) buildTarget(n *yaml.Node, path string, raw *yaml.Node) (evalrun.Target, evalrun.TargetInfo, *target.Rate) {
	var info evalrun.TargetInfo
	if n.Kind != yaml.MappingNode {
		p.ps.at(n, path, "e.g. {kind: echo}", "must be a mapping, got %s", p.kindName(n))
		return nil, info, nil
	}
	kindNode := p.value(n, "kind")
	if kindNode == nil {
		p.ps.at(n, path+".kind", "known kinds: "+strings.Join(TargetKinds(), ", "), "missing")
		return nil, info, nil
	}
	kind := kindNode.Value
	tk, ok := targetKinds[kind]
	if !ok {
		hint := "known kinds: " + strings.Join(TargetKinds(), ", ")
		if s := didYouMean(kind, TargetKinds()); s != "" {
			hint = s + " " + hint
		}
		p.ps.at(kindNode, path+".kind", hint, "unknown target kind %q", kind)
		return nil, info, nil
	}
	known := append(slices.Clone(targetCommonKeys), tk.keys...)
	before := len(p.ps.list)
	var rate *target.Rate
	p.fields(n, path, known, func(key string, _, v *yaml.Node) {
		switch key {
		case "name":
			info.Name, _ = p.str(v, path+".name")
		case "rate_limit":
			if s, ok := p.str(v, path+".rate_limit"); ok {
				r, err := target.ParseRate(s)
				if err != nil {
					p.ps.at(v, path+".rate_limit", "e.g. 20/s or 600/m", "%v", err)
					return
				}
				rate = &r
			}
		}
	})
	if len(p.ps.list) > before {
		return nil, info, nil
	}
	t, name := tk.build(p, path, n, raw)
	if t == nil {
		return nil, info, nil
	}
	info.Kind = kind
	if info.Name == "" {
		info.Name = name
	}
	// The name goes to the run record, reports and messages: a URL
	// written with a password or a key in its query loses them there.
	info.Name = p.suite.scrub.String(redact.URL(info.Name))
	return t, info, rate
}

// limited returns t behind a request rate limit (t itself when r is nil).
func limited(t evalrun.Target, r *target.Rate) evalrun.Target {
	if r == nil || r.IsZero() {
		return t
	}
	lim, err := target.NewLimiter(target.Limits{Requests: *r})
	if err != nil {
		return t // only burst and tokens_per_minute can be wrong, and neither is set
	}
	return target.RateLimited(t, lim)
}

func buildHTTP(p *parser, path string, n, raw *yaml.Node) (evalrun.Target, string) {
	var cfg target.HTTPConfig
	before := len(p.ps.list)
	p.decodeFields(n, path, &cfg, targetCommonKeys)
	if len(p.ps.list) > before {
		return nil, ""
	}
	t, err := target.NewHTTP(cfg)
	if err != nil {
		p.targetProblem(n, path, err)
		return nil, ""
	}
	name := cfg.URL
	if v := p.value(raw, "url"); v != nil {
		name = v.Value // unexpanded: no secret from the environment
	}
	return t, name
}

func buildExec(p *parser, path string, n, raw *yaml.Node) (evalrun.Target, string) {
	var cfg target.ExecConfig
	before := len(p.ps.list)
	p.decodeFields(n, path, &cfg, targetCommonKeys)
	if len(p.ps.list) > before {
		return nil, ""
	}
	// A program given by a relative path (with a slash), and a relative
	// dir, are relative to the suite file; the program runs in the suite's
	// directory unless dir says otherwise.
	if len(cfg.Command) > 0 && strings.ContainsRune(cfg.Command[0], '/') {
		cfg.Command[0] = p.resolve(cfg.Command[0])
	}
	if cfg.Dir == "" {
		cfg.Dir = p.suite.Dir
	} else {
		cfg.Dir = p.resolve(cfg.Dir)
	}
	t, err := target.NewExec(cfg)
	if err != nil {
		p.targetProblem(n, path, err)
		return nil, ""
	}
	name := ""
	if v := p.value(raw, "command"); v != nil && v.Kind == yaml.SequenceNode && len(v.Content) > 0 {
		parts := make([]string, 0, len(v.Content))
		for _, e := range v.Content {
			parts = append(parts, e.Value)
		}
		name = strings.Join(parts, " ")
	}
	if name == "" && len(cfg.Command) > 0 {
		name = filepath.Base(cfg.Command[0])
	}
	return t, name
}

// targetProblem reports a target constructor's error at the key it names.
func (p *parser) targetProblem(n *yaml.Node, path string, err error) {
	var ce *target.ConfigError
	if !errors.As(err, &ce) {
		p.ps.at(n, path, "", "%v", err)
		return
	}
	first, _, _ := strings.Cut(ce.Key, ".")
	first, _, _ = strings.Cut(first, "[")
	at := p.value(n, first)
	if at == nil {
		at = n
	}
	hint := ""
	switch first {
	case "command":
		hint = "give [program, args...]; a relative program path is relative to the suite file"
	case "url":
		hint = "e.g. http://127.0.0.1:8080/answer"
	case "dir":
		hint = "the path is relative to the suite file's directory"
	case "output", "trajectory":
		hint = "a gjson path, e.g. result.calls; see https://github.com/tidwall/gjson/blob/master/SYNTAX.md"
	}
	p.ps.at(at, path+"."+ce.Key, hint, "%v", ce.Err)
}
