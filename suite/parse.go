package suite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/report"
)

// parser fills a Suite from the expanded document, recording problems.
type parser struct {
	suite *Suite
	ps    *problems
	opts  Options
	// scorersOK is set when every scorer was built, so fail_on can be
	// checked against their names.
	scorersOK bool
	// targetTools names the tools of an openai target (nil for other
	// kinds), so that a tool_called scorer's misspelt tool is caught.
	targetTools []string
	// root is the expanded document.
	root *yaml.Node
	// variantPath is the path of the variant target being built, whose
	// chat plan buildOpenAI leaves in variantPlan.
	variantPath string
	variantPlan *ChatPlan
}

var (
	rootKeys      = []string{"name", "dataset", "target", "scorers", "execution", "fail_on", "variants"}
	datasetKeys   = []string{"name", "file", "version"}
	executionKeys = []string{"concurrency", "item_timeout", "attempt_timeout", "repeat", "cache",
		"cache_ttl", "adaptive", "max_retries", "retry_delay", "retain_results", "strict"}
)

func (p *parser) parse(root *yaml.Node) {
	s := p.suite
	p.root = root
	var target, scorers, variants *yaml.Node
	p.fields(root, "", rootKeys, func(key string, k, v *yaml.Node) {
		switch key {
		case "name":
			s.Name, _ = p.str(v, "name")
		case "dataset":
			p.dataset(v)
		case "target":
			target = v
		case "scorers":
			scorers = v
		case "execution":
			p.execution(v)
		case "fail_on":
			// parsed after the scorers, whose names it is checked against
		case "variants":
			variants = v // parsed after the target, which they change
		}
	})
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(s.File), filepath.Ext(s.File))
	}
	if s.Dataset.Name == "" && s.Dataset.File == "" && !p.has(root, "dataset") {
		p.ps.at(root, "dataset", "add dataset: {name: NAME, file: FILE}", "missing")
	}
	if target == nil {
		p.ps.at(root, "target", "add target: {kind: ...}; kinds: "+strings.Join(TargetKinds(), ", "), "missing")
	} else {
		p.target(target)
	}
	if variants != nil {
		// Before the scorers: a tool_called scorer is checked against the
		// tools of every variant.
		p.variants(variants, s.target != nil)
	}
	if scorers == nil {
		p.ps.at(root, "scorers", "add scorers: [exact_match] or see docs/suite.md", "missing")
	} else {
		p.scorers(scorers)
	}
	if v := p.value(root, "fail_on"); v != nil {
		p.failOn(v)
	}
}

// fields calls fn for every key of mapping n, reporting keys not in known.
func (p *parser) fields(n *yaml.Node, path string, known []string, fn func(key string, k, v *yaml.Node)) bool {
	if n.Kind != yaml.MappingNode {
		p.ps.at(n, path, "", "must be a mapping (key: value lines), got %s", p.kindName(n))
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !contains(known, k.Value) {
			p.ps.at(k, joinPath(path, k.Value), unknownKeyHint(k.Value, known), "unknown key")
			continue
		}
		fn(k.Value, k, v)
	}
	return true
}

// value returns the value of key in mapping n, or nil.
func (p *parser) value(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// keyNode returns the key node of key in mapping n, or nil.
func keyNode(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i]
		}
	}
	return nil
}

func (p *parser) has(n *yaml.Node, key string) bool { return p.value(n, key) != nil }

func (p *parser) str(v *yaml.Node, path string) (string, bool) {
	if v.Kind != yaml.ScalarNode || v.ShortTag() == "!!null" {
		p.ps.at(v, path, "", "must be a string, got %s", p.kindName(v))
		return "", false
	}
	if v.Style&yaml.TaggedStyle != 0 && v.ShortTag() != "!!str" { // !!binary text is not the string it encodes
		p.ps.at(v, path, "", "must be a string, got %s", p.describe(v))
		return "", false
	}
	return v.Value, true
}

