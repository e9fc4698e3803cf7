package cli

import (
	"context"
	"fmt"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/suite"
)

// RunBuilder rebuilds what a stored run needs from its record alone: the
// suite from run.Config (suite.FromRunConfig, ${VAR} expanded from Env) and
// the items of its pinned dataset version with its stored selection. It is
// what a distributed worker (river.Builder) asks of the CLI; `evalrun
// worker` can pass one as it is. Safe for concurrent use.
type RunBuilder struct {
	Store evalrun.DatasetStore
	// Env gives the worker's own environment (secrets); nil means none.
	Env suite.Env
}

// Build returns the run's target, scorers and engine options. The target
// and scorers hold resources (HTTP clients) for the life of the process.
func (b *RunBuilder) Build(_ context.Context, run *evalrun.Run) (evalrun.Target, []evalrun.Scorer, engine.Options, error) {
	s, err := suite.FromRunConfig(run.Config, suite.Options{Env: b.Env, Deps: modelDeps()})
	if err != nil {
		return nil, nil, engine.Options{}, fmt.Errorf("run %s: %w", run.ID, err)
	}
	t := s.Target()
	if s.Selection.Outputs != "" {
		if t, err = readOutputs(s.Selection.Outputs); err != nil {
			s.Close()
			return nil, nil, engine.Options{}, fmt.Errorf("run %s: %w", run.ID, err)
		}
	}
	return t, s.Scorers(), s.Execution.EngineOptions(), nil
}

// Items returns the run's items in run order: its pinned dataset version
// filtered by the selection stored in its config.
func (b *RunBuilder) Items(ctx context.Context, run *evalrun.Run) ([]*evalrun.Item, error) {
	sel, err := suite.SelectionOf(run.Config)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", run.ID, err)
	}
	return selectItems(ctx, b.Store, run.Dataset, run.DatasetVersion, sel)
}
