package scorer

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/retry"
)

// Config is one entry of a suite file's scorers list: the kind, name and
// threshold every scorer has, plus the options of every kind (a key that does
// not belong to the kind is a config error). It decodes from YAML either as a
// mapping or as a bare kind string (`- exact_match`), which means that kind
// with its defaults. The zero value is not valid: Kind is required.
type Config struct {
	// Kind is the scorer kind, one of [Kinds].
	Kind string `yaml:"kind"`
	// Name identifies the scorer within a suite; default: the kind.
	Name string `yaml:"name,omitempty"`
	// Threshold is the pass threshold in [0,1]; default
	// [evalrun.DefaultThreshold].
	Threshold *float64 `yaml:"threshold,omitempty"`

	// CaseSensitive (exact_match, contains, levenshtein); default true.
	CaseSensitive *bool `yaml:"case_sensitive,omitempty"`
	// Trim removes leading and trailing white space from both sides before
	// comparing (exact_match, levenshtein); default false.
	Trim bool `yaml:"trim,omitempty"`

	// Values (contains) are the substrings to look for; a single string is
	// accepted in YAML. Default: the item's expected output.
	Values StringList `yaml:"values,omitempty"`
	// Mode (contains) is "any" (default) or "all"; (trajectory) one of
	// exact, in_order (default), any_order, subset and f1.
	Mode Mode `yaml:"mode,omitempty"`

	// Pattern (regex) is an RE2 regular expression (Go regexp syntax).
	Pattern string `yaml:"pattern,omitempty"`

	// Schema (json_schema) is an inline JSON Schema: a YAML or JSON object,
	// or a string holding one in JSON.
	Schema any `yaml:"schema,omitempty"`
	// SchemaFile (json_schema) is a JSON Schema file; a relative path is
	// resolved against [Deps.BaseDir].
	SchemaFile string `yaml:"schema_file,omitempty"`

	// Tolerance (numeric) is the allowed difference, absolute or (with
	// Relative) a fraction of |expected|; default 0 (see [NumericOptions]).
	Tolerance *float64 `yaml:"tolerance,omitempty"`
	// Relative (numeric) makes Tolerance relative to |expected|.
	Relative bool `yaml:"relative,omitempty"`

	// Expression (expr) is an expr-lang expression over input, output,
	// expected and metadata giving a bool or a number in [0,1].
	Expression string `yaml:"expression,omitempty"`

	// Tool (tool_called) is the name of the tool to look for. Required.
	Tool string `yaml:"tool,omitempty"`
	// Args (tool_called) is a mapping the call's arguments must contain
	// (a subset match); absent matches any arguments.
	Args any `yaml:"args,omitempty"`
	// Count (tool_called) requires exactly that many matching calls.
	Count *int `yaml:"count,omitempty"`
	// Never (tool_called) passes only when there is no matching call.
	Never bool `yaml:"never,omitempty"`

	// Rubric (llm_judge) is what the judge grades against.
	Rubric string `yaml:"rubric,omitempty"`
	// MaxTokens (llm_judge) caps the verdict's length; 0: the model's
	// default.
	MaxTokens int `yaml:"max_tokens,omitempty"`

	// Model, BaseURL, APIKeyEnv and RateLimit (llm_judge,
	// embedding_similarity) select the model; they are handed to the
	// [Deps] factory, which interprets them.
	Model     string `yaml:"model,omitempty"`
	BaseURL   string `yaml:"base_url,omitempty"`
	APIKeyEnv string `yaml:"api_key_env,omitempty"`
	RateLimit string `yaml:"rate_limit,omitempty"`
	// MaxRetries and RetryDelay (llm_judge, embedding_similarity) override
	// [Deps.Retry] for the model's transient errors.
	MaxRetries *int           `yaml:"max_retries,omitempty"`
	RetryDelay *time.Duration `yaml:"retry_delay,omitempty"`
	// Price (llm_judge, embedding_similarity), when set, turns the model's
	// reported tokens into a cost, as an openai target's price does.
	Price *evalrun.Price `yaml:"price,omitempty"`

	// Command (exec) is the scorer program and its arguments. Required.
	Command []string `yaml:"command,omitempty"`
	// Env (exec) is added to the program's environment.
	Env map[string]string `yaml:"env,omitempty"`
	// Dir (exec) is the program's working directory; default: the suite
	// file's directory ([Deps.BaseDir]).
	Dir string `yaml:"dir,omitempty"`
	// Timeout (exec, http) bounds one scoring; default [DefaultTimeout].
	Timeout *time.Duration `yaml:"timeout,omitempty"`
	// Persistent (exec) keeps long-lived processes for the run, one JSON
	// line per request.
	Persistent *bool `yaml:"persistent,omitempty"`
	// Processes (exec, with persistent) is the number of processes;
	// default 1.
	Processes *int `yaml:"processes,omitempty"`
	// URL (http) is the grading service's endpoint. Required.
	URL string `yaml:"url,omitempty"`
	// Method (http) is the HTTP method; default POST.
	Method string `yaml:"method,omitempty"`
	// Headers (http) are sent with every request.
	Headers map[string]string `yaml:"headers,omitempty"`

	// line is the YAML line the config came from, for error messages.
	line int
}