func (p *parser) integer(v *yaml.Node, path string, minimum int) (int, bool) {
	var n int
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(&n) != nil {
		p.ps.at(v, path, "", "must be a whole number, got %s", p.describe(v))
		return 0, false
	}
	if n < minimum {
		p.ps.at(v, path, "", "must be at least %d, got %d", minimum, n)
		return 0, false
	}
	return n, true
}

func (p *parser) boolean(v *yaml.Node, path string) (bool, bool) {
	var b bool
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" || v.Decode(&b) != nil {
		p.ps.at(v, path, "use true or false", "must be a boolean, got %s", p.describe(v))
		return false, false
	}
	return b, true
}

// duration parses a Go duration ("60s", "1m30s"); a bare 0 is accepted.
func (p *parser) duration(v *yaml.Node, path string) (time.Duration, bool) {
	if v.Kind == yaml.ScalarNode && v.Value == "0" {
		return 0, true
	}
	d, err := time.ParseDuration(v.Value)
	if v.Kind != yaml.ScalarNode || err != nil {
		p.ps.at(v, path, "use a number with a unit: 500ms, 30s, 2m, 1h", "invalid duration %s", p.describe(v))
		return 0, false
	}
	if d < 0 {
		p.ps.at(v, path, "use 0 for none", "must not be negative, got %s", v.Value)
		return 0, false
	}
	return d, true
}

func (p *parser) dataset(n *yaml.Node) {
	d := &p.suite.Dataset
	p.fields(n, "dataset", datasetKeys, func(key string, _, v *yaml.Node) {
		path := "dataset." + key
		switch key {
		case "name":
			d.Name, _ = p.str(v, path)
		case "file":
			f, ok := p.str(v, path)
			if !ok {
				return
			}
			d.File = p.resolve(f)
			if _, err := os.Stat(d.File); err != nil {
				p.ps.at(v, path, "the path is relative to the suite file's directory", "cannot read %q: %v", f, unwrapPathError(err))
			}
		case "version":
			d.Version, _ = p.integer(v, path, 1)
		}
	})
	if n.Kind == yaml.MappingNode && d.Name == "" && d.File == "" && !p.has(n, "name") && !p.has(n, "file") {
		p.ps.at(n, "dataset", "add name: NAME (a dataset in storage) or file: FILE (imported first)", "needs a name or a file")
	}
	if d.Name == "" && d.File != "" {
		d.Name = strings.TrimSuffix(filepath.Base(d.File), filepath.Ext(d.File))
	}
}

func (p *parser) execution(n *yaml.Node) {
	e := &p.suite.Execution
	p.fields(n, "execution", executionKeys, func(key string, _, v *yaml.Node) {
		path := "execution." + key
		switch key {
		case "concurrency":
			n, ok := p.integer(v, path, 1)
			e.Concurrency = orKeep(n, ok && p.within(v, path, key, int64(n)))(e.Concurrency)
		case "item_timeout":
			d, ok := p.duration(v, path)
			e.ItemTimeout = orKeep(d, ok && p.within(v, path, key, int64(d)))(e.ItemTimeout)
		case "attempt_timeout":
			d, ok := p.duration(v, path)
			e.AttemptTimeout = orKeep(d, ok && p.within(v, path, key, int64(d)))(e.AttemptTimeout)
		case "repeat":
			n, ok := p.integer(v, path, 1)
			e.Repeat = orKeep(n, ok && p.within(v, path, key, int64(n)))(e.Repeat)
		case "cache":
			e.Cache = orKeep(p.boolean(v, path))(e.Cache)
		case "cache_ttl":
			d, ok := p.duration(v, path)
			e.CacheTTL = orKeep(d, ok && p.within(v, path, key, int64(d)))(e.CacheTTL)
		case "adaptive":
			e.Adaptive = orKeep(p.boolean(v, path))(e.Adaptive)
		case "max_retries":
			n, ok := p.integer(v, path, 0)
			e.MaxRetries = orKeep(n, ok && p.within(v, path, key, int64(n)))(e.MaxRetries)
		case "retry_delay":
			d, ok := p.duration(v, path)
			e.RetryDelay = orKeep(d, ok && p.within(v, path, key, int64(d)))(e.RetryDelay)
		case "retain_results":
			e.RetainResults = orKeep(p.boolean(v, path))(e.RetainResults)
		case "strict":
			e.Strict = orKeep(p.boolean(v, path))(e.Strict)
		}
	})
}

