package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/evalrun/evalrun/bench/mock"
)

// Workload is one named end-to-end load: a dataset of Items run against the
// mock's chat completions endpoint with the openai target.
type Workload struct {
	Name        string
	Items       int
	Concurrency int
	// Mock configures the mock server for the workload.
	Mock mock.Config
	// Scorer is the suite's scorer kind: exact_match, or contains when
	// the mock pads outputs (the expected output is then a prefix).
	Scorer string
	// Retain is the suite's retain_results; off, the run gets --no-retain.
	Retain     bool
	MaxRetries int
	RetryDelay time.Duration
	// Fixed turns the engine's adaptive concurrency off (adaptive: false).
	Fixed bool
	// InputSize pads every item's input (and expected output) to this
	// many bytes; 0 leaves the short question.
	InputSize int
	// Goal describes what must hold, for the reader of the output.
	Goal string
}

// Ideal is the wall time of a perfect runner: ceil(items/concurrency)
// rounds of the mock's latency.
func (w Workload) Ideal() time.Duration {
	rounds := (w.Items + w.Concurrency - 1) / w.Concurrency
	return time.Duration(rounds) * w.Mock.Latency
}

// Workloads are the standard workloads of issue 8, by name.
var Workloads = []Workload{
	{Name: "W1", Items: 1000, Concurrency: 20, Mock: mock.Config{Latency: 50 * time.Millisecond},
		Scorer: "exact_match", Retain: true, Goal: "wall <= 1.05 x 2.5 s, rss < 60 MB"},
	{Name: "W2", Items: 10000, Concurrency: 20, Scorer: "exact_match", Retain: true,
		Goal: ">= 20 x promptfoo's items/s (106/s -> 2120/s)"},
	{Name: "W3", Items: 100000, Concurrency: 20, Mock: mock.Config{OutputSize: 10 << 10},
		Scorer: "contains", Retain: false, Goal: "rss < 100 MB"},
	{Name: "W4", Items: 1000, Concurrency: 20,
		Mock:   mock.Config{Latency: 50 * time.Millisecond, P429: 0.05, P500: 0.05, RetryAfter: time.Second, Seed: 4},
		Scorer: "exact_match", Retain: true, MaxRetries: 5, RetryDelay: 100 * time.Millisecond,
		Goal: "every item succeeds, peak in-flight <= 20"},
	{Name: "W4F", Items: 1000, Concurrency: 20,
		Mock:   mock.Config{Latency: 50 * time.Millisecond, P429: 0.05, P500: 0.05, RetryAfter: time.Second, Seed: 4},
		Scorer: "exact_match", Retain: true, MaxRetries: 5, RetryDelay: 100 * time.Millisecond, Fixed: true,
		Goal: "W4 with adaptive: false (for comparison; not in the default set)"},
	// M1 is issue 15's million-item memory goal; run it with -target echo
	// (the echo target needs no server). Not in the default set.
	{Name: "M1", Items: 1_000_000, Concurrency: 50, InputSize: 200, Scorer: "exact_match", Retain: false,
		Goal: "rss <= 80 MB (issue 15), also with -o report.json"},
}

// Default names the workloads run when none is named.
var Default = []string{"W1", "W2", "W3", "W4"}

// Find returns the workload of that name (case-insensitive).
func Find(name string) (Workload, bool) {
	for _, w := range Workloads {
		if strings.EqualFold(w.Name, name) {
			return w, true
		}
	}
	return Workload{}, false
}

// input is item i's input: a short question-like text, unique per item.
func input(i int) string {
	return fmt.Sprintf("item %06d: what is %d + %d?", i, i%97, i%89)
}

// WriteDataset writes the workload's JSONL dataset to path: every item's
// expected output is its input, which the mock echoes.
func WriteDataset(path string, w Workload) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	enc := json.NewEncoder(bw)
	for i := range w.Items {
		in := input(i)
		if len(in) < w.InputSize {
			in += strings.Repeat(".", w.InputSize-len(in))
		}
		if err := enc.Encode(map[string]any{"id": fmt.Sprintf("i%06d", i), "input": in, "expected_output": in}); err != nil {
			f.Close()
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// DatasetName is the name of the workload's dataset.
func DatasetName(w Workload) string { return "bench-" + strings.ToLower(w.Name) }

// Suite returns the suite file of the workload for a mock at base
// ("http://127.0.0.1:PORT") and a dataset file next to the suite. kind is
// the target: openai (the mock's chat completions) or http (its /echo).
//
// With datasetFile "" the suite names the dataset without a file: it must
// be imported beforehand (workload -preimport).
func Suite(w Workload, kind, base, datasetFile string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: bench-%s\n", strings.ToLower(w.Name))
	fmt.Fprintf(&b, "dataset:\n  name: %s\n", DatasetName(w))
	if datasetFile != "" {
		fmt.Fprintf(&b, "  file: %s\n", filepath.Base(datasetFile))
	}
	switch kind {
	case "echo":
		b.WriteString("target:\n  kind: echo\n")
	case "http":
		fmt.Fprintf(&b, "target:\n  kind: http\n  url: %s/echo\n  output: output\n", base)
	default:
		fmt.Fprintf(&b, "target:\n  kind: openai\n  base_url: %s/v1\n  api_key_env: BENCH_MOCK_API_KEY\n  model: mock\n  prompt: \"{{ .Input }}\"\n", base)
	}
	fmt.Fprintf(&b, "scorers:\n  - %s\n", w.Scorer)
	fmt.Fprintf(&b, "execution:\n  concurrency: %d\n  max_retries: %d\n", w.Concurrency, w.MaxRetries)
	if w.RetryDelay > 0 {
		fmt.Fprintf(&b, "  retry_delay: %s\n", w.RetryDelay)
	}
	fmt.Fprintf(&b, "  retain_results: %t\n", w.Retain)
	if w.Fixed {
		b.WriteString("  adaptive: false\n")
	}
	return b.String()
}
