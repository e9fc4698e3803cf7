package suite

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/target"
)

// MaxVariants is the most variants a suite may list: each is a run of its
// own, executed at the same time as the others, with its own target built
// when the suite is read.
const MaxVariants = 32

// MaxVariantName is the longest variant name, in bytes.
const MaxVariantName = 64

// Variant is one entry of the suite's `variants` list, its target built
// from `target` with the variant's keys merged over it.
type Variant struct {
	// Name is the variant's name: unique in the suite (ignoring case), 1
	// to [MaxVariantName] letters, digits, '.', '_' and '-', beginning
	// with a letter or digit.
	Name string
	// TargetInfo is the variant's target's kind and name.
	TargetInfo evalrun.TargetInfo
	// RateLimit is the variant's request rate limit: its own rate_limit,
	// else the suite target's (a --rate override replaces both); nil
	// means none.
	RateLimit *target.Rate

	// index is the variant's position in the list (the baseline is 0).
	index int
	// target is the variant's target without its rate limit; for a
	// variant without overrides, the suite's own target.
	target   evalrun.Target
	chatPlan *ChatPlan
}

var (
	variantKeys = []string{"name", "target"}
	// A name starts with a letter or digit: "-x" reads as a flag, "." and
	// ".." as directories.
	variantName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
)

// variantsExample is the hint for a variants list of the wrong shape.
const variantsExample = "e.g. variants: [{name: mini}, {name: big, target: {model: gpt-4o}}]"

// quoteName quotes a variant name for a message, cut when it is far longer
// than a name may be (it may come from a hostile file or stored config).
func quoteName(name string) string {
	if len(name) <= 2*MaxVariantName {
		return strconv.Quote(name)
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(name[:MaxVariantName]), len(name))
}

// deref returns the node an alias names (n itself otherwise).
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// variants parses the suite's variants list (n, expanded) and builds each
// variant's target from the suite's target with the variant's keys merged
// over it. targetOK says the suite's target was built: without it only the
// list's own problems are reported, not consequences of the target's.
func (p *parser) variants(n *yaml.Node, targetOK bool) {
	s := p.suite
	n = deref(n)
	if n.Kind != yaml.SequenceNode {
		p.ps.at(n, "variants", variantsExample, "must be a list of variants, got %s", p.kindName(n))
		return
	}
	if len(n.Content) == 0 {
		p.ps.at(n, "variants", "list at least one variant, or remove variants for a plain run", "must not be empty")
		return
	}
	if len(n.Content) > MaxVariants {
		p.ps.at(n, "variants", "compare fewer variants at once, or split them over several suites",
			"%d variants, more than the limit of %d", len(n.Content), MaxVariants)
		return
	}
	rawList := deref(p.value(s.raw, "variants"))
	baseRaw := p.value(s.raw, "target")
	baseExpanded := p.value(p.root, "target")
	first := map[string]*yaml.Node{}
	// Every entry is checked before any target is built, so that the size
	// bound is known first; the entries without problems of their own are
	// built even when others have some, to report every problem at once.
	type pending struct {
		v              *Variant
		path           string
		over, rawEntry *yaml.Node
	}
	var todo []pending
	ok := true
	for i, e := range n.Content {
		path := fmt.Sprintf("variants[%d]", i)
		v, entryOK := p.variant(deref(e), path, first, targetOK)
		if !entryOK {
			ok = false
			continue
		}
		v.index = i
		var rawEntry *yaml.Node
		if rawList != nil && rawList.Kind == yaml.SequenceNode && i < len(rawList.Content) {
			rawEntry = deref(rawList.Content[i])
		}
		todo = append(todo, pending{v, path, deref(p.value(deref(e), "target")), rawEntry})
	}
	if !targetOK {
		return
	}
	// Each variant with overrides builds the whole target again: without a
	// bound, 32 variants of a target near the node limit would take 32
	// times what the limit allows.
	budget := MaxNodes - countNodes(baseExpanded, MaxNodes)
	for _, e := range todo {
		if e.over == nil || len(e.over.Content) == 0 {
			continue
		}
		budget -= countNodes(mergeMapping(baseExpanded, e.over), budget+1)
		if budget < 0 {
			p.ps.at(e.over, e.path+".target", "compare fewer variants, or make the target smaller: fewer tools, shorter schemas",
				"the variants' targets hold more than %d YAML nodes together (limit %d): each variant that changes the target builds all of it again",
				MaxNodes, MaxNodes)
			return
		}
	}
	list := make([]*Variant, 0, len(todo))
	for _, e := range todo {
		v := e.v
		if e.over == nil || len(e.over.Content) == 0 {
			// No override: the suite's own target, shared (and closed once).
			v.target, v.TargetInfo, v.chatPlan = s.target, s.TargetInfo, s.chatPlan
			if s.RateLimit != nil {
				r := *s.RateLimit
				v.RateLimit = &r
			}
			list = append(list, v)
			continue
		}
		tpath := e.path + ".target"
		merged := mergeMapping(baseExpanded, e.over)
		rawMerged := mergeMapping(baseRaw, deref(p.value(e.rawEntry, "target")))
		p.variantPath, p.variantPlan = tpath, nil
		t, info, rate := p.buildTarget(merged, tpath, rawMerged)
		p.variantPath = ""
		if t == nil {
			ok = false
			continue
		}
		if c, isCloser := t.(evalrun.Closer); isCloser {
			s.closers = append(s.closers, c)
		}
		v.target, v.TargetInfo, v.RateLimit, v.chatPlan = t, info, rate, p.variantPlan
		list = append(list, v)
	}
	if ok {
		s.variants = list
	}
}

