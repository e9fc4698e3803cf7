package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/report"
	"github.com/evalrun/evalrun/suite"
)

func init() { register(newRunCmd) }

// runFlags are the flags of evalrun run.
type runFlags struct {
	concurrency, maxRetries, repeat int
	itemTimeout, retryDelay         time.Duration
	rate                            string
	strict, noRetain                bool
	limit, datasetVersion           int
	tags                            []string
	outputs, resume                 string
	outFiles                        []string
	format                          string
	failOn                          []string
	quiet, distributed              bool
	variants                        []string
	exec                            execFlags
}

func newRunCmd(st *State) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run SUITE.yaml",
		Short: "Run a suite: import its dataset, execute every item, score, store and report",
		Long: `Run the suite file SUITE.yaml (see docs/suite.md): import its dataset file (a new
version only when the file changed), run every selected item against the target,
score each output, store everything and print the summary table.

The first line on standard error is "run <ID> ...", so the run can be inspected
or resumed even if this process dies. Progress goes to standard error: a bar on
a terminal, a plain line every few seconds otherwise, nothing with --quiet.

Execution flags override the suite's execution options. -o FILE (repeatable)
writes a report; its format comes from the extension (.json, .md, .xml for
JUnit, .html for one self-contained page, .txt for the table), else from
--format. --format also sets what goes to standard output (default: the table).

The first Ctrl-C (SIGINT or SIGTERM) stops gracefully: no new items, in-flight
ones are canceled, the partial summary and every report are written and the
resume command is printed (exit 130). A second one exits at once.
"evalrun runs cancel RUN_ID" from another shell has the same effect: this
process checks the run's stored status every second.

--resume RUN_ID finishes an interrupted run with its stored configuration,
dataset version and item selection: only items without a stored result run,
then the full report is written. SUITE.yaml may then be omitted.

A suite with variants runs an experiment: one run per variant (--variant NAME
to run some), all at once on the same items, each with its own concurrency
and rate limit. The first line on standard error is "experiment <EXP_ID>
started: ...", then "run <RUN_ID> variant <NAME>: ..." per variant. The
experiment report (the matrix, each variant against the baseline, the first
variant) goes to standard output; -o writes it as .json, .md or .txt (no
JUnit). fail_on must hold for every variant. Ctrl-C stops every variant;
"evalrun runs cancel RUN_ID" one; --resume EXP_ID finishes them all.

Exit codes: 0 clean, 1 errors or a breached fail_on, 2 bad usage/config/input,
130 interrupted.`,
		Example: `  evalrun run examples/quickstart/suite.yaml
  evalrun run suite.yaml --concurrency 20 --limit 50 --tag billing -o report.json -o report.md
  evalrun run suite.yaml --format junit -o junit.xml --fail-on "pass_rate(exact_match) < 0.9"
  evalrun run suite.yaml --outputs saved.jsonl      # score saved outputs, call nothing
  evalrun run suite.yaml --dry-run --repeat 3       # items, requests and estimated cost; runs nothing
  evalrun run --resume 20260101T101500-3f9a1c2b     # finish an interrupted run
  evalrun run variants.yaml --variant mini --variant big -o experiment.md   # some variants of an experiment
  evalrun run --resume exp-20260101T101500-77aa01c2 # finish an interrupted experiment`,
		Args: func(cmd *cobra.Command, a []string) error {
			if len(a) == 0 && f.resume != "" {
				return nil
			}
			return args("SUITE.yaml")(cmd, a)
		},
		RunE: func(cmd *cobra.Command, a []string) error {
			path := ""
			if len(a) > 0 {
				path = a[0]
			}
			if f.exec.dryRun {
				return st.dryRun(cmd, path, f)
			}
			return st.run(cmd, path, f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.concurrency, "concurrency", 0, "items in flight at once (overrides execution.concurrency)")
	fl.DurationVar(&f.itemTimeout, "item-timeout", 0, "deadline of one item, retries included; 0 = none (overrides execution.item_timeout)")
	fl.IntVar(&f.maxRetries, "max-retries", 0, "retries of a transient error (overrides execution.max_retries)")
	fl.DurationVar(&f.retryDelay, "retry-delay", 0, "base back-off between retries (overrides execution.retry_delay)")
	fl.IntVar(&f.repeat, "repeat", 0, "run every item N times (overrides execution.repeat)")
	fl.StringVar(&f.rate, "rate", "", "target rate limit, N/s or N/m (overrides target.rate_limit)")
	fl.BoolVar(&f.strict, "strict", false, "stop the run at the first scorer error")
	fl.BoolVar(&f.noRetain, "no-retain", false, "keep no results in memory; reports are built from storage")
	fl.IntVar(&f.limit, "limit", 0, "run only the first N selected items")
	fl.StringArrayVar(&f.tags, "tag", nil, "run only items with this tag (repeatable: any of them)")
	fl.IntVar(&f.datasetVersion, "dataset-version", 0, "run this dataset version (default: the suite's pin, else the latest)")
	fl.StringVar(&f.outputs, "outputs", "", `score saved outputs from this JSONL file ({"id", "output"} per line) instead of calling the target`)
	fl.StringVar(&f.resume, "resume", "", "finish the interrupted run RUN_ID (or every variant of experiment EXP_ID)")
	fl.StringArrayVarP(&f.outFiles, "output", "o", nil, "write a report to FILE (repeatable; format from the extension or --format)")
	fl.StringVar(&f.format, "format", "", "report format: table, json, markdown, junit or html (standard output and -o files without a known extension)")
	fl.StringArrayVar(&f.failOn, "fail-on", nil, `fail (exit 1) when this condition holds, e.g. "pass_rate(exact_match) < 0.9" (repeatable; added to the suite's fail_on)`)
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress output")
	fl.StringArrayVar(&f.variants, "variant", nil, "run only this variant of a suite with variants (repeatable; suite order is kept, the first is the baseline)")
	fl.BoolVar(&f.distributed, "distributed", false, "enqueue the items for evalrun worker processes and wait (PostgreSQL; see evalrun worker --help)")
	f.exec.add(fl)
	_ = cmd.RegisterFlagCompletionFunc("format", formatCompletion)
	return cmd
}

