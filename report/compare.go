package report

import (
	"context"
	"encoding/json"
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

// ScorerDelta compares one scorer over the paired items both runs scored.
type ScorerDelta struct {
	// Name is the key of the JSON object.
	Name string `json:"-"`
	// Paired is the number of pairs where both runs have a score.
	Paired int `json:"paired"`
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
	// PassRateA and PassRateB are the pass rates over the pairs.
	PassRateA *float64 `json:"pass_rate_a"`
	PassRateB *float64 `json:"pass_rate_b"`
	// Regressed and Improved count the scorer's entries in the lists.
	Regressed int `json:"regressed"`
	Improved  int `json:"improved"`
}

// DeltaTable is a list of scorer deltas written as a JSON object keyed by
// scorer name.
type DeltaTable []ScorerDelta

// Get returns the named scorer's delta, or nil.
func (t DeltaTable) Get(name string) *ScorerDelta {
	for i := range t {
		if t[i].Name == name {
			return &t[i]
		}
	}
	return nil
}

// MarshalJSON writes the table as an object in order.
func (t DeltaTable) MarshalJSON() ([]byte, error) {
	return marshalObject(len(t), func(i int) (string, any) { return t[i].Name, &t[i] })
}

// UnmarshalJSON reads an object, keeping its key order.
func (t *DeltaTable) UnmarshalJSON(data []byte) error {
	*t = DeltaTable{}
	return unmarshalObject(data, func(key string, raw json.RawMessage) error {
		d := ScorerDelta{Name: key}
		if err := json.Unmarshal(raw, &d); err != nil {
			return err
		}
		*t = append(*t, d)
		return nil
	})
}

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
}

type pairKey struct {
	id     string
	repeat int
}

// Compare compares run b against run a. Items are paired by (item id,
// repeat); per scorer it gives the mean delta over the pairs both runs
// scored with a paired bootstrap interval (fixed seed, reproducible) and an
// exact sign-test p-value, and it lists the items that regressed or
// improved. Both reports need their item rows ([ErrNoItems] otherwise).
func Compare(a, b *Report, opts CompareOptions) (*Comparison, error) {
	if a.Items == nil || b.Items == nil {
		return nil, ErrNoItems
	}
	o := opts.withDefaults()
	c := &Comparison{
		SchemaVersion: CompareSchemaVersion,
		A:             runRef(a),
		B:             runRef(b),
		Method: CompareMethod{Interval: "paired bootstrap (percentile)", Confidence: 1 - o.Alpha,
			Resamples: o.Resamples, Seed: o.Seed, Test: "exact two-sided sign test", Alpha: o.Alpha},
		OnlyA:     []string{},
		OnlyB:     []string{},
		Regressed: []ItemChange{},
		Improved:  []ItemChange{},
	}

	inB := make(map[pairKey]*ItemRow, len(b.Items))
	for i := range b.Items {
		k := pairKey{b.Items[i].ID, b.Items[i].Repeat}
		if _, dup := inB[k]; !dup {
			inB[k] = &b.Items[i]
		}
	}
	// Scorers of A, then those only in B; verdict changes are listed only
	// for scorers both runs have (a removed scorer is no regression).
	names, namesB := a.ScorerNames(), b.ScorerNames()
	inBoth := make([]bool, len(names))
	for j, n := range names {
		inBoth[j] = slices.Contains(namesB, n)
	}
	for _, n := range namesB {
		if !slices.Contains(names, n) {
			names = append(names, n)
			inBoth = append(inBoth, false)
		}
	}
	type acc struct {
		sa, sb, diffs []float64
		passA, passB  int
	}
	accs := make([]acc, len(names))
	paired := make(map[pairKey]bool, len(a.Items))
	for i := range a.Items {
		ra := &a.Items[i]
		k := pairKey{ra.ID, ra.Repeat}
		rb, ok := inB[k]
		if !ok || paired[k] {
			if !ok {
				c.OnlyA = append(c.OnlyA, itemKey(ra))
			}
			continue
		}
		paired[k] = true
		c.Paired++
		for j, name := range names {
			va, vb := ra.Scores.Get(name), rb.Scores.Get(name)
			passA := va != nil && va.Score != nil && va.Passed
			passB := vb != nil && vb.Score != nil && vb.Passed
			if va != nil && va.Score != nil && vb != nil && vb.Score != nil {
				ac := &accs[j]
				ac.sa = append(ac.sa, *va.Score)
				ac.sb = append(ac.sb, *vb.Score)
				ac.diffs = append(ac.diffs, *vb.Score-*va.Score)
				if passA {
					ac.passA++
				}
				if passB {
					ac.passB++
				}
			}
			if passA == passB || !inBoth[j] {
				continue
			}
			ch := ItemChange{ItemID: ra.ID, Repeat: ra.Repeat, Scorer: name, PassedA: passA, PassedB: passB}
			if va != nil {
				ch.ScoreA = va.Score
			}
			if vb != nil {
				ch.ScoreB = vb.Score
				ch.ErrorB = vb.Error
			}
			if vb == nil && rb.Error != nil {
				msg := "target: " + *rb.Error
				ch.ErrorB = &msg
			}
			if passA {
				c.Regressed = append(c.Regressed, ch)
			} else {
				c.Improved = append(c.Improved, ch)
			}
		}
	}
	for i := range b.Items {
		rb := &b.Items[i]
		if !paired[pairKey{rb.ID, rb.Repeat}] {
			c.OnlyB = append(c.OnlyB, itemKey(rb))
		}
	}

	c.Scorers = make(DeltaTable, len(names))
	for j, name := range names {
		ac := &accs[j]
		d := ScorerDelta{Name: name, Paired: len(ac.diffs)}
		if n := len(ac.diffs); n > 0 {
			ma, mb := meanOf(ac.sa), meanOf(ac.sb)
			delta := meanOf(ac.diffs)
			d.MeanA, d.MeanB, d.Delta = &ma, &mb, &delta
			lo, hi := bootstrapCI(ac.diffs, resamplesFor(o.Resamples, n), o.Seed, o.Alpha)
			d.CILow, d.CIHigh = &lo, &hi
			p := signTest(ac.diffs)
			d.PValue = &p
			d.Significant = p < o.Alpha && (lo > 0 || hi < 0)
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
	return c, nil
}

// CompareStore compares two stored runs (b against a), building both
// reports with their item rows from store.
func CompareStore(ctx context.Context, store evalrun.RunStore, runA, runB string, opts CompareOptions) (*Comparison, error) {
	a, err := FromStore(ctx, store, runA)
	if err != nil {
		return nil, err
	}
	b, err := FromStore(ctx, store, runB)
	if err != nil {
		return nil, err
	}
	return Compare(a, b, opts)
}

func runRef(r *Report) RunRef {
	return RunRef{ID: r.Run.ID, Name: r.Run.Name, Dataset: r.Run.Dataset}
}

func itemKey(r *ItemRow) string {
	if r.Repeat > 0 {
		return fmt.Sprintf("%s#%d", r.ID, r.Repeat)
	}
	return r.ID
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
func bootstrapCI(diffs []float64, resamples int, seed uint64, alpha float64) (lo, hi float64) {
	n := len(diffs)
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
