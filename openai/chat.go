package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/target"
)

// DefaultPrompt is the prompt template of a chat target that sets none:
// the item's input as text.
const DefaultPrompt = "{{ .Input }}"

// ChatTargetConfig configures a [ChatTarget]. The yaml keys are the suite
// file's.
type ChatTargetConfig struct {
	ClientConfig `yaml:",inline"`
	// Model is the model name. Required.
	Model string `yaml:"model" json:"model"`
	// System is the system prompt, a [target.Template] over the item;
	// empty sends no system message.
	System string `yaml:"system" json:"system,omitempty"`
	// Prompt is the user message, a [target.Template] over the item
	// ({{ .Input }}, {{ .Expected }}, {{ .Metadata.key }}, {{ .ID }});
	// empty means [DefaultPrompt].
	Prompt string `yaml:"prompt" json:"prompt,omitempty"`
	// Temperature, in [0,2], is sent when set.
	Temperature *float64 `yaml:"temperature" json:"temperature,omitempty"`
	// MaxTokens is sent as max_tokens when > 0. (Models that want
	// max_completion_tokens take it through Params.)
	MaxTokens int `yaml:"max_tokens" json:"max_tokens,omitempty"`
	// Seed is sent when set.
	Seed *int64 `yaml:"seed" json:"seed,omitempty"`
	// Params are extra request body fields (top_p, stop,
	// max_completion_tokens, ...), set last so they win. A key is a JSON
	// path (sjson syntax): "a.b" sets field b of object a. model, messages
	// and stream cannot be set this way.
	Params map[string]any `yaml:"params" json:"params,omitempty"`
	// Price, when set, turns reported token usage into a cost.
	Price *Price `yaml:"price" json:"price,omitempty"`
}

// Validate reports the first bad value as a *[target.ConfigError] naming
// its key. It does not read the API key.
func (c *ChatTargetConfig) Validate() error {
	_, _, err := c.check()
	return err
}

func (c *ChatTargetConfig) check() (system, prompt *target.Template, err error) {
	if err := c.ClientConfig.validate(); err != nil {
		return nil, nil, err
	}
	if c.Model == "" {
		return nil, nil, &target.ConfigError{Key: "model", Err: fmt.Errorf("required")}
	}
	if c.Temperature != nil && !(*c.Temperature >= 0 && *c.Temperature <= 2) {
		return nil, nil, &target.ConfigError{Key: "temperature", Err: fmt.Errorf("must be in [0,2], got %v", *c.Temperature)}
	}
	if c.MaxTokens < 0 {
		return nil, nil, &target.ConfigError{Key: "max_tokens", Err: fmt.Errorf("must not be negative, got %d", c.MaxTokens)}
	}
	for k, v := range c.Params {
		switch k {
		case "", "model", "messages", "stream":
			return nil, nil, &target.ConfigError{Key: "params", Err: fmt.Errorf("%q cannot be set through params", k)}
		}
		if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return nil, nil, &target.ConfigError{Key: "params." + k, Err: fmt.Errorf("%v is not a JSON number", f)}
		}
	}
	if err := validatePrice(c.Price); err != nil {
		return nil, nil, err
	}
	if c.System != "" {
		if system, err = target.ParseTemplate("system", c.System); err != nil {
			return nil, nil, err
		}
	}
	text := c.Prompt
	if text == "" {
		text = DefaultPrompt
	}
	if prompt, err = target.ParseTemplate("prompt", text); err != nil {
		return nil, nil, err
	}
	return system, prompt, nil
}

// ChatTarget evaluates a chat model: each item becomes one chat completion
// (an optional system message and a user message, both rendered from
// templates over the item), and the assistant's reply text is the output,
// as a JSON string. Token usage is recorded, with a cost when a price is
// configured. It is safe for concurrent use.
type ChatTarget struct {
	cl          *client
	post        oai.Client // the SDK's client, for its Post
	model       string
	system      *target.Template
	prompt      *target.Template
	temperature *float64
	maxTokens   int
	seed        *int64
	price       *Price
}

var (
	_ evalrun.Target    = (*ChatTarget)(nil)
	_ evalrun.Closer    = (*ChatTarget)(nil)
	_ evalrun.ChatModel = (*ChatModel)(nil)
	_ evalrun.Closer    = (*ChatModel)(nil)
)

