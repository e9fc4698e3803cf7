package suite

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/internal/redact"
	"github.com/evalrun/evalrun/report"
	"github.com/evalrun/evalrun/target"
)

// RunConfigFormat is the version of the document [Suite.RunConfig] writes.
const RunConfigFormat = 1

// Redacted replaces a literal secret (one not given as a ${VAR} reference)
// in a stored run config.
const Redacted = redact.Mask

// runConfig is the effective configuration stored with a run.
type runConfig struct {
	Format int    `json:"evalrun_suite"`
	File   string `json:"file"`
	Dir    string `json:"dir"`
	// Suite is the suite file's content with ${VAR} references unexpanded
	// and CLI overrides applied.
	Suite     json.RawMessage `json:"suite"`
	Selection Selection       `json:"selection"`
	// Variant names the variant of the suite the run is of (see
	// [Suite.ForVariant]); empty for a suite without variants. Configs
	// written before variants existed have none and read as before.
	Variant string `json:"variant,omitempty"`
}

// Overrides are command-line values that replace the suite's. A nil field
// keeps the suite's value.
type Overrides struct {
	Concurrency   *int
	ItemTimeout   *time.Duration
	MaxRetries    *int
	RetryDelay    *time.Duration
	Repeat        *int
	Strict        *bool
	RetainResults *bool
	// AttemptTimeout replaces execution.attempt_timeout (0: none).
	AttemptTimeout *time.Duration
	// Cache replaces execution.cache (--cache, --no-cache).
	Cache *bool
	// CacheTTL replaces execution.cache_ttl (0: cached responses never
	// expire).
	CacheTTL *time.Duration
	// Adaptive replaces execution.adaptive (--no-adaptive).
	Adaptive *bool
	// Rate replaces target.rate_limit ("N/s" or "N/m"), and every
	// variant's rate_limit.
	Rate *string
}

// Apply validates o and applies it to the suite's execution options and to
// the config stored with a run. An invalid value is an error wrapping
// [evalrun.ErrInvalid] that names the flag.
func (s *Suite) Apply(o Overrides) error {
	bad := func(flag string, v any, why string) error {
		return fmt.Errorf("%w: --%s %v: %s", evalrun.ErrInvalid, flag, v, why)
	}
	// within checks v, the value of the option key given by flag, against
	// the engine's bound for it.
	within := func(flag, key string, v int64, show any) error {
		if err := engine.CheckBound(key, v); err != nil {
			return bad(flag, show, err.Error())
		}
		return nil
	}
	e := &s.Execution
	if o.Concurrency != nil {
		if *o.Concurrency < 1 {
			return bad("concurrency", *o.Concurrency, "must be at least 1")
		}
		if err := within("concurrency", "concurrency", int64(*o.Concurrency), *o.Concurrency); err != nil {
			return err
		}
		e.Concurrency = *o.Concurrency
		s.setRaw("execution", "concurrency", strconv.Itoa(e.Concurrency), "!!int")
	}
	if o.Repeat != nil {
		if *o.Repeat < 1 {
			return bad("repeat", *o.Repeat, "must be at least 1")
		}
		if err := within("repeat", "repeat", int64(*o.Repeat), *o.Repeat); err != nil {
			return err
		}
		e.Repeat = *o.Repeat
		s.setRaw("execution", "repeat", strconv.Itoa(e.Repeat), "!!int")
	}
	if o.MaxRetries != nil {
		if *o.MaxRetries < 0 {
			return bad("max-retries", *o.MaxRetries, "must not be negative")
		}
		if err := within("max-retries", "max_retries", int64(*o.MaxRetries), *o.MaxRetries); err != nil {
			return err
		}
		e.MaxRetries = *o.MaxRetries
		s.setRaw("execution", "max_retries", strconv.Itoa(e.MaxRetries), "!!int")
	}
	if o.ItemTimeout != nil {
		if *o.ItemTimeout < 0 {
			return bad("item-timeout", *o.ItemTimeout, "must not be negative (0 means none)")
		}
		if err := within("item-timeout", "item_timeout", int64(*o.ItemTimeout), *o.ItemTimeout); err != nil {
			return err
		}
		e.ItemTimeout = *o.ItemTimeout
		s.setRaw("execution", "item_timeout", e.ItemTimeout.String(), "!!str")
	}
	if o.RetryDelay != nil {
		if *o.RetryDelay < 0 {
			return bad("retry-delay", *o.RetryDelay, "must not be negative")
		}
		if err := within("retry-delay", "retry_delay", int64(*o.RetryDelay), *o.RetryDelay); err != nil {
			return err
		}
		e.RetryDelay = *o.RetryDelay
		s.setRaw("execution", "retry_delay", e.RetryDelay.String(), "!!str")
	}
	if o.AttemptTimeout != nil {
		if *o.AttemptTimeout < 0 {
			return bad("attempt-timeout", *o.AttemptTimeout, "must not be negative (0 means none)")
		}
		if err := within("attempt-timeout", "attempt_timeout", int64(*o.AttemptTimeout), *o.AttemptTimeout); err != nil {
			return err
		}
		e.AttemptTimeout = *o.AttemptTimeout
		s.setRaw("execution", "attempt_timeout", e.AttemptTimeout.String(), "!!str")
	}
	if o.CacheTTL != nil {
		if *o.CacheTTL < 0 {
			return bad("cache-ttl", *o.CacheTTL, "must not be negative (0 means cached responses never expire)")
		}
		if err := within("cache-ttl", "cache_ttl", int64(*o.CacheTTL), *o.CacheTTL); err != nil {
			return err
		}
		e.CacheTTL = *o.CacheTTL
		s.setRaw("execution", "cache_ttl", e.CacheTTL.String(), "!!str")
	}
	if o.Cache != nil {
		e.Cache = *o.Cache
		s.setRaw("execution", "cache", strconv.FormatBool(e.Cache), "!!bool")
	}
	if o.Adaptive != nil {
		e.Adaptive = *o.Adaptive
		s.setRaw("execution", "adaptive", strconv.FormatBool(e.Adaptive), "!!bool")
	}
	if o.Strict != nil {
		e.Strict = *o.Strict
		s.setRaw("execution", "strict", strconv.FormatBool(e.Strict), "!!bool")
	}
	if o.RetainResults != nil {
		e.RetainResults = *o.RetainResults
		s.setRaw("execution", "retain_results", strconv.FormatBool(e.RetainResults), "!!bool")
	}
	if o.Rate != nil {
		r, err := target.ParseRate(*o.Rate)
		if err == nil && r.IsZero() {
			err = fmt.Errorf("rate %q: want N/s or N/m", *o.Rate)
		}
		if err != nil {
			return fmt.Errorf("%w: --rate: %v (e.g. 20/s or 600/m)", evalrun.ErrInvalid, err)
		}
		s.RateLimit = &r
		s.setRaw("target", "rate_limit", r.String(), "!!str")
		s.setVariantRates(r)
	}
	return nil
}