// countNodes counts the nodes of n with aliases followed (Parse refused
// cycles), stopping once the count exceeds limit.
func countNodes(n *yaml.Node, limit int) int {
	count := 0
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil || count > limit {
			return
		}
		count++
		walk(n.Alias)
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	return count
}

// variant checks one entry of the list: its keys, its name (first maps the
// names seen to their nodes) and its override keys against the suite's
// target kind. It returns the variant, without its target, and whether the
// entry is free of problems.
func (p *parser) variant(e *yaml.Node, path string, first map[string]*yaml.Node, targetOK bool) (*Variant, bool) {
	before := len(p.ps.list)
	if e.Kind != yaml.MappingNode {
		p.ps.at(e, path, "write - name: NAME, with target: {...} for the keys it changes",
			"a variant must be a mapping, got %s", p.kindName(e))
		return nil, false
	}
	v := &Variant{}
	p.fields(e, path, variantKeys, func(key string, _, val *yaml.Node) {
		switch key {
		case "name":
			v.Name = p.variantName(val, path+".name", first)
		case "target":
			p.variantOverride(deref(val), path+".target", targetOK)
		}
	})
	if !p.has(e, "name") {
		p.ps.at(e, path+".name", "add name: NAME (letters, digits, '.', '_', '-')", "missing")
	}
	return v, len(p.ps.list) == before
}

// variantName checks a variant's name and returns it ("" on a problem).
func (p *parser) variantName(n *yaml.Node, path string, first map[string]*yaml.Node) string {
	name, ok := p.str(n, path)
	switch {
	case !ok:
		return ""
	case p.ps.expanded[n] != "":
		// An environment value is a secret of the suite: it would be
		// scrubbed from every message and report that names the variant.
		p.ps.at(n, path, "write the name out", "a variant name cannot come from the environment")
		return ""
	case name == "":
		p.ps.at(n, path, "give the variant a name: letters, digits, '.', '_', '-'", "must not be empty")
		return ""
	case !variantName.MatchString(name):
		p.ps.at(n, path, "the name is used in --variant flags, file names, URLs and report keys",
			"invalid variant name %s: use 1 to %d letters, digits, '.', '_' or '-', beginning with a letter or digit", quoteName(name), MaxVariantName)
		return ""
	}
	// Names that differ only in case would be one file on macOS and
	// Windows.
	if f, dup := first[strings.ToLower(name)]; dup {
		if f.Value == name {
			p.ps.at(n, path, "give each variant its own name", "duplicate variant name %q: already used on line %d", name, f.Line)
		} else {
			p.ps.at(n, path, "give each variant its own name; names differing only in case would share a file name",
				"duplicate variant name %q: %q is already used on line %d", name, f.Value, f.Line)
		}
		return ""
	}
	first[strings.ToLower(name)] = n
	return name
}

// variantOverride checks a variant's target overrides (n, expanded):
// keys of the suite target's kind, but not kind itself. With the suite's
// target invalid, its kind is unknown and only the shape is checked.
func (p *parser) variantOverride(n *yaml.Node, path string, targetOK bool) {
	if n.Kind != yaml.MappingNode {
		p.ps.at(n, path, "e.g. target: {model: gpt-4o}; remove it for a variant that changes nothing",
			"must be a mapping of the target keys the variant changes, got %s", p.kindName(n))
		return
	}
	if !targetOK {
		return
	}
	kind := p.suite.TargetInfo.Kind
	known := append(slices.Clone(targetCommonKeys), targetKinds[kind].keys...)
	known = slices.DeleteFunc(known, func(k string) bool { return k == "kind" })
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		switch {
		case k.Value == "kind":
			p.ps.at(k, path+".kind", "make it a separate suite", "a variant cannot change the target's kind")
		case !contains(known, k.Value):
			p.ps.at(k, joinPath(path, k.Value), unknownKeyHint(k.Value, known),
				"unknown key: a target of kind %q has no such key", kind)
		}
	}
}