// NewChatTarget returns a chat target, or a *[target.ConfigError] for bad
// config (a template that does not parse, a missing API key, ...).
func NewChatTarget(cfg ChatTargetConfig) (*ChatTarget, error) {
	system, prompt, err := cfg.check()
	if err != nil {
		return nil, err
	}
	cl, err := newClient(cfg.ClientConfig)
	if err != nil {
		return nil, err
	}
	opts := cl.opts
	for k, v := range cfg.Params {
		opts = append(opts, option.WithJSONSet(k, v))
	}
	return &ChatTarget{
		cl:          cl,
		post:        oai.Client{Options: opts},
		model:       cfg.Model,
		system:      system,
		prompt:      prompt,
		temperature: cfg.Temperature,
		maxTokens:   cfg.MaxTokens,
		seed:        cfg.Seed,
		price:       cfg.Price,
	}, nil
}

// Execute sends one chat completion for item.
//
// The request goes through the SDK's client (base URL, auth, extra params,
// error types, our response middleware), but its body is encoded and the
// reply decoded here with encoding/json into the few fields a target
// needs: the SDK's typed params and response cost ~70 µs of CPU per call
// in reflection, which is most of evalrun's own time in a fast run
// (docs/benchmarks.md, W1 and W2). The judge (ChatModel) keeps the typed
// path: it sends more options and is called far less often.
func (t *ChatTarget) Execute(ctx context.Context, item *evalrun.Item) (evalrun.Output, error) {
	req := chatRequest{Model: t.model, Temperature: t.temperature, Seed: t.seed}
	if t.system != nil {
		s, err := t.system.Render(item)
		if err != nil {
			return evalrun.Output{}, err
		}
		req.Messages = append(req.Messages, chatMessage{Role: "system", Content: s})
	}
	p, err := t.prompt.Render(item)
	if err != nil {
		return evalrun.Output{}, err
	}
	req.Messages = append(req.Messages, chatMessage{Role: "user", Content: p})
	if t.maxTokens > 0 {
		m := int64(t.maxTokens)
		req.MaxTokens = &m
	}
	body, err := json.Marshal(req)
	if err != nil {
		return evalrun.Output{}, evalrun.Permanent(fmt.Errorf("openai: encode request: %w", err))
	}
	var ex exchange
	if err := t.post.Post(ctx, "chat/completions", body, nil, t.cl.callOptions(&ex)...); err != nil {
		return evalrun.Output{}, t.cl.classify(ctx, &ex, err)
	}
	var resp chatResponse
	if err := json.Unmarshal(ex.body, &resp); err != nil {
		return evalrun.Output{}, malformed(ex.status, fmt.Errorf("%w (body %q)", err, snippet(ex.body)), evalrun.Usage{})
	}
	var u evalrun.Usage
	if resp.Usage != nil {
		u = usage(evalrun.Int64(resp.Usage.PromptTokens), evalrun.Int64(resp.Usage.CompletionTokens), t.price)
	}
	if len(resp.Choices) == 0 {
		return evalrun.Output{}, malformed(ex.status, fmt.Errorf("no choices"), u)
	}
	ch := resp.Choices[0]
	if ch.Message.Content == nil {
		if ch.Message.Refusal != "" {
			return evalrun.Output{}, &evalrun.Error{Kind: evalrun.ErrorPermanent, StatusCode: ex.status, Usage: u, Err: fmt.Errorf("model refused: %s", ch.Message.Refusal)}
		}
		return evalrun.Output{}, malformed(ex.status, fmt.Errorf("no message content (finish_reason %q)", ch.FinishReason), u)
	}
	return evalrun.Output{Value: evalrun.String(*ch.Message.Content), Usage: u}, nil
}

// chatRequest is the body of a chat completion as the target sends it;
// params from the config are merged in by the SDK (option.WithJSONSet).
type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	Temperature *float64      `json:"temperature,omitempty"`
	Seed        *int64        `json:"seed,omitempty"`
	MaxTokens   *int64        `json:"max_tokens,omitempty"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chatResponse is what the target reads of a chat completion.
type chatResponse struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
			Refusal string  `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

// Close releases idle connections.
func (t *ChatTarget) Close() error { return t.cl.close() }

