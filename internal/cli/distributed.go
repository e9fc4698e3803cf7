package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/postgres"
	"github.com/evalrun/evalrun/river"
	"github.com/evalrun/evalrun/suite"
)

// errNeedsPostgres is the error of distributed mode on another store.
const errNeedsPostgres = "distributed mode needs PostgreSQL (--db postgres://…)"

// runDistributed is evalrun run --distributed: the run record and one job
// per item are enqueued in one transaction for evalrun worker processes;
// this process waits, shows progress, finalizes the run and reports like a
// local run. With --resume it re-attaches to a distributed run whose
// coordinator died. Ctrl-C cancels the run (queued jobs deleted, running
// ones signalled).
func (st *State) runDistributed(cmd *cobra.Command, path string, f *runFlags) (err error) {
	var sum *evalrun.Summary
	ctx := cmd.Context()
	if f.outputs != "" {
		return invalidf("--outputs cannot be used with --distributed: saved outputs are scored locally")
	}
	stdoutFormat, files, err := reportTargets(f.format, f.outFiles)
	if err != nil {
		return err
	}
	pg, err := st.openPostgres(cmd)
	if err != nil {
		return err
	}
	defer pg.Close()
	p, err := st.prepareRun(cmd, pg, path, f)
	if err != nil {
		return err
	}
	defer p.suite.Close()
	if p.experiment != nil {
		// prepareRun refused it unless distributedVariants is set.
		defer p.experiment.close()
		return st.runExperimentDistributed(cmd, pg, p, f)
	}
	coord, err := river.NewCoordinator(ctx, pg, river.CoordinatorOptions{})
	if err != nil {
		return err
	}

	rec := p.record
	opts := p.suite.Execution.EngineOptions()
	verb := "re-attached"
	if p.resume {
		if err := refuseFinalized(rec, rec.ID, p.dbFlag); err != nil {
			return err
		}
	} else {
		// Workers rebuild the run from its stored config, which holds no
		// literal secret: refuse now rather than enqueue jobs no worker
		// can run.
		if err := p.suite.CheckStorable(); err != nil {
			return err
		}
		var endSpan func(*evalrun.Summary, error)
		ctx, endSpan = traceRun(ctx, rec)
		defer func() { endSpan(sum, err) }()
		if rec, err = coord.Enqueue(ctx, engine.Spec{Run: rec, Source: p.items, Target: p.target,
			Scorers: p.suite.Scorers(), Options: opts}); err != nil {
			return err
		}
		verb = "enqueued"
	}
	fmt.Fprintf(st.Stderr, "run %s %s: suite %s, dataset %s v%d, %d items, target %s (%s), distributed\n", rec.ID, verb,
		lineText(p.suite.Name), lineText(rec.Dataset), rec.DatasetVersion, p.items.Len(), rec.Target.Kind, lineText(rec.Target.Name))
	if p.datasetNote != "" {
		fmt.Fprintln(st.Stderr, p.datasetNote)
	}
	if !p.resume {
		fmt.Fprintf(st.Stderr, "waiting for evalrun worker processes%s; Ctrl-C cancels the run\n", p.dbFlag)
	}

	prog := st.newProgress(rec.Total, f.quiet)
	sum, err = coord.Wait(ctx, rec.ID, river.WaitOptions{Progress: prog.update, JobError: func(msg string) {
		fmt.Fprintf(st.Stderr, "run %s: jobs went back to the queue (River retries them): %s\n", rec.ID, msg)
	}})
	prog.finish()
	if err != nil {
		return err
	}
	bg := context.WithoutCancel(ctx)
	rep, src, err := storedReport(bg, pg, rec.ID)
	if err != nil {
		return fmt.Errorf("run %s: build the report from storage: %w", rec.ID, err)
	}
	cause := context.Cause(ctx)
	if errors.Is(sum.Err, river.ErrCanceled) {
		// Cancelled from elsewhere (evalrun runs cancel), not by this
		// process's Ctrl-C, whose cause Wait returns instead.
		cause = errCanceled
	}
	writeErr := st.writeReports(bg, rep, src, stdoutFormat, files, p.conditions)
	st.stepSummaryRun(rep)
	st.saveReport(bg, pg, rep)
	return errors.Join(writeErr, st.verdict(rep, sum, p, cause))
}

// suiteBuilder rebuilds what a stored run needs from its record alone for
// a worker: the suite from run.Config (suite.FromRunConfig, ${VAR} expanded
// from the worker's own environment) and the items of its pinned dataset
// version with its stored selection. The store's response cache, when it
// has one, serves the target and the judges while execution.cache is on.
type suiteBuilder struct {
	st    *State
	store evalrun.Store
}

var _ river.Builder = (*suiteBuilder)(nil)

