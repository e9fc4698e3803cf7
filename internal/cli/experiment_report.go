package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/evalrun/evalrun/report"
)

// experimentTargets is reportTargets for an experiment report, which has
// four forms: the terminal matrix (table, .txt), JSON (.json), Markdown
// (.md) and HTML (.html). JUnit is refused: one JUnit file for several
// variants would be ambiguous (which variant is the test suite?), and each
// variant's run has its own (evalrun report RUN_ID -o junit.xml).
func experimentTargets(format string, paths []string) (report.Format, []reportFile, error) {
	stdout, files, err := reportTargets(format, paths)
	if err != nil {
		return "", nil, err
	}
	const junitHelp = "JUnit has no form for an experiment (one file for several variants would be ambiguous): " +
		"write a variant's with evalrun report RUN_ID -o junit.xml (the runs' ids are printed when the experiment starts), " +
		"or use .json, .md, .html or .txt here"
	if stdout == report.FormatJUnit {
		return "", nil, invalidf("--format junit: %s", junitHelp)
	}
	for _, f := range files {
		if f.format == report.FormatJUnit {
			return "", nil, invalidf("-o %s: %s", f.path, junitHelp)
		}
	}
	return stdout, files, nil
}

// writeExperiment writes e in format f; the HTML report shows failOn, the
// fail_on gates, with each variant's verdicts.
func writeExperiment(ctx context.Context, w io.Writer, e *report.Experiment, f report.Format, failOn []report.Condition) error {
	switch f {
	case report.FormatHTML:
		return report.WriteExperimentHTML(ctx, w, e, report.HTMLOptions{FailOn: failOn})
	case report.FormatJSON:
		return report.WriteExperimentJSON(w, e)
	case report.FormatMarkdown:
		return report.WriteExperimentMarkdown(w, e)
	case report.FormatTable, "":
		return report.WriteExperimentTable(w, e)
	}
	return fmt.Errorf("the experiment report has no %s form", f)
}

// writeExperimentReports writes e to standard output and to every file,
// as writeReports does for a run: every file it can, the errors of the
// others returned.
func (st *State) writeExperimentReports(ctx context.Context, e *report.Experiment, stdout report.Format, files []reportFile,
	failOn []report.Condition) error {
	var errs []error
	if err := writeExperiment(ctx, st.Stdout, e, stdout, failOn); err != nil && !errors.Is(err, syscall.EPIPE) {
		errs = append(errs, fmt.Errorf("write the experiment report to standard output: %w", err))
	}
	for _, f := range files {
		if err := writeFile(f.path, func(w *os.File) error { return writeExperiment(ctx, w, e, f.format, failOn) }); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(st.Stderr, "wrote %s (experiment, %s)\n", f.path, f.format)
	}
	return errors.Join(errs...)
}