// overrides returns the suite overrides of the flags the user set.
func (f *runFlags) overrides(cmd *cobra.Command) suite.Overrides {
	var o suite.Overrides
	set := cmd.Flags().Changed
	if set("concurrency") {
		o.Concurrency = &f.concurrency
	}
	if set("item-timeout") {
		o.ItemTimeout = &f.itemTimeout
	}
	if set("max-retries") {
		o.MaxRetries = &f.maxRetries
	}
	if set("retry-delay") {
		o.RetryDelay = &f.retryDelay
	}
	if set("repeat") {
		o.Repeat = &f.repeat
	}
	if set("rate") {
		o.Rate = &f.rate
	}
	if set("strict") {
		o.Strict = &f.strict
	}
	if set("no-retain") {
		retain := !f.noRetain
		o.RetainResults = &retain
	}
	return o
}

// run is evalrun run.
func (st *State) run(cmd *cobra.Command, path string, f *runFlags) error {
	ctx := cmd.Context()
	if f.distributed {
		return st.runDistributed(cmd, path, f)
	}
	stdoutFormat, files, err := reportTargets(f.format, f.outFiles)
	if err != nil {
		return err
	}
	// Keeping no results, the run's live heap is small; its garbage is not
	// (see noRetainMemoryLimit). With --no-retain the limit holds from the
	// start, the dataset import included.
	restoreLimit := func() {}
	if f.noRetain {
		restoreLimit = setMemoryLimit(memLimitFloor)
	}
	defer func() { restoreLimit() }()
	store, err := st.openStore(cmd)
	if err != nil {
		return err
	}
	defer store.Close()

	p, err := st.prepareRun(cmd, store, path, f)
	if err != nil {
		return err
	}
	defer p.suite.Close()
	if p.experiment != nil {
		defer p.experiment.close()
		return st.runExperimentLocal(cmd, store, p, f)
	}

	rec := p.record
	claim := st.newClaim(store, rec.ID)
	verb := "started"
	if p.resume {
		if err := refuseQueued(ctx, store, rec, p.dbFlag); err != nil {
			return err
		}
		if err := claim.take(ctx); err != nil {
			return err
		}
		verb = "resumed"
	}
	of := ""
	if rec.Experiment != "" {
		of = fmt.Sprintf(", variant %s of experiment %s", rec.Variant, rec.Experiment)
	}
	fmt.Fprintf(st.Stderr, "run %s %s: suite %s, dataset %s v%d, %d items, target %s (%s)%s\n", rec.ID, verb,
		lineText(p.suite.Name), lineText(rec.Dataset), rec.DatasetVersion, p.items.Len(), rec.Target.Kind, lineText(rec.Target.Name), of)
	if p.datasetNote != "" {
		fmt.Fprintln(st.Stderr, p.datasetNote)
	}

	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	stopWatch := claim.watch(runCtx, st.CancelPoll, cancelRun)
	opts := p.suite.Execution.EngineOptions()
	opts.Resume = p.resume
	if c, ok := store.(evalrun.ResponseCache); ok && p.suite.Execution.Cache {
		opts.Cache, opts.CacheKey = c, p.suite.CacheKey()
	}
	if opts.DiscardResults {
		restoreLimit()
		restoreLimit = setMemoryLimit(noRetainMemoryLimit())
		opts.WriterBufferBytes = noRetainWriterBytes
	}
	opts.Concurrency = fitConcurrency(st.Stderr, opts.Concurrency, rec.Target.Kind)
	prog := st.newProgress(p.items.Len()*max(opts.Repeat, 1), f.quiet)
	prog.configured = opts.Concurrency
	opts.Progress = prog.update
	opts.OnStoreFailure = func(err error) { st.storeFailedNow(prog, err) }
	sum, err := engine.Run(runCtx, claimingStore{store, claim}, engine.Spec{Run: rec, Source: p.items, Target: p.target,
		Scorers: p.suite.Scorers(), Options: opts})
	stopWatch()
	prog.finish()
	if err != nil {
		return err
	}

	if opts.DiscardResults {
		// The report is built from storage: its accumulators grow with
		// the results, its garbage (the scan) must not.
		restoreLimit()
		restoreLimit = setMemoryLimit(reportMemoryLimit(sum.Succeeded+sum.Failed, len(rec.Scorers)))
	}
	// The context may be cancelled: reports are read and written regardless.
	bg := context.WithoutCancel(ctx)
	var rep *report.Report
	var src *report.ItemSource // nil: rep holds its item rows
	storeFailed := errors.Is(sum.Err, engine.ErrStoreFailed)
	if sum.Results != nil && (!p.resume || storeFailed) {
		rep = report.Build(rec, sum.Results)
	} else if rep, src, err = storedReport(bg, store, rec.ID); err != nil {
		if storeFailed {
			return st.resultsLost(sum, err)
		}
		return fmt.Errorf("run %s: build the report from storage: %w", rec.ID, err)
	}
	writeErr := st.writeReports(bg, rep, src, stdoutFormat, files, p.conditions)
	st.stepSummaryRun(rep)
	if storeFailed {
		st.whereResultsAre(sum, files, writeErr, p.resume, "evalrun run --resume "+rec.ID+p.dbFlag)
	} else {
		st.saveReport(bg, store, rep)
	}
	return errors.Join(writeErr, st.verdict(rep, sum, p, context.Cause(runCtx)))
}

