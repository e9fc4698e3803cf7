package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/evalrun/evalrun/internal/otlptest"
)

// echoTarget is an http target's service answering {"out": input} and
// keeping the traceparent header of every request.
type echoTarget struct {
	*httptest.Server
	mu      sync.Mutex
	parents []string
}

func newEchoTarget(t *testing.T) *echoTarget {
	e := &echoTarget{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Input json.RawMessage `json:"input"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		e.mu.Lock()
		e.parents = append(e.parents, r.Header.Get("Traceparent"))
		e.mu.Unlock()
		fmt.Fprintf(w, `{"out": %s}`, in.Input)
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *echoTarget) traceparents() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.parents...)
}

// tracedSuite writes data3 and a suite running it against target.
func tracedSuite(b *bundle, target string) string {
	b.write("d.jsonl", data3)
	return b.write("suite.yaml", `name: traced
dataset: {name: d, file: d.jsonl}
target: {kind: http, url: `+target+`, output: out}
scorers: [exact_match]
`)
}

// withOTLP sets OTEL_EXPORTER_OTLP_ENDPOINT for the CLI (its Env) and for
// the SDK, which reads the process environment.
func withOTLP(t *testing.T, b *bundle, endpoint string) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
	b.env = append(b.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint)
}

func TestTracingExportsRunItemAttemptAndScorerSpans(t *testing.T) {
	b := setup(t)
	target := newEchoTarget(t)
	suite := tracedSuite(b, target.URL)
	recv := otlptest.New(t)
	withOTLP(t, b, recv.URL)

	code, _, stderr := b.run("run", suite, "-q")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if strings.Contains(stderr, "traces") {
		t.Errorf("stderr mentions traces though the collector took them:\n%s", stderr)
	}
	runs := recv.Named("evalrun.run")
	if len(runs) != 1 {
		t.Fatalf("%d run spans, want 1; spans: %+v", len(runs), recv.Spans())
	}
	run := runs[0]
	if run.Parent != "" || run.Service != "evalrun" || run.Attrs["evalrun.run.id"] == "" ||
		run.Attrs["evalrun.run.status"] != "completed" || run.Attrs["evalrun.run.succeeded"] != int64(3) {
		t.Errorf("run span %+v", run)
	}
	items := recv.Named("evalrun.item")
	if len(items) != 3 {
		t.Fatalf("%d item spans, want 3", len(items))
	}
	wantScore := map[string]float64{"a": 1, "b": 0, "c": 1}
	itemByID := map[string]otlptest.Span{}
	for _, it := range items {
		id, _ := it.Attrs["evalrun.item.id"].(string)
		itemByID[it.SpanID] = it
		if it.TraceID != run.TraceID || it.Parent != run.SpanID {
			t.Errorf("item %s: trace %s parent %s, want the run's %s %s", id, it.TraceID, it.Parent, run.TraceID, run.SpanID)
		}
		if it.Attrs["evalrun.run.id"] != run.Attrs["evalrun.run.id"] || it.Attrs["evalrun.item.repeat"] != int64(0) ||
			it.Attrs["evalrun.item.status"] != "succeeded" {
			t.Errorf("item %s attributes %v", id, it.Attrs)
		}
		if got, ok := it.Attrs["evalrun.score.exact_match"].(float64); !ok || got != wantScore[id] {
			t.Errorf("item %s: evalrun.score.exact_match %v, want %v", id, it.Attrs["evalrun.score.exact_match"], wantScore[id])
		}
	}
	attempts := map[string]bool{}
	for _, name := range []string{"evalrun.attempt", "evalrun.score"} {
		spans := recv.Named(name)
		if len(spans) != 3 {
			t.Errorf("%d %s spans, want 3", len(spans), name)
		}
		for _, s := range spans {
			if _, ok := itemByID[s.Parent]; !ok {
				t.Errorf("%s span %s: parent %s is no item span", name, s.SpanID, s.Parent)
			}
			if name == "evalrun.attempt" {
				attempts[s.SpanID] = true
			}
		}
	}
	// Every request to the target names its attempt's span, in the run's
	// trace: the service's spans join the eval's trace.
	parents := target.traceparents()
	if len(parents) != 3 {
		t.Fatalf("%d target requests", len(parents))
	}
	for _, tp := range parents {
		f := strings.Split(tp, "-")
		if len(f) != 4 || f[0] != "00" || f[1] != run.TraceID || !attempts[f[2]] || f[3] != "01" {
			t.Errorf("traceparent %q does not name an exported attempt span of trace %s", tp, run.TraceID)
		}
	}
}

func TestTracingOffWithoutTheVariables(t *testing.T) {
	b := setup(t)
	target := newEchoTarget(t)
	suite := tracedSuite(b, target.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "") // whatever the test's environment says
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	var during any
	code, _, stderr := b.main(context.Background(), func(st *State) {
		st.Stdout = writerFunc(func(p []byte) (int, error) {
			during = otel.GetTracerProvider() // while the command runs
			return len(p), nil
		})
	}, "run", suite, "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, sdk := during.(*sdktrace.TracerProvider); sdk || during == nil {
		t.Errorf("tracer provider during the run: %T, want the API's default (no SDK, no exporter)", during)
	}
	for _, tp := range target.traceparents() {
		if tp != "" {
			t.Errorf("a request carries traceparent %q with tracing off", tp)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestTracingCollectorDownOrHanging: a collector that refuses connections
// or never answers changes neither the run's outcome nor its exit code; the
// exit waits at most the flush bound (shortened here from the default 5 s)
// and stderr says so once.
func TestTracingCollectorDownOrHanging(t *testing.T) {
	if DefaultTraceFlushTimeout != 5*time.Second {
		t.Errorf("DefaultTraceFlushTimeout = %s, the contract says 5 s", DefaultTraceFlushTimeout)
	}
	closed := func(t *testing.T) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr
	}
	hanging := func(t *testing.T) string {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
		t.Cleanup(func() { close(release); srv.Close() })
		return srv.URL
	}
	for name, collector := range map[string]func(*testing.T) string{"down": closed, "hanging": hanging} {
		t.Run(name, func(t *testing.T) {
			b := setup(t)
			target := newEchoTarget(t)
			suite := tracedSuite(b, target.URL)
			wantCode, wantOut, _ := b.run("run", suite, "-q", "--format", "json")

			withOTLP(t, b, collector(t))
			const bound = 300 * time.Millisecond
			start := time.Now()
			code, out, stderr := b.main(context.Background(), func(st *State) { st.TraceFlushTimeout = bound }, "run", suite, "-q", "--format", "json")
			elapsed := time.Since(start)
			if code != wantCode {
				t.Errorf("exit %d with the collector %s, %d without tracing", code, name, wantCode)
			}
			if got, want := summaryOf(t, out), summaryOf(t, wantOut); got != want {
				t.Errorf("result with the collector %s:\n%s\nwithout tracing:\n%s", name, got, want)
			}
			if n := strings.Count(stderr, "evalrun: traces not exported: "); n != 1 || !strings.Contains(stderr, "/v1/traces)") {
				t.Errorf("stderr says %d times that traces were not exported, want once with the collector's URL:\n%s", n, stderr)
			}
			// Generous: the run itself takes a moment; a flush without the
			// bound would take the exporter's 10 s timeout, or forever.
			if elapsed > bound+5*time.Second {
				t.Errorf("the command took %s with a flush bound of %s", elapsed, bound)
			}
		})
	}
}

// summaryOf returns the counts and status of a JSON report, which do not
// change from one run to the next (ids and times do).
func summaryOf(t *testing.T, report string) string {
	t.Helper()
	var r struct {
		Run struct {
			Status    string `json:"status"`
			Succeeded int    `json:"succeeded"`
			Failed    int    `json:"failed"`
		} `json:"run"`
	}
	if err := json.Unmarshal([]byte(report), &r); err != nil {
		t.Fatalf("report: %v\n%s", err, report)
	}
	return fmt.Sprintf("%+v", r.Run)
}

func TestTracingGRPCProtocolIsRefusedClearly(t *testing.T) {
	b := setup(t)
	target := newEchoTarget(t)
	suite := tracedSuite(b, target.URL)
	recv := otlptest.New(t)
	withOTLP(t, b, recv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	b.env = append(b.env, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc")
	code, _, stderr := b.run("run", suite, "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := strings.Count(stderr, "evalrun: tracing off: "); n != 1 || !strings.Contains(stderr, "http/protobuf") {
		t.Errorf("stderr:\n%s", stderr)
	}
	if recv.Requests() != 0 || target.traceparents()[0] != "" {
		t.Errorf("grpc asked for, yet %d exports and traceparent %q", recv.Requests(), target.traceparents()[0])
	}
}

// TestTracingChatTargetAttemptIsTheModelCall: a suite's openai target
// without tools (behind the CLI's wrappers: secret scrubbing) exports per
// item one "chat MODEL" span, the item's child, carrying the GenAI and
// attempt attributes, and no evalrun.attempt span; each request's
// traceparent names it.
func TestTracingChatTargetAttemptIsTheModelCall(t *testing.T) {
	b := setup(t)
	var mu sync.Mutex
	var parents []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		parents = append(parents, r.Header.Get("Traceparent"))
		mu.Unlock()
		content := ""
		if len(req.Messages) > 0 {
			content = req.Messages[len(req.Messages)-1].Content
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": content}}},
			"usage":   map[string]any{"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9},
		})
	}))
	t.Cleanup(api.Close)
	b.write("d.jsonl", data3)
	suite := b.write("suite.yaml", `name: traced-chat
dataset: {name: d, file: d.jsonl}
target: {kind: openai, base_url: "`+api.URL+`/v1", api_key_env: KEY, model: m}
scorers: [exact_match]
`)
	b.env = append(b.env, "KEY=sk-test-key")
	recv := otlptest.New(t)
	withOTLP(t, b, recv.URL)

	if code, _, stderr := b.run("run", suite, "-q"); code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if n := len(recv.Named("evalrun.attempt")); n != 0 {
		t.Errorf("%d evalrun.attempt spans, want none: the attempt is the model call", n)
	}
	items := map[string]bool{}
	for _, it := range recv.Named("evalrun.item") {
		items[it.SpanID] = true
	}
	calls := recv.Named("chat m")
	if len(items) != 3 || len(calls) != 3 {
		t.Fatalf("%d item and %d chat spans, want 3 and 3; spans: %+v", len(items), len(calls), recv.Spans())
	}
	ids := map[string]bool{}
	for _, c := range calls {
		ids[c.SpanID] = true
		if !items[c.Parent] || c.Attrs["evalrun.attempt"] != int64(1) || c.Attrs["gen_ai.request.model"] != "m" ||
			c.Attrs["gen_ai.operation.name"] != "chat" || c.Attrs["gen_ai.usage.input_tokens"] != int64(7) || c.Attrs["gen_ai.usage.output_tokens"] != int64(2) {
			t.Errorf("chat span parent %s (an item's: %v), attributes %v", c.Parent, items[c.Parent], c.Attrs)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, tp := range parents {
		if f := strings.Split(tp, "-"); len(f) != 4 || !ids[f[2]] {
			t.Errorf("traceparent %q does not name an exported chat span", tp)
		}
	}
}

// TestTracingCollectorEchoingTheHeaderIsScrubbed: a collector that refuses
// the export and echoes the Authorization header it got (URL-decoded from
// OTEL_EXPORTER_OTLP_HEADERS, as the exporter sends it) does not put the
// secret on stderr.
func TestTracingCollectorEchoingTheHeaderIsScrubbed(t *testing.T) {
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad credentials: "+r.Header.Get("Authorization"), http.StatusUnauthorized)
	}))
	defer collector.Close()
	b := setup(t)
	target := newEchoTarget(t)
	suite := tracedSuite(b, target.URL)
	withOTLP(t, b, collector.URL)
	b.env = append(b.env, "OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20s3cret%2Bkey")
	code, _, stderr := b.run("run", suite, "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "401 Unauthorized") || strings.Contains(stderr, "s3cret") {
		t.Errorf("stderr:\n%s", stderr)
	}
}

// TestTracingEndpointQuerySecretIsScrubbed: a secret in the endpoint's
// query (an API key some vendors take there) is not on stderr, neither in
// the exporter's error nor in the "collector at" that follows it.
func TestTracingEndpointQuerySecretIsScrubbed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	b := setup(t)
	target := newEchoTarget(t)
	suite := tracedSuite(b, target.URL)
	withOTLP(t, b, "http://"+addr+"/?api_key=s3cret")
	code, _, stderr := b.run("run", suite, "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "traces not exported") || strings.Contains(stderr, "s3cret") {
		t.Errorf("stderr:\n%s", stderr)
	}
}
