package openai

import (
	"context"
	"errors"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/target"
)

func newEmbedder(t *testing.T, url string) *Embedder {
	t.Helper()
	e, err := NewEmbedder(ModelConfig{ClientConfig: ClientConfig{BaseURL: url, LookupEnv: env()}, Model: "emb", Price: &Price{InputPerMTok: 2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func TestEmbedderOrdersByIndex(t *testing.T) {
	api := newFakeAPI(t, reply(200, `{"object":"list","model":"emb","data":[
		{"object":"embedding","index":1,"embedding":[0,1]},
		{"object":"embedding","index":0,"embedding":[1,0.5]}],
		"usage":{"prompt_tokens":4,"total_tokens":4}}`))
	e := newEmbedder(t, api.URL)
	vecs, u, err := e.Embed(context.Background(), []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != 2 || vecs[0][0] != 1 || vecs[0][1] != 0.5 || vecs[1][1] != 1 {
		t.Errorf("vectors = %v, want ordered by index", vecs)
	}
	if u.InputTokens == nil || *u.InputTokens != 4 || u.OutputTokens != nil || u.CostUSD == nil || *u.CostUSD != 8.0/1e6 {
		t.Errorf("usage = %+v", u)
	}
	body := api.Body(0)
	if body["model"] != "emb" || body["encoding_format"] != "float" {
		t.Errorf("body = %v", body)
	}
	if in, _ := body["input"].([]any); len(in) != 2 || in[0] != "a" {
		t.Errorf("input = %v", body["input"])
	}
}

func TestEmbedderMalformed(t *testing.T) {
	for name, body := range map[string]string{
		"count":        `{"data":[{"index":0,"embedding":[1]}],"usage":{"prompt_tokens":1,"total_tokens":1}}`,
		"repeat index": `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[2]}]}`,
		"empty vector": `{"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[2]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			api := newFakeAPI(t, reply(200, body))
			_, _, err := newEmbedder(t, api.URL).Embed(context.Background(), []string{"a", "b"})
			wantKind(t, err, evalrun.ErrorPermanent)
			if !errors.Is(err, target.ErrMalformedResponse) {
				t.Errorf("error %v does not wrap ErrMalformedResponse", err)
			}
		})
	}
}

func TestEmbedder429(t *testing.T) {
	api := newFakeAPI(t, reply(429, `{"error":{"message":"slow"}}`, "Retry-After", "1"))
	_, _, err := newEmbedder(t, api.URL).Embed(context.Background(), []string{"a"})
	if e := wantKind(t, err, evalrun.ErrorTransient); e.StatusCode != 429 || e.RetryAfter == 0 {
		t.Errorf("status %d RetryAfter %v", e.StatusCode, e.RetryAfter)
	}
}
