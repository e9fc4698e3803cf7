package report

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/bounded"
)

// ExperimentSchemaVersion is the version of the experiment report's JSON
// ([Experiment]). It starts at 3, the version of the run report whose
// scorer statistics and usage blocks it embeds. Fields may be added in a
// later version; none is renamed or removed within one.
const ExperimentSchemaVersion = 3

// The verdicts of a variant against the baseline ([BaselineDelta]).
const (
	VerdictBetter = "better"
	VerdictWorse  = "worse"
	VerdictSame   = "same"
)

// wilsonZ95 is the standard normal quantile of 0.975: the z of a 95%
// interval.
const wilsonZ95 = 1.959963984540054

// Experiment is the experiment report: each variant's run summarized side
// by side, compared with the baseline (the first variant), and every item
// with each variant's output and scores (docs/report-schema.md,
// "Experiment report"). Pointers to numbers are nil when the number cannot
// be computed (JSON null).
type Experiment struct {
	SchemaVersion int            `json:"schema_version"`
	Experiment    ExperimentInfo `json:"experiment"`
	// Method describes the statistics of the pass-rate intervals and of
	// the comparisons with the baseline.
	Method ExperimentMethod `json:"method"`
	// Variants are in the experiment's variant order, the baseline first.
	Variants []VariantSummary `json:"variants"`
	// Items holds one row per (item index, repeat) of any variant, in
	// (index, repeat, id) order; never nil.
	Items []ExperimentItem `json:"items"`

	// reports are the variants' run reports, indexed like Variants; nil
	// for an experiment read from JSON.
	reports []*Report
	// stream is where the items are read when Items is nil (an
	// experiment built by BuildExperimentStreamStore).
	stream *experimentStream
}

// ExperimentInfo is the "experiment" block.
type ExperimentInfo struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Baseline is the name of the variant the others are compared with.
	Baseline string     `json:"baseline"`
	Dataset  DatasetRef `json:"dataset"`
}

// ExperimentMethod records how the numbers of an [Experiment] were
// computed: the pass-rate interval, then the comparison's method
// ([CompareMethod]: the paired bootstrap interval of the delta and the
// exact sign test).
type ExperimentMethod struct {
	// PassRateInterval is "Wilson score".
	PassRateInterval string `json:"pass_rate_interval"`
	// Z is the normal quantile of the Wilson interval (1.96 for 95%).
	Z float64 `json:"z"`
	// Delta says what a delta is.
	Delta string `json:"delta"`
	CompareMethod
}

