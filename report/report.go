package report

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/evalrun/evalrun"
)

// SchemaVersion is the version of the JSON report this package writes. Fields
// may be added in a later version; none is renamed or removed within one.
// Version 2 added run.cache_hits, run.concurrency, the repeat reducers of
// each scorer ([RepeatStats]) and the flaky list; a version 1 reader
// keeps working on a version 2 report. Version 3 added the agent block
// ([AgentSummary]) and each item row's trajectory and steps; a version 2
// reader keeps working on a version 3 report.
const SchemaVersion = 3

// MinSchemaVersion is the oldest report version [ReadJSON] reads.
const MinSchemaVersion = 1

// CompareSchemaVersion is the version of the comparison JSON ([Comparison]).
// Version 2 counts a pair whose target or scorer failed on one side as a
// failure of that side and adds crashed_a/b, failed_a/b and warnings.
// Version 3 adds the agent's tool calls and steps to each regressed or
// improved item (calls_a/b, steps_a/b, present when recorded).
const CompareSchemaVersion = 3

// HistogramBuckets is the number of histogram buckets: ten of width 0.1
// over [0,1], the last one closed ([0.9, 1.0]).
const HistogramBuckets = 10

// UntaggedCohort is the key of the cohort of items without any tag. A
// literal tag of that name is keyed "tag:untagged" instead (see [CohortKey]).
const UntaggedCohort = "untagged"

// ErrNoItems is returned by the renderers and comparisons that need per-item
// rows when the report was built without them ([WithoutItems]).
var ErrNoItems = errors.New("report has no item rows (built without items)")

// Report is the aggregate of one run, shaped exactly like the JSON report
// (docs/report-schema.md). Pointers to numbers are nil when the number
// cannot be computed (JSON null).
type Report struct {
	SchemaVersion int         `json:"schema_version"`
	Run           RunSummary  `json:"run"`
	Scorers       ScorerTable `json:"scorers"`
	// MacroPassRate is the mean of the scorers' non-null pass rates.
	MacroPassRate *float64     `json:"macro_pass_rate"`
	Cohorts       CohortTable  `json:"cohorts"`
	Usage         UsageSummary `json:"usage"`
	// Failures lists every target and scorer error in input order, then
	// one persist entry when results could not be stored. Never nil.
	Failures []Failure `json:"failures"`
	// Flaky lists, when the run has repeats, the (item, scorer) pairs whose
	// verdict differs across the item's repeats, in input order then
	// scorer order; [] when none is flaky. Nil (absent from the JSON)
	// without repeats. See [RepeatStats] for what counts as passed.
	Flaky []FlakyItem `json:"flaky,omitzero"`
	// Adversarial is nil unless some item carries metadata.adversarial.
	Adversarial *Adversarial `json:"adversarial,omitempty"`
	// Agent is nil unless some result recorded a trajectory (schema_version
	// 3).
	Agent *AgentSummary `json:"agent,omitempty"`
	// Items holds one row per result in input order; nil (JSON null) when
	// the report was built [WithoutItems].
	Items []ItemRow `json:"items"`
}

// Scorer returns the statistics of the named scorer, or nil.
func (r *Report) Scorer(name string) *ScorerStats { return r.Scorers.Get(name) }

// ScorerNames returns the names of the report's scorers in suite order.
func (r *Report) ScorerNames() []string {
	out := make([]string, len(r.Scorers))
	for i := range r.Scorers {
		out[i] = r.Scorers[i].Name
	}
	return out
}

// Repeats returns k, the number of repeats the report's results show (the
// highest repeat index + 1), from the scorers' [RepeatStats]; 0 when the
// run has no repeats (every result has repeat 0) or no scorers.
func (r *Report) Repeats() int {
	for i := range r.Scorers {
		if rs := r.Scorers[i].RepeatStats; rs != nil {
			return rs.K
		}
	}
	return 0
}

// Errors returns the number of target failures plus every scorer's error
// count: the run is clean (exit code 0, thresholds aside) when it is 0.
func (r *Report) Errors() int {
	n := r.Run.Failed
	for _, s := range r.Scorers {
		n += s.Errors
	}
	return n
}

