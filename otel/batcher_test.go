package otel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

func TestReadBatchConfig(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	c, err := readBatchConfig(env())
	if err != nil || c != (batchConfig{DefaultScheduleDelay, DefaultBatchExportTimeout, DefaultMaxQueueSize, DefaultMaxExportBatch}) {
		t.Errorf("defaults: %+v, %v", c, err)
	}
	c, err = readBatchConfig(env(EnvBSPScheduleDelay, "250", EnvBSPExportTimeout, " 0 ", EnvBSPMaxQueueSize, "100", EnvBSPMaxExportBatch, "10"))
	if err != nil || c != (batchConfig{250 * time.Millisecond, 0, 100, 10}) {
		t.Errorf("set: %+v, %v", c, err)
	}
	// A batch larger than the queue is cut to it; a delay of 0 is 1 ms.
	c, err = readBatchConfig(env(EnvBSPMaxQueueSize, "100", EnvBSPMaxExportBatch, "1000", EnvBSPScheduleDelay, "0"))
	if err != nil || c.maxBatch != 100 || c.scheduleDelay != time.Millisecond {
		t.Errorf("batch past the queue: %+v, %v", c, err)
	}
	for _, bad := range [][2]string{
		{EnvBSPScheduleDelay, "5s"},
		{EnvBSPExportTimeout, "-1"},
		{EnvBSPMaxQueueSize, "0"},
		{EnvBSPMaxQueueSize, "99999999999"},
		{EnvBSPMaxExportBatch, "lots"},
		// Past what a time.Duration holds: the product wrapped around to a
		// delay of 1 ms (a spinning export goroutine) or an export timeout
		// of 0.45 ms (every export failing), not the ~300 years asked for.
		{EnvBSPScheduleDelay, "9223372036854775807"},
		{EnvBSPExportTimeout, "18446744073710"},
	} {
		_, err := readBatchConfig(env(bad[0], bad[1]))
		if err == nil || !strings.Contains(err.Error(), bad[0]) || !strings.Contains(err.Error(), fmt.Sprintf("%q", bad[1])) {
			t.Errorf("%s=%s: %v, want an error naming the variable and its value", bad[0], bad[1], err)
		}
	}
}

// receiver is an OTLP/HTTP receiver that decodes every request with the
// official types and sends its span count on counts (unbuffered: a test
// that does not read holds the exporter, as a slow collector would). It
// says on arrived that a request came in, then waits for gate, when set,
// before it reads the request.
type receiver struct {
	counts  chan int
	arrived chan struct{} // a request came in (buffered)
	gate    chan struct{}
}

func newReceiver(t *testing.T, gate chan struct{}) (*receiver, *httptest.Server) {
	r := &receiver{counts: make(chan int), arrived: make(chan struct{}, 1000), gate: gate}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.arrived <- struct{}{}
		body, _ := io.ReadAll(req.Body)
		var msg coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &msg); err != nil {
			t.Errorf("request does not decode: %v", err)
		}
		n := 0
		for _, rs := range msg.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				n += len(ss.Spans)
			}
		}
		if r.gate != nil {
			<-r.gate
		}
		select {
		case r.counts <- n:
		case <-req.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	return r, srv
}

// newTestBatcher returns a tracer provider whose spans go through a
// batcher with cfg to srv.
func newTestBatcher(t *testing.T, srv *httptest.Server, cfg batchConfig) (*sdktrace.TracerProvider, *spanBatcher) {
	ecfg, err := readConfig(func(k string) string {
		if k == EnvEndpoint {
			return srv.URL
		}
		return ""
	}, readPEMFile)
	if err != nil {
		t.Fatal(err)
	}
	b := newSpanBatcher(newExporter(ecfg, "test"), cfg)
	var mu sync.Mutex
	var errs []error
	b.report = func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, err := range errs {
			t.Errorf("export error: %v", err)
		}
	})
	return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b)), b
}

func endSpans(tp *sdktrace.TracerProvider, n int) {
	tr := tp.Tracer("test")
	for range n {
		_, s := tr.Start(context.Background(), "s")
		s.End()
	}
}

