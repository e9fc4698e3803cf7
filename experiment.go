package evalrun

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// Experiment is a set of runs, one per variant of a suite (a model, a
// prompt…), on the same dataset version and item selection, executed
// together and reported side by side. It is not stored apart: its runs
// carry its id ([Run.Experiment]); [GetExperiment] gathers them.
type Experiment struct {
	ID string
	// Name is the suite's name (the runs' name).
	Name           string
	Dataset        string
	DatasetVersion int
	// Runs are the variants' runs in the suite's variant order
	// ([Run.VariantIndex]); Runs[0] is the baseline of the comparison.
	Runs      []*Run
	CreatedAt time.Time
}

// Baseline returns the baseline variant's run: the first one.
func (e *Experiment) Baseline() *Run { return e.Runs[0] }

// Variants returns the variants' names in order.
func (e *Experiment) Variants() []string {
	names := make([]string, len(e.Runs))
	for i, r := range e.Runs {
		names[i] = r.Variant
	}
	return names
}

// Run returns the named variant's run, or nil.
func (e *Experiment) Run(variant string) *Run {
	for _, r := range e.Runs {
		if r.Variant == variant {
			return r
		}
	}
	return nil
}

// ExperimentPrefix starts every experiment id, so that an id says whether
// it names a run or an experiment.
const ExperimentPrefix = "exp-"

// NewExperimentID returns a new experiment id: [ExperimentPrefix] and a
// run-id-like time and random part, e.g. "exp-20261122T101500-3f9a1c2b".
func NewExperimentID(now time.Time) string { return ExperimentPrefix + NewRunID(now) }

// IsExperimentID reports whether id has the form of an experiment id.
func IsExperimentID(id string) bool {
	return len(id) > len(ExperimentPrefix) && id[:len(ExperimentPrefix)] == ExperimentPrefix
}

// ExperimentOf groups runs of one experiment (any order) into an
// [Experiment]; it returns ErrNotFound when runs is empty.
func ExperimentOf(id string, runs []*Run) (*Experiment, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("experiment %s: %w", id, ErrNotFound)
	}
	runs = slices.Clone(runs)
	slices.SortStableFunc(runs, func(a, b *Run) int {
		return cmp.Or(cmp.Compare(a.VariantIndex, b.VariantIndex), cmp.Compare(a.ID, b.ID))
	})
	first := runs[0]
	e := &Experiment{ID: id, Name: first.Name, Dataset: first.Dataset, DatasetVersion: first.DatasetVersion,
		Runs: runs, CreatedAt: first.CreatedAt}
	for _, r := range runs {
		if r.CreatedAt.Before(e.CreatedAt) {
			e.CreatedAt = r.CreatedAt
		}
	}
	return e, nil
}

// GetExperiment returns the experiment id from its runs in store, or an
// error wrapping ErrNotFound when no run belongs to it.
func GetExperiment(ctx context.Context, store RunStore, id string) (*Experiment, error) {
	if id == "" { // an empty RunFilter.Experiment would list every run
		return nil, fmt.Errorf("experiment %q: %w", id, ErrNotFound)
	}
	runs, err := store.ListRuns(ctx, RunFilter{Experiment: id})
	if err != nil {
		return nil, err
	}
	return ExperimentOf(id, runs)
}
