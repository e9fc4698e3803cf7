package suite

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/evalrun/evalrun"
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
	build func(p *parser, n, raw *yaml.Node) (t evalrun.Target, name string)
}

// targetKinds maps each kind of the suite file to its builder. Kinds whose
// implementation has not landed yet report so.
var targetKinds = map[string]targetKind{
	"echo": {nil, func(*parser, *yaml.Node, *yaml.Node) (evalrun.Target, string) { return target.Echo{}, "echo" }},
	"http": {[]string{"url", "method", "headers", "body", "output", "max_response_bytes"}, buildHTTP},
	"exec": {[]string{"command", "env", "dir", "max_output_bytes"}, buildExec},
	"openai": {[]string{"base_url", "api_key_env", "model", "system", "prompt", "temperature",
		"max_tokens", "seed", "params", "price"}, unavailable("openai")},
	"workflow": {[]string{"steps"}, unavailable("workflow")},
	"scorer":   {[]string{"scorer"}, unavailable("scorer")},
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

// target parses the target mapping and builds the target.
func (p *parser) target(n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		p.ps.at(n, "target", "e.g. target: {kind: echo}", "must be a mapping, got %s", kindName(n))
		return
	}
	kindNode := p.value(n, "kind")
	if kindNode == nil {
		p.ps.at(n, "target.kind", "known kinds: "+strings.Join(TargetKinds(), ", "), "missing")
		return
	}
	kind := kindNode.Value
	tk, ok := targetKinds[kind]
	if !ok {
		hint := "known kinds: " + strings.Join(TargetKinds(), ", ")
		if s := suggest(kind, TargetKinds()); s != "" {
			hint = s + " " + hint
		}
		p.ps.at(kindNode, "target.kind", hint, "unknown target kind %q", kind)
		return
	}
	known := append(slices.Clone(targetCommonKeys), tk.keys...)
	before := len(p.ps.list)
	p.fields(n, "target", known, func(key string, _, v *yaml.Node) {
		switch key {
		case "name":
			p.suite.TargetInfo.Name, _ = p.str(v, "target.name")
		case "rate_limit":
			if s, ok := p.str(v, "target.rate_limit"); ok {
				r, err := ParseRate(s)
				if err != nil {
					p.ps.at(v, "target.rate_limit", "e.g. 20/s or 600/m", "%v", err)
					return
				}
				p.suite.RateLimit = &r
			}
		}
	})
	if len(p.ps.list) > before {
		return
	}
	t, name := tk.build(p, n, p.value(p.suite.raw, "target"))
	if t == nil {
		return
	}
	p.suite.target = t
	p.suite.TargetInfo.Kind = kind
	if p.suite.TargetInfo.Name == "" {
		p.suite.TargetInfo.Name = name
	}
	if c, ok := t.(evalrun.Closer); ok {
		p.suite.closers = append(p.suite.closers, c)
	}
}

func unavailable(kind string) func(p *parser, n, raw *yaml.Node) (evalrun.Target, string) {
	return func(p *parser, n, _ *yaml.Node) (evalrun.Target, string) {
		p.ps.at(p.value(n, "kind"), "target.kind", "use http, exec or echo for now",
			"target kind %q is not available in this build yet", kind)
		return nil, ""
	}
}

func buildHTTP(p *parser, n, raw *yaml.Node) (evalrun.Target, string) {
	var cfg target.HTTPConfig
	before := len(p.ps.list)
	p.decodeFields(n, "target", &cfg, targetCommonKeys)
	if len(p.ps.list) > before {
		return nil, ""
	}
	t, err := target.NewHTTP(cfg)
	if err != nil {
		p.targetProblem(n, err)
		return nil, ""
	}
	name := cfg.URL
	if v := p.value(raw, "url"); v != nil {
		name = v.Value // unexpanded: no secret from the environment
	}
	return t, name
}

func buildExec(p *parser, n, raw *yaml.Node) (evalrun.Target, string) {
	var cfg target.ExecConfig
	before := len(p.ps.list)
	p.decodeFields(n, "target", &cfg, targetCommonKeys)
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
		p.targetProblem(n, err)
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
func (p *parser) targetProblem(n *yaml.Node, err error) {
	var ce *target.ConfigError
	if !errors.As(err, &ce) {
		p.ps.at(n, "target", "", "%v", err)
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
	}
	p.ps.at(at, "target."+ce.Key, hint, "%v", ce.Err)
}
