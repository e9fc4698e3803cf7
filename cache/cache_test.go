package cache_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/cache"
)

// memCache is a ResponseCache in a map.
type memCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (c *memCache) GetCached(_ context.Context, key string) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok, nil
}

func (c *memCache) PutCached(_ context.Context, key string, v []byte, _ time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string][]byte{}
	}
	c.m[key] = v
	return nil
}

// countingModel is a ChatModel that counts calls and answers by content.
type countingModel struct{ calls atomic.Int64 }

func (m *countingModel) Chat(_ context.Context, req evalrun.ChatRequest) (evalrun.ChatResponse, error) {
	m.calls.Add(1)
	if req.Messages[0].Content == "fail" {
		return evalrun.ChatResponse{}, evalrun.Transient(errors.New("503"))
	}
	return evalrun.ChatResponse{Content: `{"score":1,"reason":"` + req.Messages[0].Content + `"}`}, nil
}

func TestCachedChatModel(t *testing.T) {
	inner := &countingModel{}
	m := cache.ChatModel(inner, &memCache{}, "judge=gpt", 0, nil)
	ask := func(s string) (evalrun.ChatResponse, error) {
		return m.Chat(context.Background(), evalrun.ChatRequest{Messages: []evalrun.ChatMessage{{Role: "user", Content: s}}, JSONResponse: true})
	}
	a, _ := ask("x")
	b, _ := ask("x")
	if inner.calls.Load() != 1 || a.Content != b.Content {
		t.Fatalf("calls %d, %q vs %q", inner.calls.Load(), a.Content, b.Content)
	}
	ask("y")
	if inner.calls.Load() != 2 {
		t.Fatalf("different request hit the cache")
	}
	ask("fail")
	if _, err := ask("fail"); err == nil || inner.calls.Load() != 4 {
		t.Fatalf("an error was cached: calls %d err %v", inner.calls.Load(), err)
	}
}

func TestKeyOfMocksIgnoresSpacing(t *testing.T) {
	mock := func(args string) *evalrun.Item {
		return &evalrun.Item{Input: evalrun.String("in"),
			ToolMocks: []evalrun.ToolMock{{Name: "t", Args: json.RawMessage(args), Output: evalrun.String("x")}}}
	}
	if cache.TargetKey("c", mock(`{"a":1,"b":2}`), 0) != cache.TargetKey("c", mock(`{ "b": 2, "a": 1 }`), 0) {
		t.Fatal("the same mock in other key order changed the key")
	}
	if cache.TargetKey("c", mock(`{"a":1}`), 0) == cache.TargetKey("c", mock(`{"a":2}`), 0) {
		t.Fatal("mocks of other arguments share a key")
	}
}

func TestKeysDiffer(t *testing.T) {
	a := cache.TargetKey("cfg", &evalrun.Item{Input: evalrun.String("in")}, 0)
	if a != cache.TargetKey("cfg", &evalrun.Item{Input: []byte(` "in" `)}, 0) {
		t.Fatal("the same input in other spacing changed the key")
	}
	for _, other := range []string{
		cache.TargetKey("cfg", &evalrun.Item{Input: evalrun.String("in")}, 1),
		cache.TargetKey("cfg2", &evalrun.Item{Input: evalrun.String("in")}, 0),
		cache.TargetKey("cfg", &evalrun.Item{Input: evalrun.String("in2")}, 0),
		cache.Key("target", []byte("cf"), []byte("g")),
		// A changed mock is a changed answer of an agent.
		cache.TargetKey("cfg", &evalrun.Item{Input: evalrun.String("in"),
			ToolMocks: []evalrun.ToolMock{{Name: "t", Output: evalrun.String("x")}}}, 0),
	} {
		if other == a {
			t.Fatalf("key collision: %s", a)
		}
	}
}
