package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/report"
)

func init() {
	register(newReportCmd)
	register(newCompareCmd)
}

func newReportCmd(st *State) *cobra.Command {
	var files []string
	var format string
	cmd := &cobra.Command{
		Use:   "report RUN_ID",
		Short: "Rebuild a stored run's report",
		Long: `Rebuild the report of a stored run from storage (the same report evalrun run
printed and wrote) and print it (--format, default the table) and write every -o
FILE (format from the extension: .json, .md, .xml for JUnit, .txt; else --format).`,
		Example: `  evalrun report RUN_ID
  evalrun report RUN_ID --format markdown >> "$GITHUB_STEP_SUMMARY"
  evalrun report RUN_ID -o report.json -o junit.xml`,
		Args: args("RUN_ID"),
		RunE: func(cmd *cobra.Command, a []string) error {
			stdout, targets, err := reportTargets(format, files)
			if err != nil {
				return err
			}
			return st.withStore(cmd, func(ctx context.Context, store evalrun.Store) error {
				rep, src, err := storedReport(ctx, store, a[0])
				if err != nil {
					return notFound(err, "run "+a[0], "evalrun runs list shows the runs")
				}
				err = st.writeReports(ctx, rep, src, stdout, targets)
				st.saveReportIfMissing(ctx, store, rep)
				return err
			})
		},
	}
	cmd.Flags().StringArrayVarP(&files, "output", "o", nil, "write the report to FILE (repeatable)")
	cmd.Flags().StringVar(&format, "format", "", "table, json, markdown or junit")
	_ = cmd.RegisterFlagCompletionFunc("format", formatCompletion)
	return cmd
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
(.json for JSON, anything else Markdown).`,
		Example: `  evalrun compare RUN_A RUN_B
  evalrun compare RUN_A RUN_B --json
  evalrun compare RUN_A RUN_B -o comparison.md`,
		Args: args("RUN_A", "RUN_B"),
		RunE: func(cmd *cobra.Command, a []string) error {
			return st.withStore(cmd, func(ctx context.Context, store evalrun.Store) error {
				for _, id := range a {
					if _, err := store.GetRun(ctx, id); err != nil {
						return notFound(err, "run "+id, "evalrun runs list shows the runs")
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
				write := func(f *os.File, json bool) error {
					if json {
						return report.WriteComparisonJSON(f, c)
					}
					return report.WriteComparisonMarkdown(f, c, report.MarkdownOptions{})
				}
				if out != "" {
					fmtJSON := asJSON
					if f, ok := report.FormatForPath(out); ok {
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