// mergeMapping returns base with over's keys merged over it: a key of
// over replaces base's key and value wholesale (a nested mapping such as
// headers or params is not merged), keeping base's order; keys only over
// has follow. Nodes are shared, not copied. A nil or non-mapping over
// gives base.
func mergeMapping(base, over *yaml.Node) *yaml.Node {
	base, over = deref(base), deref(over)
	if over == nil || over.Kind != yaml.MappingNode || base == nil || base.Kind != yaml.MappingNode {
		return base
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: over.Style, Line: over.Line, Column: over.Column}
	at := func(n *yaml.Node, key string) int {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return i
			}
		}
		return -1
	}
	for i := 0; i+1 < len(base.Content); i += 2 {
		if j := at(over, base.Content[i].Value); j >= 0 {
			m.Content = append(m.Content, over.Content[j], over.Content[j+1])
			continue
		}
		m.Content = append(m.Content, base.Content[i], base.Content[i+1])
	}
	for j := 0; j+1 < len(over.Content); j += 2 {
		if at(base, over.Content[j].Value) < 0 {
			m.Content = append(m.Content, over.Content[j], over.Content[j+1])
		}
	}
	return m
}

// Variants returns the suite's variants in file order (the first is the
// baseline); nil when the suite has no `variants`, and for a variant's view
// (see [Suite.ForVariant]), which is one run's suite.
func (s *Suite) Variants() []*Variant { return s.variants }

// VariantName returns the variant a view (or a suite rebuilt by
// [FromRunConfig] from a view's run config) is of; "" otherwise.
func (s *Suite) VariantName() string { return s.variant }

// ForVariant returns a view of s whose Target(), TargetInfo, RateLimit,
// ChatPlan(), CacheKey() and RunConfig() are the variant's. RunConfig
// records the variant's name, so that [FromRunConfig] rebuilds exactly
// this view (resume and distributed workers use that). The view shares
// its scorers and closers with s: close s, not the view (closing the view
// does nothing). Overrides applied to s before ForVariant apply to the
// view; apply them before making views. Overrides applied to the view
// (its own Execution, Selection and stored document) are not s's.
//
// An unknown name is an error wrapping [evalrun.ErrInvalid] that lists the
// variants. ForVariant on a view accepts its own name only.
func (s *Suite) ForVariant(name string) (*Suite, error) {
	if s.variant != "" {
		if name == s.variant {
			return s, nil
		}
		return nil, fmt.Errorf("%w: suite %s: this is already the view of variant %q, not %s", evalrun.ErrInvalid, s.File, s.variant, quoteName(name))
	}
	if len(s.variants) == 0 {
		return nil, fmt.Errorf("%w: suite %s has no variant %s: it has no variants (see docs/suite.md#variants)", evalrun.ErrInvalid, s.File, quoteName(name))
	}
	names := make([]string, len(s.variants))
	var v *Variant
	for i, e := range s.variants {
		names[i] = e.Name
		if e.Name == name {
			v = e
		}
	}
	if v == nil {
		hint := "its variants: " + strings.Join(names, ", ")
		if dym := didYouMean(name, names); dym != "" {
			hint = dym + " " + hint
		}
		return nil, fmt.Errorf("%w: suite %s has no variant %s (%s)", evalrun.ErrInvalid, s.File, quoteName(name), hint)
	}
	view := *s
	view.variant, view.variantIndex, view.variants, view.closers = v.Name, v.index, nil, nil
	view.target, view.TargetInfo, view.chatPlan = v.target, v.TargetInfo, v.chatPlan
	view.limited, view.limitedAt = nil, target.Rate{}
	view.RateLimit = nil
	if v.RateLimit != nil {
		r := *v.RateLimit
		view.RateLimit = &r
	}
	view.Selection.Tags = slices.Clone(s.Selection.Tags)
	return &view, nil
}

// rawTarget returns the stored (unexpanded) target mapping of the suite,
// or of the variant a view is of: the suite's with the variant's keys
// merged over it.
func (s *Suite) rawTarget() *yaml.Node {
	t := findValue(s.raw, "target")
	if s.variant == "" || t == nil {
		return t
	}
	return mergeMapping(t, rawVariantTarget(s.raw, s.variantIndex))
}

// rawVariantTarget returns the target overrides of the i-th variant of the
// stored document root, or nil.
func rawVariantTarget(root *yaml.Node, i int) *yaml.Node {
	list := deref(findValue(root, "variants"))
	if list == nil || list.Kind != yaml.SequenceNode || i >= len(list.Content) {
		return nil
	}
	e := deref(list.Content[i])
	if e.Kind != yaml.MappingNode {
		return nil
	}
	return deref(findValue(e, "target"))
}
