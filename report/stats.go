package report

import (
	"math"
	"slices"
)

// percentile returns the p-quantile (p in [0,1]) of sorted, interpolating
// linearly between the closest ranks: rank = p·(n−1). It returns NaN for an
// empty slice.
func percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	rank := p * float64(n-1)
	lo := int(math.Floor(rank))
	if lo >= n-1 {
		return sorted[n-1]
	}
	if lo < 0 {
		return sorted[0]
	}
	frac := rank - float64(lo)
	return sorted[lo] + frac*(sorted[lo+1]-sorted[lo])
}

// mean returns the arithmetic mean of xs (summed in order), NaN if empty.
// Callers pass sorted slices so that the sum does not depend on the order
// results arrived in.
func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// nano9 is the number of units of 1e-9 in the score x rounded to 9 decimals.
func nano9(x float64) int64 { return int64(math.Round(x * 1e9)) }

// bucket returns the histogram bucket of score s among k equal buckets over
// [0,1]: the last bucket i whose lower edge i/k, rounded to 9 decimals, is
// at most s rounded to 9 decimals. So 0.7−0.4 (0.29999999999999993) is in
// [0.3, 0.4) of ten, 1/3 in the second of three, and 1.0 (and anything
// above) in the last bucket.
func bucket(s float64, k int) int {
	v := nano9(s)
	// The candidate from the rounded score, then corrected against the
	// rounded edges, which are what decide.
	b := int(v * int64(k) / 1e9)
	b = max(0, min(b, k-1))
	for b+1 < k && v >= nano9(float64(b+1)/float64(k)) {
		b++
	}
	for b > 0 && v < nano9(float64(b)/float64(k)) {
		b--
	}
	return b
}

// floatPtr returns &x, or nil when x is NaN.
func floatPtr(x float64) *float64 {
	if math.IsNaN(x) {
		return nil
	}
	return &x
}

// scoreAcc accumulates one scorer's scores over a set of results.
type scoreAcc struct {
	scores []float64
	passed int
	errors int
	hist   [HistogramBuckets]int
}

func (a *scoreAcc) add(score *float64, passed bool, hasError bool) {
	if score == nil {
		if hasError {
			a.errors++
		}
		return
	}
	a.scores = append(a.scores, *score)
	if passed {
		a.passed++
	}
	a.hist[bucket(*score, HistogramBuckets)]++
}

// clone returns a copy of a that shares nothing with it.
func (a *scoreAcc) clone() *scoreAcc {
	c := *a
	c.scores = slices.Clone(a.scores)
	return &c
}

// stats sorts the accumulated scores (in place; later adds may follow) and
// returns the statistics.
func (a *scoreAcc) stats(name string, threshold float64) ScorerStats {
	s := ScorerStats{Name: name, Count: len(a.scores), Errors: a.errors, Threshold: threshold, Histogram: a.hist}
	if len(a.scores) == 0 {
		return s
	}
	// Summing in sorted order makes the mean independent of arrival order.
	slices.Sort(a.scores)
	s.Mean = floatPtr(mean(a.scores))
	s.P50 = floatPtr(percentile(a.scores, 0.50))
	s.P95 = floatPtr(percentile(a.scores, 0.95))
	s.PassRate = floatPtr(float64(a.passed) / float64(len(a.scores)))
	return s
}
