// Package openai talks to any OpenAI-compatible API (OpenAI, vLLM, Ollama,
// llama.cpp server, LiteLLM, ...) over its HTTP wire protocol (POST
// chat/completions and embeddings, JSON bodies, Bearer auth), with net/http
// and no SDK: [ChatTarget] evaluates a chat model as a target, [ChatModel]
// is the evalrun.ChatModel an LLM judge uses, and [Embedder] is the
// evalrun.Embedder of the embedding_similarity scorer. An error status's
// body is read as OpenAI's {"error": {"message", "type", "code"}} into an
// [*APIError].
//
// # Agents
//
// A [ChatTarget] with [Tool]s is an agent: it runs the tool-calling loop
// (model turn, the turn's tool calls answered concurrently by the item's
// tool_mocks or the tool's run target, model turn again) until the model
// answers without a tool call, at most max_steps turns, and records the
// calls and turns as the result's [evalrun.Trajectory]. Calls the loop can
// answer badly (an unknown tool, arguments that are not JSON or do not
// match the tool's JSON Schema, a run target's failure) go back to the
// model as "error: …" results; a call no mock answers and no run target
// can fails the item. Every error carries the usage and the trajectory so
// far; a transient one retries the whole item (the conversation starts
// again). An item whose input is a conversation is sent as its messages,
// with or without tools.
//
// # Retries
//
// The client never retries by itself (as the official SDK would, were it
// used): the engine's retry policy is the only one, so reported retry
// counts are true.
// Errors are classified as in package target ([target.ClassifyStatus],
// [target.ClassifyTransport]): 408, 429 and 5xx, connection failures and
// one attempt's timeout are transient, with the server's Retry-After
// carried; other statuses, a malformed 200 (invalid JSON, no choices, no
// content), an oversized response ([target.ErrResponseTooLarge]) and a
// response that is not valid UTF-8 ([target.ErrInvalidUTF8]) are permanent.
//
// # API key and environment
//
// The API key is read from the environment variable named by api_key_env
// (default OPENAI_API_KEY). A missing or empty key is a configuration error
// when base_url is not set (the OpenAI API always needs one) or when
// api_key_env was set explicitly. With a base_url and the default
// api_key_env, a missing key is allowed and no Authorization header is
// sent: local servers (Ollama, llama.cpp, vLLM) need none, "local" cannot
// be told reliably from a URL (container names, LAN hosts), and a server
// that does need a key answers 401, a clear permanent error. The other
// environment variables OpenAI's SDKs read (OPENAI_BASE_URL, OPENAI_ORG_ID,
// ...) are ignored, so a run's configuration is all in its suite file and
// the user's OpenAI key is never sent to another server by accident.
package openai
