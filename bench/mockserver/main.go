// Command mockserver serves the mock OpenAI-compatible API of package
// bench/mock on a loopback address, for evalrun's end-to-end workloads and
// for trying suites offline.
//
//	mockserver -port 0 -port-file /tmp/mock.port -latency 50 -p429 0.05 -retry-after 1
//
// Endpoints: POST /v1/chat/completions, POST /v1/embeddings, POST /echo,
// GET /stats, POST /stats/reset. It stops on SIGINT or SIGTERM, or after
// -max-runtime.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/evalrun/evalrun/bench/mock"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mockserver:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		host       = flag.String("host", "127.0.0.1", "listen address; loopback only")
		port       = flag.Int("port", 8089, "port; 0 picks a free one")
		portFile   = flag.String("port-file", "", "write the port chosen to this file once listening")
		latency    = flag.Int("latency", 0, "latency of every request, ms")
		size       = flag.Int("size", 0, "pad string outputs to at least this many bytes")
		p429       = flag.Float64("p429", 0, "probability of a 429 with Retry-After")
		retryAfter = flag.Int("retry-after", 1, "Retry-After of a 429, seconds")
		p500       = flag.Float64("p500", 0, "probability of a 500")
		phang      = flag.Float64("phang", 0, "probability of a hang (until the client gives up, capped by -hang-max)")
		hangMax    = flag.Duration("hang-max", mock.DefaultHangMax, "longest hang; a 504 follows")
		preset     = flag.Float64("preset", 0, "probability of a connection reset")
		pmalformed = flag.Float64("pmalformed", 0, "probability of a 200 with a truncated JSON body")
		seed       = flag.Uint64("seed", 1, "seed of the fault draws")
		maxRuntime = flag.Duration("max-runtime", 2*time.Hour, "stop after this long")
	)
	flag.Parse()
	if ip := net.ParseIP(*host); *host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("-host %q: only a loopback address is allowed", *host)
	}
	srv, err := mock.New(mock.Config{
		Latency: time.Duration(*latency) * time.Millisecond, OutputSize: *size,
		P429: *p429, P500: *p500, PHang: *phang, PReset: *preset, PMalformed: *pmalformed,
		RetryAfter: time.Duration(*retryAfter) * time.Second, HangMax: *hangMax, Seed: *seed,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return err
	}
	actual := ln.Addr().(*net.TCPAddr).Port
	if *portFile != "" {
		tmp := *portFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(strconv.Itoa(actual)+"\n"), 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, *portFile); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "mockserver listening on %s\n", ln.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *maxRuntime)
	defer cancel()
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer scancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	hs.Close()
	return nil
}