// setRaw sets section.key to a scalar in the stored (unexpanded) document,
// adding the section or key when missing. The document is not changed in
// place: the nodes on the way are copied (a variant's view shares the
// document with its suite, and overrides applied to one are not the
// other's).
func (s *Suite) setRaw(section, key, value, tag string) {
	if s.raw == nil || s.raw.Kind != yaml.MappingNode {
		return
	}
	root := copyMapping(s.raw)
	val := &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value}
	i := keyAt(root, section)
	var sec *yaml.Node
	switch {
	case i < 0:
		sec = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: section}, sec)
	case deref(root.Content[i+1]).Kind == yaml.MappingNode:
		sec = copyMapping(deref(root.Content[i+1]))
		root.Content[i+1] = sec
	default: // an empty section (execution: with nothing)
		sec = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		root.Content[i+1] = sec
	}
	if j := keyAt(sec, key); j >= 0 {
		sec.Content[j+1] = val
	} else {
		sec.Content = append(sec.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, val)
	}
	s.raw = root
}

// copyMapping returns a copy of mapping n whose Content can be changed
// without changing n's.
func copyMapping(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = slices.Clone(n.Content)
	return &c
}

// keyAt returns the index of key's key node in mapping n, or -1.
func keyAt(n *yaml.Node, key string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return i
		}
	}
	return -1
}

// setVariantRates sets every variant's rate limit to r, and the
// rate_limit of every variant that overrides it in the stored document
// (copying the nodes on the way, as setRaw does), so a run rebuilt from
// its config (FromRunConfig) has the same rate.
func (s *Suite) setVariantRates(r target.Rate) {
	for _, v := range s.variants {
		rr := r
		v.RateLimit = &rr
	}
	if s.raw == nil || s.raw.Kind != yaml.MappingNode {
		return
	}
	li := keyAt(s.raw, "variants")
	if li < 0 || deref(s.raw.Content[li+1]).Kind != yaml.SequenceNode {
		return
	}
	list := deref(s.raw.Content[li+1])
	var newList *yaml.Node
	for i, e := range list.Content {
		e = deref(e)
		if e.Kind != yaml.MappingNode {
			continue
		}
		ti := keyAt(e, "target")
		if ti < 0 || deref(e.Content[ti+1]).Kind != yaml.MappingNode {
			continue
		}
		over := deref(e.Content[ti+1])
		ri := keyAt(over, "rate_limit")
		if ri < 0 {
			continue
		}
		over = copyMapping(over)
		over.Content[ri+1] = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: r.String()}
		e = copyMapping(e)
		e.Content[ti+1] = over
		if newList == nil {
			c := *list
			c.Content = slices.Clone(list.Content)
			newList = &c
		}
		newList.Content[i] = e
	}
	if newList != nil {
		root := copyMapping(s.raw)
		root.Content[li+1] = newList
		s.raw = root
	}
}

