package suite

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/internal/redact"
	"github.com/evalrun/evalrun/report"
	"github.com/evalrun/evalrun/scorer"
	"github.com/evalrun/evalrun/target"
)

// Suite is a parsed, validated suite file with its target and scorers
// built. Use [Load], [Parse] or [FromRunConfig]; call Close when done.
type Suite struct {
	// Name is the suite's name; default: the file's name without extension.
	Name string
	// File is the suite file's name as given; Dir the directory relative
	// paths in it are resolved against (absolute).
	File string
	Dir  string
	// Dataset names the dataset, the file to import and a version pin.
	Dataset Dataset
	// TargetInfo is the target's kind and name, as run records show them.
	TargetInfo evalrun.TargetInfo
	// RateLimit is the target's request rate limit; nil means none.
	RateLimit *target.Rate
	// Execution holds the execution options, CLI overrides applied.
	Execution Execution
	// FailOn are the suite's fail_on conditions, checked against the
	// scorers' names.
	FailOn []report.Condition
	// Selection is which items of the dataset a run takes. The suite file
	// does not set it; the CLI does, and [Suite.RunConfig] stores it.
	Selection Selection

	target    evalrun.Target
	limited   evalrun.Target // target behind RateLimit, made by Target
	limitedAt target.Rate
	scorers   []evalrun.Scorer
	// scorerKinds are the scorers' kinds, in the same order.
	scorerKinds []string
	// chatPlan describes an openai target's requests (dry runs).
	chatPlan *ChatPlan
	// judgePlans describe the llm_judge scorers' requests (dry runs).
	judgePlans []*JudgePlan
	closers    []evalrun.Closer
	// scrub knows the suite's secrets (see Scrubber).
	scrub *redact.Scrubber
	// raw is the document's root mapping with ${VAR} references
	// unexpanded, CLI overrides applied: what a run record stores.
	raw *yaml.Node
	// variants are the suite's variants (nil for none and for a view);
	// variant and variantIndex name the variant a view is of.
	variants     []*Variant
	variant      string
	variantIndex int
}

// Dataset is the dataset part of a suite.
type Dataset struct {
	// Name is the dataset in storage; default: File's name without
	// extension.
	Name string
	// File is a dataset file (resolved against the suite's directory) to
	// import before the run, or "".
	File string
	// Version pins a version; 0 means the latest.
	Version int
}

// Execution is the execution part of a suite. The zero value is not the
// default: see [DefaultExecution].
type Execution struct {
	Concurrency    int
	ItemTimeout    time.Duration
	AttemptTimeout time.Duration
	Repeat         int
	Cache          bool
	// CacheTTL is how long a cached response is kept; 0: forever.
	CacheTTL      time.Duration
	Adaptive      bool
	MaxRetries    int
	RetryDelay    time.Duration
	RetainResults bool
	Strict        bool
}

// DefaultExecution returns the execution options of a suite that sets none.
func DefaultExecution() Execution {
	return Execution{Concurrency: 5, ItemTimeout: 60 * time.Second, Repeat: 1, Adaptive: true,
		RetryDelay: time.Second, RetainResults: true}
}

// Selection is the part of a dataset version a run takes.
type Selection struct {
	// Tags keeps the items carrying at least one of them; empty keeps all.
	Tags []string `json:"tags,omitempty"`
	// Limit keeps the first Limit items (after the tag filter); 0 keeps all.
	Limit int `json:"limit,omitempty"`
	// Outputs is a JSONL file of saved outputs scored instead of calling
	// the target; "" calls the target.
	Outputs string `json:"outputs,omitempty"`
}

// Options are what parsing needs from outside the file.
type Options struct {
	// Env gives the values of ${VAR} references; nil means none is set.
	Env Env
	// Deps are handed to scorer.New (the model factories of llm_judge and
	// embedding_similarity). BaseDir is set to the suite's directory.
	Deps scorer.Deps
	// Cache, when set, is the response cache judge models use while the
	// suite's Execution.Cache is on (checked at every call, so overrides
	// applied after parsing count). The CLI passes the store when it
	// implements [evalrun.ResponseCache].
	Cache evalrun.ResponseCache
}

// Target returns the suite's target, rate limited when the suite or an
// override sets a rate.
// Every call returns the same limited target for the same rate. Target is
// not safe for concurrent use with [Suite.Apply].
func (s *Suite) Target() evalrun.Target {
	if s.RateLimit == nil || s.target == nil {
		return s.target
	}
	if s.limited == nil || s.limitedAt != *s.RateLimit {
		s.limited, s.limitedAt = limited(s.target, s.RateLimit), *s.RateLimit
	}
	return s.limited
}

// Scorers returns the suite's scorers in file order.
func (s *Suite) Scorers() []evalrun.Scorer { return s.scorers }

// ScorerNames returns the scorers' names in file order.
func (s *Suite) ScorerNames() []string {
	names := make([]string, len(s.scorers))
	for i, sc := range s.scorers {
		names[i] = sc.Name()
	}
	return names
}

// Close releases the target's and the scorers' resources. Closing twice is
// safe.
func (s *Suite) Close() error {
	var errs []error
	for _, c := range s.closers {
		errs = append(errs, c.Close())
	}
	s.closers = nil
	return errors.Join(errs...)
}

