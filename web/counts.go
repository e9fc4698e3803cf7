package web

import (
	"sync"

	"github.com/evalrun/evalrun"
)

// countCache keeps the number of matches (the `total` of a sorted
// listing's first page) of finished runs: a count reads every matching
// result's keys (10–150 ms at 100,000 results, more for a tag), and a
// finished run's results do not change. An entry is keyed by the run's
// fingerprint as well, which a resume changes (status, counts, completion
// time), so a count is never served for results it did not count. Running
// runs are counted on every first page.
type countCache struct {
	max int

	mu sync.Mutex
	m  map[string]int
}

func newCountCache(max int) *countCache {
	return &countCache{max: max, m: make(map[string]int)}
}

// countKey is the key of the count of q's matches in run, "" when it is
// not to be cached (a running run). The sort does not change a count.
func countKey(run *evalrun.Run, q ItemQuery) string {
	if !run.Status.Done() {
		return ""
	}
	q.Sort = ""
	return run.ID + "\x00" + fingerprint(run) + "\x00" + q.Values().Encode()
}

func (c *countCache) get(key string) (int, bool) {
	if c == nil || key == "" {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.m[key]
	return n, ok
}

func (c *countCache) put(key string, n int) {
	if c == nil || key == "" || n < 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; !ok && len(c.m) >= c.max {
		for k := range c.m { // any one: a miss costs one count
			delete(c.m, k)
			break
		}
	}
	c.m[key] = n
}
