package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/evalrun/evalrun/report"
)

// stepSummaryEnv names the file GitHub Actions shows as the step's summary
// (https://docs.github.com/actions/using-workflows/workflow-commands-for-github-actions#adding-a-job-summary).
const stepSummaryEnv = "GITHUB_STEP_SUMMARY"

// stepSummaryLimit is GitHub's limit on a step's summary file: past it the
// runner drops the whole summary ("upload aborted, supports content up to
// a size of 1024k"), so an append never makes the file larger.
const stepSummaryLimit = 1 << 20

// stepSummaryBlockLimit bounds what one command appends, so that several
// evalrun commands in one step (run, then compare) each fit. The run's
// Markdown lists its failures and flaky items capped already; this catches
// what grows with the run anyway (one cohort row per tag).
const stepSummaryBlockLimit = 256 << 10

// stepSummary is the Markdown block a command appends to
// $GITHUB_STEP_SUMMARY when it ends ([State.flushStepSummary]), so that
// the block can say how the command ended: its exit code and why.
type stepSummary struct {
	what   string // "run ID", for warnings
	id     string // what --resume takes
	render func(io.Writer) error
	// verdict puts a result line (exit code, reasons) under the heading.
	verdict bool
	// reasons are why a run is not clean, as the verdict printed them.
	reasons []string
}

// stepSummaryRun makes the Markdown of a run's report (the same as
// --format markdown) the step summary of this command, with its verdict.
func (st *State) stepSummaryRun(rep *report.Report) {
	st.summary = &stepSummary{what: "run " + rep.Run.ID, id: rep.Run.ID, verdict: true, render: func(w io.Writer) error {
		return report.WriteMarkdown(w, rep, report.MarkdownOptions{})
	}}
}

// stepSummaryExperiment makes an experiment's Markdown report the step
// summary of this command, with its verdict.
func (st *State) stepSummaryExperiment(e *report.Experiment) {
	st.summary = &stepSummary{what: "experiment " + e.Experiment.ID, id: e.Experiment.ID, verdict: true, render: func(w io.Writer) error {
		return report.WriteExperimentMarkdown(w, e)
	}}
}

// stepSummaryCompare makes a comparison's Markdown the step summary of
// this command.
func (st *State) stepSummaryCompare(c *report.Comparison) {
	st.summary = &stepSummary{what: "comparison of " + c.A.ID + " and " + c.B.ID, render: func(w io.Writer) error {
		return report.WriteComparisonMarkdown(w, c, report.MarkdownOptions{})
	}}
}

// stepSummaryReasons records why the run is not clean for the step
// summary's verdict (nothing when none is pending).
func (st *State) stepSummaryReasons(reasons []string) {
	if st.summary != nil {
		st.summary.reasons = reasons
	}
}

// flushStepSummary appends the command's step summary, if it made one,
// with the exit code it ends with.
func (st *State) flushStepSummary(code int) {
	s := st.summary
	if s == nil {
		return
	}
	st.summary = nil
	st.appendStepSummary(s.what, func(w io.Writer) error {
		if !s.verdict {
			return s.render(w)
		}
		var md bytes.Buffer
		if err := s.render(&md); err != nil {
			return err
		}
		// The result goes right under the heading (the block's first
		// line, then a blank line), where a reader looks first.
		head, rest, _ := bytes.Cut(md.Bytes(), []byte("\n\n"))
		w.Write(head)
		io.WriteString(w, "\n\n"+verdictMarkdown(code, s.id, s.reasons)+"\n")
		_, err := w.Write(rest)
		return err
	})
}

// verdictMarkdown is the result paragraph of the step summary of run
// (or experiment) id, which ended with exit code code for reasons.
func verdictMarkdown(code int, id string, reasons []string) string {
	var b strings.Builder
	switch code {
	case ExitOK:
		return "**Result: passed** (exit code 0): no target or scorer errors, every fail_on holds.\n"
	case ExitInterrupted:
		fmt.Fprintf(&b, "**Result: interrupted** (exit code %d): the summary is partial; `evalrun run --resume %s` finishes the run.\n",
			code, strings.ReplaceAll(lineText(id), "`", "'")) // ids are evalrun's own; a code span shows them as they are
	case ExitFailed:
		fmt.Fprintf(&b, "**Result: failed** (exit code %d)", code)
		if len(reasons) == 0 {
			b.WriteString(": see the step's log.") // an error after the run, such as a report not written
		}
		b.WriteString("\n")
	default:
		fmt.Fprintf(&b, "**Result: failed** (exit code %d): see the step's log.\n", code)
	}
	if len(reasons) > 0 {
		b.WriteString("\n")
	}
	for _, r := range reasons {
		fmt.Fprintf(&b, "- %s\n", report.MarkdownText(r))
	}
	return b.String()
}