func findValue(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// RunConfig returns the effective configuration to store with a run: the
// suite file's content with its ${VAR} references unexpanded (so no value
// from the environment is stored), overrides applied, literal secrets in
// headers, env and URLs replaced by [Redacted], and the Selection.
// [FromRunConfig] rebuilds the suite from it. A variant's view (see
// [Suite.ForVariant]) stores the whole suite and the variant's name.
func (s *Suite) RunConfig() (json.RawMessage, error) {
	var tree any
	if err := s.raw.Decode(&tree); err != nil {
		return nil, fmt.Errorf("suite %s: store config: %w", s.File, err)
	}
	body, err := json.Marshal(redactTree(jsonable(tree), ""))
	if err != nil {
		return nil, fmt.Errorf("suite %s: store config: %w", s.File, err)
	}
	return json.Marshal(runConfig{Format: RunConfigFormat, File: s.File, Dir: s.Dir, Suite: body, Selection: s.Selection,
		Variant: s.variant})
}

// FromRunConfig rebuilds the suite of a stored run config (see
// [Suite.RunConfig]) with opts.Env giving the ${VAR} values, so a resumed run
// or a distributed worker uses its own environment's secrets. Relative
// paths resolve against the directory the suite was first loaded from.
// The config of a variant's view gives that view, which then owns the
// suite's closers (close it when done).
func FromRunConfig(raw json.RawMessage, opts Options) (*Suite, error) {
	var rc runConfig
	if err := json.Unmarshal(raw, &rc); err != nil || rc.Format != RunConfigFormat || len(rc.Suite) == 0 {
		return nil, fmt.Errorf("%w: the run's stored config is not a suite this evalrun reads (format %d)", evalrun.ErrInvalid, rc.Format)
	}
	file := rc.File + " (as stored with the run)"
	var doc yaml.Node
	if err := yaml.Unmarshal(rc.Suite, &doc); err != nil || len(doc.Content) == 0 {
		return nil, fmt.Errorf("%w: %s: unreadable: %v", evalrun.ErrInvalid, file, err)
	}
	ps := &problems{}
	findRedacted(doc.Content[0], "", ps)
	if err := ps.err(file); err != nil {
		return nil, err
	}
	s, err := parseRoot(doc.Content[0], rc.File, rc.Dir, opts)
	if err != nil {
		if se, ok := err.(*Error); ok {
			se.File = file
		}
		return nil, err
	}
	s.Selection = rc.Selection
	if rc.Variant == "" {
		return s, nil
	}
	v, err := s.ForVariant(rc.Variant)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	v.closers, s.closers = s.closers, nil
	return v, nil
}

// CheckStorable reports, at its place in the suite file, every literal
// secret that [Suite.RunConfig] does not store (see redactTree): a process
// that rebuilds the run from its stored config alone, as a distributed
// worker does, could not run it.
func (s *Suite) CheckStorable() error {
	if s.raw == nil {
		return nil
	}
	ps := &problems{}
	findLiteralSecrets(s.raw, "", "", ps)
	return ps.err(s.File)
}

// findLiteralSecrets walks n as redactTree walks its decoded form (a list
// takes its key's name) and reports each string value it would redact.
func findLiteralSecrets(n *yaml.Node, key, path string, ps *problems) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() == "!!str" && redactTree(n.Value, key) != n.Value {
			ps.at(n, path, "put the secret in an environment variable, write ${VAR} here and export it on every worker",
				"a literal secret is not stored with the run, so workers cannot run it")
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			findLiteralSecrets(n.Content[i+1], n.Content[i].Value, joinPath(path, n.Content[i].Value), ps)
		}
	case yaml.SequenceNode:
		for i, e := range n.Content {
			findLiteralSecrets(e, key, fmt.Sprintf("%s[%d]", path, i), ps)
		}
	case yaml.AliasNode: // decoded in place of the alias (cycles were refused by Parse)
		findLiteralSecrets(n.Alias, key, path, ps)
	}
}

