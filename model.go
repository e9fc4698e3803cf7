package evalrun

import "context"

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
