package openai

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/internal/otlptest"
	"github.com/evalrun/evalrun/internal/tracing"
	"github.com/evalrun/evalrun/target"
)

// TestModelCallSpans: a chat target's call, a judge's and an embedder's
// each get a GenAI span inside a traced run, and their requests carry its
// traceparent.
func TestModelCallSpans(t *testing.T) {
	rec, tp := otlptest.Record(t)

	var mu sync.Mutex
	var parents []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		parents = append(parents, r.Header.Get("Traceparent"))
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/embeddings") {
			w.Write([]byte(`{"data":[{"index":0,"embedding":[1]}],"usage":{"prompt_tokens":3,"total_tokens":3}}`))
			return
		}
		w.Write([]byte(completion("ok")))
	}))
	defer api.Close()
	cc := ClientConfig{BaseURL: api.URL + "/v1", LookupEnv: env()}
	chat, err := NewChatTarget(ChatTargetConfig{ClientConfig: cc, Model: "gpt-x"})
	if err != nil {
		t.Fatal(err)
	}
	judge, err := NewChatModel(ModelConfig{ClientConfig: cc, Model: "judge-x"})
	if err != nil {
		t.Fatal(err)
	}
	emb, err := NewEmbedder(ModelConfig{ClientConfig: cc, Model: "emb-x"})
	if err != nil {
		t.Fatal(err)
	}

	ctx, run := tp.Tracer("test").Start(context.Background(), "run")
	if _, err := chat.Execute(ctx, &evalrun.Item{ID: "a", Input: evalrun.String("hi")}); err != nil {
		t.Fatal(err)
	}
	if _, err := judge.Chat(ctx, evalrun.ChatRequest{Messages: []evalrun.ChatMessage{{Role: "user", Content: "grade"}}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := emb.Embed(ctx, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	run.End()
	// Untraced: no span, no header.
	if _, err := chat.Execute(context.Background(), &evalrun.Item{ID: "b", Input: evalrun.String("hi")}); err != nil {
		t.Fatal(err)
	}

	want := []struct {
		name, op, model string
		in, out         int64 // -1: not reported
	}{
		{"chat gpt-x", "chat", "gpt-x", 10, 5},
		{"chat judge-x", "chat", "judge-x", 10, 5},
		{"embeddings emb-x", "embeddings", "emb-x", 3, -1},
	}
	spans := rec.Ended()
	if len(spans) != len(want)+1 {
		t.Fatalf("%d spans, want %d model calls and the run", len(spans), len(want))
	}
	for i, w := range want {
		s := spans[i]
		a := otlptest.Attrs(s)
		if s.Name() != w.name || a["gen_ai.operation.name"].AsString() != w.op || a["gen_ai.request.model"].AsString() != w.model ||
			a["gen_ai.provider.name"].AsString() != "openai" || a["gen_ai.usage.input_tokens"].AsInt64() != w.in ||
			(w.out >= 0 && a["gen_ai.usage.output_tokens"].AsInt64() != w.out) || (w.out < 0 && a["gen_ai.usage.output_tokens"].Type() != attribute.INVALID) {
			t.Errorf("span %d: %s %v, want %+v", i, s.Name(), a, w)
		}
		if s.Parent().SpanID() != run.SpanContext().SpanID() {
			t.Errorf("span %s is not the run's child", s.Name())
		}
		wantTP := "00-" + s.SpanContext().TraceID().String() + "-" + s.SpanContext().SpanID().String() + "-01"
		if parents[i] != wantTP {
			t.Errorf("request %d: traceparent %q, want its span's %q", i, parents[i], wantTP)
		}
	}
	if parents[3] != "" {
		t.Errorf("an untraced call sent traceparent %q", parents[3])
	}
}

// TestAgentSpans: an agent's item has a span per model turn and one per
// tool call answered by its run target, whose HTTP request carries the
// tool span's traceparent.
func TestAgentSpans(t *testing.T) {
	rec, tp := otlptest.Record(t)

	var toolParent string
	toolSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		toolParent = r.Header.Get("Traceparent")
		w.Write([]byte(`{"temp": 3}`))
	}))
	defer toolSrv.Close()
	run, err := target.NewHTTP(target.HTTPConfig{URL: toolSrv.URL})
	if err != nil {
		t.Fatal(err)
	}
	m := newFakeModel(t, func(turn int, req wireRequest, _ *http.Request) turnReply {
		if turn == 0 {
			return callTools(0, call{"get_weather", `{"city":"Oslo"}`})
		}
		return answer("cold")
	})
	tool := weatherTool
	tool.Run = run
	ct := newAgent(t, m, ChatTargetConfig{Tools: []Tool{tool}})
	ctx, attempt := tp.Tracer("test").Start(context.Background(), "evalrun.attempt")
	if _, err := ct.Execute(ctx, &evalrun.Item{ID: "o1", Input: evalrun.String("Oslo?")}); err != nil {
		t.Fatal(err)
	}
	attempt.End()
	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
		if s.Name() == "execute_tool get_weather" {
			want := "00-" + s.SpanContext().TraceID().String() + "-" + s.SpanContext().SpanID().String() + "-01"
			if toolParent != want {
				t.Errorf("the tool's request carries traceparent %q, want its span's %q", toolParent, want)
			}
		}
	}
	if got := strings.Join(names, ", "); got != "chat test-model, execute_tool get_weather, chat test-model, evalrun.attempt" {
		t.Errorf("spans: %s", got)
	}
}

