package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/postgres"
	"github.com/evalrun/evalrun/river"
)

func init() { register(newRunsCmd) }

func newRunsCmd(st *State) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List, show and cancel runs",
		Example: `  evalrun runs list
  evalrun runs list --json --dataset support
  evalrun runs list --experiment EXPERIMENT_ID
  evalrun runs show RUN_ID
  evalrun runs cancel RUN_ID`,
	}
	cmd.AddCommand(newRunsListCmd(st), newRunsShowCmd(st), newRunsCancelCmd(st))
	return cmd
}

func newRunsListCmd(st *State) *cobra.Command {
	var asJSON bool
	var f evalrun.RunFilter
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Long: `List runs, newest first. The runs of an experiment (a suite with variants) show
its id and their variant's name; --experiment ID lists only that experiment's.
--json prints an array of run records (id, name, status, dataset,
dataset_version, target, scorers, counts, created_at, started_at, completed_at,
and for a run of an experiment experiment, variant and variant_index); the
stored config is left out (evalrun runs show has it).`,
		Example: "  evalrun runs list\n  evalrun runs list --json --limit 10\n  evalrun runs list --experiment exp-20261122T101500-3f9a1c2b",
		Args:    args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.Limit < 0 { // the stores read a negative limit as none
				return invalidf("--limit %d: must not be negative", f.Limit)
			}
			return st.withStore(cmd, func(ctx context.Context, store evalrun.Store) error {
				runs, err := store.ListRuns(ctx, f)
				if err != nil {
					return err
				}
				withoutConfig := func(r *evalrun.Run) runJSON {
					r.Config = nil
					return jsonOfRun(r)
				}
				// The experiment columns only when a listed run has one:
				// most lists hold runs on their own only.
				inExperiment := slices.ContainsFunc(runs, func(r *evalrun.Run) bool { return r.Experiment != "" })
				header := "ID\tNAME\tSTATUS\tDATASET\tITEMS\tOK\tFAILED\tSKIPPED\tCREATED"
				if inExperiment {
					header = "ID\tNAME\tEXPERIMENT\tVARIANT\tSTATUS\tDATASET\tITEMS\tOK\tFAILED\tSKIPPED\tCREATED"
				}
				return printList(st.Stdout, asJSON, runs, withoutConfig, header,
					func(r *evalrun.Run) string {
						exp := ""
						if inExperiment {
							exp = "\t—\t—"
							if r.Experiment != "" {
								exp = "\t" + cellText(r.Experiment, 40) + "\t" + cellText(r.Variant, 24)
							}
						}
						return fmt.Sprintf("%s\t%s%s\t%s\t%s v%d\t%d\t%d\t%d\t%d\t%s", cellText(r.ID, 40), cellText(r.Name, 30), exp,
							r.Status, cellText(r.Dataset, 30), r.DatasetVersion, r.Total, r.Succeeded, r.Failed, r.Skipped, timeText(r.CreatedAt))
					})
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&f.Dataset, "dataset", "", "only runs of this dataset")
	cmd.Flags().StringVar(&f.Experiment, "experiment", "", "only the runs (variants) of this experiment")
	cmd.Flags().IntVar(&f.Limit, "limit", 0, "at most N runs")
	return cmd
}

// runJSON is a run record as runs list and runs show print it: a run of
// an experiment always has variant_index, the baseline's 0 included (the
// record's own tag leaves a 0 out).
type runJSON struct {
	*evalrun.Run
	VariantIndex *int `json:"variant_index,omitempty"`
}

func jsonOfRun(r *evalrun.Run) runJSON {
	j := runJSON{Run: r}
	if r.Experiment != "" {
		j.VariantIndex = &r.VariantIndex
	}
	return j
}

// cellText is s as a table shows it: on one line, cut to n runes, with
// control characters (a terminal's escape sequences, from a hostile suite
// or dataset name) and invalid UTF-8 shown as U+FFFD.
func cellText(s string, n int) string {
	return clip(strings.Map(func(r rune) rune {
		if r == utf8.RuneError || (unicode.IsControl(r) && !unicode.IsSpace(r)) {
			return utf8.RuneError
		}
		return r
	}, s), n)
}

// lineText is s (a name from the suite: a pull request may bring it) for
// a line of standard error: control characters, newlines included, shown
// as U+FFFD, so that it can neither send a terminal escape nor forge a
// line of a CI log.
func lineText(s string) string {
	return strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return utf8.RuneError
		}
		return r
	}, s)
}

