package suite

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Limits of a suite file. Suite files arrive in pull requests from people
// the runner does not trust, on small CI machines: whatever a file holds,
// reading it takes little memory and time. Beyond a limit the file is
// refused with the place and the limit named (docs/suite.md#limits).
const (
	// MaxFileBytes is the largest suite file read: a hand-written suite is
	// a few KB, and the YAML parser holds ~200 bytes per node, so a file
	// of 1 MiB of one-character list entries still parses in ~100 MB.
	MaxFileBytes = 1 << 20
	// MaxDepth is the deepest nesting of mappings and lists, counted with
	// aliases followed. A suite needs ~6 levels; an inline JSON schema a
	// few more.
	MaxDepth = 64
	// MaxNodes is the most YAML nodes the document may hold with every
	// alias expanded: an alias bomb ("billion laughs": nine aliases to
	// nine aliases…) multiplies its nodes at every level, and a suite
	// reaches a few hundred.
	MaxNodes = 100_000
)

// treeCheck walks a suite document as its expansion will, aliases
// followed, and refuses what would not fit the limits: too many nodes, too
// deep, an alias inside the node it names (a cycle). It also refuses
// duplicate mapping keys, which YAML forbids and which would otherwise be
// taken silently (the first or the last, depending on the reader).
type treeCheck struct {
	ps      *problems
	nodes   int
	onPath  map[*yaml.Node]bool // the nodes being walked: an alias to one is a cycle
	seen    map[*yaml.Node]bool // mappings whose keys were checked
	alias   *yaml.Node          // the outermost alias being expanded, nil when none
	at      string              // its key path
	failed  bool                // a limit was hit: the walk stopped
	aliased bool                // an alias was followed: the hint may blame aliases
}

// checkTree records the problems of the document rooted at root in ps
// (see treeCheck).
func checkTree(root *yaml.Node, ps *problems) {
	c := &treeCheck{ps: ps, onPath: map[*yaml.Node]bool{}, seen: map[*yaml.Node]bool{}}
	c.walk(root, "", 1)
}

func (c *treeCheck) walk(n *yaml.Node, path string, depth int) {
	if c.failed || n == nil {
		return
	}
	c.nodes++
	switch {
	case c.nodes > MaxNodes:
		at, atPath := n, path
		if c.alias != nil {
			at, atPath = c.alias, c.at
		}
		if c.aliased {
			c.ps.at(at, atPath, "write the values out, or use fewer aliases",
				"the suite expands to more than %d YAML nodes with its aliases followed (limit %d)", MaxNodes, MaxNodes)
		} else {
			c.ps.at(at, atPath, "a suite is configuration: put data in the dataset file",
				"the suite has more than %d YAML nodes (limit %d)", MaxNodes, MaxNodes)
		}
		c.failed = true
		return
	case depth > MaxDepth:
		c.ps.at(n, path, "flatten the structure", "nested deeper than %d levels (limit %d, aliases followed)", MaxDepth, MaxDepth)
		c.failed = true
		return
	}
	switch n.Kind {
	case yaml.AliasNode:
		if c.onPath[n.Alias] {
			c.ps.at(n, path, "an alias may repeat a node defined before it, not one that contains it",
				"alias *%s refers to a node that contains the alias (a cycle)", n.Value)
			c.failed = true
			return
		}
		c.aliased = true
		outer := c.alias == nil
		if outer {
			c.alias, c.at = n, path
		}
		c.walk(n.Alias, path, depth)
		if outer {
			c.alias = nil
		}
	case yaml.MappingNode:
		c.onPath[n] = true
		c.duplicateKeys(n, path)
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := joinPath(path, n.Content[i].Value)
			c.walk(n.Content[i], p, depth+1)
			c.walk(n.Content[i+1], p, depth+1)
		}
		delete(c.onPath, n)
	case yaml.SequenceNode, yaml.DocumentNode:
		c.onPath[n] = true
		for i, e := range n.Content {
			p := path
			if n.Kind == yaml.SequenceNode {
				p = fmt.Sprintf("%s[%d]", path, i)
			}
			c.walk(e, p, depth+1)
		}
		delete(c.onPath, n)
	}
}

// duplicateKeys reports every scalar key of mapping n that repeats an
// earlier one, at the repeat, naming the first's line. A mapping reached
// again through an alias is not reported twice.
func (c *treeCheck) duplicateKeys(n *yaml.Node, path string) {
	if c.seen[n] {
		return
	}
	c.seen[n] = true
	first := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode {
			continue
		}
		if k.ShortTag() == "!!merge" {
			// Without this, every section would call "<<" an unknown key.
			c.ps.at(k, joinPath(path, k.Value), "write the keys out, or alias a whole value (key: *anchor)",
				"a YAML merge key (<<: *anchor) is not supported")
			continue
		}
		if f, dup := first[k.Value]; dup {
			c.ps.at(k, joinPath(path, k.Value), "keep one of them",
				"duplicate key %q: already set on line %d", k.Value, f.Line)
			continue
		}
		first[k.Value] = k
	}
}

// sizeBounds bound the size keys of targets and scorers, wherever they
// appear (a workflow step, a scorer target), with why.
var sizeBounds = map[string]struct {
	max int64
	why string
}{
	"max_response_bytes": {1 << 30, "a response is held in memory whole"},
	"max_output_bytes":   {1 << 30, "a program's output is held in memory whole"},
	"max_tokens":         {10_000_000, "far beyond any model's output"},
}

// checkSizes records a problem for every size key of the expanded tree n
// whose whole-number value exceeds its bound; other values are left to the
// key's own checks.
func checkSizes(n *yaml.Node, path string, ps *problems) {
	switch n.Kind {
	case yaml.AliasNode:
		checkSizes(n.Alias, path, ps)
	case yaml.SequenceNode:
		for i, e := range n.Content {
			checkSizes(e, fmt.Sprintf("%s[%d]", path, i), ps)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := joinPath(path, k.Value)
			b, ok := sizeBounds[k.Value]
			var size int64
			if ok && v.Kind == yaml.ScalarNode && v.ShortTag() == "!!int" && v.Decode(&size) == nil && size > b.max {
				ps.at(v, p, "", "must be at most %d (%s), got %s", b.max, b.why, v.Value)
				continue
			}
			checkSizes(v, p, ps)
		}
	}
}
