package scorer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/evalrun/evalrun"
)

// The trajectory modes (the trajectory scorer's mode key).
const (
	// ModeExact: the same calls in the same order, nothing more.
	ModeExact Mode = "exact"
	// ModeInOrder: the expected calls appear in order; other calls may come
	// between them (the default).
	ModeInOrder Mode = "in_order"
	// ModeAnyOrder: every expected call appears, in any order.
	ModeAnyOrder Mode = "any_order"
	// ModeSubset: every call made is among the expected.
	ModeSubset Mode = "subset"
	// ModeF1: the score is the F1 of the calls matched.
	ModeF1 Mode = "f1"
)

// trajectoryModes are the modes of the trajectory scorer, in the order
// messages list them.
var trajectoryModes = []Mode{ModeExact, ModeInOrder, ModeAnyOrder, ModeSubset, ModeF1}

// MaxTrajectoryPairs bounds the work of matching a trajectory: the number
// of (call, expected call) pairs of the same tool whose arguments are
// compared, a pair counting once per argument the expected call gives. Past it the trajectory scorer fails instead of running for
// minutes; an agent's trajectory is bounded anyway (max_steps, the
// black-box targets' call limit), so only a hostile item reaches it.
const MaxTrajectoryPairs = 1 << 20

// ErrNoTrajectory is matched (errors.Is) by the error of a scorer over
// trajectories (tool_called, trajectory) given the output of a target that
// recorded none: a target that is not an agent.
var ErrNoTrajectory = errors.New("no trajectory")

// ErrNoExpectedTrajectory is matched (errors.Is) by the error of the
// trajectory scorer for an item without expected_trajectory.
var ErrNoExpectedTrajectory = errors.New("no expected_trajectory")

// noTrajectory returns the permanent error of scorer kind given no
// trajectory.
func noTrajectory(kind string) error {
	return evalrun.Permanent(fmt.Errorf("%s: %w: the target recorded none; score an agent: an openai target "+
		"with tools, or an http or exec target with trajectory: <JSON path to its tool calls>", kind, ErrNoTrajectory))
}

// TrajectoryOptions configure [NewTrajectory].
type TrajectoryOptions struct {
	// Name defaults to "trajectory".
	Name string
	// Threshold defaults to [evalrun.DefaultThreshold].
	Threshold *float64
	// Mode is one of ModeExact, ModeInOrder (the default, also for ""),
	// ModeAnyOrder, ModeSubset and ModeF1.
	Mode Mode
}

// Trajectory scores the tool calls an agent made (the input's Trajectory)
// against the item's ExpectedTrajectory. An expected call matches a call
// of the same tool whose arguments contain the expected ones
// ([evalrun.ArgsContain]); each call matches at most one expected call, so
// a tool expected twice must be called twice. By mode:
//
//   - exact: the calls are the expected ones, in order, and no more;
//   - in_order: the expected calls appear in order, other calls between;
//   - any_order: every expected call has its own matching call;
//   - subset: every call has its own expected call;
//   - f1: the score is 2M/(calls+expected) for the largest matching M (1
//     when nothing was expected and nothing called).
//
// Every mode but f1 scores 1 or 0. The reason gives precision (matched
// calls / calls made) and recall (matched / expected) under the largest
// matching, and the calls missing and extra. An item without
// expected_trajectory is a permanent error matching
// [ErrNoExpectedTrajectory], an output without a trajectory one matching
// [ErrNoTrajectory]; an empty expected trajectory expects no call. Safe for
// concurrent use.
type Trajectory struct {
	base
	mode Mode
}

var (
	_ evalrun.Scorer      = (*Trajectory)(nil)
	_ evalrun.Thresholder = (*Trajectory)(nil)
)

