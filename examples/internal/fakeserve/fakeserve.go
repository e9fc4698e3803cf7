// Package fakeserve is the command line of the examples' fake models
// (examples/agent/cmd/fakemodel, examples/variants/cmd/fakemodel): it
// serves a model's handler on 127.0.0.1 and tells the example's run.sh
// where.
package fakeserve

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// Main is a fake model command's main:
//
//	fakemodel [-addr 127.0.0.1:0] [-url-file PATH]
//
// It serves h, prints the base URL (http://127.0.0.1:PORT/v1) on standard
// output and, with -url-file, writes it to PATH (atomically, so that a
// script waiting for the file never reads half of it). It stops on SIGINT
// or SIGTERM; on an error it prints it and exits with status 1.
func Main(h http.Handler) {
	addr := flag.String("addr", "127.0.0.1:0", "the address to listen on (port 0: a free port)")
	urlFile := flag.String("url-file", "", "write the base URL to this file once listening")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ready := func(url string) { fmt.Println("fakemodel: serving", url) }
	if err := Serve(ctx, h, *addr, *urlFile, ready); err != nil {
		fmt.Fprintln(os.Stderr, "fakemodel:", err)
		os.Exit(1)
	}
}

// Serve serves h on addr until ctx ends, calling ready with the base URL
// once it listens (after writing urlFile, when given).
func Serve(ctx context.Context, h http.Handler, addr, urlFile string, ready func(url string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String() + "/v1"
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if urlFile != "" {
		tmp := filepath.Join(filepath.Dir(urlFile), "."+filepath.Base(urlFile)+".tmp")
		if err := os.WriteFile(tmp, []byte(url+"\n"), 0o644); err != nil {
			ln.Close()
			return err
		}
		if err := os.Rename(tmp, urlFile); err != nil {
			ln.Close()
			return err
		}
	}
	ready(url)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
