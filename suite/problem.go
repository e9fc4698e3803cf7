package suite

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/evalrun/evalrun"
)

// Problem is one thing wrong with a suite file: where it is, which key, what
// is wrong and what to do about it.
type Problem struct {
	// Line and Column are 1-based; 0 when unknown.
	Line, Column int
	// Path is the key path, e.g. "scorers[1].pattern" or "execution.item_timeout".
	Path string
	// Msg says what is wrong; Hint, when set, what to do.
	Msg  string
	Hint string
}

// String returns "LINE:COL: path: msg (hint)".
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "%d:%d: ", p.Line, max(p.Column, 1))
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	if p.Hint != "" {
		fmt.Fprintf(&b, " (%s)", p.Hint)
	}
	return b.String()
}

// Error is an invalid suite file: every problem found, in file order. It
// matches [evalrun.ErrInvalid] with errors.Is.
type Error struct {
	// File is the suite file's name as given.
	File     string
	Problems []Problem
}

// Error returns one line per problem: "file:LINE:COL: key.path: what is
// wrong (what to do)".
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = e.File + ":" + p.String()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns [evalrun.ErrInvalid].
func (e *Error) Unwrap() error { return evalrun.ErrInvalid }

// problems collects the problems of one suite file.
type problems struct {
	list []Problem
}

// at records a problem at node n (nil: no position).
func (ps *problems) at(n *yaml.Node, path, hint, format string, args ...any) {
	msg, _, _ := strings.Cut(fmt.Sprintf(format, args...), "\n") // one line per problem
	p := Problem{Path: path, Msg: strings.TrimSpace(msg), Hint: hint}
	if n != nil {
		p.Line, p.Column = n.Line, n.Column
	}
	ps.list = append(ps.list, p)
}

// err returns the problems as an *Error sorted by position, or nil.
func (ps *problems) err(file string) error {
	if len(ps.list) == 0 {
		return nil
	}
	list := slices.Clone(ps.list)
	slices.SortStableFunc(list, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	return &Error{File: file, Problems: list}
}

// suggest returns `did you mean "x"?` for the known word closest to word,
// or "" when none is close.
func suggest(word string, known []string) string {
	best, bestD := "", -1
	for _, k := range known {
		if d := editDistance(strings.ToLower(word), k); bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	if bestD < 0 || bestD > max(1, len(best)/3) {
		return ""
	}
	return fmt.Sprintf("did you mean %q?", best)
}

// unknownKeyHint returns the hint for an unknown key: a suggestion and the
// known keys.
func unknownKeyHint(key string, known []string) string {
	h := "known keys: " + strings.Join(known, ", ")
	if s := suggest(key, known); s != "" {
		return s + " " + h
	}
	return h
}

// editDistance is the Levenshtein distance of a and b in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
