package evalrun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"iter"
	"time"
)

// ErrStoreUnavailable marks a store error that retrying cannot fix and
// that every later write will meet too: the disk is full, the database is
// read-only, its schema is missing. Stores wrap such errors with it (keeping
// their text); the engine stops a run at the first one instead of
// executing items whose results cannot be kept.
var ErrStoreUnavailable = errors.New("the store refuses writes")

// DatasetStore keeps datasets as immutable, numbered versions. A version
// stores only what changed (item history with valid-from / valid-to
// versions), so re-importing 100,000 items with one changed adds one row.
type DatasetStore interface {
	// ImportDataset stores items (in order) as the next version of the
	// named dataset, creating the dataset if needed. When the items equal
	// the latest version's (same ids, content and order) nothing is
	// written: it returns that version and created=false. Items must have
	// unique, non-empty ids and non-empty inputs (ErrInvalid otherwise).
	// The import is atomic: on error nothing is written.
	ImportDataset(ctx context.Context, name string, items []*Item) (v DatasetVersion, created bool, err error)
	// ImportItems is ImportDataset reading the items from a sequence, once,
	// in order, without holding them: the SQL stores stage them inside the
	// import's transaction, so memory does not grow with their number. An
	// error from items ends the import, writing nothing, and is returned
	// as is.
	ImportItems(ctx context.Context, name string, items iter.Seq2[*Item, error]) (v DatasetVersion, created bool, err error)
	// GetDataset returns the named dataset, or ErrNotFound.
	GetDataset(ctx context.Context, name string) (*Dataset, error)
	// ListDatasets returns every dataset, by name.
	ListDatasets(ctx context.Context) ([]*Dataset, error)
	// ListDatasetVersions returns the versions of a dataset, oldest first,
	// or ErrNotFound.
	ListDatasetVersions(ctx context.Context, name string) ([]*DatasetVersion, error)
	// ScanItems calls fn with each item of the given version (0: the
	// latest) in the version's order, streaming: memory does not grow with
	// the number of items. It returns ErrNotFound for an unknown dataset or
	// version, and stops at fn's first error, returning it.
	ScanItems(ctx context.Context, name string, version int, fn func(*Item) error) error
	// ItemsPage returns up to limit (> 0) items of the given version (a
	// version number: 0 is ErrInvalid, so that every page of one walk
	// reads the same version) in the version's order, starting after the
	// item whose cursor is after (nil: from the first), and the cursor of
	// the last item returned (nil when none is). A cursor is opaque and
	// valid for that version only. Unlike ScanItems it holds nothing open
	// between calls: a run reading its items page by page while it writes
	// results does not pin a database snapshot for its whole length.
	// ErrNotFound for an unknown dataset or version.
	ItemsPage(ctx context.Context, name string, version int, after []byte, limit int) (items []*Item, next []byte, err error)
}

// RunStore keeps runs, their item results and scores.
type RunStore interface {
	// CreateRun stores a new run record; run.ID must be set and unique.
	CreateRun(ctx context.Context, run *Run) error
	// UpdateRun replaces the status, counts, error and timestamps of an
	// existing run (ErrNotFound otherwise). It leaves the claim
	// (ClaimedBy, ClaimExpires) alone.
	UpdateRun(ctx context.Context, run *Run) error
	// CancelRun marks a run that has not ended ([RunStatus.Cancelable])
	// canceled in one conditional step, recording reason as its error
	// unless it has one; nothing else changes. It returns the run as
	// stored afterwards and whether this call changed it: a run that ended
	// meanwhile is left as it is (changed is false) and the returned
	// record says how it ended. An unknown run is ErrNotFound.
	CancelRun(ctx context.Context, id, reason string) (run *Run, changed bool, err error)
	// ClaimRun makes c.Owner the one process executing the run, until the
	// store's clock passes now + c.TTL, in one conditional step. It
	// succeeds when the run is [Run.Resumable] and no other owner
	// holds an unexpired claim (c.Replace's claim does not count); a
	// claim by c.Owner itself is renewed, whatever the status. It returns
	// the run as stored afterwards and whether c.Owner now holds it: when
	// not, the record says why (finished, or ClaimedBy and ClaimExpires of
	// the holder). An unknown run is ErrNotFound; an empty owner or a TTL
	// ≤ 0 is ErrInvalid.
	ClaimRun(ctx context.Context, id string, c RunClaim) (run *Run, claimed bool, err error)
	// ReleaseRun drops owner's claim on the run; it does nothing when
	// owner does not hold it. An unknown run is ErrNotFound.
	ReleaseRun(ctx context.Context, id, owner string) error
	// GetRun returns a run, or ErrNotFound.
	GetRun(ctx context.Context, id string) (*Run, error)
	// ListRuns returns runs newest first.
	ListRuns(ctx context.Context, f RunFilter) ([]*Run, error)
	// WriteResults stores a batch of results with their scores, in one
	// transaction where the backend has them. A result is keyed by (RunID,
	// Index, Repeat): writing the same key again replaces the result and
	// its scores, never duplicates them.
	WriteResults(ctx context.Context, results []*ItemResult) error
	// ScanResults calls fn with the run's results ordered by (Index,
	// Repeat), each with its Scores (in the run's scorer order) and its
	// dataset Item filled, streaming in constant memory. It stops at fn's
	// first error, returning it.
	ScanResults(ctx context.Context, runID string, q ResultQuery, fn func(*ItemResult) error) error
	// ScanResultKeys calls fn with the key and outcome of every stored
	// result of the run, in order; resume uses it to find what is left.
	ScanResultKeys(ctx context.Context, runID string, fn func(ResultKey) error) error
}

