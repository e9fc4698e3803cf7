package river

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/evalrun/evalrun"
)

// statusTimeout bounds one read of a run's status shared by several jobs:
// it is not cancelled with the job that leads it.
const statusTimeout = 10 * time.Second

// statusReader reads the status of a run for the jobs starting together
// with one query instead of one per job. A job asking while no read of
// its run is under way reads at once; the jobs asking during a read wait
// for the next one, which starts after they asked: like a query of its
// own, the answer a job gets is never older than its question, so a job
// of a run cancelled before it asked never executes.
//
// As in resultBatcher, the job that finds a run idle leads: it reads for
// every job waiting, then hands the lead to one that arrived meanwhile.
// It is safe for concurrent use.
type statusReader struct {
	read func(ctx context.Context, runID string) (evalrun.RunStatus, error)
	// queued, when set, is told how many jobs wait for the next read of
	// the run each time one arrives (tests).
	queued func(n int)

	mu   sync.Mutex
	runs map[string]*statusRound
}

// statusRound is the jobs of one run waiting for its next read.
type statusRound struct {
	reading bool
	waiting []chan statusAnswer
}

// statusAnswer is what a waiting job receives: the status read, or lead.
type statusAnswer struct {
	status evalrun.RunStatus
	err    error
	lead   bool
}

// status returns the status of runID read after this call began.
func (r *statusReader) status(ctx context.Context, runID string) (evalrun.RunStatus, error) {
	me := make(chan statusAnswer, 1)
	r.mu.Lock()
	if r.runs == nil {
		r.runs = make(map[string]*statusRound)
	}
	round := r.runs[runID]
	if round == nil {
		round = &statusRound{}
		r.runs[runID] = round
	}
	round.waiting = append(round.waiting, me)
	lead := !round.reading
	round.reading = true
	n := len(round.waiting)
	r.mu.Unlock()
	if r.queued != nil {
		r.queued(n)
	}
	if !lead {
		if a := <-me; !a.lead {
			return a.status, a.err
		}
	}

	r.mu.Lock()
	askers := round.waiting
	round.waiting = nil
	r.mu.Unlock()
	// Whatever happens to the read, even a panic, every asker gets an
	// answer and the lead goes on (see resultBatcher.flush).
	var status evalrun.RunStatus
	err := errReadPanicked
	defer func() {
		for _, c := range askers {
			if c != me {
				c <- statusAnswer{status: status, err: err}
			}
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(round.waiting) == 0 {
			delete(r.runs, runID)
		} else {
			round.waiting[0] <- statusAnswer{lead: true}
		}
	}()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), statusTimeout)
	defer cancel()
	status, err = r.read(rctx, runID)
	return status, err
}

// errReadPanicked is the answer of a status read that panicked.
var errReadPanicked = errors.New("run status read panicked")
