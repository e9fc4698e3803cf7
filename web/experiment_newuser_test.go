package web

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/inmem"
)

// TestExperimentPageCacheHits: a variant served from the response cache
// (an experiment rerun with --cache) has no tokens, no cost and a cache
// lookup's latency; the experiment page says how many of its results
// came from the cache, as the run page does, and says nothing when none
// did.
func TestExperimentPageCacheHits(t *testing.T) {
	st := inmem.New()
	seed(t, st)
	seedSmallExperiment(t, st)
	const id = "exp-20260304T130000-cccccccc"
	seedExperiment(t, st, id, "cached", "support", t0.Add(3*time.Hour), []string{"mini", "big"}, 6,
		func(v, i int) *evalrun.ItemResult {
			r := fixtureResult(expRunID(id, v), i, 1, 0.8, time.Millisecond)
			r.Output = evalrun.String(fmt.Sprintf("answer %d", i+1))
			r.CacheHit = v == 0 || i == 0 // mini: all six; big: one
			return r
		})
	b := setupStore(t, st, Options{})
	body := b.mustGet(t, "/experiments/"+id, http.StatusOK).body
	hits := between(t, body, `id="cache-hits"`, "</p>")
	contains(t, "cache hits", hits, "mini 6 of 6", "big 1 of 6")

	body = b.mustGet(t, "/experiments/"+expID, http.StatusOK).body
	if strings.Contains(body, `id="cache-hits"`) {
		t.Errorf("an experiment without cache hits mentions them:\n%s", between(t, body, `id="cache-hits"`, "</p>"))
	}
}
