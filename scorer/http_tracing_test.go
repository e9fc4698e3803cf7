package scorer_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/evalrun/evalrun/internal/otlptest"
	"github.com/evalrun/evalrun/scorer"
)

// TestHTTPScorerTraceparent: inside a traced run, the grading service's
// request carries the W3C traceparent of the scoring's span, so the
// service's own spans join the eval's trace. (Not parallel: it sets the
// global provider, as the CLI does when tracing is on.)
func TestHTTPScorerTraceparent(t *testing.T) {
	_, tp := otlptest.Record(t)

	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Traceparent")
		io.WriteString(w, `0.5`)
	}))
	t.Cleanup(srv.Close)
	s, err := scorer.NewHTTP(scorer.HTTPOptions{Name: "grader", URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx, span := tp.Tracer("test").Start(context.Background(), "scorer grader")
	if _, err := s.Score(ctx, input("q1", `"q"`, `"a"`, `"a"`)); err != nil {
		t.Fatal(err)
	}
	span.End()
	sc := span.SpanContext()
	want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	if got != want {
		t.Errorf("traceparent = %q, want %q (the scoring span's)", got, want)
	}
}
