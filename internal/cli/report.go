package cli

import (
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/report"
	"github.com/evalrun/evalrun/suite"
)

func init() {
	register(newReportCmd)
	register(newCompareCmd)
}

func newReportCmd(st *State) *cobra.Command {
	var files []string
	var format, experiment string
	cmd := &cobra.Command{
		Use:   "report [RUN_ID | --experiment EXPERIMENT_ID]",
		Short: "Rebuild a stored run's (or experiment's) report",
		Long: `Rebuild the report of a stored run from storage (the same report evalrun run
printed and wrote) and print it (--format, default the table) and write every -o
FILE (format from the extension: .json, .md, .xml for JUnit, .html, .txt; else
--format). The HTML report is one self-contained file (no script, no link out)
with the run's summary, its suite's fail_on gates and every item.

--experiment EXPERIMENT_ID (or an experiment id, "exp-…", as the argument)
rebuilds the experiment report of a suite with variants from its runs' stored
results: the matrix, each variant against the baseline, the items side by side
(.json, .md, .html or .txt; no JUnit). RUN_ID of one variant's run gives that run's
own report, as for any run.`,
		Example: `  evalrun report RUN_ID
  evalrun report RUN_ID --format markdown >> "$GITHUB_STEP_SUMMARY"
  evalrun report RUN_ID -o report.json -o junit.xml -o report.html
  evalrun report --experiment exp-20260101T101500-3f9a1c2b -o experiment.json -o experiment.md`,
		Args: func(cmd *cobra.Command, a []string) error {
			if experiment != "" {
				return args()(cmd, a)
			}
			return args("RUN_ID")(cmd, a)
		},
		RunE: func(cmd *cobra.Command, a []string) error {
			if experiment == "" && evalrun.IsExperimentID(a[0]) {
				experiment = a[0]
			}
			if experiment != "" {
				return st.experimentReport(cmd, experiment, format, files)
			}
			stdout, targets, err := reportTargets(format, files)
			if err != nil {
				return err
			}
			return st.withStore(cmd, func(ctx context.Context, store evalrun.Store) error {
				rep, src, err := storedReport(ctx, store, a[0])
				if err != nil {
					return notFound(err, "run "+a[0], "evalrun runs list shows the runs")
				}
				err = st.writeReports(ctx, rep, src, stdout, targets, st.storedFailOn(ctx, store, a[0], stdout, targets))
				st.saveReportIfMissing(ctx, store, rep)
				return err
			})
		},
	}
	cmd.Flags().StringArrayVarP(&files, "output", "o", nil, "write the report to FILE (repeatable)")
	cmd.Flags().StringVar(&format, "format", "", "table, json, markdown, junit or html (an experiment: table, json, markdown or html)")
	cmd.Flags().StringVar(&experiment, "experiment", "", "rebuild the report of experiment EXPERIMENT_ID (a suite with variants)")
	_ = cmd.RegisterFlagCompletionFunc("format", formatCompletion)
	return cmd
}

// experimentReport is evalrun report --experiment ID: the experiment
// report rebuilt from its runs' stored results; each variant's final run
// report is stored when missing, as evalrun report RUN_ID does.
func (st *State) experimentReport(cmd *cobra.Command, id, format string, files []string) error {
	stdout, targets, err := experimentTargets(format, files)
	if err != nil {
		return err
	}
	return st.withStore(cmd, func(ctx context.Context, store evalrun.Store) error {
		exp, err := evalrun.GetExperiment(ctx, store, id)
		if err != nil {
			return experimentNotFound(ctx, store, err, id)
		}
		// The items side by side are read from storage while the JSON is
		// written: memory does not grow with the outputs of every item.
		// A variant still running (or whose process died) may store
		// results in between: its experiment is built in one read, the
		// items held, so that they match the numbers.
		build := report.BuildExperimentStreamStore
		if slices.ContainsFunc(exp.Runs, func(r *evalrun.Run) bool { return !r.Status.Done() }) {
			build = report.BuildExperimentStore
		}
		e, err := build(ctx, store, exp, report.CompareOptions{})
		if err != nil {
			return fmt.Errorf("experiment %s: %w", id, err)
		}
		err = st.writeExperimentReports(ctx, e, stdout, targets, st.storedFailOn(ctx, store, exp.Runs[0].ID, stdout, targets))
		for _, r := range exp.Runs {
			st.saveReportIfMissing(ctx, store, e.Report(r.Variant))
		}
		return err
	})
}

