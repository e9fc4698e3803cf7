package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/evalrun/evalrun"
)

// claimTTL is how long a local run's claim holds without renewal: a
// process killed without releasing it (SIGKILL, power loss) keeps its run
// from other machines that long. On its own machine a resume takes the
// run over at once, seeing the process gone.
const claimTTL = 30 * time.Second

// errTakenOver is the cancellation cause of a run whose claim another
// process took over (this one stalled past its claim's expiry).
var errTakenOver = errors.New("another evalrun process took the run over")

// runClaim is this process's claim on the run it executes
// ([evalrun.RunStore.ClaimRun]): taken before a resume runs anything,
// renewed while the run goes on, released at its end. It keeps two
// processes from executing one run.
type runClaim struct {
	store evalrun.RunStore
	id    string
	owner string
	ttl   time.Duration
	host  string
	now   func() time.Time
}

// newClaim returns the claim of this process on run id. Its owner token
// is "host/pid/random", so a refused resume can name the holder and tell
// whether it still exists.
func (st *State) newClaim(store evalrun.RunStore, id string) *runClaim {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return &runClaim{store: store, id: id, host: host, now: st.Now,
		owner: fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:])),
		// A renewal always comes before the claim expires.
		ttl: max(claimTTL, 3*st.CancelPoll)}
}

// take claims the run for a resume. It refuses (exit 2) a finished run
// and one another live process executes.
func (c *runClaim) take(ctx context.Context) error {
	run, ok, err := c.store.ClaimRun(ctx, c.id, evalrun.RunClaim{Owner: c.owner, TTL: c.ttl})
	if err == nil && !ok && run.Resumable() && c.gone(run.ClaimedBy) {
		// Its holder died on this machine: no need to wait for expiry.
		run, ok, err = c.store.ClaimRun(ctx, c.id, evalrun.RunClaim{Owner: c.owner, TTL: c.ttl, Replace: run.ClaimedBy})
	}
	if err != nil {
		return notFound(err, "run "+c.id, "evalrun runs list shows the runs")
	}
	if !ok {
		return refuseResume(run, c.now())
	}
	return nil
}

// gone reports whether owner is a process of this machine that no longer
// exists. A pid reused since is taken for alive: the claim then expires.
func (c *runClaim) gone(owner string) bool {
	host, rest, ok := strings.Cut(owner, "/")
	if !ok || host != c.host || host == "" {
		return false
	}
	pidText, _, _ := strings.Cut(rest, "/")
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return processGone(pid)
}

// refuseResume is the error of a resume that cannot claim run: it is
// finished, or another process executes it.
func refuseResume(run *evalrun.Run, now time.Time) error {
	if !run.Resumable() {
		return invalidf("run %s is already %s (finished %s) with every item run: --resume continues an interrupted run; "+
			"see it with evalrun report %s, or run the suite again for a new run",
			run.ID, run.Status, timeText(run.CompletedAt), run.ID)
	}
	who := run.ClaimedBy
	if host, rest, ok := strings.Cut(who, "/"); ok {
		pid, _, _ := strings.Cut(rest, "/")
		who = fmt.Sprintf("process %s on %s", pid, host)
	}
	return invalidf("run %s is being resumed elsewhere: evalrun %s is executing it; "+
		"wait for it to finish, or stop it (Ctrl-C there, or evalrun runs cancel %s). "+
		"If that process was killed, its claim expires in %s",
		run.ID, who, run.ID, run.ClaimExpires.Sub(now).Round(time.Second))
}

// claimingStore is the store a fresh run executes with: the run record it
// creates is claimed at once, so that a resume of the same run from
// another shell is refused while this process runs it.
type claimingStore struct {
	evalrun.RunStore
	claim *runClaim
}

// CreateRun creates the record and claims it.
func (s claimingStore) CreateRun(ctx context.Context, run *evalrun.Run) error {
	if err := s.RunStore.CreateRun(ctx, run); err != nil {
		return err
	}
	if _, ok, err := s.ClaimRun(ctx, run.ID, evalrun.RunClaim{Owner: s.claim.owner, TTL: s.claim.ttl}); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("claim the new run %s: held by %s", run.ID, run.ClaimedBy)
	}
	return nil
}

// watch renews the claim every poll (State.CancelPoll) until stop is
// called, and cancels the run when another process cancelled it (evalrun
// runs cancel: cause errCanceled) or took it over (errTakenOver). stop
// waits for the watcher and releases the claim.
func (c *runClaim) watch(ctx context.Context, poll time.Duration, cancel context.CancelCauseFunc) (stop func()) {
	done := make(chan struct{})
	quit := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			run, ok, err := c.store.ClaimRun(ctx, c.id, evalrun.RunClaim{Owner: c.owner, TTL: c.ttl})
			switch {
			case err != nil:
				// Storage trouble: the next tick tries again, and the
				// claim outlives a few missed renewals.
			case !ok && run.Resumable() && run.ClaimedBy != "" && run.ClaimedBy != c.owner:
				// Another process holds it. A run nobody holds, or this
				// process does, is not taken over: the renewal ran
				// before CreateRun inserted the row (slow when many
				// variants write at once) and read it back after.
				cancel(errTakenOver)
				return
			case run.Status == evalrun.RunCanceled:
				cancel(errCanceled)
				return
			}
		}
	}()
	return func() {
		close(quit)
		<-done
		// Released even when the run's context ended; a failure leaves the
		// claim to expire.
		_ = c.store.ReleaseRun(context.WithoutCancel(ctx), c.id, c.owner)
	}
}