// NewTrajectory returns a trajectory scorer. An unknown mode is a
// *[ConfigError] on key "mode".
func NewTrajectory(opts TrajectoryOptions) (*Trajectory, error) {
	b, err := newBase(KindTrajectory, opts.Name, opts.Threshold)
	if err != nil {
		return nil, err
	}
	mode := opts.Mode
	if mode == "" {
		mode = ModeInOrder
	}
	if !containsMode(trajectoryModes, mode) {
		return nil, b.configError("mode", fmt.Errorf("unknown mode %q; want %s", mode, modeList(trajectoryModes)))
	}
	return &Trajectory{base: b, mode: mode}, nil
}

func buildTrajectory(c Config, b base, _ Deps) (evalrun.Scorer, error) {
	return NewTrajectory(TrajectoryOptions{Name: b.name, Threshold: &b.threshold, Mode: c.Mode})
}

// Score compares in.Trajectory with in.Item.ExpectedTrajectory.
func (s *Trajectory) Score(_ context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
	if in.Trajectory == nil {
		return evalrun.Score{}, noTrajectory(KindTrajectory)
	}
	if in.Item == nil || in.Item.ExpectedTrajectory == nil {
		item := "the item"
		if in.Item != nil && in.Item.ID != "" {
			item = "item " + in.Item.ID
		}
		return evalrun.Score{}, evalrun.Permanent(fmt.Errorf("trajectory: %w: %s has none; add "+
			`"expected_trajectory": [{"name": TOOL, "args": {...}}] to it ([] expects no call)`, ErrNoExpectedTrajectory, item))
	}
	calls, want := in.Trajectory.Calls, in.Item.ExpectedTrajectory
	m, err := matchCalls(calls, want)
	if err != nil {
		return evalrun.Score{}, evalrun.Permanent(fmt.Errorf("trajectory: %w", err))
	}
	matched := m.size()
	var verdict string
	ok := true
	value := 0.0
	switch s.mode {
	case ModeExact:
		ok, verdict = m.exact()
	case ModeInOrder:
		ok, verdict = m.inOrder()
	case ModeAnyOrder:
		ok = matched == len(want)
		verdict = fmt.Sprintf("%d of %d expected calls made", matched, len(want))
	case ModeSubset:
		ok = matched == len(calls)
		verdict = fmt.Sprintf("%d of %d calls expected", matched, len(calls))
	case ModeF1:
		value = 1
		if n := len(calls) + len(want); n > 0 {
			value = 2 * float64(matched) / float64(n)
		}
		verdict = fmt.Sprintf("F1 %.2f", value)
	}
	if s.mode != ModeF1 {
		value = 0
		if ok {
			value = 1
		}
	}
	return evalrun.Score{Value: value, Reason: verdict + "; " + m.summary()}, nil
}

// preparedArgs are a call's or an expected call's arguments decoded for
// [evalrun.ArgsContain]'s comparison, so that matching n calls against m
// expected calls decodes n+m objects instead of 2·n·m.
type preparedArgs struct {
	raw json.RawMessage
	// obj holds the values of an object; nil for anything else (which
	// falls back to evalrun.ArgsContain).
	obj map[string]argValue
}

// argValue is one argument's value as [evalrun.EqualValues] compares it:
// its text when either side is a JSON string, else its canonical JSON.
type argValue struct {
	text     string
	isString bool
	canon    []byte // nil when the value is not valid JSON
}

func prepareArgs(raw json.RawMessage) *preparedArgs {
	p := &preparedArgs{raw: raw}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return p
	}
	p.obj = make(map[string]argValue, len(obj))
	for k, v := range obj {
		v = bytes.TrimSpace(v)
		av := argValue{text: argText(v), isString: len(v) > 0 && v[0] == '"'}
		if !av.isString {
			av.canon, _ = evalrun.Canonical(v)
		}
		p.obj[k] = av
	}
	return p
}

// argText is [evalrun.Text] of a value json.Unmarshal has already checked,
// without decoding a string with no escapes (most arguments: a city, a
// currency code): its text is the bytes between the quotes. Decoding it with
// json.Unmarshal was most of the trajectory scorer's allocations.
func argText(v json.RawMessage) string {
	if len(v) >= 2 && v[0] == '"' && bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
		return string(v[1 : len(v)-1])
	}
	return evalrun.Text(v)
}