// Build implements river.Builder.
func (b *suiteBuilder) Build(_ context.Context, run *evalrun.Run) (evalrun.Target, []evalrun.Scorer, engine.Options, error) {
	cache, _ := b.store.(evalrun.ResponseCache)
	s, err := suite.FromRunConfig(run.Config, suite.Options{Env: b.st.lookupEnv(), Deps: modelDeps(), Cache: cache})
	if err != nil {
		return nil, nil, engine.Options{}, fmt.Errorf("run %s: %w", run.ID, err)
	}
	opts := s.Execution.EngineOptions()
	if s.Execution.Cache && cache != nil {
		opts.Cache, opts.CacheKey = cache, s.CacheKey()
	}
	return &suiteTarget{Target: s.Target(), s: s}, s.Scorers(), opts, nil
}

// Items implements river.Builder: the pinned version with the run's stored
// selection, as the coordinator selected them, read a page at a time so
// that a worker holds a bounded number of a run's items (see
// engine.IndexedItems), not the dataset.
func (b *suiteBuilder) Items(ctx context.Context, run *evalrun.Run) (river.ItemIndex, error) {
	sel, err := suite.SelectionOf(run.Config)
	if err != nil {
		return nil, err
	}
	idx, err := engine.NewIndexedItems(ctx, b.store, run.Dataset, run.DatasetVersion,
		engine.Selection{Tags: sel.Tags, Limit: sel.Limit}, engine.IndexedOptions{})
	if err != nil {
		return nil, datasetNotFound(err, run.Dataset, run.DatasetVersion)
	}
	if idx.Len() == 0 {
		return nil, emptySelection(run.Dataset, run.DatasetVersion, sel, idx.Scanned())
	}
	return idx, nil
}

// suiteTarget is a suite's target whose Close releases the whole suite.
type suiteTarget struct {
	evalrun.Target
	s *suite.Suite
}

// Close closes the suite (its target and scorers).
func (t *suiteTarget) Close() error { return t.s.Close() }

// refuseQueued refuses to execute here (a resume without --distributed)
// a run whose jobs are still queued for evalrun worker processes: they
// would execute its items as well, each twice. A run whose coordinator
// died is re-attached to with --resume ID --distributed instead (the
// experiment's id for a variant's run).
func refuseQueued(ctx context.Context, store evalrun.Store, run *evalrun.Run, dbFlag string) error {
	pg, ok := store.(*postgres.Store)
	if !ok {
		return nil
	}
	live, err := river.HasLiveJobs(ctx, pg, run.ID)
	if err != nil {
		return fmt.Errorf("run %s: look for its jobs in the queue: %w", run.ID, err)
	}
	if !live {
		return nil
	}
	id := run.ID
	if run.Experiment != "" {
		id = run.Experiment
	}
	return invalidf("run %s is queued for evalrun worker processes (its jobs are still in the queue): resuming it here "+
		"would execute its items twice; wait for the workers with evalrun run --resume %s --distributed%s, "+
		"or cancel it first (evalrun runs cancel %s)", run.ID, id, dbFlag, run.ID)
}

// refuseFinalized refuses --resume --distributed of a run that was
// stopped and finalized (canceled by Ctrl-C or evalrun runs cancel, or
// failed with items left): its jobs are gone, so no worker will execute
// its missing items and re-attaching would only report it stopped again.
// A resume without --distributed (of id: the run's, or its experiment's)
// executes them here.
func refuseFinalized(run *evalrun.Run, id, dbFlag string) error {
	if run.CompletedAt.IsZero() {
		return nil // still the workers': re-attach
	}
	return invalidf("run %s%s is %s with %d of %d items without a result, and none of its jobs is left for workers: "+
		"--distributed only re-attaches to runs still queued; run its missing items in this process with "+
		"evalrun run --resume %s%s (without --distributed)",
		run.ID, variantOf(run), run.Status, run.Skipped, run.Total, id, dbFlag)
}

// variantOf is " (variant NAME)" for a run of an experiment, else "".
func variantOf(run *evalrun.Run) string {
	if run.Experiment == "" {
		return ""
	}
	return " (variant " + run.Variant + ")"
}

// cancelDistributed is evalrun runs cancel for a distributed run: queued
// jobs deleted, running ones signalled, the run finalized with exact
// counts, even when no coordinator waits for it any more.
func (st *State) cancelDistributed(cmd *cobra.Command, pg *postgres.Store, runID string) error {
	coord, err := river.NewCoordinator(cmd.Context(), pg, river.CoordinatorOptions{})
	if err != nil {
		return err
	}
	sum, err := coord.Cancel(cmd.Context(), runID)
	if err != nil {
		return fmt.Errorf("cancel run %s: %w", runID, err)
	}
	fmt.Fprintf(st.Stdout, "run %s %s: %d succeeded, %d failed, %d skipped of %d\n",
		runID, sum.Status, sum.Succeeded, sum.Failed, sum.Skipped, sum.Total)
	return nil
}
