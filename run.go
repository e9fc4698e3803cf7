package evalrun

import (
	"encoding/json"
	"slices"
	"time"
)

// RunStatus is the state of a run: pending → running → completed | failed |
// canceled.
type RunStatus string

// The run statuses.
const (
	RunPending   RunStatus = "pending"
	RunRunning   RunStatus = "running"
	RunCompleted RunStatus = "completed"
	RunFailed    RunStatus = "failed"
	RunCanceled  RunStatus = "canceled"
)

// Done reports whether s is a final status.
func (s RunStatus) Done() bool {
	return s == RunCompleted || s == RunFailed || s == RunCanceled
}

// Resumable reports whether a run in status s may be continued (resumed):
// it was interrupted (canceled) or its process died (pending, running). A
// completed run is finished: its record and report are final; a failed one
// is too, unless items never ran (see [Run.Resumable]).
func (s RunStatus) Resumable() bool { return slices.Contains(ResumableStatuses, s) }

// Resumable reports whether the run may be continued (resumed): its status
// is [RunStatus.Resumable], or it failed with items that never ran
// (Skipped > 0: its store refused results, strict mode stopped it, or
// distributed jobs were discarded) or whose results its store refused
// (PersistErrors > 0, even with none skipped), so that a resume runs those
// items once the cause is fixed. [RunStore.ClaimRun] accepts the same runs.
func (r *Run) Resumable() bool {
	return r.Status.Resumable() || (r.Status == RunFailed && (r.Skipped > 0 || r.PersistErrors > 0))
}

// Cancelable reports whether a run in status s may be cancelled: it has
// not ended.
func (s RunStatus) Cancelable() bool { return slices.Contains(CancelableStatuses, s) }

// ResumableStatuses are the statuses of [RunStatus.Resumable], the ones
// [RunStore.ClaimRun] accepts; stores build their condition from it.
var ResumableStatuses = []RunStatus{RunPending, RunRunning, RunCanceled}

// CancelableStatuses are the statuses of [RunStatus.Cancelable], the ones
// [RunStore.CancelRun] changes; stores build their condition from it.
var CancelableStatuses = []RunStatus{RunPending, RunRunning}

// Run is the record of one evaluation run.
type Run struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Dataset and DatasetVersion pin what the run saw.
	Dataset        string     `json:"dataset"`
	DatasetVersion int        `json:"dataset_version"`
	Target         TargetInfo `json:"target"`
	// Scorers names the run's scorers in suite order, with thresholds.
	Scorers []ScorerInfo `json:"scorers"`
	// Experiment is the id of the experiment the run is a variant of (see
	// [Experiment]), "" for a run on its own. Variant is the variant's name
	// and VariantIndex its place in the suite's variants list (0 is the
	// suite's baseline). Set when the run is created; never changed.
	Experiment   string `json:"experiment,omitempty"`
	Variant      string `json:"variant,omitempty"`
	VariantIndex int    `json:"variant_index,omitempty"`
	// Config is the effective configuration (the suite, with secrets
	// removed), so a run can be understood, resumed and reproduced.
	Config json.RawMessage `json:"config,omitempty"`
	Status RunStatus       `json:"status"`
	// Total is the number of (item, repeat) executions the run comprises.
	Total     int `json:"total"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
	// PersistErrors counts results the store could not take.
	PersistErrors int `json:"persist_errors"`
	// Concurrency is the effective concurrency the run settled at (see
	// Summary.Concurrency); 0 until the run ends.
	Concurrency int `json:"concurrency,omitempty"`
	// Error is the fatal error that ended the run, if any.
	Error     string    `json:"error,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// StartedAt is when the run first started; a resume keeps it, so the
	// duration of a resumed run spans its pauses.
	StartedAt   time.Time `json:"started_at,omitzero"`
	CompletedAt time.Time `json:"completed_at,omitzero"`
	// ClaimedBy names the process executing the run ([RunStore.ClaimRun]),
	// empty when none; ClaimExpires is when its claim lapses unless
	// renewed. Only ClaimRun and ReleaseRun change them.
	ClaimedBy    string    `json:"claimed_by,omitempty"`
	ClaimExpires time.Time `json:"claim_expires,omitzero"`
}