// ResponseCache keeps target and judge responses by key, for the opt-in
// response cache (execution.cache). Stores implement it as an optional
// capability, found by type assertion. Safe for concurrent use.
type ResponseCache interface {
	// GetCached returns the value stored under key, or ok=false when there
	// is none or it has expired.
	GetCached(ctx context.Context, key string) (value []byte, ok bool, err error)
	// PutCached stores value under key, replacing any earlier value; it
	// expires after ttl (0: never).
	PutCached(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

// ReportStore keeps the final JSON report of a finished run, so that
// viewers read one value instead of scanning every result. Stores
// implement it as an optional capability, found by type assertion.
type ReportStore interface {
	// PutReportJSON stores (or replaces) the report of a run.
	PutReportJSON(ctx context.Context, runID string, report []byte) error
	// GetReportJSON returns the stored report of a run, or an error
	// wrapping ErrNotFound.
	GetReportJSON(ctx context.Context, runID string) ([]byte, error)
}

// Store is a complete storage backend.
type Store interface {
	DatasetStore
	RunStore
	// Close releases the backend's resources. Closing twice is safe.
	Close() error
}

// RunClaim asks [RunStore.ClaimRun] for a run.
type RunClaim struct {
	// Owner identifies the claiming process; it must not be empty.
	Owner string
	// TTL is how long the claim holds unless renewed; a process that dies
	// without releasing its claim loses it after TTL.
	TTL time.Duration
	// Replace, when set, is an owner the caller knows to be gone (its
	// process no longer exists): its claim is taken over before it
	// expires.
	Replace string
}

// RunFilter selects runs. The zero value selects every run.
type RunFilter struct {
	// Dataset keeps only runs of that dataset, when set.
	Dataset string
	// Experiment keeps only the runs of that experiment (its variants),
	// when set.
	Experiment string
	// InExperiment keeps only runs that belong to an experiment (Experiment
	// is not empty); for listing experiments.
	InExperiment bool
	// Limit caps the number of runs returned, when > 0.
	Limit int
}

// ResultQuery selects a page of a run's results. The zero value selects
// every result.
type ResultQuery struct {
	// FromIndex skips results with a smaller Index.
	FromIndex int
	// Limit caps the number of results, when > 0.
	Limit int
	// FailedOnly keeps only results whose target failed.
	FailedOnly bool
	// SkipAgentData leaves out the agent fields, the bulk of an agent
	// run's rows: results come without Trajectory, and their Item without
	// ToolMocks and ExpectedTrajectory. It is for a scan that shows none of
	// them (sorting or searching a run's items); everything else is as
	// without it.
	SkipAgentData bool
	// SkipPayloads leaves out what aggregates do not read, for a pass
	// that builds a report's totals without its item rows: results come
	// without Output and Trajectory, and their Item without Input,
	// Expected, ToolMocks and ExpectedTrajectory (ID and Metadata, whose
	// tags are cohorts, stay). Scores, usage, errors and timings are as
	// without it. A store may ignore it (results are then complete).
	SkipPayloads bool
}

// ResultKey identifies a stored result and says whether it failed.
type ResultKey struct {
	Index  int
	Repeat int
	Failed bool
}

// NewRunID returns a new run id: the time in a sortable form followed by
// random hex, e.g. "20261122T101500-3f9a1c2b".
func NewRunID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}

// Keeps reports whether the filter keeps run r (Limit aside): the
// reference semantics stores implement in their queries.
func (f RunFilter) Keeps(r *Run) bool {
	return (f.Dataset == "" || r.Dataset == f.Dataset) &&
		(f.Experiment == "" || r.Experiment == f.Experiment) &&
		(!f.InExperiment || r.Experiment != "")
}
