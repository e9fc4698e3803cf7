package report

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/evalrun/evalrun"
)

// experimentBuilder gathers the variants' rows: per variant a [cmpSide]
// for the comparisons, and the items side by side.
type experimentBuilder struct {
	exp     *evalrun.Experiment
	opts    CompareOptions
	names   []string
	reports []*Report
	sides   []*cmpSide
	items   map[expKey]*ExperimentItem
	// cells holds each item's results by variant index until build
	// orders them.
	cells map[expKey][]*VariantResult
	// noItems: keep the comparisons' verdicts only, no item rows.
	noItems bool
}

// expKey identifies an item row of the experiment. The id is part of it
// so that two variants whose item at one index differs (which one
// experiment's shared dataset version rules out) are never merged.
type expKey struct {
	index, repeat int
	id            string
}

func newExperimentBuilder(exp *evalrun.Experiment, opts CompareOptions) (*experimentBuilder, error) {
	if exp == nil || len(exp.Runs) == 0 {
		return nil, fmt.Errorf("%w: an experiment without variants", evalrun.ErrInvalid)
	}
	b := &experimentBuilder{exp: exp, opts: opts.withDefaults(),
		reports: make([]*Report, len(exp.Runs)), sides: make([]*cmpSide, len(exp.Runs)),
		items: map[expKey]*ExperimentItem{}, cells: map[expKey][]*VariantResult{}}
	for i, r := range exp.Runs {
		if r == nil {
			return nil, fmt.Errorf("%w: experiment %s: variant %d has no run", evalrun.ErrInvalid, exp.ID, i)
		}
		// A run outside any variant (an experiment assembled by hand) is
		// named by its id.
		name := cmp.Or(r.Variant, r.ID)
		if slices.Contains(b.names, name) {
			return nil, fmt.Errorf("%w: experiment %s: two variants are named %q", evalrun.ErrInvalid, exp.ID, name)
		}
		b.names = append(b.names, name)
	}
	return b, nil
}

// addRow adds variant v's result row it.
func (b *experimentBuilder) addRow(v int, it *ItemRow) {
	b.sides[v].addRow(it)
	k := expKey{it.Index, it.Repeat, it.ID}
	item := b.items[k]
	if item == nil {
		item = newExperimentItem(it)
		b.items[k] = item
		b.cells[k] = make([]*VariantResult, len(b.names))
	}
	cells := b.cells[k]
	if cells[v] != nil {
		return // a duplicate result: the first one stands, as in comparisons
	}
	cells[v] = variantResultOf(b.names[v], it)
}

// newExperimentItem returns the item of row it, without its variants.
func newExperimentItem(it *ItemRow) *ExperimentItem {
	item := &ExperimentItem{Index: it.Index, Repeat: it.Repeat, ID: it.ID, Tags: it.Tags,
		Input: it.Input, Expected: it.Expected}
	if item.Tags == nil {
		item.Tags = []string{}
	}
	return item
}

// variantResultOf returns the result of the variant named name of row it.
func variantResultOf(name string, it *ItemRow) *VariantResult {
	res := &VariantResult{Variant: name, Output: it.Output, Error: it.Error, ErrorKind: it.ErrorKind,
		LatencyMS: it.LatencyMS, Scores: make(ScoreValues, len(it.Scores)), Passed: make(PassValues, len(it.Scores))}
	for j := range it.Scores {
		sc := &it.Scores[j]
		res.Scores[j] = ScoreValue{Scorer: sc.Scorer, Score: sc.Score}
		res.Passed[j] = PassValue{Scorer: sc.Scorer, Passed: sc.Score != nil && sc.Passed}
	}
	return res
}

