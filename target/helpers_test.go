package target

import (
	"time"

	"github.com/evalrun/evalrun/internal/targettest"
)

// The fakes of these tests are internal/targettest's, shared with the
// openai package's tests, under the short names the tests use.
type (
	// fakeClock is a Clock frozen at a time whose After fires at once and
	// records the durations asked for.
	fakeClock = targettest.Clock
	// sequenceServer serves the n-th request (from 0) with handlers[n], the
	// last handler for every later request, and counts requests.
	sequenceServer = targettest.Server
)

var fixedNow = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// newFakeClock returns a fakeClock frozen at fixedNow.
func newFakeClock() *fakeClock { return targettest.NewClock(fixedNow) }

var (
	newSequenceServer = targettest.NewServer
	// reply returns a handler writing status and body with optional
	// headers given as key, value pairs.
	reply = targettest.Reply
	// hang blocks until the client goes away.
	hang = targettest.Hang
	// reset hijacks the connection and closes it with an RST.
	reset = targettest.Reset
	// attemptsOf runs exec under a retry policy with a fake clock, each
	// attempt bounded by attemptTimeout when > 0, and returns the attempt
	// count, the final error and every attempt's error.
	attemptsOf = targettest.Attempts
	// wantKind fails the test unless err is an *evalrun.Error of kind.
	wantKind = targettest.WantKind
)
