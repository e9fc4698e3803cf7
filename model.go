package evalrun

import (
	"context"
	"fmt"
	"math"
)

// ChatModel is a chat-completion model, as the LLM judge uses it. The
// openai package implements it over any OpenAI-compatible API; tests use
// fakes. Errors are *Error values classified transient or permanent, so the
// caller's retry policy decides. Safe for concurrent use.
type ChatModel interface {
	Chat(ctx context.Context, req ChatRequest) (ChatResponse, error)
}

// ChatMessage is one message of a chat request.
type ChatMessage struct {
	Role    string `json:"role"` // system, user or assistant
	Content string `json:"content"`
}

// ChatRequest is one chat-completion call.
type ChatRequest struct {
	Messages []ChatMessage
	// Temperature and Seed are sent when set.
	Temperature *float64
	Seed        *int64
	// MaxTokens is sent when > 0.
	MaxTokens int
	// JSONResponse asks for the JSON object response format.
	JSONResponse bool
}

// ChatResponse is a chat-completion reply.
type ChatResponse struct {
	Content string
	Usage   Usage
}

// Embedder turns texts into embedding vectors (one per text, same order),
// as the embedding_similarity scorer uses it. Errors are classified like
// [ChatModel]'s. Safe for concurrent use.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float64, Usage, error)
}

// Price is what a model costs, in US dollars per million tokens: the
// `price` of an openai target, an llm_judge or an embedding_similarity
// scorer in a suite file. The zero value prices everything at 0.
type Price struct {
	InputPerMTok  float64 `yaml:"input_per_mtok" json:"input_per_mtok"`
	OutputPerMTok float64 `yaml:"output_per_mtok" json:"output_per_mtok"`
}

// Cost returns the cost of the given token counts.
func (p Price) Cost(in, out int64) float64 {
	return float64(in)*p.InputPerMTok/1e6 + float64(out)*p.OutputPerMTok/1e6
}

// Check returns the key ("input_per_mtok" or "output_per_mtok") and the
// reason of the first price that is not a finite non-negative number: an
// infinite price would make every cost infinite, which no report can hold.
func (p Price) Check() (key string, err error) {
	for _, f := range []struct {
		key string
		v   float64
	}{{"input_per_mtok", p.InputPerMTok}, {"output_per_mtok", p.OutputPerMTok}} {
		if !(f.v >= 0 && f.v <= math.MaxFloat64) {
			return f.key, fmt.Errorf("must be a finite non-negative number, got %v", f.v)
		}
	}
	return "", nil
}
