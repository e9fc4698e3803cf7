package report

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/evalrun/evalrun"
)

// CompareOptions tunes [Compare]. The zero value is the default.
type CompareOptions struct {
	// Resamples is the number of bootstrap resamples; 0 means 10,000. To
	// bound the work, it is lowered to max(1000, 10⁸/pairs) for scorers
	// with more than 10,000 pairs.
	Resamples int
	// Seed seeds the bootstrap (PCG); 0 means 1. The same inputs and seed
	// give the same interval.
	Seed uint64
	// Alpha is the significance level; 0 means 0.05 (a 95% interval).
	Alpha float64
}

func (o CompareOptions) withDefaults() CompareOptions {
	if o.Resamples <= 0 {
		o.Resamples = 10_000
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Alpha <= 0 || o.Alpha >= 1 {
		o.Alpha = 0.05
	}
	return o
}

// Comparison is the result of comparing run B against run A ("b − a").
type Comparison struct {
	SchemaVersion int    `json:"schema_version"`
	A             RunRef `json:"a"`
	B             RunRef `json:"b"`
	// Method describes the statistics used.
	Method CompareMethod `json:"method"`
	// Paired is the number of (item id, repeat) pairs found in both runs.
	Paired int `json:"paired"`
	// CrashedA and CrashedB count the pairs whose target failed in A, in
	// B. Such a pair is compared as a failure (score 0) of every scorer.
	CrashedA int `json:"crashed_a"`
	CrashedB int `json:"crashed_b"`
	// OnlyA and OnlyB list the item ids (with "#repeat" when > 0) present
	// in one run only, in that run's order; never nil.
	OnlyA []string `json:"only_a"`
	OnlyB []string `json:"only_b"`
	// Scorers holds one delta per scorer of A, then the scorers only in B.
	Scorers DeltaTable `json:"scorers"`
	// Regressed and Improved list the (item, scorer) pairs whose verdict
	// changed, in A's item order then scorer order; never nil.
	Regressed []ItemChange `json:"regressed"`
	Improved  []ItemChange `json:"improved"`
	// Warnings says when the pairing makes the comparison empty (the runs
	// share no items) or partial (the runs are of different datasets);
	// never nil.
	Warnings []string `json:"warnings"`
}

// RunRef identifies a compared run.
type RunRef struct {
	ID      string     `json:"id"`
	Name    string     `json:"name"`
	Dataset DatasetRef `json:"dataset"`
}

// CompareMethod records how the numbers of a [Comparison] were computed.
type CompareMethod struct {
	// Interval is "paired bootstrap (percentile)".
	Interval   string  `json:"interval"`
	Confidence float64 `json:"confidence"`
	Resamples  int     `json:"resamples"`
	Seed       uint64  `json:"seed"`
	// Test is "exact two-sided sign test".
	Test  string  `json:"test"`
	Alpha float64 `json:"alpha"`
}

// ScorerDelta compares one scorer over the paired items. A pair counts
// when at least one run scored it; a run whose target or scorer failed on
// the item counts as a failure there (score 0, not passed), so a crash in
// B is a regression in the numbers, not a pair left out.
type ScorerDelta struct {
	// Name is the key of the JSON object.
	Name string `json:"-"`
	// Paired is the number of pairs where at least one run has a score.
	Paired int `json:"paired"`
	// FailedA and FailedB count the pairs counted as a failure (score 0)
	// because A, B had no score (its target or scorer failed).
	FailedA int `json:"failed_a"`
	FailedB int `json:"failed_b"`
	// MeanA and MeanB are the means over those pairs; Delta = MeanB −
	// MeanA. All numbers are nil when Paired is 0.
	MeanA *float64 `json:"mean_a"`
	MeanB *float64 `json:"mean_b"`
	Delta *float64 `json:"delta"`
	// CILow and CIHigh bound the (1 − alpha) bootstrap interval of Delta.
	CILow  *float64 `json:"ci_low"`
	CIHigh *float64 `json:"ci_high"`
	// PValue is the exact two-sided sign test's p-value over the non-zero
	// differences (1 when there are none).
	PValue *float64 `json:"p_value"`
	// Significant is true when PValue < alpha and the interval excludes 0.
	Significant bool `json:"significant"`
	// PassRateA and PassRateB are the share of the pairs that passed in A,
	// in B (a failure does not pass). PassRateA equals run A's own pass
	// rate when every item paired and A had no failures; A's report
	// leaves failed items out of its pass rate.
	PassRateA *float64 `json:"pass_rate_a"`
	PassRateB *float64 `json:"pass_rate_b"`
	// Regressed and Improved count the scorer's entries in the lists.
	Regressed int `json:"regressed"`
	Improved  int `json:"improved"`
}

// DeltaTable is a list of scorer deltas written as a JSON object keyed by
// scorer name.
type DeltaTable = keyedTable[ScorerDelta, *ScorerDelta]

// ItemChange is one scorer's verdict on one item that flipped between the
// runs. An item regressed when it passed in A and does not pass in B (its
// score is below the threshold, the scorer failed or the target failed);
// it improved in the converse case. A score that moved without crossing
// the threshold is not a change.
type ItemChange struct {
	ItemID string `json:"item_id"`
	// Repeat is written only when > 0.
	Repeat int    `json:"repeat,omitempty"`
	Scorer string `json:"scorer"`
	// ScoreA and ScoreB are nil where there was no score.
	ScoreA  *float64 `json:"score_a"`
	ScoreB  *float64 `json:"score_b"`
	PassedA bool     `json:"passed_a"`
	PassedB bool     `json:"passed_b"`
	// ErrorB says why B has no score, when it has none.
	ErrorB *string `json:"error_b,omitempty"`
	// CallsA and CallsB are the agent's number of tool calls in A, in B;
	// nil (absent) where the result recorded no trajectory (comparison
	// schema_version 3).
	CallsA *int `json:"calls_a,omitempty"`
	CallsB *int `json:"calls_b,omitempty"`
	// StepsA and StepsB are the agent's model turns in A, in B; nil
	// (absent) where not recorded (comparison schema_version 3).
	StepsA *int `json:"steps_a,omitempty"`
	StepsB *int `json:"steps_b,omitempty"`
}

type pairKey struct {
	id     string
	repeat int
}

// cmpSide is one run reduced to what a comparison needs, so that two large
// runs compare in memory proportional to their item count, never to their
// inputs or outputs: per result its key, the target's error and one
// verdict per scorer.
type cmpSide struct {
	ref     RunRef
	names   []string
	scorerN map[string]int
	rows    []cmpRow
}

// cmpRow is one result of a [cmpSide].
type cmpRow struct {
	id     string
	repeat int
	// targetErr is the target's error, nil when it succeeded.
	targetErr *string
	// verdicts is indexed like the side's names; shorter when a scorer
	// first appeared after this row.
	verdicts []cmpVerdict
	// calls and steps are the agent's tool calls and model turns; calls
	// is -1 when the result recorded no trajectory, steps 0 when unknown.
	calls, steps int32
}

// agentCounts returns the calls and steps of a [cmpRow] for a trajectory of
// steps and calls, -1 calls when there is none.
func agentCounts(has bool, calls, steps int) (int32, int32) {
	if !has {
		return -1, 0
	}
	return int32(min(calls, 1<<31-1)), int32(min(max(steps, 0), 1<<31-1))
}

// callsPtr and stepsPtr give an [ItemChange]'s counts: nil when unknown.
func (r *cmpRow) callsPtr() *int {
	if r.calls < 0 {
		return nil
	}
	n := int(r.calls)
	return &n
}

func (r *cmpRow) stepsPtr() *int {
	if r.steps <= 0 {
		return nil
	}
	n := int(r.steps)
	return &n
}

// cmpVerdict is one scorer's outcome on one result.
type cmpVerdict struct {
	// recorded: the result has an entry for the scorer.
	recorded bool
	scored   bool
	score    float64
	passed   bool
	// err is the scorer's error when it recorded no score.
	err *string
}

func newCmpSide(ref RunRef, names []string) *cmpSide {
	s := &cmpSide{ref: ref, scorerN: map[string]int{}}
	for _, n := range names {
		s.scorer(n)
	}
	return s
}

// scorer returns the index of the named scorer, adding it when new.
func (s *cmpSide) scorer(name string) int {
	if i, ok := s.scorerN[name]; ok {
		return i
	}
	s.scorerN[name] = len(s.names)
	s.names = append(s.names, name)
	return len(s.names) - 1
}

// addResult keeps what a comparison needs of r and nothing else: its
// inputs and outputs are not retained.
func (s *cmpSide) addResult(r *evalrun.ItemResult) {
	row := cmpRow{id: resultID(r), repeat: r.Repeat, verdicts: make([]cmpVerdict, len(s.names))}
	if t := r.Trajectory; t != nil {
		row.calls, row.steps = agentCounts(true, len(t.Calls), t.Steps)
	} else {
		row.calls, row.steps = agentCounts(false, 0, 0)
	}
	if r.Failed() {
		msg := r.Error
		row.targetErr = &msg
	}
	for k := range r.Scores {
		sr := &r.Scores[k]
		j := s.scorer(sr.Scorer)
		for len(row.verdicts) <= j {
			row.verdicts = append(row.verdicts, cmpVerdict{})
		}
		v := cmpVerdict{recorded: true}
		if sr.Score != nil {
			v.scored, v.score, v.passed = true, *sr.Score, sr.Passed
		} else {
			msg := scoreError(sr)
			v.err = &msg
		}
		row.verdicts[j] = v
	}
	s.rows = append(s.rows, row)
}

// sideOfReport reduces a report with its item rows to a [cmpSide].
func sideOfReport(r *Report) *cmpSide {
	s := newCmpSide(runRef(r), r.ScorerNames())
	s.rows = make([]cmpRow, 0, len(r.Items))
	for i := range r.Items {
		s.addRow(&r.Items[i])
	}
	return s
}

// addRow keeps what a comparison needs of a report row: its key, the
// target's error and its verdicts.
func (s *cmpSide) addRow(it *ItemRow) {
	row := cmpRow{id: it.ID, repeat: it.Repeat, targetErr: it.Error, verdicts: make([]cmpVerdict, len(s.names))}
	row.calls, row.steps = agentCounts(it.Trajectory != nil, len(it.Trajectory), it.Steps)
	for k := range it.Scores {
		sc := &it.Scores[k]
		j := s.scorer(sc.Scorer)
		for len(row.verdicts) <= j {
			row.verdicts = append(row.verdicts, cmpVerdict{})
		}
		v := cmpVerdict{recorded: true, err: sc.Error}
		if sc.Score != nil {
			v.scored, v.score, v.passed = true, *sc.Score, sc.Passed
		}
		row.verdicts[j] = v
	}
	s.rows = append(s.rows, row)
}

// sideOfStore reads a stored run into a [cmpSide], streaming its results:
// each result's payloads are dropped as soon as its verdicts are copied.
func sideOfStore(ctx context.Context, store evalrun.RunStore, runID string) (*cmpSide, error) {
	run, err := store.GetRun(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("compare: run %s: %w", runID, err)
	}
	names := make([]string, len(run.Scorers))
	for i, sc := range run.Scorers {
		names[i] = sc.Name
	}
	s := newCmpSide(RunRef{ID: run.ID, Name: run.Name, Dataset: DatasetRef{Name: run.Dataset, Version: run.DatasetVersion}}, names)
	err = store.ScanResults(ctx, runID, evalrun.ResultQuery{}, func(r *evalrun.ItemResult) error {
		s.addResult(r)
		return ctx.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("compare: results of run %s: %w", runID, err)
	}
	return s, nil
}

// verdict returns the side's outcome for scorer j (its own index, -1 when
// the run has no such scorer) on row r. present is false when the run does
// not have the scorer; a result whose target failed, or that recorded no
// score, counts as a failure (score 0, not passed).
func (r *cmpRow) verdict(j int) (v cmpVerdict, present bool) {
	if j < 0 {
		return cmpVerdict{}, false
	}
	if j < len(r.verdicts) && r.verdicts[j].recorded {
		return r.verdicts[j], true
	}
	if r.targetErr != nil {
		msg := "target: " + *r.targetErr
		return cmpVerdict{err: &msg}, true
	}
	msg := "no score"
	return cmpVerdict{err: &msg}, true
}

// Compare compares run b against run a. Items are paired by (item id,
// repeat). Per scorer it gives the mean delta over the pairs with a paired
// bootstrap interval (fixed seed, reproducible), an exact sign-test
// p-value and both pass rates; a pair counts when at least one run scored
// it, and the side whose target or scorer failed counts as a failure
// (score 0, not passed). It lists the items that regressed or improved.
// Both reports need their item rows ([ErrNoItems] otherwise). To compare
// stored runs without holding their outputs, use [CompareStore].
func Compare(a, b *Report, opts CompareOptions) (*Comparison, error) {
	if a.Items == nil || b.Items == nil {
		return nil, ErrNoItems
	}
	return compareSides(sideOfReport(a), sideOfReport(b), opts), nil
}

// CompareStore compares two stored runs (b against a) as [Compare] does,
// streaming their results: memory grows with the number of results and
// scorers, not with the size of inputs and outputs. Errors are the
// store's (evalrun.ErrNotFound for an unknown run) or ctx's.
func CompareStore(ctx context.Context, store evalrun.RunStore, runA, runB string, opts CompareOptions) (*Comparison, error) {
	a, err := sideOfStore(ctx, store, runA)
	if err != nil {
		return nil, err
	}
	b, err := sideOfStore(ctx, store, runB)
	if err != nil {
		return nil, err
	}
	return compareSides(a, b, opts), nil
}

func compareSides(a, b *cmpSide, opts CompareOptions) *Comparison {
	o := opts.withDefaults()
	c := &Comparison{
		SchemaVersion: CompareSchemaVersion,
		A:             a.ref,
		B:             b.ref,
		Method: CompareMethod{Interval: "paired bootstrap (percentile)", Confidence: 1 - o.Alpha,
			Resamples: o.Resamples, Seed: o.Seed, Test: "exact two-sided sign test", Alpha: o.Alpha},
		OnlyA:     []string{},
		OnlyB:     []string{},
		Regressed: []ItemChange{},
		Improved:  []ItemChange{},
		Warnings:  []string{},
	}

	// Scorers of A, then those only in B; verdict changes are listed only
	// for scorers both runs have (a removed scorer is no regression).
	names := slices.Clone(a.names)
	for _, n := range b.names {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	ja, jb := make([]int, len(names)), make([]int, len(names))
	for j, n := range names {
		ja[j], jb[j] = sideIndex(a, n), sideIndex(b, n)
	}
	type acc struct {
		sa, sb, diffs    []float64
		passA, passB     int
		failedA, failedB int
	}
	accs := make([]acc, len(names))
	paired := pairRows(a, b, func(ra *cmpRow) {
		c.OnlyA = append(c.OnlyA, keyText(ra.id, ra.repeat))
	}, func(ra, rb *cmpRow) {
		c.Paired++
		if ra.targetErr != nil {
			c.CrashedA++
		}
		if rb.targetErr != nil {
			c.CrashedB++
		}
		for j, name := range names {
			va, okA := ra.verdict(ja[j])
			vb, okB := rb.verdict(jb[j])
			if !okA || !okB {
				continue // a scorer of one run only: nothing to pair, no change
			}
			if va.scored || vb.scored {
				ac := &accs[j]
				ac.sa = append(ac.sa, va.score)
				ac.sb = append(ac.sb, vb.score)
				ac.diffs = append(ac.diffs, vb.score-va.score)
				ac.passA += b2i(va.passed)
				ac.passB += b2i(vb.passed)
				ac.failedA += b2i(!va.scored)
				ac.failedB += b2i(!vb.scored)
			}
			if va.passed == vb.passed {
				continue
			}
			ch := ItemChange{ItemID: ra.id, Repeat: ra.repeat, Scorer: name, PassedA: va.passed, PassedB: vb.passed,
				ScoreA: scorePtr(va), ScoreB: scorePtr(vb),
				CallsA: ra.callsPtr(), CallsB: rb.callsPtr(), StepsA: ra.stepsPtr(), StepsB: rb.stepsPtr()}
			if !vb.scored {
				ch.ErrorB = vb.err
			}
			if va.passed {
				c.Regressed = append(c.Regressed, ch)
			} else {
				c.Improved = append(c.Improved, ch)
			}
		}
	})
	for i := range b.rows {
		if !paired[i] {
			c.OnlyB = append(c.OnlyB, keyText(b.rows[i].id, b.rows[i].repeat))
		}
	}

	c.Scorers = make(DeltaTable, len(names))
	for j, name := range names {
		ac := &accs[j]
		d := ScorerDelta{Name: name, Paired: len(ac.diffs), FailedA: ac.failedA, FailedB: ac.failedB}
		if n := len(ac.diffs); n > 0 {
			ma, mb := meanOf(ac.sa), meanOf(ac.sb)
			t := pairedTest(ac.diffs, o)
			d.MeanA, d.MeanB, d.Delta = &ma, &mb, &t.delta
			d.CILow, d.CIHigh = &t.lo, &t.hi
			d.PValue = &t.p
			d.Significant = t.significant
			pa, pb := float64(ac.passA)/float64(n), float64(ac.passB)/float64(n)
			d.PassRateA, d.PassRateB = &pa, &pb
		}
		c.Scorers[j] = d
	}
	for _, ch := range c.Regressed {
		c.Scorers.Get(ch.Scorer).Regressed++
	}
	for _, ch := range c.Improved {
		c.Scorers.Get(ch.Scorer).Improved++
	}
	c.Warnings = pairingWarnings(c, len(a.rows), len(b.rows))
	return c
}

// pairRows pairs the rows of a and b by (item id, repeat): it calls onPair
// with each row of a and the first row of b with its key, in a's order,
// and onlyA with each row of a that has no partner (a second row of a
// with the same key has none and is skipped silently). It returns which
// rows of b were paired.
func pairRows(a, b *cmpSide, onlyA func(ra *cmpRow), onPair func(ra, rb *cmpRow)) (paired []bool) {
	inB := make(map[pairKey]int, len(b.rows))
	for i := range b.rows {
		k := pairKey{b.rows[i].id, b.rows[i].repeat}
		if _, dup := inB[k]; !dup {
			inB[k] = i
		}
	}
	paired = make([]bool, len(b.rows))
	for i := range a.rows {
		ra := &a.rows[i]
		bi, ok := inB[pairKey{ra.id, ra.repeat}]
		if !ok || paired[bi] {
			if !ok && onlyA != nil {
				onlyA(ra)
			}
			continue
		}
		paired[bi] = true
		onPair(ra, &b.rows[bi])
	}
	return paired
}

// pairedResult is the statistics of paired differences: their mean, its
// bootstrap interval, the sign test's p-value and whether the difference
// is significant (p < alpha and the interval excludes 0).
type pairedResult struct {
	delta, lo, hi, p float64
	significant      bool
}

// pairedTest computes the statistics of diffs (not empty) with o's
// resamples, seed and alpha (o with its defaults applied): the one
// method of [Compare] and of an experiment's variants against their
// baseline.
func pairedTest(diffs []float64, o CompareOptions) pairedResult {
	t := pairedResult{delta: meanOf(diffs)}
	t.lo, t.hi = bootstrapCI(diffs, resamplesFor(o.Resamples, len(diffs)), o.Seed, o.Alpha)
	t.p = signTest(diffs)
	t.significant = t.p < o.Alpha && (t.lo > 0 || t.hi < 0)
	return t
}

// pairingWarnings says when the pairing leaves the comparison meaningless
// (no shared item) or partial (different datasets).
func pairingWarnings(c *Comparison, resultsA, resultsB int) []string {
	da, db := c.A.Dataset, c.B.Dataset
	side := func(d DatasetRef, results int) string {
		return fmt.Sprintf("dataset %s v%d (%d result%s)", d.Name, d.Version, results, plural(results))
	}
	switch {
	case c.Paired == 0:
		return []string{fmt.Sprintf("runs share no items: A is %s, B is %s; nothing was compared",
			side(da, resultsA), side(db, resultsB))}
	case da != db:
		return []string{fmt.Sprintf("runs are of different dataset versions: A is dataset %s v%d, B is dataset %s v%d; only the items in both (%d, by id and repeat) are compared",
			da.Name, da.Version, db.Name, db.Version, c.Paired)}
	}
	return []string{}
}

func sideIndex(s *cmpSide, name string) int {
	if i, ok := s.scorerN[name]; ok {
		return i
	}
	return -1
}

func scorePtr(v cmpVerdict) *float64 {
	if !v.scored {
		return nil
	}
	x := v.score
	return &x
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func runRef(r *Report) RunRef {
	return RunRef{ID: r.Run.ID, Name: r.Run.Name, Dataset: r.Run.Dataset}
}

// keyText is an item's key as listed: its id, with "#repeat" when > 0.
func keyText(id string, repeat int) string {
	if repeat > 0 {
		return fmt.Sprintf("%s#%d", id, repeat)
	}
	return id
}

// meanOf is the mean summed in the given (pairing) order.
func meanOf(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// resamplesFor bounds the bootstrap's work to about 10⁸ draws per scorer.
func resamplesFor(want, n int) int {
	if n <= 10_000 {
		return want
	}
	return min(want, max(1000, 100_000_000/n))
}

// bootstrapCI returns the percentile bootstrap interval of the mean of
// diffs at level 1−alpha: resamples means of n draws with replacement,
// from a PCG seeded with (seed, seed), then the alpha/2 and 1−alpha/2
// percentiles of those means (linear interpolation between closest ranks).
//
// When every difference is the same (all pairs agree, as they often do
// between similar variants), every resample's mean is the same sum of
// those n values in the same order: that one mean is returned without
// resampling, bit for bit what resampling would give.
func bootstrapCI(diffs []float64, resamples int, seed uint64, alpha float64) (lo, hi float64) {
	n := len(diffs)
	if n > 0 && !slices.ContainsFunc(diffs, func(d float64) bool { return d != diffs[0] }) {
		var s float64
		for range n {
			s += diffs[0]
		}
		return s / float64(n), s / float64(n)
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	means := make([]float64, resamples)
	for r := range means {
		var s float64
		for range n {
			s += diffs[rng.IntN(n)]
		}
		means[r] = s / float64(n)
	}
	slices.Sort(means)
	return percentile(means, alpha/2), percentile(means, 1-alpha/2)
}

// signTest returns the exact two-sided sign test's p-value for diffs: the
// probability, under a fair coin, of a split of the m non-zero differences
// at least as uneven as observed; 1 when m is 0. For pass/fail scores it
// is the exact McNemar test.
func signTest(diffs []float64) float64 {
	var pos, neg int
	for _, d := range diffs {
		switch {
		case d > 0:
			pos++
		case d < 0:
			neg++
		}
	}
	m := pos + neg
	if m == 0 {
		return 1
	}
	k := min(pos, neg)
	lm, _ := math.Lgamma(float64(m + 1))
	var tail float64
	for i := 0; i <= k; i++ {
		li, _ := math.Lgamma(float64(i + 1))
		lr, _ := math.Lgamma(float64(m - i + 1))
		tail += math.Exp(lm - li - lr - float64(m)*math.Ln2)
	}
	return min(1, 2*tail)
}