// Load reads and parses the suite file at path (see [Parse]). Relative paths
// in it are resolved against its directory.
func Load(path string, opts Options) (*Suite, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: suite file: %w", evalrun.ErrInvalid, err)
	}
	defer f.Close()
	// One byte past the limit is enough for Parse to refuse the file.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: suite file: %w", evalrun.ErrInvalid, err)
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("suite file %s: %w", path, err)
	}
	return Parse(data, path, dir, opts)
}

// Parse parses and validates a suite file's content, expands its ${VAR}
// references and builds its target and scorers. file names the file in
// messages; dir resolves relative paths. Every problem found is reported at
// once in an *[Error] (matching [evalrun.ErrInvalid]). A file beyond the
// limits ([MaxFileBytes], [MaxDepth], [MaxNodes]) is refused.
func Parse(data []byte, file, dir string, opts Options) (*Suite, error) {
	if len(data) > MaxFileBytes {
		return nil, &Error{File: file, Problems: []Problem{{
			Msg:  fmt.Sprintf("the suite file is larger than %d bytes (limit %d)", MaxFileBytes, MaxFileBytes),
			Hint: "a suite is configuration: put data in the dataset file and long schemas in schema_file"}}}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		p := syntaxProblem(err)
		if p.Line == 0 { // the reader's own errors carry no place
			if bad, ok := badByte(data); ok {
				p = bad
			}
		}
		return nil, &Error{File: file, Problems: []Problem{p}}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, &Error{File: file, Problems: []Problem{{Line: 1, Column: 1,
			Msg: "the suite file is empty", Hint: "see docs/suite.md for an example"}}}
	}
	return parseRoot(doc.Content[0], file, dir, opts)
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// syntaxProblem turns a YAML syntax error into a problem with its line.
func syntaxProblem(err error) Problem {
	msg := err.Error()
	p := Problem{Msg: msg, Hint: "fix the YAML syntax"}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		p.Line, _ = strconv.Atoi(m[1])
		p.Column = 1
		p.Msg = "invalid YAML: " + strings.TrimPrefix(msg, m[0])
	}
	return p
}

// badByte returns a problem at the first byte of data that is not UTF-8
// or is a control character YAML forbids; false when there is none.
func badByte(data []byte) (Problem, bool) {
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return Problem{Line: line, Column: col, Msg: fmt.Sprintf("invalid UTF-8: byte 0x%02x", data[i]),
				Hint: "save the file as UTF-8"}, true
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r', r == 0x7f, r >= 0x80 && r <= 0x9f && r != 0x85:
			return Problem{Line: line, Column: col, Msg: fmt.Sprintf("a control character (byte 0x%02x)", r),
				Hint: "YAML allows tab, line breaks and printable characters"}, true
		case r == '\n':
			line, col = line+1, 0
		}
		col++
		i += size
	}
	return Problem{}, false
}

// parseRoot validates and builds a suite from its root node (unexpanded).
func parseRoot(root *yaml.Node, file, dir string, opts Options) (*Suite, error) {
	ps := &problems{}
	if root.Kind != yaml.MappingNode {
		ps.at(root, "", "see docs/suite.md for an example", "a suite file is a mapping with dataset, target and scorers")
		return nil, ps.err(file)
	}
	// A document beyond the limits is not expanded; a duplicate key is
	// reported alone (the scorers' decoder would report it again).
	if checkTree(root, ps); len(ps.list) > 0 {
		return nil, ps.err(file)
	}
	s := &Suite{File: file, Dir: dir, Execution: DefaultExecution(), raw: root, scrub: &redact.Scrubber{}}
	// Every value read from the environment, now (${VAR}) or while
	// building (api_key_env), is a secret of the suite.
	opts.Env = recordingEnv(opts.Env, s.scrub)
	p := &parser{suite: s, ps: ps, opts: opts}
	tree := expandTree(root, opts.Env, "", ps)
	checkSizes(tree, "", ps)
	addLiteralSecrets(tree, "", s.scrub)
	p.parse(tree)
	if err := ps.err(file); err != nil {
		s.Close()
		return nil, scrubProblems(err, s.scrub)
	}
	s.scrubErrors()
	return s, nil
}

// EngineOptions returns the engine options of e. The response cache
// itself (Options.Cache and CacheKey) is the caller's to set when e.Cache
// is on; CacheTTL is set here.
func (e Execution) EngineOptions() engine.Options {
	delay := e.RetryDelay
	if delay == 0 {
		delay = -1 // the engine reads 0 as its default, the suite as none
	}
	return engine.Options{
		Concurrency:    e.Concurrency,
		ItemTimeout:    e.ItemTimeout,
		AttemptTimeout: e.AttemptTimeout,
		MaxRetries:     e.MaxRetries,
		RetryDelay:     delay,
		Repeat:         e.Repeat,
		DiscardResults: !e.RetainResults,
		Strict:         e.Strict,
		CacheTTL:       e.CacheTTL,
		// Adaptive concurrency is the engine's default.
		FixedConcurrency: !e.Adaptive,
	}
}
