package river

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/evalrun/evalrun"
)

// Jobs asking for a run's status while a read is under way share the next
// read, which starts after they asked: they see a cancel that happened
// during the first read, which a job that asked before it does not.
func TestStatusReaderSharesTheNextRead(t *testing.T) {
	var reads atomic.Int32
	entered, gate := make(chan struct{}, 4), make(chan struct{})
	status := evalrun.RunRunning
	queued := make(chan int, 8)
	r := &statusReader{
		read: func(_ context.Context, runID string) (evalrun.RunStatus, error) {
			if runID != "r" {
				return "", errors.New("wrong run")
			}
			if reads.Add(1) == 1 {
				entered <- struct{}{}
				<-gate
				return evalrun.RunRunning, nil
			}
			return status, nil
		},
		queued: func(n int) { queued <- n },
	}
	type answer struct {
		status evalrun.RunStatus
		err    error
	}
	first := make(chan answer, 1)
	go func() {
		s, err := r.status(context.Background(), "r")
		first <- answer{s, err}
	}()
	<-entered
	<-queued
	// The run is cancelled while the first read is under way; three jobs
	// ask meanwhile.
	status = evalrun.RunCanceled
	later := make(chan answer, 3)
	for k := 1; k <= 3; k++ {
		go func() {
			s, err := r.status(context.Background(), "r")
			later <- answer{s, err}
		}()
		if n := <-queued; n != k {
			t.Fatalf("%d jobs wait for the next read, want %d", n, k)
		}
	}
	close(gate)
	if a := <-first; a.err != nil || a.status != evalrun.RunRunning {
		t.Errorf("first job got %v, %v; want running (it asked before the cancel)", a.status, a.err)
	}
	for range 3 {
		if a := <-later; a.err != nil || a.status != evalrun.RunCanceled {
			t.Errorf("a later job got %v, %v; want canceled", a.status, a.err)
		}
	}
	if n := reads.Load(); n != 2 {
		t.Errorf("%d reads, want 2 (the three later jobs share one)", n)
	}
	// Idle again: the next question reads at once.
	if s, err := r.status(context.Background(), "r"); err != nil || s != evalrun.RunCanceled || reads.Load() != 3 {
		t.Errorf("status = %v, %v after %d reads; want canceled from a third read", s, err, reads.Load())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.runs) != 0 {
		t.Errorf("%d runs still tracked when no job waits", len(r.runs))
	}
}
