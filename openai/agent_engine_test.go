package openai

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/inmem"
)

// The agent through the engine: what a retried or cancelled conversation
// leaves in the store.

// assistantTurns counts the assistant messages of a request: the model
// turns the conversation has had.
func assistantTurns(req wireRequest) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// storedResults returns the run's stored results.
func storedResults(t *testing.T, store *inmem.Store, runID string) []*evalrun.ItemResult {
	t.Helper()
	var out []*evalrun.ItemResult
	err := store.ScanResults(context.Background(), runID, evalrun.ResultQuery{}, func(r *evalrun.ItemResult) error {
		out = append(out, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAgentTransient429InThirdTurnIsRetried(t *testing.T) {
	var limited atomic.Bool
	m := newFakeModel(t, func(turn int, req wireRequest, _ *http.Request) turnReply {
		switch assistantTurns(req) {
		case 0:
			return callTools(turn, call{"search", `{"q":"capital of France"}`})
		case 1:
			return callTools(turn, call{"get_weather", `{"city":"Paris"}`})
		}
		if limited.CompareAndSwap(false, true) {
			return turnReply{http.StatusTooManyRequests, `{"error":{"message":"rate limited","type":"requests"}}`}
		}
		return answer("18 degrees in Paris")
	})
	item := weatherItem()
	item.ToolMocks = append(item.ToolMocks, evalrun.ToolMock{Name: "search", Output: evalrun.String("Paris")})
	ct := newAgent(t, m, ChatTargetConfig{Tools: []Tool{{Name: "search"}, weatherTool}})

	store := inmem.New()
	ctx := context.Background()
	if _, _, err := store.ImportDataset(ctx, "agent", []*evalrun.Item{item}); err != nil {
		t.Fatal(err)
	}
	sum, err := engine.Run(ctx, store, engine.Spec{
		Run:   &evalrun.Run{Dataset: "agent", DatasetVersion: 1, Name: "retry"},
		Items: []*evalrun.Item{item}, Target: ct,
		Options: engine.Options{MaxRetries: 2, RetryDelay: time.Millisecond, Clock: newFakeClock(),
			Jitter: func(time.Duration) time.Duration { return 0 }},
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Succeeded != 1 {
		t.Fatalf("summary = %+v", sum)
	}
	reqs := m.requests()
	if len(reqs) != 6 {
		t.Fatalf("%d model requests, want 3 (the third one limited) + 3", len(reqs))
	}
	if n := len(reqs[3].Messages); n != 1 || reqs[3].Messages[0].Role != "user" {
		t.Errorf("the retry's first request has %d messages: the conversation did not start again", n)
	}
	results := storedResults(t, store, sum.RunID)
	if len(results) != 1 {
		t.Fatalf("%d stored results", len(results))
	}
	r := results[0]
	if r.Failed() || r.Attempts != 2 || evalrun.Text(r.Output) != "18 degrees in Paris" {
		t.Errorf("result = %+v", r)
	}
	tr := r.Trajectory
	if tr == nil || tr.Steps != 3 || len(tr.Calls) != 2 || tr.Calls[0].Name != "search" || tr.Calls[1].Name != "get_weather" {
		t.Fatalf("stored trajectory = %+v, want the second attempt's alone", tr)
	}
	// Both attempts' spend: 2 answered turns before the 429, 3 after.
	if r.Usage.InputTokens == nil || *r.Usage.InputTokens != 50 || *r.Usage.OutputTokens != 25 {
		t.Errorf("usage = %+v, want 50 in, 25 out", r.Usage)
	}
}

func TestAgentCanceledMidConversationStoresNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := newFakeModel(t, func(turn int, req wireRequest, r *http.Request) turnReply {
		if content(req.Messages[0]) == "quick" {
			return answer("done")
		}
		if assistantTurns(req) == 0 {
			return callTools(turn, call{"get_weather", `{"city":"Paris"}`})
		}
		cancel() // the run is cancelled while the model thinks
		<-r.Context().Done()
		return answer("too late")
	})
	quick := &evalrun.Item{ID: "quick", Input: evalrun.String("quick")}
	cut := weatherItem()
	items := []*evalrun.Item{quick, cut}
	ct := newAgent(t, m, ChatTargetConfig{Tools: []Tool{weatherTool}})
	store := inmem.New()
	if _, _, err := store.ImportDataset(context.Background(), "agent", items); err != nil {
		t.Fatal(err)
	}
	sum, err := engine.Run(ctx, store, engine.Spec{
		Run:   &evalrun.Run{Dataset: "agent", DatasetVersion: 1, Name: "cancel"},
		Items: items, Target: ct, Options: engine.Options{Concurrency: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != evalrun.RunCanceled || sum.Succeeded != 1 || sum.Skipped != 1 || sum.Failed != 0 {
		t.Fatalf("summary = %+v", sum)
	}
	results := storedResults(t, store, sum.RunID)
	if len(results) != 1 || results[0].ItemID != "quick" {
		t.Fatalf("stored results = %+v, want the quick item's alone", results)
	}
	rec, err := store.GetRun(context.Background(), sum.RunID)
	if err != nil || rec.Skipped != 1 {
		t.Errorf("run record = %+v, %v", rec, err)
	}
}

// A tool that hangs past the item's deadline, ignoring its context: the
// engine stops waiting at the deadline, and the failed result still shows
// what the agent did, the hung call marked as cut short.
func TestAgentTimedOutItemKeepsItsTrajectory(t *testing.T) {
	m := newFakeModel(t, func(turn int, req wireRequest, _ *http.Request) turnReply {
		switch assistantTurns(req) {
		case 0:
			return callTools(turn, call{"search", `{"q":"capital of France"}`})
		case 1:
			return callTools(turn, call{"get_weather", `{"city":"Paris"}`}, call{"search", `{"q":"again"}`})
		}
		return answer("unreachable")
	})
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	hung := evalrun.TargetFunc(func(context.Context, *evalrun.Item) (evalrun.Output, error) {
		close(started)
		<-release // ignores its context on purpose
		return evalrun.Output{Value: evalrun.String("late")}, nil
	})
	item := &evalrun.Item{ID: "w1", Input: evalrun.String("Weather in Paris?"),
		ToolMocks: []evalrun.ToolMock{{Name: "search", Output: evalrun.String("Paris")}}}
	weather := weatherTool
	weather.Run = hung
	ct := newAgent(t, m, ChatTargetConfig{Tools: []Tool{{Name: "search"}, weather}})

	store := inmem.New()
	ctx := context.Background()
	if _, _, err := store.ImportDataset(ctx, "agent", []*evalrun.Item{item}); err != nil {
		t.Fatal(err)
	}
	sum, err := engine.Run(ctx, store, engine.Spec{
		Run:   &evalrun.Run{Dataset: "agent", DatasetVersion: 1, Name: "timeout"},
		Items: []*evalrun.Item{item}, Target: ct,
		// The deadline is what the test is about: it must pass while the
		// tool hangs (the tool is released only when the test ends).
		Options: engine.Options{ItemTimeout: 300 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if sum.Failed != 1 {
		t.Fatalf("summary = %+v", sum)
	}
	res := storedResults(t, store, sum.RunID)
	if len(res) != 1 {
		t.Fatalf("%d results stored", len(res))
	}
	r := res[0]
	if r.ErrorKind != evalrun.ErrorTimeout || r.Trajectory == nil {
		t.Fatalf("result = %+v", r)
	}
	calls := r.Trajectory.Calls
	if r.Trajectory.Steps != 2 || len(calls) != 3 {
		t.Fatalf("trajectory = %+v", r.Trajectory)
	}
	if calls[0].Name != "search" || !calls[0].Mocked || evalrun.Text(calls[0].Output) != "Paris" {
		t.Errorf("first call = %+v", calls[0])
	}
	if calls[1].Name != "get_weather" || calls[1].Output != nil || calls[1].Error != timedOutCall || calls[1].LatencyMS != nil {
		t.Errorf("hung call = %+v", calls[1])
	}
	if calls[2].Name != "search" || !calls[2].Mocked || calls[2].Error != "" {
		t.Errorf("the mocked call of the same turn = %+v", calls[2])
	}
}
