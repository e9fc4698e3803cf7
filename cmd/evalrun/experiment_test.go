package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// variantFake answers {"answer": "answer i"} to the variant posting to
// /v/NAME, counting requests and answers per (variant, item); from the
// item with index holdFrom on, while holding, a variant's requests wait
// until the client gives up, and held is closed once every variant has
// one waiting.
type variantFake struct {
	*httptest.Server
	mu       sync.Mutex
	requests map[string]int
	answered map[string]int
	holding  bool
	waiting  map[string]bool
	variants int
	held     chan struct{}
	heldOnce sync.Once
}

func newVariantFake(t *testing.T, variants, holdFrom int) *variantFake {
	f := &variantFake{requests: map[string]int{}, answered: map[string]int{}, waiting: map[string]bool{},
		holding: true, variants: variants, held: make(chan struct{})}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := strings.TrimPrefix(r.URL.Path, "/v/")
		var body struct{ ID, Input string }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var idx int
		fmt.Sscanf(body.ID, "q%d", &idx)
		f.mu.Lock()
		f.requests[v+"/"+body.ID]++
		hold := f.holding && idx >= holdFrom
		if hold {
			f.waiting[v] = true
			if len(f.waiting) == f.variants {
				f.heldOnce.Do(func() { close(f.held) })
			}
		}
		f.mu.Unlock()
		if hold {
			<-r.Context().Done()
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"answer": strings.Replace(body.Input, "question", "answer", 1)})
		f.mu.Lock()
		f.answered[v+"/"+body.ID]++
		f.mu.Unlock()
	}))
	t.Cleanup(f.Close)
	return f
}

// SIGINT to an experiment whose three variants are each mid-item: exit
// 130, the printed resume command resumes the experiment, and every
// variant's every item is answered exactly once over both processes.
func TestExperimentSIGINTThenResume(t *testing.T) {
	const n = 6
	e := newEnv(t)
	fake := newVariantFake(t, 3, 3)
	e.write("data.jsonl", items(n))
	e.write("suite.yaml", fmt.Sprintf(`name: exp
dataset: {name: e2e, file: data.jsonl}
target: {kind: http, url: %[1]s/v/none, output: answer}
scorers: [exact_match]
execution: {concurrency: 1}
variants:
  - name: a
    target: {url: %[1]s/v/a}
  - name: b
    target: {url: %[1]s/v/b}
  - name: c
    target: {url: %[1]s/v/c}
`, fake.URL))
	stderr := signalWhen(t, e.command("run", "suite.yaml", "-q", "-o", "partial.json"), fake.held, syscall.SIGINT)
	m := regexp.MustCompile(`(?m)^resume with: evalrun run --resume (exp-\S+)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no resume command:\n%s", stderr)
	}
	if !strings.HasPrefix(stderr, "experiment "+m[1]+" started: ") {
		t.Errorf("first line:\n%s", stderr)
	}
	runs := regexp.MustCompile(`(?m)^run (\S+) variant (\S+): `).FindAllStringSubmatch(stderr, -1)
	if len(runs) != 3 {
		t.Fatalf("run lines %v:\n%s", runs, stderr)
	}
	for _, r := range runs {
		if got := showRun(t, e, r[1]); got.Status != "canceled" || got.Succeeded != 3 || got.Experiment != m[1] || got.Variant != r[2] {
			t.Errorf("run %s after SIGINT: %s, %d succeeded, experiment %q variant %q", r[1], got.Status, got.Succeeded, got.Experiment, got.Variant)
		}
	}

	fake.mu.Lock()
	fake.holding = false
	fake.mu.Unlock()
	res := e.run("run", "--resume", m[1], "-q", "-o", "full.json")
	if res.code != 0 {
		t.Fatalf("resume: exit %d\n%s", res.code, res.stderr)
	}
	var rep struct {
		Variants []struct {
			Name, Status string
			Succeeded    int
		}
		Items []json.RawMessage
	}
	out := e.run("report", "--experiment", m[1], "--format", "json")
	if err := json.Unmarshal([]byte(out.stdout), &rep); err != nil || len(rep.Variants) != 3 || len(rep.Items) != n {
		t.Fatalf("report --experiment: %v\n%s", err, out.stdout)
	}
	for _, v := range rep.Variants {
		if v.Status != "completed" || v.Succeeded != n {
			t.Errorf("variant %s: %s, %d succeeded", v.Name, v.Status, v.Succeeded)
		}
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	for _, v := range []string{"a", "b", "c"} {
		for i := range n {
			k := fmt.Sprintf("%s/q%d", v, i)
			if fake.answered[k] != 1 {
				t.Errorf("%s answered %d times, want exactly once", k, fake.answered[k])
			}
			if want := 1 + map[bool]int{true: 1}[i == 3]; fake.requests[k] != want {
				t.Errorf("%s requested %d times, want %d", k, fake.requests[k], want)
			}
		}
	}
}