// VariantSummary is one variant's entry of "variants": its run's counts,
// scorer statistics with intervals, usage, and its comparison with the
// baseline.
type VariantSummary struct {
	Name   string             `json:"name"`
	RunID  string             `json:"run_id"`
	Status evalrun.RunStatus  `json:"status"`
	Target evalrun.TargetInfo `json:"target"`
	// Total, Succeeded, Failed and Skipped are the run record's counts.
	Total     int `json:"total"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
	// Failures is the number of entries of the run report's failures
	// (target and scorer errors, and a persist entry).
	Failures int `json:"failures"`
	// DurationMS is the run's duration; nil unless it started and ended.
	DurationMS *int64 `json:"duration_ms"`
	// CacheHits is the run report's: the results whose target response
	// came from the response cache (no tokens, no cost, no model latency).
	CacheHits int `json:"cache_hits"`
	// Scorers are the run report's scorer statistics with the Wilson
	// interval of each pass rate.
	Scorers VariantScorerTable `json:"scorers"`
	// MacroPassRate is the run report's.
	MacroPassRate *float64     `json:"macro_pass_rate"`
	Usage         UsageSummary `json:"usage"`
	// VsBaseline compares each of the variant's scorers with the
	// baseline's; empty ({}) for the baseline itself.
	VsBaseline BaselineTable `json:"vs_baseline"`
}

// VariantScorer is a scorer's statistics in a variant: those of the run
// report and the interval of the pass rate.
type VariantScorer struct {
	ScorerStats
	// PassRateCI is the Wilson score interval [lo, hi] of the pass rate at
	// the method's confidence; nil when Count is 0.
	PassRateCI *[2]float64 `json:"pass_rate_ci"`
}

// VariantScorerTable is a list of variant scorers in the run's order,
// written as a JSON object keyed by scorer name.
type VariantScorerTable = keyedTable[VariantScorer, *VariantScorer]

// BaselineDelta compares one scorer of a variant with the baseline's over
// the pairs of results with the same (item id, repeat). A pair counts when
// both runs have the scorer and at least one of them scored the item; on
// each, x = passed(variant) − passed(baseline), a result whose target or
// scorer failed counting as not passed (as [Compare] counts crashes).
// The numbers are nil and the verdict "same" when no pair counts.
type BaselineDelta struct {
	// Name is the scorer, the key of the JSON object.
	Name string `json:"-"`
	// Delta is the mean of x: the variant's pass rate minus the
	// baseline's, over the pairs.
	Delta *float64 `json:"delta"`
	// CI is the paired percentile bootstrap interval [lo, hi] of Delta.
	CI *[2]float64 `json:"ci"`
	// PValue is the exact two-sided sign test's (exact McNemar) on x.
	PValue *float64 `json:"p_value"`
	// Verdict is "better" when PValue < alpha, CI excludes 0 and Delta >
	// 0; "worse" likewise with Delta < 0; "same" otherwise.
	Verdict string `json:"verdict"`
	// Paired is the number of pairs that count.
	Paired int `json:"paired"`
	// Improved and Regressed count the pairs with x = +1 and x = −1.
	Improved  int `json:"improved"`
	Regressed int `json:"regressed"`
}

// BaselineTable is a list of deltas in the variant's scorer order,
// written as a JSON object keyed by scorer name.
type BaselineTable = keyedTable[BaselineDelta, *BaselineDelta]

// ExperimentItem is one item (one repeat of it) with every variant's
// result.
type ExperimentItem struct {
	Index int `json:"index"`
	// Repeat is written only when > 0.
	Repeat int    `json:"repeat,omitempty"`
	ID     string `json:"id"`
	// Tags are the item's tags; never nil.
	Tags []string `json:"tags"`
	// Input and Expected are raw JSON from the first variant (in variant
	// order) with a result for the item; Expected is nil (null) when
	// absent.
	Input    json.RawMessage `json:"input"`
	Expected json.RawMessage `json:"expected_output"`
	// Disagree is true when some scorer passed the item in one variant
	// and not in another (a failure does not pass; a variant without the
	// scorer or the item is left out).
	Disagree bool `json:"disagree"`
	// Variants holds the results of the variants that have the item, in
	// variant order; a variant without a result for it is absent.
	Variants VariantResults `json:"variants"`
}

// VariantResult is one variant's result for an item.
type VariantResult struct {
	// Variant is the variant's name, the key of the JSON object.
	Variant string `json:"-"`
	// Output is raw JSON, nil (null) when the target failed.
	Output    json.RawMessage    `json:"output"`
	Error     *string            `json:"error"`
	ErrorKind *evalrun.ErrorKind `json:"error_kind"`
	// LatencyMS is nil when not measured.
	LatencyMS *float64 `json:"latency_ms"`
	// Scores are the scores in the variant's scorer order, nil (null)
	// where the scorer failed.
	Scores ScoreValues `json:"scores"`
	// Passed says, per scorer in the same order, whether the score
	// passed its threshold.
	Passed PassValues `json:"passed"`
}

// ScoreValue is one scorer's score of a [VariantResult].
type ScoreValue struct {
	Scorer string
	// Score is nil when the scorer failed.
	Score *float64
}

// ScoreValues are written as a JSON object of scorer name to number or
// null.
type ScoreValues []ScoreValue

// Get returns the named scorer's score and whether the scorer is present.
func (s ScoreValues) Get(name string) (*float64, bool) {
	for _, v := range s {
		if v.Scorer == name {
			return v.Score, true
		}
	}
	return nil, false
}

// MarshalJSON writes the scores as an object in order.
func (s ScoreValues) MarshalJSON() ([]byte, error) {
	return marshalObject(len(s), func(i int) (string, any) { return s[i].Scorer, s[i].Score })
}

// UnmarshalJSON reads an object, keeping its key order.
func (s *ScoreValues) UnmarshalJSON(data []byte) error {
	*s = ScoreValues{}
	return unmarshalObject(data, func(key string, raw json.RawMessage) error {
		v := ScoreValue{Scorer: key}
		if err := json.Unmarshal(raw, &v.Score); err != nil {
			return err
		}
		*s = append(*s, v)
		return nil
	})
}

// PassValue is one scorer's verdict of a [VariantResult].
type PassValue struct {
	Scorer string
	Passed bool
}

// PassValues are written as a JSON object of scorer name to boolean.
type PassValues []PassValue

// Get returns whether the named scorer passed (false when absent).
func (s PassValues) Get(name string) bool {
	for _, v := range s {
		if v.Scorer == name {
			return v.Passed
		}
	}
	return false
}

// MarshalJSON writes the verdicts as an object in order.
func (s PassValues) MarshalJSON() ([]byte, error) {
	return marshalObject(len(s), func(i int) (string, any) { return s[i].Scorer, s[i].Passed })
}

// UnmarshalJSON reads an object, keeping its key order.
func (s *PassValues) UnmarshalJSON(data []byte) error {
	*s = PassValues{}
	return unmarshalObject(data, func(key string, raw json.RawMessage) error {
		v := PassValue{Scorer: key}
		if err := json.Unmarshal(raw, &v.Passed); err != nil {
			return err
		}
		*s = append(*s, v)
		return nil
	})
}

// VariantResults are an item's results keyed by variant, in variant order.
type VariantResults = keyedTable[VariantResult, *VariantResult]

// UnmarshalJSON reads a result; an output of null reads as nil, as the
// builder leaves a failed target's.
func (r *VariantResult) UnmarshalJSON(data []byte) error {
	type plain VariantResult
	if err := json.Unmarshal(data, (*plain)(r)); err != nil {
		return err
	}
	r.Output = nullToNil(r.Output)
	return nil
}

// Report returns the named variant's run report, or nil when the
// experiment has no such variant or was read from JSON. A report built by
// [BuildExperimentStore] or [BuildExperimentSummaryStore] has no item rows
// (the items side by side are in e.Items).
func (e *Experiment) Report(variant string) *Report {
	for i := range e.Variants {
		if e.Variants[i].Name == variant && i < len(e.reports) {
			return e.reports[i]
		}
	}
	return nil
}

// Variant returns the named variant's summary, or nil.
func (e *Experiment) Variant(name string) *VariantSummary {
	for i := range e.Variants {
		if e.Variants[i].Name == name {
			return &e.Variants[i]
		}
	}
	return nil
}

// ExperimentBreach is a fail_on condition breached by one variant.
type ExperimentBreach struct {
	Variant string
	Breach
}

// String returns e.g. "variant big: pass_rate(x) < 0.9 (actual 0.8)".
func (b ExperimentBreach) String() string {
	return fmt.Sprintf("variant %s: %s", b.Variant, b.Breach)
}

// Evaluate checks conds against every variant's run report ([Evaluate]),
// in variant order: fail_on must hold for every variant. Each breach names
// its variant; none means every threshold holds everywhere. An experiment
// read from JSON has no run reports and gives none.
func (e *Experiment) Evaluate(conds []Condition) []ExperimentBreach {
	var out []ExperimentBreach
	for i, rep := range e.reports {
		for _, b := range Evaluate(rep, conds) {
			out = append(out, ExperimentBreach{Variant: e.Variants[i].Name, Breach: b})
		}
	}
	return out
}

// BuildExperiment builds the experiment report of exp from its variants'
// run reports, reps[i] being the report of exp.Runs[i] built with its item
// rows. Errors wrap [evalrun.ErrInvalid] (no runs, a report missing or of
// another run, two variants of one name) or are [ErrNoItems].
func BuildExperiment(exp *evalrun.Experiment, reps []*Report, opts CompareOptions) (*Experiment, error) {
	b, err := newExperimentBuilder(exp, opts)
	if err != nil {
		return nil, err
	}
	if len(reps) != len(exp.Runs) {
		return nil, fmt.Errorf("%w: experiment %s: %d reports for %d variants", evalrun.ErrInvalid, exp.ID, len(reps), len(exp.Runs))
	}
	for i, rep := range reps {
		if rep == nil || rep.Run.ID != exp.Runs[i].ID {
			return nil, fmt.Errorf("%w: experiment %s: the report of variant %s is not that of its run %s",
				evalrun.ErrInvalid, exp.ID, b.names[i], exp.Runs[i].ID)
		}
		if rep.Items == nil {
			return nil, fmt.Errorf("experiment %s: variant %s: %w", exp.ID, b.names[i], ErrNoItems)
		}
		b.sides[i] = newCmpSide(runRef(rep), rep.ScorerNames())
		for k := range rep.Items {
			b.addRow(i, &rep.Items[k])
		}
		b.reports[i] = rep
	}
	return b.build(), nil
}

// BuildExperimentStore builds the experiment report of exp from storage:
// each variant's run report rebuilt from its stored results (as
// [FromStore] does, without item rows) and the items side by side, in one
// scan of each run's results. Memory grows with items × variants × output
// size; [BuildExperimentStreamStore] gives the same report without. Errors
// are those of [BuildExperiment], the store's (evalrun.ErrNotFound for a
// run that is gone) or ctx's.
func BuildExperimentStore(ctx context.Context, store evalrun.RunStore, exp *evalrun.Experiment, opts CompareOptions) (*Experiment, error) {
	return buildExperimentStore(ctx, store, exp, opts, true)
}

// BuildExperimentSummaryStore builds the experiment report of exp from
// storage like [BuildExperimentStore] but without the items side by side
// (Items is empty): the matrix and the comparisons with the baseline are
// the same, and memory grows with the number of results and scorers
// only, never with inputs or outputs (as [CompareStore]'s). For a viewer
// that pages the items from storage itself.
func BuildExperimentSummaryStore(ctx context.Context, store evalrun.RunStore, exp *evalrun.Experiment, opts CompareOptions) (*Experiment, error) {
	return buildExperimentStore(ctx, store, exp, opts, false)
}

func buildExperimentStore(ctx context.Context, store evalrun.RunStore, exp *evalrun.Experiment, opts CompareOptions, items bool) (*Experiment, error) {
	b, err := newExperimentBuilder(exp, opts)
	if err != nil {
		return nil, err
	}
	b.noItems = !items
	for i, r := range exp.Runs {
		run, err := store.GetRun(ctx, r.ID)
		if err != nil {
			return nil, fmt.Errorf("experiment %s: variant %s: run %s: %w", exp.ID, b.names[i], r.ID, err)
		}
		rb := NewBuilder(run, WithoutItems())
		// The run's scorers, so that a variant whose target failed on
		// every item (no scores at all) still has them.
		names := make([]string, len(run.Scorers))
		for k, sc := range run.Scorers {
			names[k] = sc.Name
		}
		b.sides[i] = newCmpSide(RunRef{ID: run.ID, Name: run.Name}, names)
		kinds := make(kindSet)
		err = store.ScanResults(ctx, r.ID, evalrun.ResultQuery{}, func(res *evalrun.ItemResult) error {
			rb.Add(res)
			if b.noItems {
				b.sides[i].addResult(res)
			} else {
				row := rowOf(res, kinds)
				b.addRow(i, &row)
			}
			return ctx.Err()
		})
		if err != nil {
			return nil, fmt.Errorf("experiment %s: variant %s: results of run %s: %w", exp.ID, b.names[i], r.ID, err)
		}
		b.reports[i] = rb.Report()
	}
	return b.build(), nil
}

// WriteExperimentJSON writes e as the experiment JSON report, indented by
// two spaces, fields in a stable order, followed by a newline; deep item
// values are written compact as [WriteJSON] does. An experiment built by
// [BuildExperimentStreamStore] has its items read from storage while they
// are written, the same bytes as [BuildExperimentStore]'s would be; on an
// error part of the report may have been written.
func WriteExperimentJSON(w io.Writer, e *Experiment) error {
	if e.stream != nil && e.Items == nil {
		return writeExperimentJSONStream(context.Background(), w, e)
	}
	out, err := bounded.MarshalIndent(e, "", bounded.IndentDepth, false)
	if err != nil {
		return err
	}
	_, err = w.Write(append(out, '\n'))
	return err
}

// ReadExperimentJSON reads an experiment report written by
// [WriteExperimentJSON]. The result has no run reports ([Experiment.Report]
// is nil, [Experiment.Evaluate] finds nothing). Another schema version is
// an error wrapping [evalrun.ErrInvalid].
func ReadExperimentJSON(r io.Reader) (*Experiment, error) {
	var e Experiment
	if err := json.NewDecoder(r).Decode(&e); err != nil {
		return nil, fmt.Errorf("%w: experiment report: %v", evalrun.ErrInvalid, err)
	}
	if e.SchemaVersion != ExperimentSchemaVersion {
		return nil, fmt.Errorf("%w: experiment report schema_version %d (this evalrun reads %d)", evalrun.ErrInvalid,
			e.SchemaVersion, ExperimentSchemaVersion)
	}
	for i := range e.Items {
		it := &e.Items[i]
		it.Input, it.Expected = nullToNil(it.Input), nullToNil(it.Expected)
	}
	return &e, nil
}
