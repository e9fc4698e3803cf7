// Command evalrun evaluates LLM applications: it runs a dataset against a
// target, scores every output, stores everything and reports, with exit
// codes for CI. See docs/cli.md; everything but signal handling lives in
// internal/cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/evalrun/evalrun/internal/cli"
)

func main() {
	// A reader that goes away (evalrun run ... | head -1) must not kill
	// the run before its -o reports are written: with SIGPIPE ignored, a
	// write to the closed pipe fails with EPIPE instead, which the CLI
	// treats as output nobody reads.
	signal.Ignore(syscall.SIGPIPE)
	ctx, cancel := context.WithCancelCause(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		cancel(cli.ErrInterrupted) // the first: stop gracefully
		<-sig
		os.Exit(cli.ExitInterrupted) // the second: at once
	}()
	os.Exit(cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Environ()))
}
