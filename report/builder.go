package report

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	bits64 "math/bits"
	"slices"
	"strings"
	"time"

	"github.com/evalrun/evalrun"
)

// Option configures a [Builder].
type Option func(*config)

type config struct {
	noItems bool
}

// WithoutItems omits the per-item rows (Report.Items is nil, JSON null), so
// that the memory of a huge run's report grows only with its scores (one
// float64 per scored result per scorer and cohort, for the percentiles),
// its latencies and its failures.
func WithoutItems() Option { return func(c *config) { c.noItems = true } }

// Builder aggregates the results of one run into a [Report] in one pass.
//
// Results are expected in (index, repeat) order, as the engine and the
// stores yield them; rows and failures that arrive out of order are sorted
// when the report is made. Each result must be added once. A Builder is not
// safe for concurrent use. The zero Builder is not usable: call
// [NewBuilder].
type Builder struct {
	run *evalrun.Run
	cfg config

	names      []string
	namePtrs   []*string
	kinds      kindSet
	thresholds []float64
	index      map[string]int
	overall    []*scoreAcc

	cohorts  map[string]*cohortAcc
	untagged *cohortAcc
	// allUntagged is true while no result had tags: the untagged cohort's
	// scores are then the overall ones, and are not kept twice (a float64
	// per result and scorer); the first tagged result copies them.
	allUntagged bool

	results, succeeded, failed int

	usage     usageAcc
	latencies []float64

	failures       []Failure
	failuresSorted bool

	adv *advAcc

	items       []ItemRow
	itemsSorted bool
	lastIndex   int
	lastRepeat  int

	cacheHits int
	reps      repeatAcc
	agent     agentAcc
}

// repeatAcc counts, per item index, the item's results and, per scorer, how
// many of them passed: the input of [RepeatStats] and the flaky list. Item
// indexes are dense (positions in the run's item list), so slices indexed
// by them cost a few bytes per item, whatever the order results arrive in.
//
// Until a result of a repeat > 0 arrives, every item has at most one
// result: seen and passBits then keep a bit per item instead of the
// counters (a run without repeats, most runs, costs 1 bit per item and
// scorer instead of 4 bytes), and the first repeat turns them into the
// counters.
type repeatAcc struct {
	maxRepeat int
	seen      []uint64   // seen[index/64] bit index%64: the item has its result
	passBits  [][]uint64 // passBits[scorer]: the item's result passed
	runs      []int32    // runs[index]: results of the item
	ids       []string   // ids[index]: the item's id
	passed    [][]int32  // passed[scorer][index]: results that passed
}

// add counts result r of the item with id at index.
func (a *repeatAcc) add(index, repeat int, id string) {
	if repeat > 0 && a.maxRepeat == 0 {
		a.expand()
	}
	a.maxRepeat = max(a.maxRepeat, repeat)
	if a.maxRepeat == 0 {
		a.seen = setBit(a.seen, index)
		return
	}
	if index >= len(a.runs) {
		n := max(index+1, grown(len(a.runs)))
		a.runs = append(a.runs, make([]int32, n-len(a.runs))...)
	}
	a.runs[index]++
	// Only an item with several results can be flaky, and the flaky list
	// is what reads ids: an item run once (no repeats) costs no id.
	if repeat > 0 {
		if index >= len(a.ids) {
			a.ids = append(a.ids, make([]string, max(index+1, grown(len(a.ids)))-len(a.ids))...)
		}
		if a.ids[index] == "" {
			a.ids[index] = id
		}
	}
}

// idOf returns the id of the item at index, known once it had a repeat.
func (a *repeatAcc) idOf(index int) string {
	if index < len(a.ids) {
		return a.ids[index]
	}
	return ""
}

// expand turns the bits of a run seen without repeats so far into the
// counters.
func (a *repeatAcc) expand() {
	counts := func(bits []uint64) []int32 {
		out := make([]int32, len(bits)*64)
		for w, word := range bits {
			for word != 0 {
				b := bits64.TrailingZeros64(word)
				out[w*64+b] = 1
				word &= word - 1
			}
		}
		return out
	}
	a.runs = counts(a.seen)
	a.passed = make([][]int32, len(a.passBits))
	for i, bits := range a.passBits {
		a.passed[i] = counts(bits)
	}
	a.seen, a.passBits = nil, nil
}