// Claimed reports whether a process other than owner holds a claim on the
// run that has not expired at now.
func (r *Run) Claimed(owner string, now time.Time) bool {
	return r.ClaimedBy != "" && r.ClaimedBy != owner && now.Before(r.ClaimExpires)
}

// ScorerInfo names a scorer of a run.
type ScorerInfo struct {
	Name      string  `json:"name"`
	Kind      string  `json:"kind"`
	Threshold float64 `json:"threshold"`
}

// ItemResult is the outcome of one item (one repeat of it) in a run.
type ItemResult struct {
	RunID string `json:"run_id"`
	// Index is the item's position in the run's item list.
	Index int `json:"index"`
	// Repeat numbers the repetitions of an item, from 0.
	Repeat int    `json:"repeat"`
	ItemID string `json:"item_id"`
	// Item is the dataset item. Stores fill it when reading results.
	Item *Item `json:"-"`
	// Output is nil when the target failed.
	Output    json.RawMessage `json:"output,omitempty"`
	Error     string          `json:"error,omitempty"`
	ErrorKind ErrorKind       `json:"error_kind,omitempty"`
	// Attempts is the number of target calls made; RetryCount = Attempts-1.
	Attempts   int           `json:"attempts"`
	RetryCount int           `json:"retry_count"`
	Latency    time.Duration `json:"latency_ns"`
	Usage      Usage         `json:"usage"`
	TraceID    string        `json:"trace_id,omitempty"`
	// Trajectory is the agent's tool calls and turns (see [Trajectory]);
	// nil when the target recorded none. A failed item keeps the trajectory
	// of its last attempt when the target's error carried one.
	Trajectory  *Trajectory `json:"trajectory,omitempty"`
	CacheHit    bool        `json:"cache_hit,omitempty"`
	StartedAt   time.Time   `json:"started_at"`
	CompletedAt time.Time   `json:"completed_at"`
	// Scores are in the order of the run's scorers. Empty when the target
	// failed (nothing to score).
	Scores []ScorerResult `json:"scores,omitempty"`
}

// Failed reports whether the target failed on this item.
func (r *ItemResult) Failed() bool { return r.Error != "" }

// ScorerResult is one scorer's verdict on one item.
type ScorerResult struct {
	Scorer string `json:"scorer"`
	// Score is nil when the scorer failed.
	Score     *float64  `json:"score"`
	Passed    bool      `json:"passed"`
	Reason    string    `json:"reason,omitempty"`
	Error     string    `json:"error,omitempty"`
	ErrorKind ErrorKind `json:"error_kind,omitempty"`
	Usage     Usage     `json:"usage"`
}

// Summary is what a run returns, on success, on cancel and on fatal error
// alike. Skipped = Total − Succeeded − Failed.
type Summary struct {
	RunID     string
	Status    RunStatus
	Total     int
	Succeeded int
	Failed    int
	Skipped   int
	// CompletedWithErrors is true when the run completed but some items
	// failed.
	CompletedWithErrors bool
	// ScorerErrors counts scorer errors over the processed items.
	ScorerErrors int
	// PersistErrors counts results the store could not take after retries.
	PersistErrors int
	// Concurrency is the effective concurrency the run settled at: the
	// configured one, or lower where 429s made adaptive concurrency cut it.
	Concurrency int
	StartedAt   time.Time
	CompletedAt time.Time
	// Results holds the processed items in input order (index, then
	// repeat) when results are retained; nil otherwise.
	Results []*ItemResult
	// Err is the cause of a cancel or the fatal error, nil on completion.
	Err error
}

// Progress is a snapshot of a running run, for progress bars.
type Progress struct {
	Total     int
	Done      int
	Succeeded int
	Failed    int
	// Concurrency is the effective concurrency (adaptive mode lowers it).
	Concurrency int
}