// containedIn reports [evalrun.ArgsContain](args.raw, want.raw).
func (want *preparedArgs) containedIn(args *preparedArgs) bool {
	if len(bytes.TrimSpace(want.raw)) == 0 {
		return true
	}
	if want.obj != nil && args.obj == nil {
		// Arguments that are not an object (the text of a call whose
		// arguments were not JSON) contain only an empty want, as
		// ArgsContain decides, but without decoding them again for
		// every pair: a hostile item pairing a few megabyte-long
		// arguments with thousands of expected calls took hours.
		return len(want.obj) == 0
	}
	if want.obj == nil || args.obj == nil {
		return evalrun.ArgsContain(args.raw, want.raw)
	}
	for k, wv := range want.obj {
		av, ok := args.obj[k]
		if !ok || !av.equal(wv) {
			return false
		}
	}
	return true
}

// equal compares as evalrun.EqualValues: texts when either is a string or
// either is not JSON, canonical JSON otherwise.
func (a argValue) equal(b argValue) bool {
	if a.isString || b.isString || a.canon == nil || b.canon == nil {
		return a.text == b.text
	}
	return bytes.Equal(a.canon, b.canon)
}

// matching is the largest matching of calls to expected calls: each
// expected call with its own call of the same tool whose arguments contain
// the expected ones.
type matching struct {
	calls []evalrun.ToolCall
	want  []evalrun.ExpectedCall
	// adj[i] lists, ascending, the calls expected call i matches.
	adj [][]int
	// callOf[i] is the call matched to expected call i, or -1; wantOf[j]
	// the expected call matched to call j, or -1.
	callOf, wantOf []int
}

// matchCalls returns the largest matching of calls to want. It fails when
// more than [MaxTrajectoryPairs] pairs would have to be compared.
func matchCalls(calls []evalrun.ToolCall, want []evalrun.ExpectedCall) (*matching, error) {
	byName := make(map[string][]int)
	for j, c := range calls {
		byName[c.Name] = append(byName[c.Name], j)
	}
	// A pair costs a comparison per expected argument: an expected call
	// of 1,000 arguments weighs 1,000 pairs (1,000 such calls against
	// 1,000 calls, 10 MB each side, took minutes at 1M pairs).
	wantArgs := make([]*preparedArgs, len(want))
	pairs := 0
	for i, w := range want {
		wantArgs[i] = prepareArgs(w.Args)
		pairs += len(byName[w.Name]) * max(1, len(wantArgs[i].obj))
		if pairs > MaxTrajectoryPairs {
			return nil, fmt.Errorf("too large to match: %d calls against %d expected calls compare more than %d pairs of calls or arguments",
				len(calls), len(want), MaxTrajectoryPairs)
		}
	}
	m := &matching{calls: calls, want: want, adj: make([][]int, len(want))}
	// Each side's arguments are decoded once, not once per pair.
	callArgs := make([]*preparedArgs, len(calls))
	for i, w := range want {
		wa := wantArgs[i]
		for _, j := range byName[w.Name] {
			if callArgs[j] == nil {
				callArgs[j] = prepareArgs(calls[j].Args)
			}
			if wa.containedIn(callArgs[j]) {
				m.adj[i] = append(m.adj[i], j)
			}
		}
	}
	m.maximize()
	return m, nil
}