// storedFailOn returns the fail_on conditions of the suite stored with run
// id, for the gates of an HTML report; none when no HTML is written. The
// run's --fail-on flags were not stored: only the suite file's are known.
// A config that cannot be read gives none, with a warning: the report is
// still written.
func (st *State) storedFailOn(ctx context.Context, store evalrun.RunStore, id string, stdout report.Format, files []reportFile) []report.Condition {
	if stdout != report.FormatHTML && !slices.ContainsFunc(files, func(f reportFile) bool { return f.format == report.FormatHTML }) {
		return nil
	}
	run, err := store.GetRun(ctx, id)
	if err != nil || len(run.Config) == 0 {
		return nil // a library run stores no suite: no gates to show
	}
	conds, err := suite.FailOnOf(run.Config)
	if err != nil {
		fmt.Fprintf(st.Stderr, "warning: run %s: the HTML report shows no fail_on gates: %v\n", id, err)
		return nil
	}
	return conds
}

func newCompareCmd(st *State) *cobra.Command {
	var asJSON bool
	var out string
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B",
		Short: "Compare two runs: per-scorer deltas with confidence intervals, regressed and improved items",
		Long: `Compare run B against run A. Items are paired by id (and repeat); per scorer the
mean delta (B − A) with a 95% paired bootstrap confidence interval (fixed seed,
reproducible) and a sign-test p-value; then the items whose verdict regressed
or improved. An item whose target or scorer failed in one run counts there as a
failure (score 0, not passed); "pass A" and "pass B" are the pass rates over the
paired items. When the runs share no items (different datasets), it says so on
standard error and in the comparison. Markdown by default, JSON with --json; -o FILE writes to a file
(.json for JSON; .html, .htm and .xml are refused; anything else Markdown).`,
		Example: `  evalrun compare RUN_A RUN_B
  evalrun compare RUN_A RUN_B --json
  evalrun compare RUN_A RUN_B -o comparison.md`,
		Args: args("RUN_A", "RUN_B"),
		RunE: func(cmd *cobra.Command, a []string) error {
			return st.withStore(cmd, func(ctx context.Context, store evalrun.Store) error {
				for _, id := range a {
					if _, err := store.GetRun(ctx, id); err != nil {
						return runNotFound(ctx, store, err, id)
					}
				}
				c, err := report.CompareStore(ctx, store, a[0], a[1], report.CompareOptions{})
				if err != nil {
					return err
				}
				// Also in the output, but a script reading --json or a file
				// must not miss that nothing (or only part) was compared.
				for _, w := range c.Warnings {
					fmt.Fprintf(st.Stderr, "warning: %s\n", w)
				}
				st.stepSummaryCompare(c)
				write := func(f *os.File, json bool) error {
					if json {
						return report.WriteComparisonJSON(f, c)
					}
					return report.WriteComparisonMarkdown(f, c, report.MarkdownOptions{})
				}
				if out != "" {
					fmtJSON := asJSON
					if f, ok := report.FormatForPath(out); ok {
						// A comparison has two renderings; a .html or .xml
						// file holding Markdown would mislead whoever opens it.
						if f == report.FormatHTML || f == report.FormatJUnit {
							return invalidf("-o %s: a comparison is written as Markdown (.md) or JSON (.json), not %s", out, f)
						}
						fmtJSON = f == report.FormatJSON
					}
					return writeFile(out, func(f *os.File) error { return write(f, fmtJSON) })
				}
				if asJSON {
					return report.WriteComparisonJSON(st.Stdout, c)
				}
				return report.WriteComparisonMarkdown(st.Stdout, c, report.MarkdownOptions{})
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the comparison to FILE")
	return cmd
}
