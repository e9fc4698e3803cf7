// Package cache is the opt-in response cache (execution.cache): target
// responses and judge verdicts kept in the store, so that a re-run that
// only changed scorers, thresholds or reports makes no model call.
//
// A key is a hash of everything that determines the answer: the target's
// effective configuration (secrets excluded, so rotating a key keeps the
// cache), the item's input and the repeat index (so repeats still get
// distinct answers). Errors are never cached. The engine caches target
// outputs itself (it knows the repeat index); ChatModel wraps a judge
// model.
package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"strconv"
	"time"

	"github.com/evalrun/evalrun"
)

// Key returns the cache key of the given parts: a hex SHA-256 over the
// parts, each length-prefixed so that no two different lists of parts
// collide. ns names what is cached ("target", "judge").
func Key(ns string, parts ...[]byte) string {
	h := sha256.New()
	h.Write([]byte(ns))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write([]byte{':'})
		h.Write(p)
	}
	return ns + ":" + hex.EncodeToString(h.Sum(nil))
}

// TargetKey is the key of a target's answer to an item's input at a repeat
// index. config identifies the target's effective configuration. The
// item's tool mocks are part of the key when it has any: they are what an
// agent's tools answer, so a changed mock is a changed answer.
func TargetKey(config string, item *evalrun.Item, repeat int) string {
	in := []byte(item.Input)
	if c, err := evalrun.Canonical(item.Input); err == nil {
		in = c
	}
	if len(item.ToolMocks) == 0 {
		return Key("target", []byte(config), in, []byte(strconv.Itoa(repeat)))
	}
	mocks, _ := json.Marshal(item.ToolMocks)
	if c, err := evalrun.Canonical(mocks); err == nil {
		mocks = c
	}
	return Key("target", []byte(config), in, []byte(strconv.Itoa(repeat)), mocks)
}

// Entry is a cached target output.
type Entry struct {
	Output  json.RawMessage `json:"output"`
	TraceID string          `json:"trace_id,omitempty"`
	// Trajectory is an agent's trajectory, replayed with the output.
	Trajectory *evalrun.Trajectory `json:"trajectory,omitempty"`
}

// ChatModel wraps model so that its successful replies are kept in c under
// a key of config (the model's effective configuration) and the request.
// Lookup or storage failures are logged and the model is called as if
// there were no cache.
func ChatModel(model evalrun.ChatModel, c evalrun.ResponseCache, config string, ttl time.Duration, logger *slog.Logger) evalrun.ChatModel {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &chatModel{model: model, cache: c, config: config, ttl: ttl, logger: logger}
}

type chatModel struct {
	model  evalrun.ChatModel
	cache  evalrun.ResponseCache
	config string
	ttl    time.Duration
	logger *slog.Logger
}

func (m *chatModel) Chat(ctx context.Context, req evalrun.ChatRequest) (evalrun.ChatResponse, error) {
	reqJSON, err := json.Marshal(req)
	if err != nil {
		return m.model.Chat(ctx, req)
	}
	key := Key("judge", []byte(m.config), reqJSON)
	if b, ok, err := m.cache.GetCached(ctx, key); err != nil {
		m.logger.Warn("response cache lookup failed", "err", err)
	} else if ok {
		var content string
		if json.Unmarshal(b, &content) == nil {
			return evalrun.ChatResponse{Content: content}, nil
		}
	}
	resp, err := m.model.Chat(ctx, req)
	if err != nil {
		return resp, err
	}
	b, _ := json.Marshal(resp.Content)
	if err := m.cache.PutCached(ctx, key, b, m.ttl); err != nil {
		m.logger.Warn("response cache store failed", "err", err)
	}
	return resp, nil
}
