// Command otlpsink is a local OTLP/HTTP trace receiver for benchmarks. It
// counts the spans of every protobuf export request posted to /v1/traces
// by walking the protobuf wire format (resource_spans → scope_spans →
// spans) without decoding the spans: it shares the machine with the
// evalrun it measures, so it should cost little. With -decode it decodes
// every request whole, as a collector would. GET /count answers
// "requests spans cpu_seconds" (cpu_seconds: the sink's own user+system
// CPU so far, to report separately from evalrun's).
//
//	go run ./bench/cmd/otlpsink -addr 127.0.0.1:4318
//	OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 go run ./bench/cmd/workload -evalrun dist/evalrun -reps 3 W2
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:4318", "address to listen on")
	decode := flag.Bool("decode", false, "decode every request whole (as a collector would) instead of counting its spans on the wire")
	flag.Parse()
	var requests, spans atomic.Int64
	bufs := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	// An empty ExportTraceServiceResponse encodes to no bytes.
	http.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		buf := bufs.Get().(*bytes.Buffer)
		defer bufs.Put(buf)
		buf.Reset()
		if _, err := io.Copy(buf, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var n int
		var err error
		if *decode {
			n, err = decoded(buf.Bytes())
		} else {
			n, err = count(buf.Bytes())
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		requests.Add(1)
		spans.Add(int64(n))
		w.Header().Set("Content-Type", "application/x-protobuf")
	})
	http.HandleFunc("GET /count", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "%d %d %.2f\n", requests.Load(), spans.Load(), cpu().Seconds())
	})
	log.Fatal(http.ListenAndServe(*addr, nil))
}

// decoded decodes an export request and returns its number of spans.
func decoded(body []byte) (int, error) {
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		return 0, err
	}
	n := 0
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			n += len(ss.Spans)
		}
	}
	return n, nil
}

// count returns the number of spans of an encoded export request:
// ExportTraceServiceRequest.resource_spans (1) → ResourceSpans.scope_spans
// (2) → ScopeSpans.spans (2), every other field skipped.
func count(body []byte) (int, error) {
	n := 0
	err := fields(body, 1, func(rs []byte) error {
		return fields(rs, 2, func(ss []byte) error {
			return fields(ss, 2, func([]byte) error { n++; return nil })
		})
	})
	return n, err
}

// fields calls f with every length-delimited field number num of msg.
func fields(msg []byte, num protowire.Number, f func([]byte) error) error {
	for len(msg) > 0 {
		n, typ, l := protowire.ConsumeTag(msg)
		if l < 0 {
			return protowire.ParseError(l)
		}
		msg = msg[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(msg)
			if l < 0 {
				return protowire.ParseError(l)
			}
			if err := f(v); err != nil {
				return err
			}
			msg = msg[l:]
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, msg)
		if l < 0 {
			return protowire.ParseError(l)
		}
		msg = msg[l:]
	}
	return nil
}

// cpu returns the user and system CPU time of this process so far.
func cpu() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