// Mode says whether contains needs any or all of its values, or how the
// trajectory scorer compares the calls (ModeExact and the others).
type Mode string

// The contains modes.
const (
	// ModeAny passes when at least one value occurs (the default).
	ModeAny Mode = "any"
	// ModeAll passes when every value occurs.
	ModeAll Mode = "all"
)

// StringList is a list of strings that also decodes from a single YAML
// string.
type StringList []string

// UnmarshalYAML decodes a string or a sequence of strings.
func (l *StringList) UnmarshalYAML(node *yaml.Node) error {
	if node.Kind == yaml.ScalarNode {
		var s string
		if err := node.Decode(&s); err != nil {
			return err
		}
		*l = StringList{s}
		return nil
	}
	var list []string
	if err := node.Decode(&list); err != nil {
		return err
	}
	*l = list
	return nil
}

// UnmarshalYAML decodes a mapping, rejecting keys no kind knows, or a bare
// kind string.
func (c *Config) UnmarshalYAML(node *yaml.Node) error {
	switch node.Kind {
	case yaml.ScalarNode:
		var kind string
		if err := node.Decode(&kind); err != nil {
			return err
		}
		*c = Config{Kind: kind, line: node.Line}
		return nil
	case yaml.MappingNode:
		known := configKeys()
		var kind, name string
		for i := 0; i+1 < len(node.Content); i += 2 {
			switch node.Content[i].Value {
			case "kind":
				kind = node.Content[i+1].Value
			case "name":
				name = node.Content[i+1].Value
			}
		}
		for i := 0; i+1 < len(node.Content); i += 2 {
			k := node.Content[i]
			if !slices.Contains(known, k.Value) {
				allowed := known
				if b, ok := builders[kind]; ok {
					allowed = append(slices.Clone(commonKeys), b.keys...)
				}
				return &ConfigError{Scorer: name, Kind: kind, Key: k.Value, Line: k.Line,
					Err: fmt.Errorf("unknown key; known keys: %s", strings.Join(allowed, ", "))}
			}
		}
		// Decode key by key, so that an error names its key and line.
		var cfg Config
		v := reflect.ValueOf(&cfg).Elem()
		for i := 0; i+1 < len(node.Content); i += 2 {
			k, val := node.Content[i], node.Content[i+1]
			if k.Value == "price" {
				if err := checkPriceKeys(val); err != nil {
					return &ConfigError{Scorer: name, Kind: kind, Key: k.Value, Line: val.Line, Err: err}
				}
			}
			switch k.Value {
			case "count":
				// yaml decodes 1.5 into an int as 1: a count is a whole number as written.
				if val.Kind != yaml.ScalarNode || val.ShortTag() != "!!int" {
					return &ConfigError{Scorer: name, Kind: kind, Key: k.Value, Line: val.Line,
						Err: errors.New("must be a whole number of calls, 0 or more")}
				}
			case "processes":
				if val.Kind != yaml.ScalarNode || val.ShortTag() != "!!int" {
					return &ConfigError{Scorer: name, Kind: kind, Key: k.Value, Line: val.Line,
						Err: fmt.Errorf("must be a whole number of processes, 1 to %d", MaxProcesses)}
				}
			case "persistent":
				// yaml reads `persistent: yes` as a string: say what is wanted.
				if val.Kind != yaml.ScalarNode || val.ShortTag() != "!!bool" {
					return &ConfigError{Scorer: name, Kind: kind, Key: k.Value, Line: val.Line,
						Err: fmt.Errorf("must be true or false, got %q", val.Value)}
				}
			case "args":
				// Arguments are compared as JSON: a scalar keeps its text
				// when yaml would make it a time (2024-01-01).
				a, err := jsonValue(val, 0)
				if err != nil {
					return &ConfigError{Scorer: name, Kind: kind, Key: k.Value, Line: val.Line, Err: err}
				}
				cfg.Args = a
				continue
			}
			f := v.FieldByIndex(configField(k.Value))
			if err := val.Decode(f.Addr().Interface()); err != nil {
				return &ConfigError{Scorer: name, Kind: kind, Key: k.Value, Line: val.Line, Err: yamlCause(err)}
			}
		}
		cfg.line = node.Line
		*c = cfg
		return nil
	default:
		return &ConfigError{Line: node.Line, Err: errors.New("a scorer is a kind name or a mapping with a kind")}
	}
}

