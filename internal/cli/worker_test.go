package cli

import (
	"strings"
	"testing"
)

// --fetch-ahead maps to WorkerOptions.FetchAhead (-1: the default, as many
// as --concurrency; 0: none); anything below -1 is refused before the
// worker starts.
func TestWorkerFetchAheadFlag(t *testing.T) {
	for flag, want := range map[int]int{-1: 0, 0: -1, 7: 7} {
		if got, err := fetchAheadOption(flag); err != nil || got != want {
			t.Errorf("--fetch-ahead %d: FetchAhead %d, %v; want %d", flag, got, err, want)
		}
	}
	b := setup(t)
	code, _, errs := b.run("worker", "--fetch-ahead", "-2")
	if code != 2 || !strings.Contains(errs, "--fetch-ahead -2: must be -1") {
		t.Errorf("worker --fetch-ahead -2: exit %d, %q; want 2 and the flag's error", code, errs)
	}
}
