package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evalrun/evalrun/examples/agent/fakemodel"
)

// holdingModel is the agent example's fake model, except that the first
// follow-up turn (a request carrying tool messages) of the holdAt-th
// conversation that gets one is held until the client gives up: the test
// interrupts the run while that item is mid-conversation, its tools
// already answered.
type holdingModel struct {
	inner  *fakemodel.Server
	holdAt int
	held   chan struct{} // closed when the held request arrives

	mu        sync.Mutex
	followUps map[string]bool // conversations (first user message) that reached a follow-up turn
	requests  map[string]int  // requests per conversation
}

func (m *holdingModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req fakemodel.Request
	body, _ := io.ReadAll(io.LimitReader(r.Body, fakemodel.MaxRequestBytes))
	_ = json.Unmarshal(body, &req)
	first, tools := "", 0
	for _, msg := range req.Messages {
		if msg.Role == "user" && first == "" {
			first = msg.Text()
		}
		if msg.Role == "tool" {
			tools++
		}
	}
	m.mu.Lock()
	m.requests[first]++
	hold := false
	if tools > 0 && !m.followUps[first] && m.holdAt > 0 {
		m.followUps[first] = true
		if len(m.followUps) == m.holdAt {
			hold = true
		}
	}
	m.mu.Unlock()
	if hold {
		close(m.held)
		<-r.Context().Done()
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	m.inner.ServeHTTP(w, r)
}

// trajectories returns each item's calls (name, args, output, error,
// mocked; latency left out) and steps, as JSON, by id; it fails the test
// on an item reported twice.
func trajectories(t *testing.T, rep *agentReport) map[string]string {
	t.Helper()
	out := make(map[string]string, len(rep.Items))
	for _, it := range rep.Items {
		if _, dup := out[it.ID]; dup {
			t.Errorf("item %s is in the report twice", it.ID)
		}
		calls := make([]any, len(it.Trajectory))
		for i, c := range it.Trajectory {
			calls[i] = []any{c.Name, json.RawMessage(c.Args), json.RawMessage(orNull(c.Output)), c.Error, c.Mocked}
		}
		b, err := json.Marshal([]any{it.Steps, calls, it.Error})
		if err != nil {
			t.Fatal(err)
		}
		out[it.ID] = string(b)
	}
	return out
}

func orNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

func readReport(t *testing.T, path string) *agentReport {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rep := new(agentReport)
	if err := json.Unmarshal(data, rep); err != nil {
		t.Fatalf("report %s: %v", path, err)
	}
	return rep
}

// Ctrl-C while an agent item is mid-conversation: exit 130, the items done
// are stored with their whole trajectories and the interrupted one not at
// all; the resume runs every missing item once, from the first turn, and
// the full report has each item's trajectory once, as an uninterrupted run
// records it.
func TestAgentInterruptThenResume(t *testing.T) {
	_, _, want, _ := runAgentExample(t)
	ref := trajectories(t, want)

	suitePath, err := filepath.Abs("../../examples/agent/suite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	model := &holdingModel{inner: fakemodel.New(), holdAt: 4, held: make(chan struct{}),
		followUps: map[string]bool{}, requests: map[string]int{}}
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	b := setup(t)
	b.env = append(b.env, "AGENT_BASE_URL="+srv.URL+"/v1")
	partial := filepath.Join(b.dir, "partial.json")

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	type outcome struct {
		code   int
		stderr string
	}
	done := make(chan outcome, 1)
	go func() {
		// One item at a time: the held item is the only one in flight.
		code, _, stderr := b.main(ctx, nil, "run", suitePath, "-q", "--concurrency", "1", "-o", partial)
		done <- outcome{code, stderr}
	}()
	select {
	case <-model.held:
	case o := <-done:
		t.Fatalf("the run ended (exit %d) before an item was held\n%s", o.code, o.stderr)
	case <-time.After(15 * time.Second):
		t.Fatal("no item reached its held turn")
	}
	cancel(ErrInterrupted) // what cmd/evalrun does on SIGINT
	o := <-done
	if o.code != ExitInterrupted {
		t.Fatalf("exit %d, want %d\n%s", o.code, ExitInterrupted, o.stderr)
	}
	i := strings.Index(o.stderr, "resume with: evalrun run --resume ")
	if i < 0 {
		t.Fatalf("no resume command:\n%s", o.stderr)
	}
	runID := strings.Fields(o.stderr[i+len("resume with: evalrun run --resume "):])[0]

	got := readReport(t, partial)
	if got.Run.Status != "canceled" || len(got.Items) != got.Run.Succeeded+got.Run.Failed {
		t.Errorf("partial run %+v with %d items", got.Run, len(got.Items))
	}
	// Three conversations finished before the held one (which reached its
	// follow-up turn fourth); an item needing no tool may have finished
	// between them, never the held one.
	if n := len(got.Items); n < 3 || n >= 12 {
		t.Errorf("%d items stored before the interruption, want 3 to 11", n)
	}
	for id, traj := range trajectories(t, got) {
		if traj != ref[id] {
			t.Errorf("item %s stored before the interruption as\n%s\nwant\n%s", id, traj, ref[id])
		}
	}

	model.mu.Lock()
	model.holdAt = 0 // the resume runs unhindered
	model.mu.Unlock()
	full := filepath.Join(b.dir, "full.json")
	code, _, stderr := b.run("run", "--resume", runID, "-q", "-o", full)
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, stderr)
	}
	rep := readReport(t, full)
	if rep.Run.Status != "completed" || rep.Run.Total != 12 || rep.Run.Succeeded != 12 || len(rep.Items) != 12 {
		t.Errorf("resumed run %+v with %d items, want 12 completed", rep.Run, len(rep.Items))
	}
	all := trajectories(t, rep)
	for id, traj := range ref {
		if all[id] != traj {
			t.Errorf("item %s after the resume:\n%s\nwant\n%s", id, all[id], traj)
		}
	}
	if a := rep.Agent; a == nil || a.Items != 12 || a.ToolCalls != want.Agent.ToolCalls || a.MockedCalls != want.Agent.MockedCalls {
		t.Errorf("agent block %+v, want that of an uninterrupted run %+v", a, want.Agent)
	}
	// The model saw each conversation as often as an uninterrupted run
	// does (two turns each, three for the item that waits for the weather,
	// one for the greeting), plus the held item's first two requests.
	model.mu.Lock()
	defer model.mu.Unlock()
	total := 0
	for _, n := range model.requests {
		total += n
	}
	if wantTotal := 24 + 2; total != wantTotal {
		t.Errorf("the model served %d requests, want %d: %v", total, wantTotal, model.requests)
	}
}

// Ctrl-C before the run starts (while the storage opens, migrates or the
// dataset imports) is an interruption like any other: exit 130 and a
// message saying so, not exit 1 with a bare "context canceled".
func TestInterruptBeforeTheRunStarts(t *testing.T) {
	suitePath, err := filepath.Abs("../../examples/agent/suite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := setup(t)
	b.env = append(b.env, "AGENT_BASE_URL=http://127.0.0.1:1/v1") // never called
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(ErrInterrupted)
	code, _, stderr := b.main(ctx, nil, "run", suitePath, "-q")
	if code != ExitInterrupted || !strings.Contains(stderr, "interrupted") {
		t.Errorf("exit %d, want %d, saying it was interrupted:\n%s", code, ExitInterrupted, stderr)
	}
}