// jsonValue returns the JSON value of a YAML node: mappings (with their
// keys as strings), sequences, and scalars as YAML 1.2's core schema reads
// them, except that a timestamp stays the string it was written as.
func jsonValue(n *yaml.Node, depth int) (any, error) {
	if depth > 64 {
		return nil, errors.New("nested too deeply")
	}
	switch n.Kind {
	case yaml.AliasNode:
		return jsonValue(n.Alias, depth+1)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := jsonValue(n.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, e := range n.Content {
			v, err := jsonValue(e, depth+1)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int", "!!float", "!!bool", "!!null":
			var v any
			if err := n.Decode(&v); err != nil {
				return nil, yamlCause(err)
			}
			if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
				return nil, fmt.Errorf("%s is not a JSON number", n.Value)
			}
			return v, nil
		}
		return n.Value, nil
	}
	return nil, fmt.Errorf("unexpected YAML node")
}

// ConfigError is an invalid scorer configuration, found before anything
// runs. It matches [evalrun.ErrInvalid] with errors.Is, and the underlying
// cause (a *regexp/syntax.Error, a schema compile error, …) with errors.As.
type ConfigError struct {
	// Scorer is the scorer's name, when known.
	Scorer string
	// Kind is the scorer kind, when known.
	Kind string
	// Key is the offending config key (for example "pattern"), or "".
	Key string
	// Line is the line in the YAML document, or 0.
	Line int
	Err  error
}

// Error describes where the configuration is wrong and why.
func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	b.WriteString("scorer")
	switch {
	case e.Scorer != "" && e.Scorer != e.Kind && e.Kind != "":
		fmt.Fprintf(&b, " %q (%s)", e.Scorer, e.Kind)
	case e.Scorer != "":
		fmt.Fprintf(&b, " %q", e.Scorer)
	case e.Kind != "":
		fmt.Fprintf(&b, " %s", e.Kind)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, ": %s", e.Key)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap returns [evalrun.ErrInvalid] and the cause.
func (e *ConfigError) Unwrap() []error {
	if e.Err == nil {
		return []error{evalrun.ErrInvalid}
	}
	return []error{evalrun.ErrInvalid, e.Err}
}

// Deps are what the model-backed scorers need from outside this package.
// The zero value serves every deterministic kind; llm_judge needs ChatModel
// and embedding_similarity needs Embedder.
type Deps struct {
	// ChatModel returns the judge model an llm_judge config names.
	ChatModel func(ModelConfig) (evalrun.ChatModel, error)
	// Embedder returns the embedding model an embedding_similarity config
	// names.
	Embedder func(ModelConfig) (evalrun.Embedder, error)
	// Retry is the default policy for model calls (max_retries and
	// retry_delay override it per scorer). The zero value tries once.
	Retry retry.Policy
	// BaseDir resolves a relative schema_file (the suite file's
	// directory); "" means the working directory.
	BaseDir string
}

// ModelConfig is the model selection of an llm_judge or
// embedding_similarity config, as given; the Deps factory applies its
// defaults and reports what is wrong.
type ModelConfig struct {
	// Kind is the scorer kind asking ("llm_judge" or
	// "embedding_similarity").
	Kind      string
	Model     string
	BaseURL   string
	APIKeyEnv string
	RateLimit string
	// Price is the model's price; nil when the config sets none.
	Price *evalrun.Price
}

// builder makes one kind of scorer from a validated common part.
type builder struct {
	keys  []string // kind-specific keys allowed
	build func(c Config, base base, d Deps) (evalrun.Scorer, error)
}