// appendStepSummary renders a block of Markdown and appends it to the
// file named by $GITHUB_STEP_SUMMARY (nothing when unset or empty). The
// file is opened for appending and never truncated: what other steps'
// tools wrote before stays. The block is rendered whole first, then
// written in one write, so a failed render writes nothing; a block that
// would pass [stepSummaryBlockLimit] or make the file pass
// [stepSummaryLimit] is cut at a line with a note saying so. Any failure
// is one warning on standard error: the summary is a courtesy, it never
// changes the command's exit code.
func (st *State) appendStepSummary(what string, render func(io.Writer) error) {
	path := st.Getenv(stepSummaryEnv)
	if path == "" {
		return
	}
	warn := func(format string, args ...any) {
		fmt.Fprintf(st.Stderr, "warning: %s: the summary of the %s was not appended to %s: %s (the exit code is unchanged)\n",
			stepSummaryEnv, lineText(what), lineText(path), fmt.Sprintf(format, args...))
	}
	var block bytes.Buffer
	if err := render(&block); err != nil {
		warn("%v", err)
		return
	}
	if st.scrub != nil {
		// As for standard output and error: the last line of defence
		// behind the report's own scrubbing (the file is published).
		clean := st.scrub.String(block.String())
		block.Reset()
		block.WriteString(clean)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		warn("%v", err)
		return
	}
	defer f.Close()
	var size int64
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	out := stepSummaryBlock(block.Bytes(), size, lastByte(path, size), min(stepSummaryBlockLimit, stepSummaryLimit-size))
	if out == nil {
		warn("the file has %d bytes, near GitHub's limit of %d bytes per step summary", size, stepSummaryLimit)
		return
	}
	n, err := f.Write(out)
	if err == nil && n < len(out) {
		err = io.ErrShortWrite
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		if n > 0 {
			warn("only %d of %d bytes were written, the summary is incomplete: %v", n, len(out), err)
			return
		}
		warn("%v", err)
	}
}

// lastByte is the last byte of the file at path of the given size, '\n'
// when it cannot be read (or the file is empty).
func lastByte(path string, size int64) byte {
	if size <= 0 {
		return '\n'
	}
	f, err := os.Open(path)
	if err != nil {
		return '\n'
	}
	defer f.Close()
	b := []byte{'\n'}
	if _, err := f.ReadAt(b, size-1); err != nil {
		return '\n'
	}
	return b[0]
}

// stepSummaryBlock is what to append to a summary file of size bytes whose
// last byte is last: block, after a blank line when the file has content
// (so that its heading starts a new section whatever the previous tool
// left), cut at the end of a line with a note when the whole would exceed
// budget bytes. It is nil when not even the note fits.
func stepSummaryBlock(block []byte, size int64, last byte, budget int64) []byte {
	var sep string
	switch {
	case size == 0:
	case last == '\n':
		sep = "\n"
	default:
		sep = "\n\n"
	}
	if len(block) > 0 && block[len(block)-1] != '\n' {
		block = append(block, '\n')
	}
	if int64(len(sep)+len(block)) <= budget {
		return append([]byte(sep), block...)
	}
	// Cut: keep whole lines and say how much is missing and where it is.
	note := func(lines, n int) string {
		return fmt.Sprintf("\n… summary cut here: %d more lines (%d bytes) not shown, to stay within GitHub's limit "+
			"of 1 MiB per step summary. The full report is in the report files (-o report.json, report.md).\n", lines, n)
	}
	room := budget - int64(len(sep)+len(note(len(block), len(block))))
	if room < 0 {
		return nil
	}
	keep := bytes.LastIndexByte(block[:room], '\n') + 1 // 0: no whole line fits
	rest := block[keep:]
	out := make([]byte, 0, budget)
	out = append(out, sep...)
	out = append(out, block[:keep]...)
	return append(out, note(bytes.Count(rest, []byte{'\n'}), len(rest))...)
}
