package suite

import (
	"context"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/redact"
)

// Scrubber returns the suite's secret scrubber: it knows every value the
// suite read from the environment (${VAR} references, API keys named by
// api_key_env) and every literal secret written in it (values of
// secret-named keys, headers and env entries, URL passwords, secret-named
// URL query parameters). The suite's target and scorers already scrub
// their errors with it; callers scrub whatever else they print or store.
func (s *Suite) Scrubber() *redact.Scrubber { return s.scrub }

// recordingEnv returns env with every value it gives recorded in sc as a
// secret.
func recordingEnv(env Env, sc *redact.Scrubber) Env {
	if env == nil {
		return nil
	}
	return func(name string) (string, bool) {
		v, ok := env(name)
		if ok {
			sc.Add(v)
		}
		return v, ok
	}
}

// addLiteralSecrets records in sc the secrets written in the expanded
// document n: the value of every key with a secret-like name (but not of
// a *_env key, which names a variable), the credential part of such a
// value ("Bearer TOKEN" gives TOKEN too), and the passwords and
// secret-named query parameters of URLs.
func addLiteralSecrets(n *yaml.Node, key string, sc *redact.Scrubber) {
	if n == nil {
		return
	}
	switch n.Kind {
	case yaml.ScalarNode:
		sc.Add(redact.URLSecrets(n.Value)...)
		if key == "" || !redact.SensitiveName(key) || strings.HasSuffix(key, "_env") {
			return
		}
		sc.AddCredential(n.Value)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			addLiteralSecrets(n.Content[i+1], n.Content[i].Value, sc)
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, e := range n.Content {
			// A "NAME=value" entry names its value like a key.
			if k, v, ok := strings.Cut(e.Value, "="); ok && e.Kind == yaml.ScalarNode && redact.SensitiveName(k) {
				sc.Add(v)
			}
			addLiteralSecrets(e, key, sc)
		}
	case yaml.AliasNode:
		addLiteralSecrets(n.Alias, key, sc)
	}
}

// scrubProblems replaces the secrets in every problem of a suite error.
func scrubProblems(err error, sc *redact.Scrubber) error {
	if se, ok := err.(*Error); ok {
		for i := range se.Problems {
			se.Problems[i].Msg = sc.String(se.Problems[i].Msg)
			se.Problems[i].Hint = sc.String(se.Problems[i].Hint)
		}
	}
	return err
}

// scrubbedTarget is a target whose errors are scrubbed, so what a run
// records (and every report, page and message made from it) holds no
// secret.
type scrubbedTarget struct {
	t  evalrun.Target
	sc *redact.Scrubber
}

// Unwrap returns the target whose errors t scrubs (for what the engine
// looks up on a target, such as tracing.CallTarget).
func (t scrubbedTarget) Unwrap() evalrun.Target { return t.t }

func (t scrubbedTarget) Execute(ctx context.Context, item *evalrun.Item) (evalrun.Output, error) {
	out, err := t.t.Execute(ctx, item)
	return out, t.sc.Error(err)
}

// scrubbedScorer is a scorer whose errors and reasons are scrubbed (a
// judge's or an embedder's failed call may echo its API key).
type scrubbedScorer struct {
	s    evalrun.Scorer
	kind string
	sc   *redact.Scrubber
}

func (s scrubbedScorer) Name() string       { return s.s.Name() }
func (s scrubbedScorer) Kind() string       { return s.kind }
func (s scrubbedScorer) Threshold() float64 { return evalrun.ThresholdOf(s.s) }

func (s scrubbedScorer) Score(ctx context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
	sc, err := s.s.Score(ctx, in)
	sc.Reason = s.sc.String(sc.Reason)
	return sc, s.sc.Error(err)
}

// scrubErrors puts the suite's target and scorers behind its scrubber,
// once parsing is done and every secret is known.
func (s *Suite) scrubErrors() {
	if s.scrub.Len() == 0 {
		return
	}
	if s.target != nil {
		s.target = scrubbedTarget{t: s.target, sc: s.scrub}
	}
	for _, v := range s.variants {
		if v.target != nil {
			v.target = scrubbedTarget{t: v.target, sc: s.scrub}
		}
	}
	for i, sc := range s.scorers {
		s.scorers[i] = scrubbedScorer{s: sc, kind: s.scorerKinds[i], sc: s.scrub}
	}
}