// verdict prints why a run is not clean and returns the error of its exit
// code (nil for a clean run).
func (st *State) verdict(rep *report.Report, sum *evalrun.Summary, p *prepared, cause error) error {
	id := sum.RunID
	if sum.Status == evalrun.RunCanceled {
		why := "interrupted"
		if errors.Is(cause, errCanceled) {
			why = "canceled (evalrun runs cancel)"
		}
		fmt.Fprintf(st.Stderr, "run %s %s: %d of %d items done, %d skipped\n", id, why,
			sum.Succeeded+sum.Failed, sum.Total, sum.Skipped)
		fmt.Fprintf(st.Stderr, "resume with: evalrun run --resume %s%s\n", id, p.dbFlag)
		return quietExit(ExitInterrupted, ErrInterrupted)
	}
	reasons := runProblems(rep, sum)
	for _, b := range report.Evaluate(rep, p.conditions) {
		reasons = append(reasons, "fail_on breached: "+b.String())
	}
	st.stepSummaryReasons(reasons)
	if len(reasons) == 0 {
		return nil
	}
	fmt.Fprintf(st.Stderr, "run %s finished with problems:\n", id)
	for _, r := range reasons {
		fmt.Fprintf(st.Stderr, "  - %s\n", r)
	}
	return quietExit(ExitFailed, errFailed)
}

// runProblems returns why a finished run is not clean, for people: it
// failed, items failed, scorers erred, results were not stored. fail_on is
// not checked here. rep is nil when no report could be built, sum when the
// run did not execute in this process (a kept run of a resumed
// experiment): the other then speaks alone.
func runProblems(rep *report.Report, sum *evalrun.Summary) []string {
	var reasons []string
	switch {
	case sum != nil && sum.Status == evalrun.RunFailed:
		msg := "the run failed"
		if sum.Err != nil {
			msg += ": " + sum.Err.Error()
		}
		reasons = append(reasons, msg)
	case sum == nil && rep != nil && rep.Run.Status == evalrun.RunFailed:
		reasons = append(reasons, "the run failed")
	}
	failed, total, errs, persist := 0, 0, 0, 0
	switch {
	case rep != nil:
		failed, total, errs, persist = rep.Run.Failed, rep.Run.Total, rep.Errors(), rep.Run.PersistErrors
	case sum != nil:
		failed, total, errs, persist = sum.Failed, sum.Total, sum.Failed+sum.ScorerErrors, sum.PersistErrors
	}
	if failed > 0 {
		reasons = append(reasons, fmt.Sprintf("%d of %d items failed (target errors)", failed, total))
	}
	if n := errs - failed; n > 0 {
		reasons = append(reasons, fmt.Sprintf("%d scorer errors", n))
	}
	if persist > 0 {
		reasons = append(reasons, fmt.Sprintf("%d results could not be stored", persist))
	}
	return reasons
}

// dbFlagFor returns " --db URL" when the storage is not the default, so a
// printed resume command works as it is.
func (st *State) dbFlagFor(cmd *cobra.Command) string {
	if v, _ := cmd.Flags().GetString("db"); v != "" {
		return " --db " + shellQuote(redactURL(v))
	}
	return ""
}

// absPath returns path made absolute ("" stays "").
func absPath(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	return filepath.Abs(path)
}