// maximize finds a maximum bipartite matching with Hopcroft–Karp:
// O(E·√V) for E matching pairs. Greedy matching is not enough: with
// expected [a(any args), a{x:1}] and calls [a{x:1}, a{x:2}], matching the
// first expected call to the first call leaves the second unmatched.
func (m *matching) maximize() {
	nw, nc := len(m.want), len(m.calls)
	m.callOf = make([]int, nw)
	m.wantOf = make([]int, nc)
	for i := range m.callOf {
		m.callOf[i] = -1
	}
	for j := range m.wantOf {
		m.wantOf[j] = -1
	}
	const inf = int(^uint(0) >> 1)
	dist := make([]int, nw)
	queue := make([]int, 0, nw)
	// bfs layers the free expected calls' alternating paths and reports
	// whether one reaches a free call.
	bfs := func() bool {
		queue = queue[:0]
		for i := range nw {
			if m.callOf[i] < 0 {
				dist[i] = 0
				queue = append(queue, i)
			} else {
				dist[i] = inf
			}
		}
		found := false
		for q := 0; q < len(queue); q++ {
			i := queue[q]
			for _, j := range m.adj[i] {
				k := m.wantOf[j]
				if k < 0 {
					found = true
				} else if dist[k] == inf {
					dist[k] = dist[i] + 1
					queue = append(queue, k)
				}
			}
		}
		return found
	}
	// dfs augments along the layers, iteratively: a path may be as long as
	// the trajectory, too deep for recursion on a hostile item.
	next := make([]int, nw)     // the next edge of each expected call to try
	stack := make([]int, 0, 16) // the expected calls of the path so far
	dfs := func(root int) bool {
		stack = append(stack[:0], root)
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			if next[i] >= len(m.adj[i]) {
				dist[i] = inf // a dead end this phase
				stack = stack[:len(stack)-1]
				continue
			}
			j := m.adj[i][next[i]]
			k := m.wantOf[j]
			if k < 0 {
				// A free call: flip the path, from the top of the stack down.
				for s := len(stack) - 1; s >= 0; s-- {
					a := stack[s]
					c := m.adj[a][next[a]]
					m.callOf[a], m.wantOf[c] = c, a
				}
				return true
			}
			if dist[k] == dist[i]+1 {
				stack = append(stack, k)
				continue
			}
			next[i]++
		}
		return false
	}
	for bfs() {
		clear(next)
		for i := range nw {
			if m.callOf[i] < 0 {
				dfs(i)
			}
		}
	}
}

// size returns the number of matched pairs.
func (m *matching) size() int {
	n := 0
	for _, j := range m.callOf {
		if j >= 0 {
			n++
		}
	}
	return n
}

// matches reports whether call j matches expected call i.
func (m *matching) matches(i, j int) bool {
	_, ok := sort.Find(len(m.adj[i]), func(k int) int { return j - m.adj[i][k] })
	return ok
}

// callCount is "1 call" or "N calls", so a reason reads right for one call.
func callCount(n int) string {
	if n == 1 {
		return "1 call"
	}
	return fmt.Sprintf("%d calls", n)
}

// exact reports whether the calls are the expected ones in order, and why
// not.
func (m *matching) exact() (bool, string) {
	for i := range m.want {
		if i >= len(m.calls) {
			return false, fmt.Sprintf("not exact: %s made, %d expected; expected call %d %s was not made",
				callCount(len(m.calls)), len(m.want), i+1, expectedString(m.want[i]))
		}
		if !m.matches(i, i) {
			return false, fmt.Sprintf("not exact: call %d is %s, expected %s", i+1, callString(m.calls[i]), expectedString(m.want[i]))
		}
	}
	if len(m.calls) > len(m.want) {
		return false, fmt.Sprintf("not exact: %s made, %d expected; call %d %s is one too many",
			callCount(len(m.calls)), len(m.want), len(m.want)+1, callString(m.calls[len(m.want)]))
	}
	switch len(m.calls) {
	case 0:
		return true, "exact: no call expected, none made"
	case 1:
		return true, "exact: the call is the expected one"
	}
	return true, fmt.Sprintf("exact: the %d calls are the expected ones, in order", len(m.calls))
}

