package cli

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
)

// A distributed experiment whose coordinator died still has its jobs in
// the queue: workers will execute them. A resume without --distributed
// (of the experiment, or of one variant's run) would execute the same
// items here as well, every one twice, so it is refused (exit 2, nothing
// executed, pointing at --distributed); once the workers are there,
// --resume EXP_ID --distributed finishes the experiment with each item
// answered once.
func TestLocalResumeRefusesRunsStillQueuedForWorkers(t *testing.T) {
	b, srv, suite := setupPostgresExperiment(t, "good", "wrong")
	crash := errors.New("coordinator died (test)")
	var expID string
	afterEnqueue = func(id string) error { expID = id; return crash }
	code, _, stderr := b.run("run", suite, "--distributed", "-q")
	afterEnqueue = nil
	if code == ExitOK || expID == "" {
		t.Fatalf("exit %d, experiment %q, stderr:\n%s", code, expID, stderr)
	}
	exp, err := evalrun.GetExperiment(context.Background(), b.openPG(t), expID)
	if err != nil || len(exp.Runs) != 2 {
		t.Fatalf("GetExperiment: %+v, %v", exp, err)
	}

	for _, id := range []string{expID, exp.Runs[0].ID} {
		code, _, stderr = b.run("run", "--resume", id, "-q")
		if code != ExitUsage || !strings.Contains(stderr, "queued for evalrun worker processes") ||
			!strings.Contains(stderr, "--resume "+expID+" --distributed") {
			t.Errorf("local resume %s of runs queued for workers: exit %d, stderr:\n%s\nwant 2, pointing at --resume %s --distributed",
				id, code, stderr, expID)
		}
	}
	if requests, _ := srv.counts(); len(requests) != 0 {
		t.Fatalf("a refused resume executed items: %v", requests)
	}

	b.startWorker(t)
	code, _, stderr = b.run("run", "--resume", expID, "--distributed", "-q")
	if code != ExitOK {
		t.Fatalf("resume --distributed: exit %d, stderr:\n%s", code, stderr)
	}
	requests, _ := srv.counts()
	for _, v := range []string{"good", "wrong"} {
		for _, id := range []string{"a", "b", "c"} {
			if n := requests[v+"/"+id]; n != 1 {
				t.Errorf("variant %s item %s requested %d times, want 1", v, id, n)
			}
		}
	}
}
