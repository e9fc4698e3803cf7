package suite

import (
	"context"
	"encoding/json"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/cache"
	"github.com/evalrun/evalrun/openai"
	"github.com/evalrun/evalrun/retry"
	"github.com/evalrun/evalrun/scorer"
	"github.com/evalrun/evalrun/target"
)

// deps returns the scorer dependencies: Options.Deps, with the suite's
// directory as BaseDir, the execution's retry policy as the default for
// model calls, and OpenAI-compatible models (package openai, API keys from
// the suite's environment) where Options.Deps sets no factory. With
// Options.Cache set, judge models are wrapped with the response cache.
func (p *parser) deps() scorer.Deps {
	d := p.opts.Deps
	d.BaseDir = p.suite.Dir
	if d.Retry.MaxRetries == 0 && d.Retry.Delay == 0 {
		e := p.suite.Execution
		d.Retry = retry.Policy{MaxRetries: e.MaxRetries, Delay: e.RetryDelay}
	}
	if d.ChatModel == nil {
		d.ChatModel = p.chatModel
	}
	if d.Embedder == nil {
		d.Embedder = p.embedder
	}
	if c := p.opts.Cache; c != nil {
		factory := d.ChatModel
		d.ChatModel = func(mc scorer.ModelConfig) (evalrun.ChatModel, error) {
			m, err := factory(mc)
			if err != nil {
				return nil, err
			}
			return &cachedJudge{model: m, cache: c, config: judgeConfig(mc), suite: p.suite}, nil
		}
	}
	return d
}

// judgeConfig identifies a judge model's effective configuration for the
// response cache: its model and base URL, never its API key (nor the
// variable naming it), so rotating a key keeps the cache.
func judgeConfig(mc scorer.ModelConfig) string {
	base := mc.BaseURL
	if base == "" {
		base = openai.DefaultBaseURL
	}
	b, _ := json.Marshal(struct {
		Model   string `json:"model"`
		BaseURL string `json:"base_url"`
	}{mc.Model, base})
	return string(b)
}

// cachedJudge is a judge model behind the response cache while the
// suite's Execution.Cache is on. It reads Execution at every call, so the
// order of keys in the file and CLI overrides applied after parsing both
// count (and so does execution.cache_ttl).
type cachedJudge struct {
	model  evalrun.ChatModel
	cache  evalrun.ResponseCache
	config string
	suite  *Suite
}

// Chat answers from the cache when it is on and holds the request's
// reply, else calls the model (storing a successful reply when on).
func (j *cachedJudge) Chat(ctx context.Context, req evalrun.ChatRequest) (evalrun.ChatResponse, error) {
	e := j.suite.Execution
	if !e.Cache {
		return j.model.Chat(ctx, req)
	}
	return cache.ChatModel(j.model, j.cache, j.config, e.CacheTTL, nil).Chat(ctx, req)
}

// modelConfig turns a scorer's model selection into the openai config.
func (p *parser) modelConfig(mc scorer.ModelConfig) (openai.ModelConfig, *target.Limiter, error) {
	lookup := p.opts.Env
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	cfg := openai.ModelConfig{Model: mc.Model, Price: mc.Price, ClientConfig: openai.ClientConfig{
		BaseURL: mc.BaseURL, APIKeyEnv: mc.APIKeyEnv, LookupEnv: lookup}}
	if mc.RateLimit == "" {
		return cfg, nil, nil
	}
	r, err := target.ParseRate(mc.RateLimit)
	if err != nil {
		return cfg, nil, err
	}
	lim, err := target.NewLimiter(target.Limits{Requests: r})
	return cfg, lim, err
}

func (p *parser) chatModel(mc scorer.ModelConfig) (evalrun.ChatModel, error) {
	cfg, lim, err := p.modelConfig(mc)
	if err != nil {
		return nil, err
	}
	m, err := openai.NewChatModel(cfg)
	if err != nil {
		return nil, err
	}
	p.suite.closers = append(p.suite.closers, m)
	if lim != nil {
		return target.RateLimitedChat(m, lim), nil
	}
	return m, nil
}

func (p *parser) embedder(mc scorer.ModelConfig) (evalrun.Embedder, error) {
	cfg, lim, err := p.modelConfig(mc)
	if err != nil {
		return nil, err
	}
	e, err := openai.NewEmbedder(cfg)
	if err != nil {
		return nil, err
	}
	p.suite.closers = append(p.suite.closers, e)
	if lim != nil {
		return target.RateLimitedEmbedder(e, lim), nil
	}
	return e, nil
}
