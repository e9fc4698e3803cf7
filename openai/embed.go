package openai

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/tracing"
)

// Embedder is an [evalrun.Embedder] over an OpenAI-compatible embeddings
// API. It is safe for concurrent use.
type Embedder struct {
	cl    *client
	url   string // of embeddings
	model string
	price *Price
}

var (
	_ evalrun.Embedder = (*Embedder)(nil)
	_ evalrun.Closer   = (*Embedder)(nil)
)

// NewEmbedder returns an embedder, or a *[target.ConfigError].
func NewEmbedder(cfg ModelConfig) (*Embedder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cl, err := newClient(cfg.ClientConfig)
	if err != nil {
		return nil, err
	}
	return &Embedder{cl: cl, url: cl.endpoint("embeddings"), model: cfg.Model, price: cfg.Price}, nil
}

// Embed returns one vector per text, in the order of texts, in one call. A
// reply with the wrong number of vectors, a bad index or an empty vector is
// a permanent error (a malformed 200).
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float64, evalrun.Usage, error) {
	if len(texts) == 0 {
		return nil, evalrun.Usage{}, nil
	}
	body, err := json.Marshal(embedRequest{Model: e.model, Input: texts, EncodingFormat: "float"})
	if err != nil {
		return nil, evalrun.Usage{}, evalrun.Permanent(fmt.Errorf("openai: encode request: %w", err))
	}
	ctx, call := tracing.StartModelCall(ctx, "embeddings", e.model)
	ex, err := e.cl.post(ctx, e.url, body)
	if err != nil {
		tracing.EndModelCall(call, evalrun.Usage{}, err)
		return nil, evalrun.Usage{}, err
	}
	var resp embedResponse
	if err := decode(&ex, &resp); err != nil {
		tracing.EndModelCall(call, evalrun.Usage{}, err)
		return nil, evalrun.Usage{}, err
	}
	var u evalrun.Usage
	if resp.Usage != nil {
		u = usage(evalrun.Int64(resp.Usage.PromptTokens), nil, e.price)
	}
	tracing.EndModelCall(call, u, nil)
	if len(resp.Data) != len(texts) {
		return nil, u, malformed(ex.status, fmt.Errorf("%d embeddings for %d texts", len(resp.Data), len(texts)), u)
	}
	out := make([][]float64, len(texts))
	for i, d := range resp.Data {
		if d.Index < 0 || int(d.Index) >= len(texts) || out[d.Index] != nil {
			return nil, u, malformed(ex.status, fmt.Errorf("embedding %d: bad or repeated index %d", i, d.Index), u)
		}
		if len(d.Embedding) == 0 {
			return nil, u, malformed(ex.status, fmt.Errorf("embedding %d is empty", d.Index), u)
		}
		out[d.Index] = d.Embedding
	}
	return out, u, nil
}

// embedRequest is the body of an embeddings call.
type embedRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
}

// embedResponse is what the embedder reads of an embeddings reply.
type embedResponse struct {
	Data []struct {
		Index     int64     `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
	Usage *struct {
		PromptTokens int64 `json:"prompt_tokens"`
	} `json:"usage"`
}

// Close releases idle connections.
func (e *Embedder) Close() error { return e.cl.close() }