// within reports whether n, the value v of the execution option key, is
// within the engine's bound for it (see [engine.CheckBound]), recording a
// problem when it is not.
func (p *parser) within(v *yaml.Node, path, key string, n int64) bool {
	if err := engine.CheckBound(key, n); err != nil {
		p.ps.at(v, path, "", "%v, got %s", err, v.Value)
		return false
	}
	return true
}

// orKeep returns a function giving v when ok, the old value otherwise.
func orKeep[T any](v T, ok bool) func(old T) T {
	return func(old T) T {
		if ok {
			return v
		}
		return old
	}
}

func (p *parser) failOn(n *yaml.Node) {
	list := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		list = n.Content
	}
	names := p.suite.ScorerNames()
	for i, v := range list {
		path := "fail_on"
		if n.Kind == yaml.SequenceNode {
			path = fmt.Sprintf("fail_on[%d]", i)
		}
		src, ok := p.str(v, path)
		if !ok {
			continue
		}
		c, err := report.ParseCondition(src)
		if err == nil && p.scorersOK {
			err = c.Check(names)
		}
		if err != nil {
			p.conditionProblem(v, path, err)
			continue
		}
		p.suite.FailOn = append(p.suite.FailOn, c)
	}
}

// conditionProblem reports a fail_on condition error at its column.
func (p *parser) conditionProblem(v *yaml.Node, path string, err error) {
	at := *v
	msg := err.Error()
	var ce *report.ConditionError
	if errors.As(err, &ce) {
		msg = ce.Msg
		if ce.Column > 0 {
			at.Column += ce.Column - 1
			if v.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
				at.Column++
			}
		}
	}
	p.ps.at(&at, path, `e.g. "pass_rate(exact_match) < 0.9" or "failed > 0"; see docs/report-schema.md`, "%s", msg)
}

// resolve returns path resolved against the suite's directory.
func (p *parser) resolve(path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(p.suite.Dir, path)
}

// decodeFields decodes the keys of mapping n (except skip) into the struct
// dst by its yaml tags (inline structs included), one key at a time so that
// a problem names its key and position.
func (p *parser) decodeFields(n *yaml.Node, path string, dst any, skip []string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if contains(skip, k.Value) {
			continue
		}
		one := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{k, val}}
		if err := one.Decode(dst); err != nil {
			p.ps.at(val, joinPath(path, k.Value), "", "%s", p.yamlCause(err, val))
		}
	}
}

var yamlLine2 = regexp.MustCompile(`^line \d+: `)

// yamlValue is the excerpt of the value a yaml type error quotes
// (" `sk-abcd...`"), which the message shows apart through describe.
var yamlValue = regexp.MustCompile(" `[^`]*`")

// yamlCause returns a decoding error's message without its "yaml: line N:"
// wrapping and its excerpt of the value.
func (p *parser) yamlCause(err error, v *yaml.Node) string {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		cause := yamlValue.ReplaceAllString(yamlLine2.ReplaceAllString(te.Errors[0], ""), "")
		return "invalid value " + p.describe(v) + ": " + strings.TrimSpace(cause)
	}
	return err.Error()
}

func (p *parser) kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "nothing"
		}
		return p.describe(n)
	}
	return "an alias"
}

// describe quotes a scalar's text for messages; for a value expanded from
// the environment, its text as written (the value may be a secret).
func (p *parser) describe(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode {
		return p.kindName(n)
	}
	if written, ok := p.ps.expanded[n]; ok {
		return strconv.Quote(written) + " (its value is not shown)"
	}
	if n.Style&yaml.TaggedStyle != 0 {
		// An explicit tag makes "5" a string: say so, or "must be a whole
		// number, got 5" makes no sense.
		return strconv.Quote(n.Value) + " tagged " + n.ShortTag() + " (remove the tag)"
	}
	return strconv.Quote(n.Value)
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
