// Package mock is a mock OpenAI-compatible server for evalrun's end-to-end
// workloads: it answers chat completions (echoing the last user message, with
// token usage), embeddings and a plain JSON echo endpoint, after a fixed
// latency, and injects faults by probability from a seeded random source:
// 429 with Retry-After, 500, hangs, connection resets and malformed 200s.
// It counts what it served ([Stats]): requests, in-flight and peak in-flight,
// responses per status and faults per kind.
//
// The package is the standard library only; bench/mockserver wraps it in a
// command, and bench/cmd/workload runs it in-process.
package mock