// RunSummary is the "run" block: the run record's identity and counts.
type RunSummary struct {
	ID     string            `json:"id"`
	Name   string            `json:"name"`
	Status evalrun.RunStatus `json:"status"`
	// Dataset is the dataset and the version the run pinned.
	Dataset DatasetRef         `json:"dataset"`
	Target  evalrun.TargetInfo `json:"target"`
	// Total, Succeeded, Failed and Skipped are the run record's counts.
	Total     int `json:"total"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
	// CompletedWithErrors is true when the run completed but some items
	// failed.
	CompletedWithErrors bool `json:"completed_with_errors"`
	PersistErrors       int  `json:"persist_errors"`
	// StartedAt and CompletedAt are nil when the run has not started or
	// ended; DurationMS is nil unless both are set.
	StartedAt   *time.Time `json:"started_at"`
	CompletedAt *time.Time `json:"completed_at"`
	DurationMS  *int64     `json:"duration_ms"`
	// CacheHits is the number of results whose target response came from
	// the response cache (counted over the results; schema_version 2).
	CacheHits int `json:"cache_hits"`
	// Concurrency is the effective concurrency the run settled at (the run
	// record's); nil when not recorded (schema_version 2).
	Concurrency *int `json:"concurrency"`
}

// DatasetRef names a dataset version.
type DatasetRef struct {
	Name    string `json:"name"`
	Version int    `json:"version"`
}

// ScorerStats aggregates one scorer over a set of results.
type ScorerStats struct {
	// Name is the scorer's name, the key of the JSON object.
	Name string `json:"-"`
	// Count is the number of scored results (score not null).
	Count int `json:"count"`
	// Errors is the number of results on which the scorer failed.
	Errors int `json:"errors"`
	// Mean, P50, P95 and PassRate are nil when Count is 0.
	Mean *float64 `json:"mean"`
	P50  *float64 `json:"p50"`
	P95  *float64 `json:"p95"`
	// PassRate is the share of scored results that passed (score ≥
	// threshold).
	PassRate  *float64 `json:"pass_rate"`
	Threshold float64  `json:"threshold"`
	// Histogram counts the scores per bucket [i/10, (i+1)/10), the last
	// bucket including 1.0.
	Histogram [HistogramBuckets]int `json:"histogram"`
	// RepeatStats holds the reducers over repeats; nil (its fields absent
	// from the JSON) unless the run has repeats, and always nil in cohorts
	// and adversarial categories.
	*RepeatStats
}

// RepeatStats reduces one scorer over the repeats of each item
// (schema_version 2). An item's verdict in one repeat is "passed" when the
// scorer scored that result and the score passed its threshold; a result
// whose target failed (no scores) or on which the scorer failed (error,
// no score) or which lacks the scorer counts as not passed.
//
// Only the items with all K results (Items of them) enter PassAtK and
// PassAllK; an item with fewer (a cancelled run, a result that could not
// be stored) is left out of both, but is still checked for flakiness
// over the results it has.
type RepeatStats struct {
	// K is the number of repeats: the highest repeat index seen + 1.
	K int `json:"k"`
	// Items is the number of items with all K results.
	Items int `json:"items"`
	// PassAtK (pass@k) is the share of those items that passed in at
	// least one of their K repeats; nil when Items is 0.
	PassAtK *float64 `json:"pass_at_k"`
	// PassAllK (pass^k) is the share of those items that passed in all K
	// repeats; nil when Items is 0.
	PassAllK *float64 `json:"pass_all_k"`
	// FlakyCount is the number of items, complete or not, whose verdict
	// differs across their repeats (the scorer's entries in
	// [Report.Flaky]).
	FlakyCount int `json:"flaky_count"`
}

// FlakyItem is an (item, scorer) pair whose verdict differs across the
// item's repeats: it passed in some but not all of them.
type FlakyItem struct {
	// Index is the item's index; it orders the list and is not written.
	Index  int    `json:"-"`
	ItemID string `json:"item_id"`
	Scorer string `json:"scorer"`
	// Passed is the number of the item's results that passed, between 1
	// and Runs − 1.
	Passed int `json:"passed"`
	// Runs is the number of the item's results (K, or fewer when some are
	// missing).
	Runs int `json:"runs"`
}

// ScorerTable is a list of scorer statistics in suite order, written as a
// JSON object keyed by scorer name.
type ScorerTable = keyedTable[ScorerStats, *ScorerStats]

// Cohort aggregates the results of the items carrying one tag, or of the
// untagged items.
type Cohort struct {
	// Key is the JSON key: the tag, "untagged" for the untagged cohort, or
	// the escaped tag (see [CohortKey]).
	Key string `json:"-"`
	// Tag is the literal tag; nil for the untagged cohort.
	Tag *string `json:"tag"`
	// Count is the number of results (items × repeats) in the cohort,
	// failed ones included.
	Count   int         `json:"count"`
	Scorers ScorerTable `json:"scorers"`
}

// CohortTable is a list of cohorts, tags in byte order then the untagged
// cohort, written as a JSON object.
type CohortTable = keyedTable[Cohort, *Cohort]

// CohortKey returns the JSON key of the cohort of tag. Keys must never
// collide with [UntaggedCohort], so a tag equal to "untagged" or starting
// with "tag:" is prefixed with "tag:" ("untagged" → "tag:untagged",
// "tag:x" → "tag:tag:x"); every other tag is its own key. The mapping is
// one to one.
func CohortKey(tag string) string {
	if tag == UntaggedCohort || len(tag) >= 4 && tag[:4] == "tag:" {
		return "tag:" + tag
	}
	return tag
}

// UsageSummary is the "usage" block. The token and cost blocks count the
// target's usage (failed attempts included); Scorers counts the scorers'
// own usage (LLM judges, embeddings) apart.
type UsageSummary struct {
	InputTokens  IntTotal     `json:"input_tokens"`
	OutputTokens IntTotal     `json:"output_tokens"`
	CostUSD      FloatTotal   `json:"cost_usd"`
	LatencyMS    LatencyStats `json:"latency_ms"`
	Scorers      ScorerUsage  `json:"scorers"`
}

// IntTotal is a summed integer with the number of results that reported
// it. Total is nil when Reported is 0.
type IntTotal struct {
	Total    *int64 `json:"total"`
	Reported int    `json:"reported"`
}

// FloatTotal is a summed number with the number of results that reported
// it. Total is nil when Reported is 0.
type FloatTotal struct {
	Total    *float64 `json:"total"`
	Reported int      `json:"reported"`
}

// LatencyStats summarizes the results' latencies in milliseconds; a latency
// of 0 (not measured, e.g. scored saved outputs) is not reported. The
// numbers are nil when Reported is 0.
type LatencyStats struct {
	Mean     *float64 `json:"mean"`
	P50      *float64 `json:"p50"`
	P95      *float64 `json:"p95"`
	Max      *float64 `json:"max"`
	Reported int      `json:"reported"`
}

// ScorerUsage is what the scorers consumed; Reported counts scorer verdicts
// (result × scorer), not results.
type ScorerUsage struct {
	InputTokens  IntTotal   `json:"input_tokens"`
	OutputTokens IntTotal   `json:"output_tokens"`
	CostUSD      FloatTotal `json:"cost_usd"`
}

// The stages of a [Failure].
const (
	StageTarget  = "target"
	StageScorer  = "scorer"
	StagePersist = "persist"
)

// Failure is one error of the run.
type Failure struct {
	// Index is the result's item index (-1 for a persist failure); it
	// orders failures and is not written.
	Index int `json:"-"`
	// ItemID is nil for a persist failure.
	ItemID *string `json:"item_id"`
	// Repeat is written only when > 0.
	Repeat int `json:"repeat,omitempty"`
	// Stage is target, scorer or persist.
	Stage string `json:"stage"`
	// Scorer is set for a scorer failure only.
	Scorer *string `json:"scorer"`
	// Kind is the error kind; nil for a persist failure.
	Kind    *evalrun.ErrorKind `json:"kind"`
	Message string             `json:"message"`
}

// ItemRow is one result of the run.
type ItemRow struct {
	Index int `json:"index"`
	// Repeat is written only when > 0.
	Repeat int    `json:"repeat,omitempty"`
	ID     string `json:"id"`
	// Tags are the item's tags, deduplicated, empty ones dropped; never
	// nil.
	Tags []string `json:"tags"`
	// Input, Expected and Output are raw JSON; Expected and Output are nil
	// (null) when absent.
	Input      json.RawMessage    `json:"input"`
	Expected   json.RawMessage    `json:"expected_output"`
	Output     json.RawMessage    `json:"output"`
	Error      *string            `json:"error"`
	ErrorKind  *evalrun.ErrorKind `json:"error_kind"`
	RetryCount int                `json:"retry_count"`
	// LatencyMS is nil when the latency was not measured (0).
	LatencyMS *float64   `json:"latency_ms"`
	Scores    ItemScores `json:"scores"`
	// Adversarial is the item's normalized adversarial metadata, if any.
	Adversarial *AdversarialInfo `json:"adversarial,omitempty"`
	// Steps is the agent's number of model turns; 0 (absent from the
	// JSON) when the result recorded none (schema_version 3).
	Steps int `json:"steps,omitempty"`
	// Trajectory is the agent's tool calls in order; nil (absent from the
	// JSON) when the result recorded no trajectory (the target is not an
	// agent), empty ([]) when the agent called no tool (schema_version 3).
	Trajectory []TrajectoryCall `json:"trajectory,omitzero"`
}

// Failed reports whether the target failed on this item.
func (r *ItemRow) Failed() bool { return r.Error != nil }

// ItemScore is one scorer's verdict in an [ItemRow].
type ItemScore struct {
	// Scorer is the scorer's name, the key of the JSON object.
	Scorer string `json:"-"`
	// Score is nil when the scorer failed.
	Score  *float64 `json:"score"`
	Passed bool     `json:"passed"`
	Reason *string  `json:"reason"`
	Error  *string  `json:"error"`
}

// ItemScores is a list of verdicts in suite order, written as a JSON object
// keyed by scorer name.
type ItemScores = keyedTable[ItemScore, *ItemScore]