func newRunsShowCmd(st *State) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "show RUN_ID",
		Short:   "Show a run record (evalrun report RUN_ID gives its full report)",
		Example: "  evalrun runs show RUN_ID\n  evalrun runs show RUN_ID --json",
		Args:    args("RUN_ID"),
		RunE: func(cmd *cobra.Command, a []string) error {
			return st.withStore(cmd, func(ctx context.Context, store evalrun.Store) error {
				r, err := store.GetRun(ctx, a[0])
				if err != nil {
					return runNotFound(ctx, store, err, a[0])
				}
				if asJSON {
					return writeJSON(st.Stdout, jsonOfRun(r))
				}
				tw := newTable(st.Stdout, "")
				row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
				row("id", r.ID)
				row("name", cellText(r.Name, 200))
				if r.Experiment != "" {
					row("experiment", cellText(r.Experiment, 200)+" (evalrun report --experiment "+cellText(r.Experiment, 200)+")")
					role := ""
					if r.VariantIndex == 0 {
						role = ", the baseline"
					}
					row("variant", fmt.Sprintf("%s (index %d%s)", cellText(r.Variant, 200), r.VariantIndex, role))
				}
				row("status", r.Status)
				row("dataset", fmt.Sprintf("%s v%d", r.Dataset, r.DatasetVersion))
				row("target", fmt.Sprintf("%s (%s)", r.Target.Kind, r.Target.Name))
				for _, s := range r.Scorers {
					row("scorer", fmt.Sprintf("%s (%s, threshold %.2f)", s.Name, s.Kind, s.Threshold))
				}
				row("items", fmt.Sprintf("%d: %d succeeded, %d failed, %d skipped", r.Total, r.Succeeded, r.Failed, r.Skipped))
				if r.PersistErrors > 0 {
					row("not stored", r.PersistErrors)
				}
				if r.Error != "" {
					row("error", r.Error)
				}
				row("created", timeText(r.CreatedAt))
				row("started", timeText(r.StartedAt))
				row("completed", timeText(r.CompletedAt))
				if r.ClaimedBy != "" {
					row("claimed by", fmt.Sprintf("%s (until %s)", r.ClaimedBy, timeText(r.ClaimExpires)))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the run record, with its stored config)")
	return cmd
}

func newRunsCancelCmd(st *State) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel RUN_ID",
		Short: "Cancel a run that is running in another process",
		Long: `Mark a pending or running run as canceled in storage. The evalrun process running
it checks the run's stored status every second and, seeing it canceled, stops
as on Ctrl-C: no new items, in-flight ones canceled, partial reports written,
exit code 130. A run whose process died stays canceled; --resume still
finishes it.

A distributed run (PostgreSQL) is canceled at once: its queued jobs are
deleted, its running jobs are signalled, and the run is finalized with exact
counts, whether or not a coordinating "evalrun run" still waits for it.`,
		Example: "  evalrun runs cancel 20260101T101500-3f9a1c2b",
		Args:    args("RUN_ID"),
		RunE: func(cmd *cobra.Command, a []string) error {
			return st.withStore(cmd, func(ctx context.Context, store evalrun.Store) error {
				ended := func(r *evalrun.Run) error {
					return invalidf("run %s is already %s: nothing to cancel", r.ID, r.Status)
				}
				r, err := store.GetRun(ctx, a[0])
				if err != nil {
					return runNotFound(ctx, store, err, a[0])
				}
				if !r.Status.Cancelable() {
					return ended(r)
				}
				if pg, ok := store.(*postgres.Store); ok {
					if dist, err := river.IsDistributed(ctx, pg, r.ID); err != nil {
						return fmt.Errorf("cancel run %s: %w", r.ID, err)
					} else if dist {
						return st.cancelDistributed(cmd, pg, r.ID)
					}
				}
				// One conditional step: a run that ended since it was read
				// keeps its record, and the message says how it ended.
				r, changed, err := store.CancelRun(ctx, r.ID, errCanceled.Error())
				if err != nil {
					return fmt.Errorf("cancel run %s: %w", a[0], err)
				}
				if !changed {
					return ended(r)
				}
				fmt.Fprintf(st.Stdout, "run %s marked canceled; its process stops within a few seconds\n", r.ID)
				return nil
			})
		},
	}
}
