package suite

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Env looks up an environment variable, like [os.LookupEnv].
type Env func(name string) (value string, ok bool)

// EnvList returns the Env of a list of "KEY=value" strings, like
// [os.Environ]'s. A later entry wins over an earlier one.
func EnvList(list []string) Env {
	m := make(map[string]string, len(list))
	for _, kv := range list {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// Expand replaces ${VAR} and ${VAR:-default} in s with values from env.
// $$ is a literal $; a $ not followed by { or $ is kept as it is. An unset
// variable without a default is an error naming it; ${VAR:-default} uses
// the default when VAR is unset or empty.
func Expand(s string, env Env) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '{':
		default:
			b.WriteByte(c)
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated ${ in %q", s)
		}
		ref := s[i+2 : i+2+end]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !validVarName(name) {
			return "", fmt.Errorf("invalid variable reference ${%s}", ref)
		}
		v, ok := lookup(env, name)
		switch {
		case hasDef && v == "":
			v = def
		case !ok:
			return "", &unsetError{name: name}
		}
		b.WriteString(v)
		i += 2 + end
	}
	return b.String(), nil
}

// unsetError is a reference to an unset variable.
type unsetError struct{ name string }

func (e *unsetError) Error() string { return fmt.Sprintf("environment variable %s is not set", e.name) }

func lookup(env Env, name string) (string, bool) {
	if env == nil {
		return "", false
	}
	return env(name)
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// expandTree returns a deep copy of n with every scalar value expanded
// (mapping keys are not). Problems are recorded at the scalar's position.
// A plain (unquoted) scalar that changed is re-typed from its new text, so
// `concurrency: ${N}` is a number.
func expandTree(n *yaml.Node, env Env, path string, ps *problems) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	switch n.Kind {
	case yaml.ScalarNode:
		v, err := Expand(n.Value, env)
		if err != nil {
			hint := "escape a literal $ as $$"
			if ue, ok := err.(*unsetError); ok {
				hint = fmt.Sprintf("set %s, or give a default: ${%s:-value}", ue.name, ue.name)
			}
			ps.at(n, path, hint, "%v", err)
			return &c
		}
		if v != n.Value {
			c.Value = v
			if n.Style == 0 {
				c.Tag = ""
			}
			ps.noteExpanded(&c, n.Value)
		}
	case yaml.MappingNode:
		c.Content = make([]*yaml.Node, len(n.Content))
		for i := 0; i+1 < len(n.Content); i += 2 {
			c.Content[i] = n.Content[i]
			c.Content[i+1] = expandTree(n.Content[i+1], env, joinPath(path, n.Content[i].Value), ps)
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, e := range n.Content {
			p := path
			if n.Kind == yaml.SequenceNode {
				p = fmt.Sprintf("%s[%d]", path, i)
			}
			c.Content[i] = expandTree(e, env, p, ps)
		}
	case yaml.AliasNode:
		c.Alias = expandTree(n.Alias, env, path, ps)
	}
	return &c
}

// joinPath returns path.key (key alone when path is empty).
func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
