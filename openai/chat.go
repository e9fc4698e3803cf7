package openai

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/tidwall/sjson"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/tracing"
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
	// Tools are the functions the model may call; with any, the target
	// runs the agent loop (see [ChatTarget]). The suite file's "tools" key
	// is parsed by package suite, which builds their run targets.
	Tools []Tool `yaml:"-" json:"tools,omitempty"`
	// MaxSteps bounds the model turns of one item's agent loop, in
	// [1, MaxMaxSteps]; 0 means [DefaultMaxSteps].
	MaxSteps int `yaml:"max_steps" json:"max_steps,omitempty"`
}

// Validate reports the first bad value as a *[target.ConfigError] naming
// its key. It does not read the API key.
func (c *ChatTargetConfig) Validate() error {
	_, _, err := c.check()
	if err == nil {
		_, err = compileTools(c.Tools)
	}
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
		case "tools":
			return nil, nil, &target.ConfigError{Key: "params", Err: fmt.Errorf("%q cannot be set through params: use the target's tools key", k)}
		}
		if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return nil, nil, &target.ConfigError{Key: "params." + k, Err: fmt.Errorf("%v is not a JSON number", f)}
		}
	}
	if err := validatePrice(c.Price); err != nil {
		return nil, nil, err
	}
	if c.MaxSteps != 0 && (c.MaxSteps < 1 || c.MaxSteps > MaxMaxSteps) {
		return nil, nil, &target.ConfigError{Key: "max_steps", Err: fmt.Errorf("must be in [1,%d], got %d", MaxMaxSteps, c.MaxSteps)}
	}
	if len(c.Tools) > MaxTools {
		return nil, nil, &target.ConfigError{Key: "tools", Err: fmt.Errorf("%d tools, more than the limit of %d", len(c.Tools), MaxTools)}
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

// ChatTarget evaluates a chat model: each item becomes a chat completion
// (an optional system message, then the item's conversation or a user
// message rendered from the prompt template), and the assistant's reply
// text is the output, as a JSON string. Token usage is recorded, with a
// cost when a price is configured.
//
// An item whose input is a conversation (see [evalrun.Conversation]) is
// sent as those messages after the system message; the prompt template is
// not used for it.
//
// With tools configured, the target is an agent: it runs the tool-calling
// loop (see the package documentation, "Agents") and records every
// result's trajectory. It is safe for concurrent use.
type ChatTarget struct {
	cl          *client
	url         string  // of chat/completions
	params      []param // the config's Params, in key order
	model       string
	system      *target.Template
	prompt      *target.Template
	temperature *float64
	maxTokens   int
	seed        *int64
	price       *Price

	// The agent's: the compiled tools (nil: not an agent), their
	// definitions as sent, and the bound on model turns.
	tools     []tool
	toolsJSON json.RawMessage
	maxSteps  int
	// maxConversation is MaxConversationBytes (smaller in tests).
	maxConversation int
}

var (
	_ evalrun.Target    = (*ChatTarget)(nil)
	_ evalrun.Closer    = (*ChatTarget)(nil)
	_ evalrun.ChatModel = (*ChatModel)(nil)
	_ evalrun.Closer    = (*ChatModel)(nil)
)

// NewChatTarget returns a chat target, or a *[target.ConfigError] for bad
// config (a template that does not parse, a missing API key, a tool whose
// parameters are not a JSON Schema, ...). The tools' run targets become
// the chat target's: its Close closes them.
func NewChatTarget(cfg ChatTargetConfig) (*ChatTarget, error) {
	system, prompt, err := cfg.check()
	if err != nil {
		return nil, err
	}
	tools, err := compileTools(cfg.Tools)
	if err != nil {
		return nil, err
	}
	cl, err := newClient(cfg.ClientConfig)
	if err != nil {
		return nil, err
	}
	t := &ChatTarget{
		cl:          cl,
		url:         cl.endpoint("chat/completions"),
		params:      sortedParams(cfg.Params),
		model:       cfg.Model,
		system:      system,
		prompt:      prompt,
		temperature: cfg.Temperature,
		maxTokens:   cfg.MaxTokens,
		seed:        cfg.Seed,
		price:       cfg.Price,
		tools:       tools,
		maxSteps:    cmp.Or(cfg.MaxSteps, DefaultMaxSteps),

		maxConversation: MaxConversationBytes,
	}
	if len(tools) > 0 {
		if t.toolsJSON, err = toolDefinitions(cfg.Tools); err != nil {
			return nil, &target.ConfigError{Key: "tools", Err: err}
		}
	}
	return t, nil
}

// Execute sends the chat completion of item, or runs the agent loop when
// the target has tools.
//
// The body is encoded and the reply decoded here with encoding/json into
// the few fields a target needs: typed SDK params and responses cost ~70 µs
// of CPU per call in reflection, which was most of evalrun's own time in a
// fast run (docs/benchmarks.md, W1 and W2).
func (t *ChatTarget) Execute(ctx context.Context, item *evalrun.Item) (evalrun.Output, error) {
	req, err := t.request(item)
	if err != nil {
		return evalrun.Output{}, err
	}
	if t.tools != nil {
		return t.runAgent(ctx, item, &req)
	}
	resp, status, err := t.send(ctx, &req)
	if err != nil {
		return evalrun.Output{}, err
	}
	var tokens tokenCount
	tokens.add(resp)
	u := tokens.usage(t.price)
	text, err := finalText(resp, status, u)
	if err != nil {
		return evalrun.Output{}, err
	}
	return evalrun.Output{Value: evalrun.String(text), Usage: u}, nil
}

// AttemptCall implements tracing.CallTarget: without tools an attempt is
// one chat completion, and the engine traces it as that call's span.
func (t *ChatTarget) AttemptCall() (operation, model string, ok bool) {
	return "chat", t.model, t.tools == nil
}

// request returns the first request of item: the system message, then the
// item's conversation or its rendered prompt.
func (t *ChatTarget) request(item *evalrun.Item) (chatRequest, error) {
	req := chatRequest{Model: t.model, Temperature: t.temperature, Seed: t.seed, Tools: t.toolsJSON}
	if t.maxTokens > 0 {
		m := int64(t.maxTokens)
		req.MaxTokens = &m
	}
	conv, isConv := evalrun.Conversation(item.Input)
	req.Messages = make([]chatMessage, 0, 1+max(len(conv), 1))
	if t.system != nil {
		s, err := t.system.Render(item)
		if err != nil {
			return req, err
		}
		req.Messages = append(req.Messages, chatMessage{Role: "system", Content: &s})
	}
	if isConv {
		for i := range conv {
			req.Messages = append(req.Messages, chatMessage{Role: conv[i].Role, Content: &conv[i].Content})
		}
		return req, nil
	}
	p, err := t.prompt.Render(item)
	if err != nil {
		return req, err
	}
	req.Messages = append(req.Messages, chatMessage{Role: "user", Content: &p})
	return req, nil
}

// send posts one chat completion and decodes the reply. Its errors are
// classified *evalrun.Error values; a reply it returns may still be
// unusable (see finalText).
func (t *ChatTarget) send(ctx context.Context, req *chatRequest) (*chatResponse, int, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, 0, evalrun.Permanent(fmt.Errorf("openai: encode request: %w", err))
	}
	if body, err = setParams(body, t.params); err != nil {
		return nil, 0, t.cl.classify(ctx, &exchange{}, err)
	}
	ctx, call := tracing.StartModelCall(ctx, "chat", t.model)
	ex, err := t.cl.post(ctx, t.url, body)
	if err != nil {
		tracing.EndModelCall(call, evalrun.UsageOf(err), err)
		return nil, ex.status, err
	}
	resp := new(chatResponse)
	if err := json.Unmarshal(ex.body, resp); err != nil {
		err = malformed(ex.status, fmt.Errorf("%w (body %q)", err, snippet(ex.body)), evalrun.Usage{})
		tracing.EndModelCall(call, evalrun.Usage{}, err)
		return nil, ex.status, err
	}
	if call.Recording() {
		var tokens tokenCount
		tokens.add(resp)
		tracing.EndModelCall(call, tokens.usage(nil), nil)
	} else {
		tracing.EndModelCall(call, evalrun.Usage{}, nil)
	}
	return resp, ex.status, nil
}