// setBit sets bit i of bits, growing it as needed.
func setBit(bits []uint64, i int) []uint64 {
	w := i / 64
	if w >= len(bits) {
		bits = append(bits, make([]uint64, max(w+1, grown(len(bits)))-len(bits))...)
	}
	bits[w] |= 1 << (i % 64)
	return bits
}

// grown is the next length of a per-item slice of length n: a quarter
// more, so that a million items' counters do not end with twice the room
// they need.
func grown(n int) int { return max(1024, n+n/4) }

// pass counts a passed verdict of scorer i on the item at index.
func (a *repeatAcc) pass(i, index int) {
	if a.maxRepeat == 0 {
		for len(a.passBits) <= i {
			a.passBits = append(a.passBits, nil)
		}
		a.passBits[i] = setBit(a.passBits[i], index)
		return
	}
	for len(a.passed) <= i {
		a.passed = append(a.passed, nil)
	}
	p := a.passed[i]
	if index >= len(p) {
		p = append(p, make([]int32, max(index+1, grown(len(p)))-len(p))...)
		a.passed[i] = p
	}
	p[index]++
}

// passedOf returns the passed count of scorer i on the item at index.
func (a *repeatAcc) passedOf(i, index int) int {
	if i < len(a.passed) && index < len(a.passed[i]) {
		return int(a.passed[i][index])
	}
	return 0
}

type cohortAcc struct {
	count  int
	failed int
	accs   []*scoreAcc
}

// acc returns the accumulator of scorer i, growing the list as needed.
func (c *cohortAcc) acc(i int) *scoreAcc {
	for len(c.accs) <= i {
		c.accs = append(c.accs, &scoreAcc{})
	}
	return c.accs[i]
}

type usageAcc struct {
	in, out         int64
	inRep, outRep   int
	cost            float64
	costRep         int
	sIn, sOut       int64
	sInRep, sOutRep int
	sCost           float64
	sCostRep        int
}

type advAcc struct {
	count      int
	categories map[string]*cohortAcc
	severities SeverityCounts
	frameworks map[string]int
}

// NewBuilder returns a Builder for run, whose record gives the report's run
// block and, in order, its scorers and their thresholds. A scorer met in
// the results but missing from run.Scorers is added after them with
// [evalrun.DefaultThreshold]. run may be nil.
func NewBuilder(run *evalrun.Run, opts ...Option) *Builder {
	if run == nil {
		run = &evalrun.Run{}
	}
	return newBuilder(run, run.Total, opts)
}

// newBuilder is NewBuilder with its buffers sized for n results.
func newBuilder(run *evalrun.Run, n int, opts []Option) *Builder {
	b := &Builder{
		run:            run,
		index:          make(map[string]int, len(run.Scorers)),
		kinds:          make(kindSet),
		cohorts:        make(map[string]*cohortAcc),
		failures:       []Failure{},
		failuresSorted: true,
		itemsSorted:    true,
		allUntagged:    true,
		lastIndex:      -1,
	}
	for _, o := range opts {
		o(&b.cfg)
	}
	if !b.cfg.noItems {
		b.items = make([]ItemRow, 0, min(max(n, 0), 1<<20))
	}
	// Sized once: appending would double it (and copy) on the way.
	b.latencies = make([]float64, 0, min(max(n, 0), 1<<24))
	for _, s := range run.Scorers {
		b.scorerIndex(s.Name, s.Threshold)
	}
	// The run's scorers score every result at most once: their overall
	// scores are sized once, not doubled (and copied) on the way.
	for _, a := range b.overall {
		a.scores = make([]float64, 0, min(max(n, 0), 1<<24))
	}
	return b
}