func (b *experimentBuilder) build() *Experiment {
	o := b.opts
	base := b.exp.Runs[0]
	e := &Experiment{
		SchemaVersion: ExperimentSchemaVersion,
		Experiment: ExperimentInfo{ID: b.exp.ID, Name: b.exp.Name, Baseline: b.names[0],
			Dataset: DatasetRef{Name: b.exp.Dataset, Version: b.exp.DatasetVersion}},
		Method: ExperimentMethod{PassRateInterval: "Wilson score", Z: zOf(o.Alpha),
			Delta: "variant pass rate minus baseline pass rate over the pairs (item id, repeat); a target or scorer failure counts as not passed; the unit of the interval and the test is the item (the mean of its repeats)",
			CompareMethod: CompareMethod{Interval: "paired bootstrap (percentile)", Confidence: 1 - o.Alpha,
				Resamples: o.Resamples, Seed: o.Seed, Test: "exact two-sided sign test (exact McNemar)", Alpha: o.Alpha}},
		Variants: make([]VariantSummary, len(b.names)),
		reports:  b.reports,
	}
	if e.Experiment.Name == "" {
		e.Experiment.Name = base.Name
	}
	// Each variant's comparison with the baseline (a bootstrap per scorer)
	// is independent of the others' and reads only the builder: they run
	// at once, which is most of an experiment report's time.
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	for i, rep := range b.reports {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			e.Variants[i] = b.variant(i, rep)
		})
	}
	wg.Wait()
	e.Items = b.itemRows()
	return e
}

func (b *experimentBuilder) variant(i int, rep *Report) VariantSummary {
	run := &rep.Run
	v := VariantSummary{Name: b.names[i], RunID: run.ID, Status: run.Status, Target: run.Target,
		Total: run.Total, Succeeded: run.Succeeded, Failed: run.Failed, Skipped: run.Skipped,
		Failures: len(rep.Failures), DurationMS: run.DurationMS, CacheHits: run.CacheHits,
		Scorers: make(VariantScorerTable, len(rep.Scorers)), MacroPassRate: rep.MacroPassRate,
		Usage: rep.Usage, VsBaseline: BaselineTable{}}
	z := zOf(b.opts.Alpha)
	for j, s := range rep.Scorers {
		vs := VariantScorer{ScorerStats: s}
		if s.Count > 0 && s.PassRate != nil {
			passed := int(math.Round(*s.PassRate * float64(s.Count)))
			lo, hi := wilson(passed, s.Count, z)
			vs.PassRateCI = &[2]float64{lo, hi}
		}
		v.Scorers[j] = vs
	}
	if i > 0 {
		v.VsBaseline = b.vsBaseline(i, rep.ScorerNames())
	}
	return v
}

// vsBaseline compares variant i's scorers (names, in its order) with the
// baseline's.
func (b *experimentBuilder) vsBaseline(i int, names []string) BaselineTable {
	base, side := b.sides[0], b.sides[i]
	xs := make([][]float64, len(names))
	jb, jv := make([]int, len(names)), make([]int, len(names))
	for j, n := range names {
		jb[j], jv[j] = sideIndex(base, n), sideIndex(side, n)
	}
	// The statistics' unit is the item, not the result: with repeats, an
	// item's difference is the mean of its repeats' differences, so that
	// running a deterministic model K times does not multiply the evidence
	// by K (the sign test and the bootstrap assume independent pairs).
	// Without repeats the two are the same.
	clusters := make([]itemClusters, len(names))
	pairRows(base, side, nil, func(rb, rv *cmpRow) {
		for j := range names {
			vb, okB := rb.verdict(jb[j])
			vv, okV := rv.verdict(jv[j])
			if !okB || !okV || !vb.scored && !vv.scored {
				continue // as in compare: a scorer of one run only, or no score on either side
			}
			x := float64(b2i(vv.passed) - b2i(vb.passed))
			xs[j] = append(xs[j], x)
			clusters[j].add(rb.id, x)
		}
	})
	out := make(BaselineTable, len(names))
	for j, n := range names {
		d := BaselineDelta{Name: n, Verdict: VerdictSame, Paired: len(xs[j])}
		for _, x := range xs[j] {
			switch {
			case x > 0:
				d.Improved++
			case x < 0:
				d.Regressed++
			}
		}
		if len(xs[j]) > 0 {
			t := pairedTest(clusters[j].means(), b.opts)
			d.Delta, d.CI, d.PValue = &t.delta, &[2]float64{t.lo, t.hi}, &t.p
			switch {
			case t.significant && t.delta > 0:
				d.Verdict = VerdictBetter
			case t.significant && t.delta < 0:
				d.Verdict = VerdictWorse
			}
		}
		out[j] = d
	}
	return out
}