// param is one of the config's extra body fields.
type param struct {
	path  string
	value any
}

// sortedParams returns params in key order, the order they are set in (a
// path inside another's value is set after it).
func sortedParams(params map[string]any) []param {
	ps := make([]param, 0, len(params))
	for k, v := range params {
		ps = append(ps, param{k, v})
	}
	slices.SortFunc(ps, func(a, b param) int { return cmp.Compare(a.path, b.path) })
	return ps
}

// setParams sets params in the encoded body, each key a JSON path (sjson
// syntax), as the SDK's option.WithJSONSet did.
func setParams(body []byte, params []param) ([]byte, error) {
	for _, p := range params {
		var err error
		if body, err = sjson.SetBytes(body, p.path, p.value); err != nil {
			return nil, fmt.Errorf("params.%s: %w", p.path, err)
		}
	}
	return body, nil
}

// finalText returns the text of a reply that ends the item, or the
// permanent error of one without (a refusal, no choices, no content); u
// is the usage the error carries.
func finalText(resp *chatResponse, status int, u evalrun.Usage) (string, error) {
	if len(resp.Choices) == 0 {
		return "", malformed(status, fmt.Errorf("no choices"), u)
	}
	ch := &resp.Choices[0]
	if ch.Message.Content == nil {
		if ch.Message.Refusal != "" {
			return "", &evalrun.Error{Kind: evalrun.ErrorPermanent, StatusCode: status, Usage: u, Err: fmt.Errorf("model refused: %s", ch.Message.Refusal)}
		}
		if len(ch.Message.ToolCalls) > 0 {
			return "", malformed(status, fmt.Errorf("the model called tools (%s) but the target has none: configure tools", ch.Message.ToolCalls[0].Function.Name), u)
		}
		return "", malformed(status, fmt.Errorf("no message content (finish_reason %q)", ch.FinishReason), u)
	}
	return *ch.Message.Content, nil
}

