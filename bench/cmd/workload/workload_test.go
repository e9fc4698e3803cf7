package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestIdeal(t *testing.T) {
	w, _ := Find("w1")
	if got := w.Ideal(); got != 2500*time.Millisecond {
		t.Errorf("W1 ideal = %v, want 2.5s", got)
	}
	w.Items = 1001
	if got := w.Ideal(); got != 2550*time.Millisecond {
		t.Errorf("1001 items ideal = %v, want 2.55s (one more round)", got)
	}
	if w, _ := Find("W2"); w.Ideal() != 0 {
		t.Errorf("W2 ideal = %v, want 0", w.Ideal())
	}
}

func TestMedian(t *testing.T) {
	runs := []Result{
		{Wall: 3 * time.Second, RSSMB: 40, PeakInFlight: 20, Passed: 1000, Succeeded: 1000, MockRequests: 1000},
		{Wall: 1 * time.Second, RSSMB: 50, PeakInFlight: 19, Passed: 998, Succeeded: 999, Failed: 1, MockRequests: 1010, RC: 1},
		{Wall: 2 * time.Second, RSSMB: 45, PeakInFlight: 21, Passed: 1000, Succeeded: 1000, MockRequests: 1000},
	}
	m := Median(runs)
	if m.Wall != 2*time.Second || m.RSSMB != 45 || m.Reps != 3 {
		t.Errorf("median wall %v rss %v reps %d, want 2s 45 3", m.Wall, m.RSSMB, m.Reps)
	}
	if m.PeakInFlight != 21 || m.MockRequests != 1010 || m.Passed != 998 || m.Succeeded != 999 || m.Failed != 1 || m.RC != 1 {
		t.Errorf("worst-case fields = %+v", m)
	}
	if even := Median(runs[:2]); even.Wall != 2*time.Second {
		t.Errorf("median of two = %v, want their mean 2s", even.Wall)
	}
}

func TestDatasetAndSuite(t *testing.T) {
	w := Workload{Name: "WX", Items: 5, Concurrency: 3, Scorer: "contains", MaxRetries: 2, RetryDelay: 100 * time.Millisecond, Fixed: true}
	path := filepath.Join(t.TempDir(), "data.jsonl")
	if err := WriteDataset(path, w); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ids := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var it struct {
			ID       string `json:"id"`
			Input    string `json:"input"`
			Expected string `json:"expected_output"`
		}
		if err := json.Unmarshal(sc.Bytes(), &it); err != nil {
			t.Fatal(err)
		}
		if it.Input == "" || it.Input != it.Expected {
			t.Errorf("item %+v: expected output must be the input", it)
		}
		ids[it.ID] = true
	}
	if len(ids) != 5 {
		t.Errorf("%d distinct ids, want 5", len(ids))
	}

	s := Suite(w, "openai", "http://127.0.0.1:1", path)
	if h := Suite(w, "http", "http://127.0.0.1:1", path); !strings.Contains(h, "url: http://127.0.0.1:1/echo") || !strings.Contains(h, "output: output") {
		t.Errorf("http suite:\n%s", h)
	}
	for _, want := range []string{"file: data.jsonl", "kind: openai", "base_url: http://127.0.0.1:1/v1", "- contains", "concurrency: 3", "max_retries: 2", "retry_delay: 100ms", "retain_results: false", "adaptive: false"} {
		if !strings.Contains(s, want) {
			t.Errorf("suite lacks %q:\n%s", want, s)
		}
	}
}

func TestRunID(t *testing.T) {
	if got := runID("run 01JABC started: 10 items\nmore"); got != "01JABC" {
		t.Errorf("runID = %q", got)
	}
	if got := runID("error: no such file"); got != "" {
		t.Errorf("runID = %q, want none", got)
	}
}