// itemRows returns the items in (index, repeat, id) order, each variant's
// result in variant order.
func (b *experimentBuilder) itemRows() []ExperimentItem {
	keys := make([]expKey, 0, len(b.items))
	for k := range b.items {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y expKey) int {
		return cmp.Or(cmp.Compare(x.index, y.index), cmp.Compare(x.repeat, y.repeat), cmp.Compare(x.id, y.id))
	})
	out := make([]ExperimentItem, len(keys))
	for n, k := range keys {
		it := b.items[k]
		it.Variants = VariantResults{}
		for _, c := range b.cells[k] {
			if c != nil {
				it.Variants = append(it.Variants, *c)
			}
		}
		it.Disagree = disagree(it.Variants)
		out[n] = *it
	}
	return out
}

// disagree reports whether some scorer passed in one of results and not
// in another that has the scorer. A result whose target failed has no
// scores and passes none of them.
func disagree(results VariantResults) bool {
	var scorers []string
	for _, r := range results {
		for _, p := range r.Passed {
			if !slices.Contains(scorers, p.Scorer) {
				scorers = append(scorers, p.Scorer)
			}
		}
	}
	for _, s := range scorers {
		var seenPass, seenFail bool
		for _, r := range results {
			_, has := r.Scores.Get(s)
			switch {
			case has:
				if r.Passed.Get(s) {
					seenPass = true
				} else {
					seenFail = true
				}
			case r.Error != nil:
				seenFail = true // the target failed: the scorer did not run
			}
		}
		if seenPass && seenFail {
			return true
		}
	}
	return false
}

// zOf is the normal quantile of a two-sided (1 − alpha) interval: exactly
// [wilsonZ95] at the default alpha of 0.05.
func zOf(alpha float64) float64 {
	if alpha == 0.05 {
		return wilsonZ95
	}
	return math.Sqrt2 * math.Erfinv(1-alpha)
}

// wilson returns the Wilson score interval of passed successes in n > 0
// trials at normal quantile z:
//
//	centre = (p + z²/2n) / (1 + z²/n)
//	half   = z / (1 + z²/n) · √(p(1−p)/n + z²/4n²)
//
// with p = passed/n. Unlike the normal approximation it stays inside
// [0, 1] and is not empty at 0/n or n/n: those ends are exactly 0 and 1
// (set so, not left to rounding).
func wilson(passed, n int, z float64) (lo, hi float64) {
	p, nf, z2 := float64(passed)/float64(n), float64(n), z*z
	den := 1 + z2/nf
	centre := (p + z2/(2*nf)) / den
	half := z / den * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	lo, hi = max(0, centre-half), min(1, centre+half)
	if passed == 0 {
		lo = 0
	}
	if passed == n {
		hi = 1
	}
	return lo, hi
}

// itemClusters gathers paired differences by item id, in first-seen order.
type itemClusters struct {
	at     map[string]int
	sums   []float64
	counts []int
}

func (c *itemClusters) add(id string, x float64) {
	if c.at == nil {
		c.at = map[string]int{}
	}
	i, ok := c.at[id]
	if !ok {
		i = len(c.sums)
		c.at[id] = i
		c.sums, c.counts = append(c.sums, 0), append(c.counts, 0)
	}
	c.sums[i] += x
	c.counts[i]++
}

// means returns each item's mean difference.
func (c *itemClusters) means() []float64 {
	out := make([]float64, len(c.sums))
	for i, s := range c.sums {
		out[i] = s / float64(c.counts[i])
	}
	return out
}