// Build returns the report of run over results (e.g. a [evalrun.Summary]'s
// Results).
func Build(run *evalrun.Run, results []*evalrun.ItemResult, opts ...Option) *Report {
	if run == nil {
		run = &evalrun.Run{}
	}
	// Sized for the results given, not the run's total: the viewer builds
	// the rows of a 50-result page of a 100,000-item run, for which sizing
	// by the total allocated (and zeroed) ~35 MB, half the page's CPU.
	b := newBuilder(run, len(results), opts)
	for _, r := range results {
		if r != nil {
			b.Add(r)
		}
	}
	return b.Report()
}

// FromStore builds the report of the run with the given id, streaming its
// results from store. Errors are the store's (evalrun.ErrNotFound for an
// unknown run) or ctx's.
func FromStore(ctx context.Context, store evalrun.RunStore, runID string, opts ...Option) (*Report, error) {
	run, err := store.GetRun(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("report: run %s: %w", runID, err)
	}
	b := NewBuilder(run, opts...)
	q := evalrun.ResultQuery{SkipPayloads: b.cfg.noItems && !mayHaveTrajectories(run)}
	err = store.ScanResults(ctx, runID, q, func(r *evalrun.ItemResult) error {
		b.Add(r)
		return ctx.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("report: results of run %s: %w", runID, err)
	}
	return b.Report(), nil
}

// mayHaveTrajectories reports whether the run's results may carry
// trajectories, which the agent summary reads and a payload-free scan
// ([evalrun.ResultQuery.SkipPayloads]) leaves out: a run without a stored
// config (a library run: any Go target may record one), or whose config
// has tools (an agent) or a trajectory mapping (http, exec). Every other
// report without item rows is built from scores, usage, errors and
// timings alone, without reading outputs.
func mayHaveTrajectories(run *evalrun.Run) bool {
	c := run.Config
	return len(c) == 0 || bytes.Contains(c, []byte(`"trajectory"`)) || bytes.Contains(c, []byte(`"tools"`)) ||
		bytes.Contains(c, []byte(`"workflow"`))
}

// kindSet interns error kinds: one shared pointer per kind, so that rows
// and failures do not each allocate one.
type kindSet map[evalrun.ErrorKind]*evalrun.ErrorKind

// ptr returns the shared pointer to kind, permanent when empty.
func (ks kindSet) ptr(kind evalrun.ErrorKind) *evalrun.ErrorKind {
	if kind == "" {
		kind = evalrun.ErrorPermanent
	}
	p := ks[kind]
	if p == nil {
		k := kind // a fresh variable: &kind would move every call's argument to the heap
		p = &k
		ks[kind] = p
	}
	return p
}

// rowOf returns the report row of result r: the one conversion of an
// [evalrun.ItemResult] into an [ItemRow], used by the [Builder] and by the
// streaming renderers ([WriteJSONStream], [WriteJUnitStream]). Error kinds
// are interned in kinds. The row shares r's raw JSON values when they are
// valid JSON.
func rowOf(r *evalrun.ItemResult, kinds kindSet) ItemRow {
	row := ItemRow{
		Index: r.Index, Repeat: r.Repeat, ID: resultID(r), Tags: tagsOf(r.Item),
		Output: validJSON(r.Output), RetryCount: r.RetryCount,
		Adversarial: adversarialOf(metadataOf(r)), Scores: make(ItemScores, 0, len(r.Scores)),
	}
	if r.Item != nil {
		row.Input = validJSON(r.Item.Input)
		row.Expected = validJSON(r.Item.Expected)
	}
	if r.Failed() {
		msg := r.Error
		row.Error, row.ErrorKind = &msg, kinds.ptr(r.ErrorKind)
	}
	if r.Latency > 0 {
		ms := float64(r.Latency) / 1e6
		row.LatencyMS = &ms
	}
	if t := r.Trajectory; t != nil {
		row.Steps, row.Trajectory = max(t.Steps, 0), trajectoryRow(t)
	}
	for k := range r.Scores {
		sr := &r.Scores[k]
		is := ItemScore{Scorer: sr.Scorer, Score: sr.Score, Passed: sr.Score != nil && sr.Passed}
		if sr.Score == nil {
			msg := scoreError(sr)
			is.Error = &msg
		}
		if sr.Reason != "" {
			reason := sr.Reason
			is.Reason = &reason
		}
		row.Scores = append(row.Scores, is)
	}
	return row
}

// resultID returns the result's item id: its ItemID, else its Item's.
func resultID(r *evalrun.ItemResult) string {
	if r.ItemID == "" && r.Item != nil {
		return r.Item.ID
	}
	return r.ItemID
}

// metadataOf returns the metadata of the result's item, nil without one.
func metadataOf(r *evalrun.ItemResult) map[string]any {
	if r.Item == nil {
		return nil
	}
	return r.Item.Metadata
}

// scoreError returns the error message of a scorer result without a
// score: its error, "no score" when it has none.
func scoreError(sr *evalrun.ScorerResult) string {
	if sr.Error == "" {
		return "no score"
	}
	return sr.Error
}

func (b *Builder) scorerIndex(name string, threshold float64) int {
	if i, ok := b.index[name]; ok {
		return i
	}
	i := len(b.names)
	b.index[name] = i
	b.names = append(b.names, name)
	n := name // a fresh variable: &name would move every call's argument to the heap
	b.namePtrs = append(b.namePtrs, &n)
	b.thresholds = append(b.thresholds, threshold)
	b.overall = append(b.overall, &scoreAcc{})
	return i
}

// Add aggregates one result. r.Item should be filled (stores and the engine
// do); without it the row has the result's ItemID, no tags and a null input.
func (b *Builder) Add(r *evalrun.ItemResult) {
	b.results++
	if r.Index < b.lastIndex || r.Index == b.lastIndex && r.Repeat < b.lastRepeat {
		b.itemsSorted, b.failuresSorted = false, false
	}
	b.lastIndex, b.lastRepeat = r.Index, r.Repeat

	// The row, when kept, is made first: its id, tags and adversarial
	// info are the ones the aggregates use.
	var id string
	var tags []string
	var adv *AdversarialInfo
	if b.items != nil {
		b.items = append(b.items, rowOf(r, b.kinds))
		row := &b.items[len(b.items)-1]
		id, tags, adv = row.ID, row.Tags, row.Adversarial
	} else {
		id, tags, adv = resultID(r), tagsOf(r.Item), adversarialOf(metadataOf(r))
	}
	var idp *string // &id, made once when a failure needs it
	idPtr := func() *string {
		if idp == nil {
			v := id
			idp = &v
		}
		return idp
	}

	// The cohorts this result counts in.
	var cohorts [8]*cohortAcc
	cs := cohorts[:0]
	if len(tags) > 0 && b.allUntagged {
		b.allUntagged = false
		if b.untagged != nil {
			b.untagged.accs = make([]*scoreAcc, len(b.overall))
			for i, a := range b.overall {
				b.untagged.accs[i] = a.clone()
			}
		}
	}
	if len(tags) == 0 {
		if b.untagged == nil {
			b.untagged = &cohortAcc{}
		}
		cs = append(cs, b.untagged)
	}
	for _, t := range tags {
		c := b.cohorts[t]
		if c == nil {
			c = &cohortAcc{}
			b.cohorts[t] = c
		}
		cs = append(cs, c)
	}
	var advCat *cohortAcc
	if adv != nil {
		advCat = b.addAdversarial(adv)
		cs = append(cs, advCat)
	}
	if r.CacheHit {
		b.cacheHits++
	}
	if r.Trajectory != nil {
		b.agent.add(r.Trajectory)
	}
	// A negative index (not made by the engine) cannot be reduced over
	// repeats; it still counts everywhere else.
	tracked := r.Index >= 0
	if tracked {
		b.reps.add(r.Index, r.Repeat, id)
	}

	failed := r.Failed()
	for _, c := range cs {
		c.count++
		if failed {
			c.failed++
		}
	}

	if failed {
		b.failed++
		b.failures = append(b.failures, Failure{
			Index: r.Index, ItemID: idPtr(), Repeat: r.Repeat, Stage: StageTarget,
			Kind: b.kinds.ptr(r.ErrorKind), Message: r.Error,
		})
	} else {
		b.succeeded++
	}

	for k := range r.Scores {
		sr := &r.Scores[k]
		i := b.scorerIndex(sr.Scorer, evalrun.DefaultThreshold)
		passed := sr.Score != nil && sr.Passed
		hasErr := sr.Score == nil
		b.overall[i].add(sr.Score, passed, hasErr)
		if passed && tracked {
			b.reps.pass(i, r.Index)
		}
		for _, c := range cs {
			if c == b.untagged && b.allUntagged {
				continue // the overall accumulator holds the same
			}
			c.acc(i).add(sr.Score, passed, hasErr)
		}
		if hasErr {
			b.failures = append(b.failures, Failure{
				Index: r.Index, ItemID: idPtr(), Repeat: r.Repeat, Stage: StageScorer,
				Scorer: b.namePtrs[i], Kind: b.kinds.ptr(sr.ErrorKind), Message: scoreError(sr),
			})
		}
		b.usage.addScorer(sr.Usage)
	}

	b.usage.addTarget(r.Usage)
	if r.Latency > 0 {
		ms := float64(r.Latency) / 1e6
		b.latencies = append(b.latencies, ms)
	}
}

func (b *Builder) addAdversarial(info *AdversarialInfo) *cohortAcc {
	if b.adv == nil {
		b.adv = &advAcc{categories: make(map[string]*cohortAcc), frameworks: make(map[string]int)}
	}
	a := b.adv
	a.count++
	a.severities.add(info.Severity)
	for _, f := range info.Frameworks {
		a.frameworks[f]++
	}
	c := a.categories[info.Category]
	if c == nil {
		c = &cohortAcc{}
		a.categories[info.Category] = c
	}
	return c
}

func (u *usageAcc) addTarget(x evalrun.Usage) {
	if x.InputTokens != nil {
		u.in += *x.InputTokens
		u.inRep++
	}
	if x.OutputTokens != nil {
		u.out += *x.OutputTokens
		u.outRep++
	}
	if x.CostUSD != nil {
		u.cost += *x.CostUSD
		u.costRep++
	}
}

func (u *usageAcc) addScorer(x evalrun.Usage) {
	if x.InputTokens != nil {
		u.sIn += *x.InputTokens
		u.sInRep++
	}
	if x.OutputTokens != nil {
		u.sOut += *x.OutputTokens
		u.sOutRep++
	}
	if x.CostUSD != nil {
		u.sCost += *x.CostUSD
		u.sCostRep++
	}
}

// Report returns the report of the results added so far. It may be called
// more than once; adding more results afterwards does not change a report
// already returned, except that item rows are shared with the builder.
func (b *Builder) Report() *Report {
	run := b.run
	rep := &Report{SchemaVersion: SchemaVersion}
	rs := &rep.Run
	rs.ID, rs.Name, rs.Status = run.ID, run.Name, run.Status
	rs.Dataset = DatasetRef{Name: run.Dataset, Version: run.DatasetVersion}
	rs.Target = run.Target
	rs.Total, rs.Succeeded, rs.Failed, rs.Skipped = run.Total, run.Succeeded, run.Failed, run.Skipped
	if rs.Succeeded+rs.Failed == 0 && b.results > 0 {
		// A record without counts (a run still being built): count the
		// results.
		rs.Succeeded, rs.Failed = b.succeeded, b.failed
		rs.Total = max(rs.Total, b.results)
		rs.Skipped = rs.Total - rs.Succeeded - rs.Failed
	}
	rs.CompletedWithErrors = run.Status == evalrun.RunCompleted && rs.Failed > 0
	rs.PersistErrors = run.PersistErrors
	rs.CacheHits = b.cacheHits
	if run.Concurrency > 0 {
		c := run.Concurrency
		rs.Concurrency = &c
	}
	// Times at microsecond precision, what every store keeps: the report
	// of a finished run is then the same bytes whether it was built from
	// the engine's record or read back from the store.
	if !run.StartedAt.IsZero() {
		t := run.StartedAt.Truncate(time.Microsecond)
		rs.StartedAt = &t
	}
	if !run.CompletedAt.IsZero() {
		t := run.CompletedAt.Truncate(time.Microsecond)
		rs.CompletedAt = &t
	}
	if rs.StartedAt != nil && rs.CompletedAt != nil {
		d := rs.CompletedAt.Sub(*rs.StartedAt).Milliseconds()
		rs.DurationMS = &d
	}

	rep.Scorers = make(ScorerTable, len(b.names))
	var sum float64
	var n int
	for i, name := range b.names {
		rep.Scorers[i] = b.overall[i].stats(name, b.thresholds[i])
		if p := rep.Scorers[i].PassRate; p != nil {
			sum += *p
			n++
		}
	}
	if n > 0 {
		rep.MacroPassRate = floatPtr(sum / float64(n))
	}
	if b.reps.maxRepeat > 0 {
		rep.Flaky = b.reduceRepeats(rep.Scorers)
	}

	tags := make([]string, 0, len(b.cohorts))
	for t := range b.cohorts {
		tags = append(tags, t)
	}
	slices.Sort(tags)
	rep.Cohorts = make(CohortTable, 0, len(tags)+1)
	for _, t := range tags {
		tag := t
		rep.Cohorts = append(rep.Cohorts, Cohort{Key: CohortKey(t), Tag: &tag, Count: b.cohorts[t].count, Scorers: b.table(b.cohorts[t])})
	}
	if b.untagged != nil {
		rep.Cohorts = append(rep.Cohorts, Cohort{Key: UntaggedCohort, Count: b.untagged.count, Scorers: b.table(b.untagged)})
	}

	rep.Usage = b.usageSummary()

	rep.Failures = b.failures
	if !b.failuresSorted {
		rep.Failures = slices.Clone(b.failures)
		slices.SortStableFunc(rep.Failures, func(x, y Failure) int {
			return cmp.Or(cmp.Compare(x.Index, y.Index), cmp.Compare(x.Repeat, y.Repeat))
		})
	}
	if run.PersistErrors > 0 {
		rep.Failures = append(slices.Clip(rep.Failures), Failure{
			Index: -1, Stage: StagePersist,
			Message: fmt.Sprintf("%d result%s could not be stored", run.PersistErrors, plural(run.PersistErrors)),
		})
	}
	rep.Failures = slices.Clip(rep.Failures)

	if b.adv != nil {
		rep.Adversarial = b.adversarial()
	}
	rep.Agent = b.agent.summary()

	rep.Items = b.items
	if b.items != nil && !b.itemsSorted {
		rep.Items = slices.Clone(b.items)
		slices.SortStableFunc(rep.Items, func(x, y ItemRow) int {
			return cmp.Or(cmp.Compare(x.Index, y.Index), cmp.Compare(x.Repeat, y.Repeat))
		})
	}
	rep.Items = slices.Clip(rep.Items)
	return rep
}

// reduceRepeats sets the [RepeatStats] of every scorer and returns the
// flaky list (never nil), in item order then scorer order.
func (b *Builder) reduceRepeats(scorers ScorerTable) []FlakyItem {
	a := &b.reps
	k := a.maxRepeat + 1
	stats := make([]RepeatStats, len(scorers))
	anyPassed := make([]int, len(scorers)) // complete items passed at least once
	allPassed := make([]int, len(scorers)) // complete items passed every time
	flaky := []FlakyItem{}
	for index, n32 := range a.runs {
		n := int(n32)
		if n == 0 {
			continue
		}
		for i := range scorers {
			p := a.passedOf(i, index)
			if n == k {
				stats[i].Items++
				if p > 0 {
					anyPassed[i]++
				}
				if p == n {
					allPassed[i]++
				}
			}
			if p > 0 && p < n {
				stats[i].FlakyCount++
				flaky = append(flaky, FlakyItem{Index: index, ItemID: a.idOf(index), Scorer: scorers[i].Name, Passed: p, Runs: n})
			}
		}
	}
	for i := range scorers {
		st := &stats[i]
		st.K = k
		if st.Items > 0 {
			st.PassAtK = floatPtr(float64(anyPassed[i]) / float64(st.Items))
			st.PassAllK = floatPtr(float64(allPassed[i]) / float64(st.Items))
		}
		scorers[i].RepeatStats = st
	}
	return flaky
}

// table returns the per-scorer statistics of a cohort, every scorer of the
// run included.
func (b *Builder) table(c *cohortAcc) ScorerTable {
	t := make(ScorerTable, len(b.names))
	for i, name := range b.names {
		acc := c.acc(i)
		if c == b.untagged && b.allUntagged {
			acc = b.overall[i]
		}
		t[i] = acc.stats(name, b.thresholds[i])
	}
	return t
}

func (b *Builder) usageSummary() UsageSummary {
	u := &b.usage
	var s UsageSummary
	s.InputTokens = intTotal(u.in, u.inRep)
	s.OutputTokens = intTotal(u.out, u.outRep)
	s.CostUSD = floatTotal(u.cost, u.costRep)
	s.Scorers.InputTokens = intTotal(u.sIn, u.sInRep)
	s.Scorers.OutputTokens = intTotal(u.sOut, u.sOutRep)
	s.Scorers.CostUSD = floatTotal(u.sCost, u.sCostRep)
	s.LatencyMS.Reported = len(b.latencies)
	if len(b.latencies) > 0 {
		slices.Sort(b.latencies)
		s.LatencyMS.Mean = floatPtr(mean(b.latencies))
		s.LatencyMS.P50 = floatPtr(percentile(b.latencies, 0.50))
		s.LatencyMS.P95 = floatPtr(percentile(b.latencies, 0.95))
		s.LatencyMS.Max = floatPtr(b.latencies[len(b.latencies)-1])
	}
	return s
}

func (b *Builder) adversarial() *Adversarial {
	a := b.adv
	out := &Adversarial{Count: a.count, Severities: a.severities, Frameworks: make(map[string]int, len(a.frameworks))}
	for f, n := range a.frameworks {
		out.Frameworks[f] = n
	}
	cats := make([]string, 0, len(a.categories))
	for c := range a.categories {
		cats = append(cats, c)
	}
	slices.Sort(cats)
	out.Categories = make(AdversarialTable, len(cats))
	for i, c := range cats {
		acc := a.categories[c]
		out.Categories[i] = AdversarialCategory{Category: c, Count: acc.count, Failed: acc.failed, Scorers: b.table(acc)}
	}
	return out
}

func intTotal(sum int64, reported int) IntTotal {
	t := IntTotal{Reported: reported}
	if reported > 0 {
		t.Total = &sum
	}
	return t
}

func floatTotal(sum float64, reported int) FloatTotal {
	t := FloatTotal{Reported: reported}
	if reported > 0 {
		t.Total = &sum
	}
	return t
}

// tagsOf returns the item's tags, trimmed, without empty ones and
// duplicates, in the item's order.
func tagsOf(it *evalrun.Item) []string {
	raw := it.Tags()
	out := make([]string, 0, len(raw))
	// Beyond a few tags, a set rather than a look-up in out: an item may
	// carry many tags, which the look-up made cost their number squared
	// per result.
	var seen map[string]bool
	if len(raw) > 16 {
		seen = make(map[string]bool, len(raw))
	}
	for _, t := range raw {
		t = strings.TrimSpace(t)
		switch {
		case t == "":
		case seen != nil:
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		case !slices.Contains(out, t):
			out = append(out, t)
		}
	}
	return out
}

// validJSON returns v, nil for an empty value, and the JSON string of its
// text when v is not valid JSON (so a report can always be written).
func validJSON(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return nil
	}
	if !json.Valid(v) {
		return evalrun.String(string(v))
	}
	return v
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// ptrValue formats a nullable number for people: "—" for nil.
func ptrValue(p *float64, format string) string {
	if p == nil || math.IsNaN(*p) {
		return "—"
	}
	return fmt.Sprintf(format, *p)
}
