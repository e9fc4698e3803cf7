// Command fakemodel serves the variants example's fake model (package
// examples/variants/fakemodel) on 127.0.0.1: an OpenAI-compatible chat
// completions server that answers capitals by fixed rules, so that
// examples/variants runs offline with no API key.
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
	"github.com/evalrun/evalrun/examples/internal/fakeserve"
	"github.com/evalrun/evalrun/examples/variants/fakemodel"
)

func main() { fakeserve.Main(fakemodel.New()) }