// inOrder reports whether the expected calls appear in order as a
// subsequence of the calls, and why not. Taking for each expected call the
// earliest matching call after the previous one is optimal: it leaves the
// most calls for the rest.
func (m *matching) inOrder() (bool, string) {
	from := 0 // the first call the next expected call may match
	for i, w := range m.want {
		k := sort.SearchInts(m.adj[i], from)
		if k == len(m.adj[i]) {
			if len(m.adj[i]) == 0 {
				return false, fmt.Sprintf("expected call %d %s was not made", i+1, expectedString(w))
			}
			return false, fmt.Sprintf("not in order: expected call %d %s not made after call %d (it matches call %d, too early)",
				i+1, expectedString(w), from, m.adj[i][0]+1)
		}
		from = m.adj[i][k] + 1
	}
	switch len(m.want) {
	case 0:
		return true, "in order: no call expected"
	case 1:
		return true, "in order: the expected call was made"
	}
	return true, fmt.Sprintf("in order: the %d expected calls appear in order", len(m.want))
}

// summary gives precision, recall and the calls missing and extra under
// the largest matching.
func (m *matching) summary() string {
	matched, nc, nw := m.size(), len(m.calls), len(m.want)
	var b strings.Builder
	if nc == 0 {
		b.WriteString("precision 1.00 (no call made)")
	} else {
		fmt.Fprintf(&b, "precision %.2f (%d/%d calls expected)", float64(matched)/float64(nc), matched, nc)
	}
	if nw == 0 {
		b.WriteString(", recall 1.00 (no call expected)")
	} else {
		fmt.Fprintf(&b, ", recall %.2f (%d/%d expected calls made)", float64(matched)/float64(nw), matched, nw)
	}
	var missing, extra []string
	for i, j := range m.callOf {
		if j < 0 {
			missing = append(missing, expectedString(m.want[i]))
		}
	}
	for j, i := range m.wantOf {
		if i < 0 {
			extra = append(extra, callString(m.calls[j]))
		}
	}
	if len(missing) > 0 {
		b.WriteString("; missing: " + boundedList(missing))
	}
	if len(extra) > 0 {
		b.WriteString("; extra: " + boundedList(extra))
	}
	return b.String()
}

// reasonListMax is how many calls a reason lists before "and N more".
const reasonListMax = 5

// boundedList joins the first reasonListMax of list.
func boundedList(list []string) string {
	if len(list) <= reasonListMax {
		return strings.Join(list, ", ")
	}
	return strings.Join(list[:reasonListMax], ", ") + fmt.Sprintf(" and %d more", len(list)-reasonListMax)
}

// callString shows a call as name(args) for a reason, its arguments
// compacted and shortened.
func callString(c evalrun.ToolCall) string {
	return shortName(c.Name) + "(" + shortArgs(c.Args) + ")"
}

// expectedString shows an expected call: name(args), or name(…) when any
// arguments match.
func expectedString(w evalrun.ExpectedCall) string {
	if len(bytes.TrimSpace(w.Args)) == 0 {
		return shortName(w.Name) + "(…)"
	}
	return shortName(w.Name) + "(" + shortArgs(w.Args) + ")"
}

// shortName bounds a tool name in a reason: names come from the agent.
func shortName(s string) string {
	const max = 64
	if utf8.RuneCountInString(s) > max {
		return string([]rune(s)[:max]) + "…"
	}
	return s
}

// shortArgs returns compact JSON of args bounded to 80 runes.
func shortArgs(args json.RawMessage) string {
	const max = 80
	var b bytes.Buffer
	s := string(bytes.TrimSpace(args))
	if json.Compact(&b, args) == nil {
		s = b.String()
	}
	if utf8.RuneCountInString(s) > max {
		s = string([]rune(s)[:max]) + "…"
	}
	return s
}

func containsMode(list []Mode, m Mode) bool {
	for _, x := range list {
		if x == m {
			return true
		}
	}
	return false
}

// modeList returns "a, b or c".
func modeList(list []Mode) string {
	s := make([]string, len(list))
	for i, m := range list {
		s[i] = string(m)
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