// tokenCount sums the token counts replies report.
type tokenCount struct {
	in, out       int64
	hasIn, hasOut bool
}

func (c *tokenCount) add(resp *chatResponse) {
	if resp.Usage == nil {
		return
	}
	c.in += resp.Usage.PromptTokens
	c.out += resp.Usage.CompletionTokens
	c.hasIn, c.hasOut = true, true
}

// usage returns the counts as a Usage, with the cost at price (nil: none).
func (c *tokenCount) usage(price *Price) evalrun.Usage {
	var in, out *int64
	if c.hasIn {
		in = evalrun.Int64(c.in)
	}
	if c.hasOut {
		out = evalrun.Int64(c.out)
	}
	return usage(in, out, price)
}

// chatRequest is the body of a chat completion as the target and the judge
// send it; params from the config are set in it after encoding.
type chatRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
	// Tools are the tool definitions, encoded once by NewChatTarget.
	Tools       json.RawMessage `json:"tools,omitempty"`
	Temperature *float64        `json:"temperature,omitempty"`
	Seed        *int64          `json:"seed,omitempty"`
	MaxTokens   *int64          `json:"max_tokens,omitempty"`
	// ResponseFormat is the judge's {"type": "json_object"}.
	ResponseFormat *responseFormat `json:"response_format,omitempty"`
}

type responseFormat struct {
	Type string `json:"type"`
}

// chatMessage is one message of a request. Content is null in an
// assistant message that only called tools.
type chatMessage struct {
	Role       string     `json:"role"`
	Content    *string    `json:"content"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// toolCall is a tool call on the wire: in a reply, and echoed in the
// assistant message of the next request.
type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
		// Arguments is OpenAI's JSON string holding the arguments
		// object; some compatible servers send the object itself.
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// chatResponse is what the target reads of a chat completion.
type chatResponse struct {
	Choices []struct {
		Message struct {
			Content   *string    `json:"content"`
			Refusal   string     `json:"refusal"`
			ToolCalls []toolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

// Close releases idle connections and closes the tools' run targets.
func (t *ChatTarget) Close() error {
	errs := []error{t.cl.close()}
	for i := range t.tools {
		if c, ok := t.tools[i].run.(evalrun.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
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
	url   string // of chat/completions
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
	return &ChatModel{cl: cl, url: cl.endpoint("chat/completions"), model: cfg.Model, price: cfg.Price}, nil
}

// Chat sends one chat completion. A message role other than system, user
// or assistant is a permanent error.
func (m *ChatModel) Chat(ctx context.Context, req evalrun.ChatRequest) (evalrun.ChatResponse, error) {
	creq := chatRequest{Model: m.model, Messages: make([]chatMessage, len(req.Messages)), Temperature: req.Temperature, Seed: req.Seed}
	for i := range req.Messages {
		msg := &req.Messages[i]
		switch msg.Role {
		case "system", "user", "assistant":
			creq.Messages[i] = chatMessage{Role: msg.Role, Content: &msg.Content}
		default:
			return evalrun.ChatResponse{}, evalrun.Permanent(fmt.Errorf("message %d: unknown role %q", i, msg.Role))
		}
	}
	if req.MaxTokens > 0 {
		creq.MaxTokens = evalrun.Int64(int64(req.MaxTokens))
	}
	if req.JSONResponse {
		creq.ResponseFormat = &responseFormat{Type: "json_object"}
	}
	body, err := json.Marshal(&creq)
	if err != nil {
		return evalrun.ChatResponse{}, evalrun.Permanent(fmt.Errorf("openai: encode request: %w", err))
	}
	ctx, call := tracing.StartModelCall(ctx, "chat", m.model)
	ex, err := m.cl.post(ctx, m.url, body)
	if err != nil {
		tracing.EndModelCall(call, evalrun.UsageOf(err), err)
		return evalrun.ChatResponse{}, err
	}
	var resp chatResponse
	if err := decode(&ex, &resp); err != nil {
		tracing.EndModelCall(call, evalrun.Usage{}, err)
		return evalrun.ChatResponse{}, err
	}
	var tokens tokenCount
	tokens.add(&resp)
	u := tokens.usage(m.price)
	tracing.EndModelCall(call, u, nil)
	if len(resp.Choices) == 0 {
		return evalrun.ChatResponse{}, malformed(ex.status, fmt.Errorf("no choices"), u)
	}
	ch := &resp.Choices[0]
	if ch.Message.Content == nil {
		if ch.Message.Refusal != "" {
			return evalrun.ChatResponse{}, &evalrun.Error{Kind: evalrun.ErrorPermanent, StatusCode: ex.status, Usage: u, Err: fmt.Errorf("model refused: %s", ch.Message.Refusal)}
		}
		return evalrun.ChatResponse{}, malformed(ex.status, fmt.Errorf("no message content (finish_reason %q)", ch.FinishReason), u)
	}
	return evalrun.ChatResponse{Content: *ch.Message.Content, Usage: u}, nil
}

// Close releases idle connections.
func (m *ChatModel) Close() error { return m.cl.close() }
