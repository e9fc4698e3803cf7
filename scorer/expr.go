package scorer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"

	"github.com/evalrun/evalrun"
)

// ExprOptions configure [NewExpr].
type ExprOptions struct {
	// Name defaults to "expr".
	Name string
	// Threshold defaults to [evalrun.DefaultThreshold].
	Threshold *float64
	// Expression is an expr-lang expression (https://expr-lang.org) over
	// the variables input, output, expected, metadata, trajectory and
	// steps; required.
	Expression string
}

// Expr scores with a user expression (github.com/expr-lang/expr). Its
// variables are the item's input, the output and the expected output as
// decoded JSON values (a JSON string is a Go string, a number a float64, an
// object a map, absent expected is nil; use fromJSON(output) for JSON
// carried as text), the item's metadata (a map, empty when absent), and
// what an agent did: trajectory, its tool calls as a list of maps {name,
// args (decoded), output (decoded; nil when none), error ("" when none),
// mocked, latency_ms (nil when not measured)}, empty when the target
// recorded none, and steps, its model turns (an int, 0 when none). A
// bool result scores 1 or 0; a number result is the score and must be in
// [0,1]. Any other result, a NaN or a number outside [0,1] is a scorer error
// of kind invalid_output; an evaluation error is a permanent scorer error.
// The expression is compiled once, by NewExpr. Safe for concurrent use.
type Expr struct {
	base
	source  string
	program *vm.Program
	// usesTrajectory: the expression names trajectory, so Score decodes
	// the calls (only then: a trajectory may be long).
	usesTrajectory bool
}

var (
	_ evalrun.Scorer      = (*Expr)(nil)
	_ evalrun.Thresholder = (*Expr)(nil)
)

// exprEnv holds the variables of an expression. The item's are of static
// type any, so the checker leaves them dynamic; trajectory is a list of
// maps (so that all(trajectory, .name != "x") checks) and steps an int.
type exprEnv struct {
	Input      any              `expr:"input"`
	Output     any              `expr:"output"`
	Expected   any              `expr:"expected"`
	Metadata   map[string]any   `expr:"metadata"`
	Trajectory []map[string]any `expr:"trajectory"`
	Steps      int              `expr:"steps"`
}

// NewExpr compiles opts.Expression and returns an expr scorer. A missing
// expression, or one that does not compile (a syntax error, an unknown
// variable), is a *[ConfigError] on key "expression".
func NewExpr(opts ExprOptions) (*Expr, error) {
	b, err := newBase(KindExpr, opts.Name, opts.Threshold)
	if err != nil {
		return nil, err
	}
	if opts.Expression == "" {
		return nil, b.configError("expression", errors.New("required"))
	}
	prog, err := expr.Compile(opts.Expression, expr.Env(exprEnv{}))
	if err != nil {
		return nil, b.configError("expression", fmt.Errorf("does not compile: %w", err))
	}
	uses := ast.Find(prog.Node(), func(n ast.Node) bool {
		id, ok := n.(*ast.IdentifierNode)
		return ok && id.Value == "trajectory"
	}) != nil
	return &Expr{base: b, source: opts.Expression, program: prog, usesTrajectory: uses}, nil
}

func buildExpr(c Config, b base, _ Deps) (evalrun.Scorer, error) {
	return NewExpr(ExprOptions{Name: b.name, Threshold: &b.threshold, Expression: c.Expression})
}

// Score evaluates the expression for in.
func (s *Expr) Score(_ context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
	env := exprEnv{Output: decodeJSON(in.Output), Metadata: map[string]any{}}
	if it := in.Item; it != nil {
		env.Input = decodeJSON(it.Input)
		env.Expected = decodeJSON(it.Expected)
		if it.Metadata != nil {
			env.Metadata = it.Metadata
		}
	}
	if tr := in.Trajectory; tr != nil {
		env.Steps = tr.Steps
		if s.usesTrajectory {
			env.Trajectory = exprCalls(tr.Calls)
		}
	}
	res, err := expr.Run(s.program, env)
	if err != nil {
		return evalrun.Score{}, evalrun.Permanent(fmt.Errorf("expr: %w", err))
	}
	var v float64
	switch r := res.(type) {
	case bool:
		return passFail(r, fmt.Sprintf("%s is %v", s.source, r)), nil
	case float64:
		v = r
	case float32:
		v = float64(r)
	case int:
		v = float64(r)
	case int8:
		v = float64(r)
	case int16:
		v = float64(r)
	case int32:
		v = float64(r)
	case int64:
		v = float64(r)
	case uint:
		v = float64(r)
	case uint8:
		v = float64(r)
	case uint16:
		v = float64(r)
	case uint32:
		v = float64(r)
	case uint64:
		v = float64(r)
	default:
		return evalrun.Score{}, invalidOutput("expr: %s gave %T %v, want a bool or a number", s.source, res, res)
	}
	if err := checkValue("expr", v); err != nil {
		return evalrun.Score{}, err
	}
	if math.Signbit(v) { // -0 reads as 0
		v = 0
	}
	return evalrun.Score{Value: v, Reason: fmt.Sprintf("%s is %v", s.source, v)}, nil
}

// exprCalls returns the calls as the maps an expression sees.
func exprCalls(calls []evalrun.ToolCall) []map[string]any {
	out := make([]map[string]any, len(calls))
	for i, c := range calls {
		var latency any
		if c.LatencyMS != nil {
			latency = *c.LatencyMS
		}
		args := decodeJSON(c.Args)
		if args == nil {
			args = map[string]any{}
		}
		out[i] = map[string]any{
			"name":       c.Name,
			"args":       args,
			"output":     decodeJSON(c.Output),
			"error":      c.Error,
			"mocked":     c.Mocked,
			"latency_ms": latency,
		}
	}
	return out
}

// decodeJSON returns the Go value of raw (nil when empty); raw that is not
// JSON is returned as its text.
func decodeJSON(raw json.RawMessage) any {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	if s, ok := plainString(raw); ok {
		return s
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	return v
}