// findRedacted reports every value the stored config lost as a secret.
func findRedacted(n *yaml.Node, path string, ps *problems) {
	switch n.Kind {
	case yaml.ScalarNode:
		if strings.Contains(n.Value, Redacted) {
			ps.at(n, path, "put the secret in an environment variable and write ${VAR} in the suite file",
				"a literal secret here was not stored with the run")
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			findRedacted(n.Content[i+1], joinPath(path, n.Content[i].Value), ps)
		}
	case yaml.SequenceNode:
		for i, e := range n.Content {
			findRedacted(e, fmt.Sprintf("%s[%d]", path, i), ps)
		}
	}
}

// jsonable converts what yaml decodes into any (map[string]any, and
// map[any]any for odd keys) into values encoding/json marshals.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonable(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = jsonable(e)
		}
		return x
	case time.Time:
		return x.Format(time.RFC3339Nano)
	}
	return v
}

// redactTree replaces literal secrets in a decoded suite: values of
// secret-named keys (and of every header and env entry named so) that are
// not a ${VAR} reference, and the passwords and secret-named query
// parameters of URLs (see [redact.URL]).
func redactTree(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = redactTree(e, k)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = redactTree(e, key)
		}
		return x
	case string:
		if redact.SensitiveName(key) && !strings.HasSuffix(key, "_env") && x != "" && !isReference(x) {
			return Redacted
		}
		return redact.URL(x)
	}
	return v
}

// isReference reports whether s takes its secret part from the
// environment: every non-space run of it outside a ${...} is a scheme
// word such as "Bearer".
func isReference(s string) bool {
	if !strings.Contains(s, "${") {
		return false
	}
	rest := refPattern.ReplaceAllString(s, "")
	for _, w := range strings.Fields(rest) {
		if !schemeWord.MatchString(w) {
			return false
		}
	}
	return true
}

var (
	refPattern = regexp.MustCompile(`\$\{[^}]*\}`)
	schemeWord = regexp.MustCompile(`^(?i)(bearer|basic|token|apikey|key)[:=]?$`)
)

// CacheKey identifies the target's effective configuration for the
// response cache: a hash of the target section as stored (references
// unexpanded, literal secrets redacted, overrides applied), so changing a
// parameter misses the cache while a new secret value does not. A
// variant's view hashes the variant's merged target: variants that differ
// never share entries, and a variant without overrides shares the plain
// suite's.
func (s *Suite) CacheKey() string {
	var tree any
	if t := s.rawTarget(); t != nil {
		_ = t.Decode(&tree)
	}
	b, _ := json.Marshal(redactTree(jsonable(tree), ""))
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// SelectionOf returns the item selection stored in a run config (see
// [Suite.RunConfig]) without building the suite.
func SelectionOf(raw json.RawMessage) (Selection, error) {
	var rc runConfig
	if err := json.Unmarshal(raw, &rc); err != nil || rc.Format != RunConfigFormat {
		return Selection{}, fmt.Errorf("%w: the run's stored config is not a suite this evalrun reads", evalrun.ErrInvalid)
	}
	return rc.Selection, nil
}

// VariantOf returns the variant name stored in a run config (see
// [Suite.RunConfig]) without building the suite; "" for a run of a suite
// without variants.
func VariantOf(raw json.RawMessage) (string, error) {
	var rc runConfig
	if err := json.Unmarshal(raw, &rc); err != nil || rc.Format != RunConfigFormat {
		return "", fmt.Errorf("%w: the run's stored config is not a suite this evalrun reads", evalrun.ErrInvalid)
	}
	return rc.Variant, nil
}

// FailOnOf returns the fail_on conditions of the suite stored in a run
// config (see [Suite.RunConfig]) without building the suite: those of the
// suite file (a --fail-on given on the command line is not stored). A
// config that is not a suite, or a condition that does not parse, is an
// error wrapping [evalrun.ErrInvalid].
func FailOnOf(raw json.RawMessage) ([]report.Condition, error) {
	var rc runConfig
	if err := json.Unmarshal(raw, &rc); err != nil || rc.Format != RunConfigFormat || len(rc.Suite) == 0 {
		return nil, fmt.Errorf("%w: the run's stored config is not a suite this evalrun reads", evalrun.ErrInvalid)
	}
	var s struct {
		FailOn json.RawMessage `json:"fail_on"`
	}
	if err := json.Unmarshal(rc.Suite, &s); err != nil {
		return nil, fmt.Errorf("%w: the run's stored suite: %v", evalrun.ErrInvalid, err)
	}
	if len(s.FailOn) == 0 || string(s.FailOn) == "null" {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal(s.FailOn, &list); err != nil {
		var one string
		if json.Unmarshal(s.FailOn, &one) != nil {
			return nil, fmt.Errorf("%w: the run's stored fail_on is neither a condition nor a list of them", evalrun.ErrInvalid)
		}
		list = []string{one}
	}
	return report.ParseConditions(list)
}
