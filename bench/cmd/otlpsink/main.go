// Command otlpsink is a local OTLP/HTTP trace receiver for benchmarks: it
// decodes every protobuf export request posted to /v1/traces (as a
// collector would) and counts the spans. GET /count answers the counts so
// far as "requests spans".
//
//	go run ./bench/cmd/otlpsink -addr 127.0.0.1:4318
//	OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 go run ./bench/cmd/workload -evalrun dist/evalrun -reps 3 W2
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"sync/atomic"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:4318", "address to listen on")
	flag.Parse()
	var requests, spans atomic.Int64
	http.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n := 0
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				n += len(ss.Spans)
			}
		}
		requests.Add(1)
		spans.Add(int64(n))
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	})
	http.HandleFunc("GET /count", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "%d %d\n", requests.Load(), spans.Load())
	})
	log.Fatal(http.ListenAndServe(*addr, nil))
}
