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
)

// An experiment with --distributed: every variant's run is enqueued for
// evalrun worker processes in one transaction (river.EnqueueAll: the whole
// experiment or nothing, the variants' jobs interleaved so that workers
// make them progress together), then this process waits for all of them
// at once, one coord.Wait per variant, and reports exactly as a local
// experiment does (runExperiment: the same report, fail_on and exit
// codes). Ctrl-C ends the experiment's context, and each Wait cancels its
// run (queued jobs deleted, running ones signalled). --resume EXP_ID
// --distributed re-attaches to the experiment's unfinished runs.

// afterEnqueue, when set (by tests), is called once an experiment's runs
// are enqueued; an error returned ends evalrun run there, as a coordinator
// that died right after enqueueing would.
var afterEnqueue func(expID string) error

func init() {
	distributedVariants = func(st *State, cmd *cobra.Command, store evalrun.Store) (variantExecutor, error) {
		pg, ok := store.(*postgres.Store)
		if !ok {
			return nil, invalidf(errNeedsPostgres)
		}
		coord, err := river.NewCoordinator(cmd.Context(), pg, river.CoordinatorOptions{})
		if err != nil {
			return nil, err
		}
		return st.distributedVariant(pg, coord), nil
	}
}

// runExperimentDistributed is evalrun run --distributed of a suite with
// variants (and --resume EXP_ID --distributed): p.experiment is prepared.
func (st *State) runExperimentDistributed(cmd *cobra.Command, pg *postgres.Store, p *prepared, f *runFlags) error {
	ctx := cmd.Context()
	x := p.experiment
	coord, err := river.NewCoordinator(ctx, pg, river.CoordinatorOptions{})
	if err != nil {
		return err
	}
	var specs []engine.Spec
	for _, v := range x.variants {
		if v.resume {
			if err := refuseFinalized(v.record, x.id, p.dbFlag); err != nil {
				return err
			}
			continue
		}
		// Workers rebuild each variant from its run's stored config, which
		// holds no literal secret: refuse now rather than enqueue jobs no
		// worker can run.
		if err := v.suite.CheckStorable(); err != nil {
			return fmt.Errorf("variant %s: %w", v.name, err)
		}
		specs = append(specs, engine.Spec{Run: v.record, Source: v.items, Target: v.target,
			Scorers: v.suite.Scorers(), Options: v.suite.Execution.EngineOptions()})
	}
	if len(specs) > 0 {
		ctx, end := traceExperiment(ctx, x.id)
		defer end()
		// The records are updated in place: v.record is the stored run.
		if _, err := coord.EnqueueAll(ctx, specs); err != nil {
			return fmt.Errorf("experiment %s: %w", x.id, err)
		}
		fmt.Fprintf(st.Stderr, "experiment %s enqueued: %d runs, distributed; waiting for evalrun worker processes%s; Ctrl-C cancels the experiment\n",
			x.id, len(specs), p.dbFlag)
		if afterEnqueue != nil {
			if err := afterEnqueue(x.id); err != nil {
				return err
			}
		}
	} else {
		fmt.Fprintf(st.Stderr, "experiment %s re-attached: %d runs, distributed\n", x.id, len(x.variants))
	}
	return st.runExperiment(cmd, pg, p, f, st.distributedVariant(pg, coord))
}

// distributedVariant returns the executor of variant runs on workers: it
// enqueues the variant's run unless it is stored already (enqueued with
// the others by runExperimentDistributed, or resumed), then waits for it
// to end, with its progress and the errors of jobs that went back to the
// queue. A run cancelled from elsewhere (evalrun runs cancel) is told
// apart from this process's Ctrl-C as a local run's is (errCanceled).
func (st *State) distributedVariant(pg *postgres.Store, coord *river.Coordinator) variantExecutor {
	return func(ctx context.Context, v *variantRun) (*evalrun.Summary, error) {
		// Not cancelled with ctx: a Ctrl-C now must reach Wait, which
		// cancels the run.
		if _, err := pg.GetRun(context.WithoutCancel(ctx), v.record.ID); errors.Is(err, evalrun.ErrNotFound) {
			if err := v.suite.CheckStorable(); err != nil {
				return nil, err
			}
			if _, err := coord.Enqueue(ctx, engine.Spec{Run: v.record, Source: v.items, Target: v.target,
				Scorers: v.suite.Scorers(), Options: v.opts}); err != nil {
				return nil, err
			}
		} else if err != nil {
			return nil, err
		}
		sum, err := coord.Wait(ctx, v.record.ID, river.WaitOptions{Progress: v.opts.Progress, JobError: func(msg string) {
			fmt.Fprintf(st.Stderr, "run %s variant %s: jobs went back to the queue (River retries them): %s\n", v.record.ID, v.name, msg)
		}})
		if err != nil {
			return nil, err
		}
		if errors.Is(sum.Err, river.ErrCanceled) && ctx.Err() == nil {
			sum.Err = fmt.Errorf("%w: %w", errCanceled, sum.Err)
		}
		return sum, nil
	}
}
