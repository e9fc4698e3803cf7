// Command fakemodel serves the agent example's fake model (package
// examples/agent/fakemodel) on 127.0.0.1: an OpenAI-compatible chat
// completions server that calls tools by fixed rules, so that
// examples/agent runs offline with no API key.
//
//	fakemodel [-addr 127.0.0.1:0] [-url-file PATH]
//
// It prints its base URL (http://127.0.0.1:PORT/v1) on standard output
// and, with -url-file, writes it to PATH (atomically, so that a script
// waiting for the file never reads half of it). It stops on SIGINT or
// SIGTERM. The command line is examples/internal/fakeserve's, shared with
// the other examples' fake models.
package main

import (
	"github.com/evalrun/evalrun/examples/agent/fakemodel"
	"github.com/evalrun/evalrun/examples/internal/fakeserve"
)

func main() { fakeserve.Main(fakemodel.New()) }