var builders = map[string]builder{
	KindExactMatch:  {[]string{"case_sensitive", "trim"}, buildExactMatch},
	KindContains:    {[]string{"values", "mode", "case_sensitive"}, buildContains},
	KindRegex:       {[]string{"pattern"}, buildRegex},
	KindJSONValid:   {nil, buildJSONValid},
	KindJSONSchema:  {[]string{"schema", "schema_file"}, buildJSONSchema},
	KindJSONEqual:   {nil, buildJSONEqual},
	KindLevenshtein: {[]string{"case_sensitive", "trim"}, buildLevenshtein},
	KindNumeric:     {[]string{"tolerance", "relative"}, buildNumeric},
	KindExpr:        {[]string{"expression"}, buildExpr},
	KindToolCalled:  {[]string{"tool", "args", "count", "never"}, buildToolCalled},
	KindTrajectory:  {[]string{"mode"}, buildTrajectory},
	KindLLMJudge: {[]string{"rubric", "max_tokens", "model", "base_url", "api_key_env",
		"rate_limit", "max_retries", "retry_delay", "price"}, buildLLMJudge},
	KindEmbeddingSimilarity: {[]string{"model", "base_url", "api_key_env", "rate_limit",
		"max_retries", "retry_delay", "price"}, buildEmbeddingSimilarity},
	KindExec: {[]string{"command", "env", "dir", "timeout", "persistent", "processes"}, buildExec},
	KindHTTP: {[]string{"url", "method", "headers", "timeout", "max_retries", "retry_delay"}, buildHTTP},
}

// The scorer kinds.
const (
	KindExactMatch          = "exact_match"
	KindContains            = "contains"
	KindRegex               = "regex"
	KindJSONValid           = "json_valid"
	KindJSONSchema          = "json_schema"
	KindJSONEqual           = "json_equal"
	KindLevenshtein         = "levenshtein"
	KindNumeric             = "numeric"
	KindExpr                = "expr"
	KindLLMJudge            = "llm_judge"
	KindEmbeddingSimilarity = "embedding_similarity"
	KindToolCalled          = "tool_called"
	KindTrajectory          = "trajectory"
	KindExec                = "exec"
	KindHTTP                = "http"
)

// Kinds returns the known scorer kinds, sorted.
func Kinds() []string {
	kinds := make([]string, 0, len(builders))
	for k := range builders {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return kinds
}

// Keys returns the keys a scorer of kind may have (every kind's kind, name
// and threshold, then its own), or nil for an unknown kind.
func Keys(kind string) []string {
	b, ok := builders[kind]
	if !ok {
		return nil
	}
	return append(slices.Clone(commonKeys), b.keys...)
}

// New validates cfg and returns the scorer it describes. Every error is a
// *[ConfigError] matching [evalrun.ErrInvalid]: an unknown kind, a key of
// another kind, a threshold outside [0,1], an invalid regex, schema or
// expression, a missing required key, or a Deps factory's error.
func New(cfg Config, deps Deps) (evalrun.Scorer, error) {
	b, ok := builders[cfg.Kind]
	if !ok {
		what := fmt.Errorf("unknown scorer kind %q; known kinds: %s", cfg.Kind, strings.Join(Kinds(), ", "))
		if cfg.Kind == "" {
			what = fmt.Errorf("missing; known kinds: %s", strings.Join(Kinds(), ", "))
		}
		return nil, &ConfigError{Scorer: cfg.Name, Key: "kind", Line: cfg.line, Err: what}
	}
	wrap := func(err error) error {
		var ce *ConfigError
		if errors.As(err, &ce) {
			if ce.Scorer == "" {
				ce.Scorer = cmpOr(cfg.Name, cfg.Kind)
			}
			if ce.Kind == "" {
				ce.Kind = cfg.Kind
			}
			if ce.Line == 0 {
				ce.Line = cfg.line
			}
			return ce
		}
		return &ConfigError{Scorer: cmpOr(cfg.Name, cfg.Kind), Kind: cfg.Kind, Line: cfg.line, Err: err}
	}
	for _, key := range cfg.setKeys() {
		if !slices.Contains(b.keys, key) {
			allowed := "none"
			if len(b.keys) > 0 {
				allowed = strings.Join(b.keys, ", ")
			}
			return nil, wrap(&ConfigError{Key: key,
				Err: fmt.Errorf("not an option of %s (its options: %s)", cfg.Kind, allowed)})
		}
	}
	bs, err := newBase(cfg.Kind, cfg.Name, cfg.Threshold)
	if err != nil {
		return nil, wrap(err)
	}
	s, err := b.build(cfg, bs, deps)
	if err != nil {
		return nil, wrap(err)
	}
	return s, nil
}

// configField returns the index of the Config field of a YAML key.
func configField(key string) []int {
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		if yamlKey(t.Field(i)) == key {
			return []int{i}
		}
	}
	panic("scorer: no Config field for key " + key)
}