// complete runs one chat completion and returns the reply text and usage.
func complete(ctx context.Context, cl *client, svc *oai.ChatCompletionService, params oai.ChatCompletionNewParams, price *Price) (string, evalrun.Usage, error) {
	var ex exchange
	resp, err := svc.New(ctx, params, cl.callOptions(&ex)...)
	if err != nil {
		return "", evalrun.Usage{}, cl.classify(ctx, &ex, err)
	}
	var u evalrun.Usage
	if resp.JSON.Usage.Valid() {
		u = usage(evalrun.Int64(resp.Usage.PromptTokens), evalrun.Int64(resp.Usage.CompletionTokens), price)
	}
	if len(resp.Choices) == 0 {
		return "", u, malformed(ex.status, fmt.Errorf("no choices"), u)
	}
	ch := resp.Choices[0]
	if !ch.Message.JSON.Content.Valid() {
		if ch.Message.Refusal != "" {
			return "", u, &evalrun.Error{Kind: evalrun.ErrorPermanent, StatusCode: ex.status, Usage: u, Err: fmt.Errorf("model refused: %s", ch.Message.Refusal)}
		}
		return "", u, malformed(ex.status, fmt.Errorf("no message content (finish_reason %q)", ch.FinishReason), u)
	}
	return ch.Message.Content, u, nil
}

// ModelConfig configures a [ChatModel] or an [Embedder]. The yaml keys are
// the suite file's.
type ModelConfig struct {
	ClientConfig `yaml:",inline"`
	// Model is the model name. Required.
	Model string `yaml:"model" json:"model"`
	// Price, when set, turns reported token usage into a cost.
	Price *Price `yaml:"price" json:"price,omitempty"`
}

// Validate reports the first bad value as a *[target.ConfigError] naming
// its key. It does not read the API key.
func (c *ModelConfig) Validate() error {
	if err := c.ClientConfig.validate(); err != nil {
		return err
	}
	if c.Model == "" {
		return &target.ConfigError{Key: "model", Err: fmt.Errorf("required")}
	}
	return validatePrice(c.Price)
}

// ChatModel is an [evalrun.ChatModel] over an OpenAI-compatible API, as the
// LLM judge uses it: every field of the request (temperature, seed, max
// tokens, the JSON object response format) is passed through. It is safe
// for concurrent use.
type ChatModel struct {
	cl    *client
	svc   oai.ChatCompletionService
	model string
	price *Price
}

// NewChatModel returns a chat model, or a *[target.ConfigError].
func NewChatModel(cfg ModelConfig) (*ChatModel, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cl, err := newClient(cfg.ClientConfig)
	if err != nil {
		return nil, err
	}
	return &ChatModel{cl: cl, svc: oai.NewChatCompletionService(cl.opts...), model: cfg.Model, price: cfg.Price}, nil
}

// Chat sends one chat completion. A message role other than system, user
// or assistant is a permanent error.
func (m *ChatModel) Chat(ctx context.Context, req evalrun.ChatRequest) (evalrun.ChatResponse, error) {
	params := oai.ChatCompletionNewParams{Model: m.model, Messages: make([]oai.ChatCompletionMessageParamUnion, 0, len(req.Messages))}
	for i, msg := range req.Messages {
		switch msg.Role {
		case "system":
			params.Messages = append(params.Messages, oai.SystemMessage(msg.Content))
		case "user":
			params.Messages = append(params.Messages, oai.UserMessage(msg.Content))
		case "assistant":
			params.Messages = append(params.Messages, oai.AssistantMessage(msg.Content))
		default:
			return evalrun.ChatResponse{}, evalrun.Permanent(fmt.Errorf("message %d: unknown role %q", i, msg.Role))
		}
	}
	if req.Temperature != nil {
		params.Temperature = oai.Float(*req.Temperature)
	}
	if req.Seed != nil {
		params.Seed = oai.Int(*req.Seed)
	}
	if req.MaxTokens > 0 {
		params.MaxTokens = oai.Int(int64(req.MaxTokens))
	}
	if req.JSONResponse {
		params.ResponseFormat = oai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	}
	text, u, err := complete(ctx, m.cl, &m.svc, params, m.price)
	if err != nil {
		return evalrun.ChatResponse{}, err
	}
	return evalrun.ChatResponse{Content: text, Usage: u}, nil
}

// Close releases idle connections.
func (m *ChatModel) Close() error { return m.cl.close() }
