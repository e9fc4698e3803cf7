package openai

import (
	"encoding/json"
	"time"

	"github.com/evalrun/evalrun/internal/targettest"
)

// The fakes of these tests are internal/targettest's, shared with the
// target package's tests, under the short names the tests use.
type (
	// fakeClock is a Clock frozen at a time whose After fires at once and
	// records the durations asked for.
	fakeClock = targettest.Clock
	// fakeAPI is an OpenAI-compatible server serving the n-th request with
	// handlers[n] (the last for later ones). It records request bodies,
	// headers and paths.
	fakeAPI = targettest.Server
)

var fixedNow = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// newFakeClock returns a fakeClock frozen at fixedNow.
func newFakeClock() *fakeClock { return targettest.NewClock(fixedNow) }

var (
	newFakeAPI = targettest.NewServer
	reply      = targettest.Reply
	hang       = targettest.Hang
	reset      = targettest.Reset
	attemptsOf = targettest.Attempts
	wantKind   = targettest.WantKind
)

// completion is a chat completion reply with content and usage.
func completion(content string) string {
	b, _ := json.Marshal(map[string]any{
		"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": content}}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
	return string(b)
}

// env returns a LookupEnv over a fixed map.
func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}