// yamlCause strips the "yaml: unmarshal errors: line N:" wrapping of a
// decoding error (the ConfigError carries the line).
func yamlCause(err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg := te.Errors[0]
		if strings.HasPrefix(msg, "line ") {
			if _, rest, ok := strings.Cut(msg, ": "); ok {
				msg = rest
			}
		}
		return errors.New(msg)
	}
	return err
}

// commonKeys are the keys of every kind.
var commonKeys = []string{"kind", "name", "threshold"}

// configKeys returns every YAML key of Config.
func configKeys() []string {
	t := reflect.TypeFor[Config]()
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if tag := yamlKey(t.Field(i)); tag != "" {
			keys = append(keys, tag)
		}
	}
	return keys
}

func yamlKey(f reflect.StructField) string {
	tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if tag == "-" || !f.IsExported() {
		return ""
	}
	return tag
}

// setKeys returns the YAML keys of cfg's kind-specific fields that are set
// (non-zero).
func (c Config) setKeys() []string {
	v := reflect.ValueOf(c)
	t := v.Type()
	var keys []string
	for i := range t.NumField() {
		key := yamlKey(t.Field(i))
		if key == "" || slices.Contains(commonKeys, key) {
			continue
		}
		if !v.Field(i).IsZero() {
			keys = append(keys, key)
		}
	}
	return keys
}

// base is the name, kind and threshold every scorer has.
type base struct {
	name      string
	kind      string
	threshold float64
}

func newBase(kind, name string, threshold *float64) (base, error) {
	b := base{name: cmpOr(name, kind), kind: kind, threshold: evalrun.DefaultThreshold}
	if threshold != nil {
		t := *threshold
		if math.IsNaN(t) || t < 0 || t > 1 {
			return b, &ConfigError{Scorer: b.name, Kind: kind, Key: "threshold",
				Err: fmt.Errorf("%v is outside [0,1]", t)}
		}
		b.threshold = t
	}
	return b, nil
}

// Name returns the scorer's name (default: its kind).
func (b base) Name() string { return b.name }

// Threshold returns the scorer's pass threshold.
func (b base) Threshold() float64 { return b.threshold }

// Kind returns the scorer's kind.
func (b base) Kind() string { return b.kind }

func (b base) configError(key string, err error) error {
	return &ConfigError{Scorer: b.name, Kind: b.kind, Key: key, Err: err}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// modelConfig and retryPolicy read the model part of a config.
// modelConfig returns the model selection of c, or a *ConfigError for a
// price that is not a finite non-negative number.
func (c Config) modelConfig() (ModelConfig, error) {
	if c.Price != nil {
		if key, err := c.Price.Check(); err != nil {
			return ModelConfig{}, &ConfigError{Key: "price", Err: fmt.Errorf("%s %w", key, err)}
		}
	}
	return ModelConfig{Kind: c.Kind, Model: c.Model, BaseURL: c.BaseURL, APIKeyEnv: c.APIKeyEnv, RateLimit: c.RateLimit,
		Price: c.Price}, nil
}

// priceKeys are the keys of a price mapping.
var priceKeys = []string{"input_per_mtok", "output_per_mtok"}

// checkPriceKeys refuses a price that is not a mapping of [priceKeys], so
// that a misspelt key is not a price of 0.
func checkPriceKeys(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("must be a mapping {%s}", strings.Join(priceKeys, ", "))
	}
	for i := 0; i < len(n.Content); i += 2 {
		if !slices.Contains(priceKeys, n.Content[i].Value) {
			return fmt.Errorf("unknown key %q; known keys: %s", n.Content[i].Value, strings.Join(priceKeys, ", "))
		}
	}
	return nil
}

func (c Config) retryPolicy(d Deps) (retry.Policy, error) {
	p := d.Retry
	if c.MaxRetries != nil {
		if *c.MaxRetries < 0 {
			return p, &ConfigError{Key: "max_retries", Err: fmt.Errorf("%d is negative", *c.MaxRetries)}
		}
		p.MaxRetries = *c.MaxRetries
	}
	if c.RetryDelay != nil {
		if *c.RetryDelay < 0 {
			return p, &ConfigError{Key: "retry_delay", Err: fmt.Errorf("%v is negative", *c.RetryDelay)}
		}
		p.Delay = *c.RetryDelay
	}
	return p, nil
}

// resolvePath resolves a relative path against dir.
func resolvePath(dir, path string) string {
	if dir == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}
