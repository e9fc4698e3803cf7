package cli

import (
	"context"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// unclaimedStore answers every ClaimRun "not applied" with the run pending
// and claimed by nobody, or running and claimed by the caller: what the
// SQLite store returns when the watcher's renewal ran before CreateRun
// inserted the row and the read after it saw the row (CreateRun slowed by
// the writes of many variants at once).
type unclaimedStore struct {
	evalrun.RunStore
	calls chan struct{}
	mine  bool
}

func (s *unclaimedStore) ClaimRun(_ context.Context, id string, c evalrun.RunClaim) (*evalrun.Run, bool, error) {
	select {
	case s.calls <- struct{}{}:
	default:
	}
	if s.mine {
		return &evalrun.Run{ID: id, Status: evalrun.RunRunning, ClaimedBy: c.Owner}, false, nil
	}
	return &evalrun.Run{ID: id, Status: evalrun.RunPending}, false, nil
}

func (s *unclaimedStore) ReleaseRun(context.Context, string, string) error { return nil }

// TestWatchUnclaimedRunIsNotTakenOver: a renewal that did not apply to a
// run nobody holds, or this process holds, is not another process taking
// it over. The watcher
// used to cancel the run with errTakenOver, and a 32-variant experiment on
// SQLite stopped with "a variant could not run" and only "context
// canceled" errors.
func TestWatchUnclaimedRunIsNotTakenOver(t *testing.T) {
	for _, mine := range []bool{false, true} {
		t.Run(map[bool]string{false: "nobody's", true: "mine"}[mine], func(t *testing.T) {
			watchNotTakenOver(t, &unclaimedStore{calls: make(chan struct{}), mine: mine})
		})
	}
}

func watchNotTakenOver(t *testing.T, store *unclaimedStore) {
	st := &State{Now: time.Now}
	c := st.newClaim(store, "20261124T113011-1b2dddc8")
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	stop := c.watch(ctx, time.Millisecond, cancel)
	// Three renewals: the watcher goes on after each one.
	for range 3 {
		select {
		case <-store.calls:
		case <-ctx.Done():
			t.Fatalf("the run was cancelled: %v", context.Cause(ctx))
		}
	}
	stop()
	if err := context.Cause(ctx); err != nil {
		t.Fatalf("the run was cancelled: %v", err)
	}
}

// heldStore answers ClaimRun "not applied": another process holds the run.
type heldStore struct{ unclaimedStore }

func (s *heldStore) ClaimRun(_ context.Context, id string, _ evalrun.RunClaim) (*evalrun.Run, bool, error) {
	return &evalrun.Run{ID: id, Status: evalrun.RunRunning, ClaimedBy: "other/1/abcd"}, false, nil
}

// TestWatchHeldRunIsTakenOver: a run another live process holds is
// cancelled with errTakenOver.
func TestWatchHeldRunIsTakenOver(t *testing.T) {
	st := &State{Now: time.Now}
	c := st.newClaim(&heldStore{}, "20261124T113011-1b2dddc8")
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	stop := c.watch(ctx, time.Millisecond, cancel)
	<-ctx.Done()
	stop()
	if err := context.Cause(ctx); err != errTakenOver {
		t.Fatalf("cause %v, want errTakenOver", err)
	}
}
