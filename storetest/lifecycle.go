package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// The run lifecycle's conditional steps: CancelRun, ClaimRun, ReleaseRun.

func testCancelRun(t *testing.T, s evalrun.Store) {
	for _, st := range evalrun.CancelableStatuses {
		r := testRun("r-"+string(st), "qa", 1, base)
		r.Status = st
		mustCreateRun(t, s, r)
		got, changed, err := s.CancelRun(t.Context(), r.ID, "stop")
		if err != nil || !changed {
			t.Fatalf("CancelRun of a %s run = changed %v, %v; want changed", st, changed, err)
		}
		want := *r
		want.Status, want.Error = evalrun.RunCanceled, "stop"
		checkRun(t, got, &want)
		stored, err := s.GetRun(t.Context(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		checkRun(t, stored, &want)
	}

	// A run with an error keeps it; the status still changes.
	r := testRun("r-err", "qa", 1, base)
	r.Status, r.Error = evalrun.RunRunning, "first"
	mustCreateRun(t, s, r)
	got, changed, err := s.CancelRun(t.Context(), r.ID, "second")
	if err != nil || !changed || got.Status != evalrun.RunCanceled || got.Error != "first" {
		t.Fatalf("CancelRun of a run with an error = %+v, changed %v, %v; want canceled with error %q", got, changed, err, "first")
	}

	_, _, err = s.CancelRun(t.Context(), "nope", "stop")
	wantErr(t, "CancelRun of an unknown run", err, evalrun.ErrNotFound)
}

// testCancelRunEnded is the race of "runs cancel" with the run's own end:
// the run completes after the canceller read it running; the cancel must
// leave the completed record as it is and say how the run ended.
func testCancelRunEnded(t *testing.T, s evalrun.Store) {
	for _, st := range []evalrun.RunStatus{evalrun.RunCompleted, evalrun.RunFailed, evalrun.RunCanceled} {
		r := testRun("r-"+string(st), "qa", 1, base)
		r.Status = evalrun.RunRunning
		mustCreateRun(t, s, r)
		seen, err := s.GetRun(t.Context(), r.ID) // the canceller's read
		if err != nil || seen.Status != evalrun.RunRunning {
			t.Fatalf("GetRun = %+v, %v", seen, err)
		}
		end := *r // the run ends meanwhile
		end.Status, end.Error = st, "how it ended"
		end.Succeeded, end.Failed, end.Skipped = 8, 2, 0
		end.StartedAt, end.CompletedAt = base.Add(time.Second), base.Add(time.Minute)
		if err := s.UpdateRun(t.Context(), &end); err != nil {
			t.Fatal(err)
		}
		got, changed, err := s.CancelRun(t.Context(), r.ID, "stop")
		if err != nil || changed {
			t.Fatalf("CancelRun of a run that ended %s meanwhile = changed %v, %v; want unchanged", st, changed, err)
		}
		checkRun(t, got, &end)
		stored, err := s.GetRun(t.Context(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		checkRun(t, stored, &end)
	}
}

// testCancelRunConcurrent cancels one run from many goroutines: exactly
// one call changes it.
func testCancelRunConcurrent(t *testing.T, s evalrun.Store) {
	r := testRun("r1", "qa", 1, base)
	r.Status = evalrun.RunRunning
	mustCreateRun(t, s, r)
	won := race(8, func(i int) bool {
		_, changed, err := s.CancelRun(t.Context(), r.ID, fmt.Sprintf("stop %d", i))
		if err != nil {
			t.Error(err)
		}
		return changed
	})
	if len(won) != 1 {
		t.Fatalf("%d of 8 concurrent CancelRun calls changed the run (%v), want 1", len(won), won)
	}
}

// race calls fn(0)…fn(n-1) at once and returns the i whose call returned
// true.
func race(n int, fn func(i int) bool) []int {
	var wg sync.WaitGroup
	wins := make(chan int, n)
	for i := range n {
		wg.Go(func() {
			if fn(i) {
				wins <- i
			}
		})
	}
	wg.Wait()
	close(wins)
	var out []int
	for i := range wins {
		out = append(out, i)
	}
	return out
}

func claim(owner string, ttl time.Duration) evalrun.RunClaim {
	return evalrun.RunClaim{Owner: owner, TTL: ttl}
}

// testClaimRun: concurrent claims, one wins; the owner renews; the others
// are refused with the holder named.
func testClaimRun(t *testing.T, s evalrun.Store) {
	clock := cacheClock(t, s, base)
	r := testRun("r1", "qa", 1, base)
	r.Status = evalrun.RunCanceled
	mustCreateRun(t, s, r)

	const n = 8
	won := race(n, func(i int) bool {
		owner := fmt.Sprintf("proc-%d", i)
		got, ok, err := s.ClaimRun(t.Context(), r.ID, claim(owner, 10*time.Second))
		if err != nil {
			t.Error(err)
			return false
		}
		if !ok && (got.ClaimedBy == "" || got.ClaimedBy == owner) {
			t.Errorf("refused claim of %s names holder %q", owner, got.ClaimedBy)
		}
		return ok
	})
	if len(won) != 1 {
		t.Fatalf("%d of %d concurrent claims won (%v), want 1", len(won), n, won)
	}
	owner := fmt.Sprintf("proc-%d", won[0])
	got, err := s.GetRun(t.Context(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ClaimedBy != owner {
		t.Fatalf("stored claim = %q, want the winner %q", got.ClaimedBy, owner)
	}
	checkTime(t, "ClaimExpires", got.ClaimExpires, base.Add(10*time.Second))

	// Renewal by the owner moves the expiry, from the store's clock.
	clock.Advance(4 * time.Second)
	got, ok, err := s.ClaimRun(t.Context(), r.ID, claim(owner, 10*time.Second))
	if err != nil || !ok {
		t.Fatalf("renewal by the owner = %v, %v", ok, err)
	}
	checkTime(t, "renewed ClaimExpires", got.ClaimExpires, base.Add(14*time.Second))

	// Another process is refused until the claim expires, and learns who
	// holds it and until when.
	clock.Advance(9 * time.Second) // 1 s before expiry
	got, ok, err = s.ClaimRun(t.Context(), r.ID, claim("other", 10*time.Second))
	if err != nil || ok {
		t.Fatalf("claim of a held run = %v, %v; want refused", ok, err)
	}
	if got.ClaimedBy != owner || !got.Claimed("other", clock.Now()) {
		t.Fatalf("refused claim returned holder %q until %v, want %q holding at %v", got.ClaimedBy, got.ClaimExpires, owner, clock.Now())
	}
	checkRun(t, got, r) // nothing else changed
}

// testClaimRunTakeover: a claim whose owner died (no renewal) is taken
// over once it expires, or at once with Replace.
func testClaimRunTakeover(t *testing.T, s evalrun.Store) {
	clock := cacheClock(t, s, base)
	r := testRun("r1", "qa", 1, base)
	r.Status = evalrun.RunRunning
	mustCreateRun(t, s, r)
	if _, ok, err := s.ClaimRun(t.Context(), r.ID, claim("dead", 10*time.Second)); err != nil || !ok {
		t.Fatalf("first claim = %v, %v", ok, err)
	}
	clock.Advance(10 * time.Second) // exactly at expiry: lapsed
	got, ok, err := s.ClaimRun(t.Context(), r.ID, claim("next", 5*time.Second))
	if err != nil || !ok || got.ClaimedBy != "next" {
		t.Fatalf("claim of an expired run = %v (%q), %v; want taken over", ok, got.ClaimedBy, err)
	}
	checkTime(t, "ClaimExpires", got.ClaimExpires, base.Add(15*time.Second))

	// The dead owner's renewal now fails: it learns it lost the run.
	if got, ok, err := s.ClaimRun(t.Context(), r.ID, claim("dead", 10*time.Second)); err != nil || ok || got.ClaimedBy != "next" {
		t.Fatalf("renewal after a takeover = %v (%q), %v; want refused, held by next", ok, got.ClaimedBy, err)
	}

	// Replace takes over a live claim of an owner known to be gone, and
	// only that owner's.
	if _, ok, err := s.ClaimRun(t.Context(), r.ID, evalrun.RunClaim{Owner: "third", TTL: time.Second, Replace: "someone-else"}); err != nil || ok {
		t.Fatalf("claim replacing another owner = %v, %v; want refused", ok, err)
	}
	got, ok, err = s.ClaimRun(t.Context(), r.ID, evalrun.RunClaim{Owner: "third", TTL: time.Second, Replace: "next"})
	if err != nil || !ok || got.ClaimedBy != "third" {
		t.Fatalf("claim replacing the holder = %v (%q), %v; want taken over", ok, got.ClaimedBy, err)
	}
}

// testClaimRunFinished: a finished run cannot be claimed (so a resume of
// it runs nothing), whoever holds it.
func testClaimRunFinished(t *testing.T, s evalrun.Store) {
	for _, st := range []evalrun.RunStatus{evalrun.RunCompleted, evalrun.RunFailed} {
		r := testRun("r-"+string(st), "qa", 1, base)
		r.Status = st
		r.StartedAt, r.CompletedAt = base.Add(time.Second), base.Add(time.Minute)
		mustCreateRun(t, s, r)
		got, ok, err := s.ClaimRun(t.Context(), r.ID, claim("p", time.Minute))
		if err != nil || ok {
			t.Fatalf("claim of a %s run = %v, %v; want refused", st, ok, err)
		}
		checkRun(t, got, r)
		if got.ClaimedBy != "" {
			t.Fatalf("a %s run was claimed by %q", st, got.ClaimedBy)
		}
	}
	// A run that failed with items that never ran (its store refused
	// results, strict mode) can be claimed, so a resume runs them.
	inc := testRun("r-failed-incomplete", "qa", 1, base)
	inc.Status, inc.Succeeded, inc.Skipped = evalrun.RunFailed, 3, 7
	inc.StartedAt, inc.CompletedAt = base.Add(time.Second), base.Add(time.Minute)
	mustCreateRun(t, s, inc)
	if got, ok, err := s.ClaimRun(t.Context(), inc.ID, claim("p", time.Minute)); err != nil || !ok || got.ClaimedBy != "p" {
		t.Fatalf("claim of a failed run with 7 items skipped = %v, %v; want claimed by p", ok, err)
	}
	// So can one whose every item ran but whose store refused results
	// (none skipped, 2 not stored): a resume runs them.
	lost := testRun("r-failed-unstored", "qa", 1, base)
	lost.Status, lost.Succeeded, lost.PersistErrors = evalrun.RunFailed, 10, 2
	lost.StartedAt, lost.CompletedAt = base.Add(time.Second), base.Add(time.Minute)
	mustCreateRun(t, s, lost)
	if got, ok, err := s.ClaimRun(t.Context(), lost.ID, claim("p", time.Minute)); err != nil || !ok || got.ClaimedBy != "p" {
		t.Fatalf("claim of a failed run with 2 results not stored = %v, %v; want claimed by p", ok, err)
	}
	// A run that completed while claimed: its owner may still renew (it
	// releases next), nobody else may claim it even after expiry.
	clock := cacheClock(t, s, base)
	r := testRun("r-done", "qa", 1, base)
	r.Status = evalrun.RunRunning
	mustCreateRun(t, s, r)
	if _, ok, err := s.ClaimRun(t.Context(), r.ID, claim("owner", time.Second)); err != nil || !ok {
		t.Fatalf("claim = %v, %v", ok, err)
	}
	r.Status = evalrun.RunCompleted
	if err := s.UpdateRun(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.ClaimRun(t.Context(), r.ID, claim("owner", time.Second)); err != nil || !ok {
		t.Fatalf("renewal of a run its owner completed = %v, %v", ok, err)
	}
	clock.Advance(time.Hour)
	if got, ok, err := s.ClaimRun(t.Context(), r.ID, claim("late", time.Second)); err != nil || ok || got.Status != evalrun.RunCompleted {
		t.Fatalf("claim of a completed run after expiry = %v (%+v), %v; want refused", ok, got, err)
	}
}

// testReleaseRun: release frees the run for the next claim; a release by
// another owner and UpdateRun leave the claim alone.
func testReleaseRun(t *testing.T, s evalrun.Store) {
	cacheClock(t, s, base)
	r := testRun("r1", "qa", 1, base)
	r.Status = evalrun.RunCanceled
	mustCreateRun(t, s, r)
	if _, ok, err := s.ClaimRun(t.Context(), r.ID, claim("a", time.Hour)); err != nil || !ok {
		t.Fatalf("claim = %v, %v", ok, err)
	}
	// The engine's record updates do not touch the claim.
	up := *r
	up.Status, up.StartedAt = evalrun.RunRunning, base.Add(time.Second)
	if err := s.UpdateRun(t.Context(), &up); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseRun(t.Context(), r.ID, "b"); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetRun(t.Context(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, got, &up)
	if got.ClaimedBy != "a" {
		t.Fatalf("after UpdateRun and a release by another owner the claim is %q, want a", got.ClaimedBy)
	}
	if _, ok, err := s.ClaimRun(t.Context(), r.ID, claim("b", time.Hour)); err != nil || ok {
		t.Fatalf("claim of a held run = %v, %v; want refused", ok, err)
	}
	if err := s.ReleaseRun(t.Context(), r.ID, "a"); err != nil {
		t.Fatal(err)
	}
	if got, err = s.GetRun(t.Context(), r.ID); err != nil || got.ClaimedBy != "" || !got.ClaimExpires.IsZero() {
		t.Fatalf("after release: claim %q until %v, %v; want none", got.ClaimedBy, got.ClaimExpires, err)
	}
	if _, ok, err := s.ClaimRun(t.Context(), r.ID, claim("b", time.Hour)); err != nil || !ok {
		t.Fatalf("claim after release = %v, %v", ok, err)
	}
	wantErr(t, "ReleaseRun of an unknown run", s.ReleaseRun(t.Context(), "nope", "a"), evalrun.ErrNotFound)
}

func testClaimRunInvalid(t *testing.T, s evalrun.Store) {
	r := testRun("r1", "qa", 1, base)
	mustCreateRun(t, s, r)
	_, _, err := s.ClaimRun(t.Context(), "nope", claim("a", time.Second))
	wantErr(t, "ClaimRun of an unknown run", err, evalrun.ErrNotFound)
	_, _, err = s.ClaimRun(t.Context(), r.ID, claim("", time.Second))
	wantErr(t, "ClaimRun without owner", err, evalrun.ErrInvalid)
	_, _, err = s.ClaimRun(t.Context(), r.ID, claim("a", 0))
	wantErr(t, "ClaimRun without TTL", err, evalrun.ErrInvalid)
	// CreateRun does not claim, whatever the record says.
	c := testRun("r2", "qa", 1, base)
	c.ClaimedBy, c.ClaimExpires = "sneaky", base.Add(time.Hour)
	mustCreateRun(t, s, c)
	if got, err := s.GetRun(t.Context(), "r2"); err != nil || got.ClaimedBy != "" {
		t.Fatalf("CreateRun stored claim %q, %v; want none", got.ClaimedBy, err)
	}
}