// TestBatcherBatches: full batches go out as they fill, without a flush;
// a partial one waits for ForceFlush (the schedule delay is an hour), and
// every span arrives once.
func TestBatcherBatches(t *testing.T) {
	recv, srv := newReceiver(t, nil)
	tp, _ := newTestBatcher(t, srv, batchConfig{scheduleDelay: time.Hour, maxQueue: 100, maxBatch: 4})
	endSpans(tp, 10) // never blocks: the queue has room
	for i := range 2 {
		if n := <-recv.counts; n != 4 {
			t.Errorf("request %d: %d spans, want a full batch of 4", i, n)
		}
	}
	flushed := make(chan error)
	go func() { flushed <- tp.ForceFlush(context.Background()) }()
	if n := <-recv.counts; n != 2 {
		t.Errorf("flush: %d spans, want the 2 left", n)
	}
	if err := <-flushed; err != nil {
		t.Error(err)
	}
	// Nothing left: Shutdown sends nothing more (a request would block
	// on counts, which nobody reads, and fail the shutdown's deadline).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// TestBatcherScheduleDelay: a partial batch is exported once the schedule
// delay has passed, with no flush.
func TestBatcherScheduleDelay(t *testing.T) {
	recv, srv := newReceiver(t, nil)
	tp, _ := newTestBatcher(t, srv, batchConfig{scheduleDelay: time.Millisecond, maxQueue: 100, maxBatch: 50})
	endSpans(tp, 3)
	if n := <-recv.counts; n != 3 {
		t.Errorf("%d spans, want 3", n)
	}
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestBatcherDropsPastTheQueueAndSaysSo: while the collector holds an
// export, the run goes on (OnEnd never blocks) and spans past the queue
// are dropped; Shutdown delivers the rest and reports how many were
// dropped. Delivered + dropped = ended.
func TestBatcherDropsPastTheQueueAndSaysSo(t *testing.T) {
	gate := make(chan struct{})
	recv, srv := newReceiver(t, gate)
	tp, _ := newTestBatcher(t, srv, batchConfig{scheduleDelay: time.Hour, maxQueue: 6, maxBatch: 2})
	// The first full batch goes to the export goroutine, which posts it;
	// the collector holds it at the gate.
	endSpans(tp, 2)
	<-recv.arrived
	// 6 more fill the queue (3 batches waiting), the next 12 are dropped.
	endSpans(tp, 18)
	close(gate)
	done := make(chan error)
	go func() { done <- tp.Shutdown(context.Background()) }()
	delivered := 0
	for delivered < 8 {
		delivered += <-recv.counts
	}
	err := <-done
	if !errors.Is(err, errDropped) || !strings.HasPrefix(err.Error(), "12 spans dropped: more than 6 waited for the collector (OTEL_BSP_MAX_QUEUE_SIZE)") {
		t.Errorf("Shutdown = %v, want 12 spans dropped", err)
	}
	if delivered != 8 {
		t.Errorf("%d spans delivered, want 8 (20 ended, 12 dropped)", delivered)
	}
}

// TestBatcherConcurrentSpansAllArrive: spans ended from many goroutines
// while flushes run arrive once each (run with -race).
func TestBatcherConcurrentSpansAllArrive(t *testing.T) {
	recv, srv := newReceiver(t, nil)
	tp, _ := newTestBatcher(t, srv, batchConfig{scheduleDelay: time.Millisecond, maxQueue: 1 << 16, maxBatch: 7})
	total := make(chan int)
	go func() {
		n := 0
		for c := range recv.counts {
			if c > 7 {
				t.Errorf("a request of %d spans, batch is 7", c)
			}
			n += c
		}
		total <- n
	}()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			endSpans(tp, 250)
			if err := tp.ForceFlush(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
	srv.Close() // no request is under way: the receiver's loop can end
	close(recv.counts)
	if n := <-total; n != 8*250 {
		t.Errorf("%d spans arrived, want %d", n, 8*250)
	}
}

// TestBatcherShutdownBoundedByContext: a collector that never answers
// delays Shutdown until its context ends, not longer, and the error says
// so.
func TestBatcherShutdownBoundedByContext(t *testing.T) {
	gate := make(chan struct{}) // never closed: the collector hangs
	_, srv := newReceiver(t, gate)
	defer close(gate)
	tp, b := newTestBatcher(t, srv, batchConfig{scheduleDelay: time.Hour, maxQueue: 100, maxBatch: 10})
	b.report = func(error) {} // the cancelled export's error is expected
	endSpans(tp, 3)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- tp.Shutdown(ctx) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown = %v, want the context's error", err)
	}
}

// TestBatcherShutdownReportsNoCancelledExport: the export Shutdown
// cancels when its context ends (and those after it, refused by the
// stopped exporter) are not reported through the error handler: Shutdown
// returns why they failed. Reported, the first of them became the
// Tracing's first error, so that the exit said "the exporter is shut down:
// Post ...: context canceled" instead of "the collector did not answer in
// time", depending on which goroutine ran first; and for a library user it
// reached the error handler Shutdown had already put back (by default,
// the log on stderr).
func TestBatcherShutdownReportsNoCancelledExport(t *testing.T) {
	gate := make(chan struct{}) // never closed: the collector hangs
	recv, srv := newReceiver(t, gate)
	defer close(gate)
	tp, b := newTestBatcher(t, srv, batchConfig{scheduleDelay: time.Hour, maxQueue: 100, maxBatch: 2})
	var mu sync.Mutex
	var reported []error
	b.report = func(err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() }
	endSpans(tp, 5) // two full batches, the first posted (and held), and a partial one
	<-recv.arrived
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// The batcher's own Shutdown: the provider's returns at once, without
	// calling it, when its context has ended already.
	if err := b.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown = %v, want the context's error", err)
	}
	<-b.done
	mu.Lock()
	defer mu.Unlock()
	for _, err := range reported {
		t.Errorf("reported after Shutdown cancelled it: %v", err)
	}
}

// TestBatcherSkipsUnsampledSpans: a span that records but is not sampled
// (a sampler's RecordOnly) is not exported, as with the SDK's processor.
func TestBatcherSkipsUnsampledSpans(t *testing.T) {
	recv, srv := newReceiver(t, nil)
	_, b := newTestBatcher(t, srv, batchConfig{scheduleDelay: time.Hour, maxQueue: 100, maxBatch: 10})
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b), sdktrace.WithSampler(recordOnly{}))
	endSpans(tp, 3)
	b.mu.Lock()
	n := len(b.cur)
	b.mu.Unlock()
	if n != 0 {
		t.Errorf("%d unsampled spans batched", n)
	}
	_ = recv
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

type recordOnly struct{}

func (recordOnly) ShouldSample(sdktrace.SamplingParameters) sdktrace.SamplingResult {
	return sdktrace.SamplingResult{Decision: sdktrace.RecordOnly}
}
func (recordOnly) Description() string { return "record only" }
