package suite

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/suggest"
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
		sep := ":"
		if p.Line == 0 {
			sep = ": " // "file: msg", as "file:LINE:COL: msg" reads
		}
		lines[i] = e.File + sep + p.String()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns [evalrun.ErrInvalid].
func (e *Error) Unwrap() error { return evalrun.ErrInvalid }

// problems collects the problems of one suite file.
type problems struct {
	list []Problem
	// expanded maps each scalar whose ${VAR} references were expanded to
	// its text as written, which messages show instead of its value: the
	// value may be a secret.
	expanded map[*yaml.Node]string
}

// noteExpanded records that n's value was expanded from written.
func (ps *problems) noteExpanded(n *yaml.Node, written string) {
	if ps.expanded == nil {
		ps.expanded = make(map[*yaml.Node]string)
	}
	ps.expanded[n] = written
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

// didYouMean returns `did you mean "x"?` for the known word closest to
// word, or "" when none is close.
func didYouMean(word string, known []string) string {
	if best := suggest.Nearest(word, known); best != "" {
		return fmt.Sprintf("did you mean %q?", best)
	}
	return ""
}

// unknownKeyHint returns the hint for an unknown key: a suggestion and the
// known keys.
func unknownKeyHint(key string, known []string) string {
	h := "known keys: " + strings.Join(known, ", ")
	if s := didYouMean(key, known); s != "" {
		return s + " " + h
	}
	return h
}