// TestChatAttemptIsTheCallSpan: in an engine run, a chat target without
// tools (behind a wrapper) makes no span of its own: each attempt's span is
// its model call, named and described per the GenAI conventions with the
// attempt's number, and the request carries that span's traceparent. A
// failed first attempt is its own span, retried as a sibling.
func TestChatAttemptIsTheCallSpan(t *testing.T) {
	rec, _ := otlptest.Record(t)

	var mu sync.Mutex
	var parents []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		parents = append(parents, r.Header.Get("Traceparent"))
		first := len(parents) == 1
		mu.Unlock()
		if first {
			http.Error(w, `{"error":{"message":"busy"}}`, http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(completion("ok")))
	}))
	defer api.Close()
	chat, err := NewChatTarget(ChatTargetConfig{ClientConfig: ClientConfig{BaseURL: api.URL + "/v1", LookupEnv: env()}, Model: "gpt-x"})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := target.NewLimiter(target.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := engine.Run(context.Background(), nil, engine.Spec{
		Items:   []*evalrun.Item{{ID: "a", Input: evalrun.String("hi")}},
		Target:  target.RateLimited(chat, lim),
		Options: engine.Options{Concurrency: 1, MaxRetries: 1, RetryDelay: -1},
	})
	if err != nil || sum.Succeeded != 1 {
		t.Fatalf("run: %v %+v", err, sum)
	}

	var item sdktrace.ReadOnlySpan
	var calls []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "evalrun.item":
			item = s
		case "chat gpt-x":
			calls = append(calls, s)
		case "evalrun.run":
		default:
			t.Errorf("unexpected span %q", s.Name())
		}
	}
	if item == nil || len(calls) != 2 || len(parents) != 2 {
		t.Fatalf("item span %v, %d call spans, %d requests; want 1, 2, 2", item != nil, len(calls), len(parents))
	}
	for i, s := range calls {
		a := otlptest.Attrs(s)
		if s.Parent().SpanID() != item.SpanContext().SpanID() || s.SpanKind() != trace.SpanKindClient {
			t.Errorf("call %d: parent %s kind %s, want the item's child, client", i, s.Parent().SpanID(), s.SpanKind())
		}
		if a["evalrun.attempt"].AsInt64() != int64(i+1) || a["gen_ai.operation.name"].AsString() != "chat" ||
			a["gen_ai.request.model"].AsString() != "gpt-x" || a["gen_ai.provider.name"].AsString() != "openai" {
			t.Errorf("call %d attributes %v", i, a)
		}
		wantTP := "00-" + s.SpanContext().TraceID().String() + "-" + s.SpanContext().SpanID().String() + "-01"
		if parents[i] != wantTP {
			t.Errorf("request %d: traceparent %q, want its attempt span's %q", i, parents[i], wantTP)
		}
		switch i {
		case 0:
			if s.Status().Code != codes.Error || a["evalrun.error.kind"].AsString() != "transient" {
				t.Errorf("failed attempt: status %v, attributes %v", s.Status(), a)
			}
		case 1:
			if s.Status().Code == codes.Error || a["gen_ai.usage.input_tokens"].AsInt64() != 10 || a["gen_ai.usage.output_tokens"].AsInt64() != 5 {
				t.Errorf("succeeded attempt: status %v, attributes %v", s.Status(), a)
			}
		}
	}

	// An agent's attempts make several calls: plain attempt spans.
	agent := newAgent(t, newFakeModel(t, func(int, wireRequest, *http.Request) turnReply { return answer("x") }),
		ChatTargetConfig{Tools: []Tool{weatherTool}})
	if c := tracing.AttemptCallOf(agent); c != nil {
		t.Errorf("AttemptCallOf(agent) = %+v, want nil", c)
	}
	if c := tracing.AttemptCallOf(chat); c == nil {
		t.Error("AttemptCallOf(chat target) = nil")
	}
}
