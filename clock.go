package evalrun

import "time"

// Clock is the time source of the engine and of everything that waits
// (retry back-off, rate limits, the result writer's flush). Tests inject a
// fake one so that waiting is observable and instant.
type Clock interface {
	Now() time.Time
	// After is like time.After.
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the real [Clock].
var SystemClock Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
