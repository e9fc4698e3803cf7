package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/report"
	"github.com/evalrun/evalrun/suite"
)

// An experiment is evalrun run of a suite with `variants`: one ordinary
// run per selected variant (its own id, record, stored results, report,
// claim and resume), all on the same dataset version and item selection,
// linked by the experiment id they carry (evalrun.Run.Experiment). The
// variants execute at once, each an engine.Run with its own options
// (concurrency, adaptive state, rate limit: its target's), so a slow
// variant never holds the others back. The baseline is the experiment's
// first run in variant order.

// experiment is a prepared experiment.
type experiment struct {
	id     string
	resume bool
	// variants are the runs to execute, in variant order.
	variants []*variantRun
	// kept are, on resume, the experiment's runs that are finished: they
	// are not run again, only reported.
	kept []*evalrun.Run
	// suites are the suites this experiment closes besides prepared.suite
	// (on resume, each variant's run rebuilds its own).
	suites []*suite.Suite
}

// variantRun is one variant's run of an experiment, ready to execute.
type variantRun struct {
	name string
	// suite is the variant's view of the suite (suite.ForVariant), or on
	// resume the suite rebuilt from the run's stored config: its Target,
	// TargetInfo, CacheKey and RunConfig are the variant's.
	suite  *suite.Suite
	record *evalrun.Run
	items  engine.ItemSource
	target evalrun.Target
	// opts are the engine options of the run, Progress included.
	opts   engine.Options
	resume bool
	// claim is this process's claim on a resumed run, taken before any
	// variant runs; nil for a fresh run (the executor claims it when it
	// creates the record).
	claim *runClaim

	// sum is the outcome, set once the run ended.
	sum *evalrun.Summary
}

// variantExecutor executes one variant's run to its end and returns its
// summary, as engine.Run does: a summary whenever the run started
// (cancelled or failed ones included, Summary.Err giving why, errCanceled
// for evalrun runs cancel), an error only when nothing ran. ctx is the
// experiment's: a Ctrl-C cancels every variant; cancelling one variant
// alone is the executor's business (evalrun runs cancel RUN_ID). It is
// called from one goroutine per variant at once. The local executor is
// [State.localVariants]; distributed mode brings its own.
type variantExecutor func(ctx context.Context, v *variantRun) (*evalrun.Summary, error)

// distributedVariants, when set (by experiment_distributed.go), returns the
// executor of an experiment run with --distributed. Until then
// --distributed refuses suites with variants.
var distributedVariants func(st *State, cmd *cobra.Command, store evalrun.Store) (variantExecutor, error)

// errDistributedExperiment is why --distributed refuses an experiment while
// distributed mode cannot run one.
const errDistributedExperiment = "--distributed cannot run a suite with variants yet: run the experiment without --distributed " +
	"(its variants run at once in this process), or run one variant's suite distributed"

// checkVariantFlags refuses, before anything is imported or run, the flags
// an experiment cannot honour and a --variant the suite does not have.
func checkVariantFlags(s *suite.Suite, f *runFlags) error {
	if s.Variants() == nil {
		if len(f.variants) > 0 {
			return invalidf("--variant %s: suite %s has no variants (add a `variants` list to it, see docs/suite.md)",
				f.variants[0], s.Name)
		}
		return nil
	}
	if _, err := selectVariants(s, f.variants); err != nil {
		return err
	}
	if f.outputs != "" {
		return invalidf("--outputs cannot be used with a suite with variants: saved outputs are one target's, " +
			"and every variant would score the same ones")
	}
	if f.distributed && distributedVariants == nil {
		return invalidf("%s", errDistributedExperiment)
	}
	_, _, err := experimentTargets(f.format, f.outFiles)
	return err
}

// selectVariants returns the names of the variants to run, in the suite's
// order: all, or those named by --variant. An unknown name is bad usage
// listing the known ones.
func selectVariants(s *suite.Suite, want []string) ([]string, error) {
	var all []string
	for _, v := range s.Variants() {
		all = append(all, v.Name)
	}
	if len(want) == 0 {
		return all, nil
	}
	for _, w := range want {
		if !slices.Contains(all, w) {
			return nil, invalidf("--variant %q: suite %s has no such variant (its variants: %s)", w, s.Name, strings.Join(all, ", "))
		}
	}
	var names []string
	for _, n := range all {
		if slices.Contains(want, n) {
			names = append(names, n)
		}
	}
	return names, nil
}

// newExperiment prepares a fresh experiment of the suite's selected
// variants over items of dataset name, version.
func (st *State) newExperiment(p *prepared, f *runFlags, name string, version int) (*experiment, error) {
	s := p.suite
	names, err := selectVariants(s, f.variants)
	if err != nil {
		return nil, err
	}
	x := &experiment{id: evalrun.NewExperimentID(st.Now())}
	for _, n := range names {
		view, err := s.ForVariant(n)
		if err != nil {
			return nil, err
		}
		cfg, err := view.RunConfig()
		if err != nil {
			return nil, err
		}
		idx := slices.IndexFunc(s.Variants(), func(v *suite.Variant) bool { return v.Name == n })
		rec := &evalrun.Run{ID: evalrun.NewRunID(st.Now()), Name: s.Name, Dataset: name, DatasetVersion: version,
			Target: view.TargetInfo, Config: cfg, Experiment: x.id, Variant: n, VariantIndex: idx}
		x.variants = append(x.variants, &variantRun{name: n, suite: view, record: rec, items: p.items, target: view.Target()})
	}
	return x, nil
}

// prepareExperimentResume prepares evalrun run --resume EXP_ID: every
// resumable run of the experiment, each with the suite rebuilt from its
// stored config (the variant's view) and the flags applied, over the
// experiment's stored dataset version and selection. Its finished runs are
// kept as they are.
func (st *State) prepareExperimentResume(cmd *cobra.Command, store evalrun.Store, f *runFlags, p *prepared, opts suite.Options) (*prepared, error) {
	ctx := cmd.Context()
	exp, err := evalrun.GetExperiment(ctx, store, f.resume)
	if err != nil {
		return nil, notFound(err, "experiment "+f.resume, "evalrun runs list shows the runs and the experiments they belong to")
	}
	x := &experiment{id: exp.ID, resume: true}
	ok := false
	defer func() {
		if !ok {
			x.close()
		}
	}()
	o := f.overrides(cmd)
	if err := f.exec.apply(cmd, &o); err != nil {
		return nil, err
	}
	for _, r := range exp.Runs {
		if !r.Resumable() {
			x.kept = append(x.kept, r)
			continue
		}
		s, err := suite.FromRunConfig(r.Config, opts)
		if err != nil {
			return nil, fmt.Errorf("run %s (variant %s): %w", r.ID, r.Variant, err)
		}
		x.suites = append(x.suites, s)
		st.scrubOutput(s)
		if err := s.Apply(o); err != nil {
			return nil, err
		}
		if r.Dataset != exp.Dataset || r.DatasetVersion != exp.DatasetVersion {
			return nil, fmt.Errorf("experiment %s: run %s (variant %s) is on dataset %s v%d, the others on %s v%d",
				exp.ID, r.ID, r.Variant, r.Dataset, r.DatasetVersion, exp.Dataset, exp.DatasetVersion)
		}
		x.variants = append(x.variants, &variantRun{name: r.Variant, suite: s, record: r, target: s.Target(), resume: true})
	}
	if len(x.variants) == 0 {
		var states []string
		for _, r := range x.kept {
			states = append(states, fmt.Sprintf("%s %s", r.Variant, r.Status))
		}
		return nil, invalidf("experiment %s has nothing to resume: every variant's run is finished (%s); "+
			"see it with evalrun report --experiment %s, or run the suite again for a new experiment",
			exp.ID, strings.Join(states, ", "), exp.ID)
	}
	// The runs of an experiment share their dataset version and selection:
	// the items are read once.
	first := x.variants[0]
	items, err := selectSource(ctx, store, exp.Dataset, exp.DatasetVersion, first.suite.Selection)
	if err != nil {
		return nil, err
	}
	for _, v := range x.variants {
		v.items = items
	}
	conds, err := conditions(first.suite, f.failOn)
	if err != nil {
		return nil, err
	}
	// prepared.suite is the one run() closes; the others are x's.
	p.suite, x.suites = first.suite, x.suites[1:]
	p.items, p.conditions, p.experiment = items, conds, x
	ok = true
	return p, nil
}

// close closes the suites the experiment owns.
func (x *experiment) close() {
	for _, s := range x.suites {
		s.Close()
	}
	x.suites = nil
}

// names returns the names of the variants to run.
func (x *experiment) names() []string {
	out := make([]string, len(x.variants))
	for i, v := range x.variants {
		out[i] = v.name
	}
	return out
}

// runExperimentLocal is evalrun run of an experiment in this process:
// resumed runs are claimed first (all or none), then every variant runs.
func (st *State) runExperimentLocal(cmd *cobra.Command, store evalrun.Store, p *prepared, f *runFlags) error {
	x := p.experiment
	for _, v := range x.variants {
		if v.resume {
			if err := refuseQueued(cmd.Context(), store, v.record, p.dbFlag); err != nil {
				return err
			}
		}
	}
	for _, v := range x.variants {
		if !v.resume {
			continue
		}
		c := st.newClaim(store, v.record.ID)
		if err := c.take(cmd.Context()); err != nil {
			for _, w := range x.variants {
				if w.claim != nil {
					_ = store.ReleaseRun(context.WithoutCancel(cmd.Context()), w.record.ID, w.claim.owner)
				}
			}
			return fmt.Errorf("variant %s: %w", v.name, err)
		}
		v.claim = c
	}
	return st.runExperiment(cmd, store, p, f, st.localVariants(store))
}

// localVariants returns the executor of variant runs in this process: an
// engine.Run each, the run claimed while it executes, and cancelled alone
// when evalrun runs cancel marks it (the claim's watch).
func (st *State) localVariants(store evalrun.Store) variantExecutor {
	return func(ctx context.Context, v *variantRun) (*evalrun.Summary, error) {
		claim := v.claim
		if claim == nil {
			claim = st.newClaim(store, v.record.ID)
		}
		vctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := claim.watch(vctx, st.CancelPoll, cancel)
		defer stop()
		return engine.Run(vctx, claimingStore{store, claim}, engine.Spec{Run: v.record, Source: v.items, Target: v.target,
			Scorers: v.suite.Scorers(), Options: v.opts})
	}
}

// runExperiment executes the prepared experiment's variants at once with
// exec, then reports: each variant's run report stored as a normal run's,
// the experiment report printed and written, fail_on checked on every
// variant. It is the part of evalrun run an experiment has whether its
// variants run here or on workers.
func (st *State) runExperiment(cmd *cobra.Command, store evalrun.Store, p *prepared, f *runFlags, exec variantExecutor) error {
	ctx := cmd.Context()
	x := p.experiment
	stdoutFormat, files, err := experimentTargets(f.format, f.outFiles)
	if err != nil {
		return err
	}
	st.announceExperiment(p)

	// Engine options per variant: each its own concurrency and adaptive
	// state; the open-file limit is shared by all of them.
	restoreLimit := func() {}
	defer func() { restoreLimit() }()
	agg := &experimentProgress{last: make([]evalrun.Progress, len(x.variants)), names: x.names()}
	total, configured := 0, 0
	for i, v := range x.variants {
		opts := v.suite.Execution.EngineOptions()
		opts.Resume = v.resume
		if c, ok := store.(evalrun.ResponseCache); ok && v.suite.Execution.Cache {
			opts.Cache, opts.CacheKey = c, v.suite.CacheKey()
		}
		if opts.DiscardResults && i == 0 {
			restoreLimit = setMemoryLimit(noRetainMemoryLimit())
		}
		if opts.DiscardResults {
			opts.WriterBufferBytes = noRetainWriterBytes
		}
		opts.Concurrency = max(fitConcurrency(st.Stderr, opts.Concurrency*len(x.variants), v.record.Target.Kind)/len(x.variants), 1)
		n := v.items.Len() * max(opts.Repeat, 1)
		total += n
		configured += opts.Concurrency
		agg.last[i] = evalrun.Progress{Total: n, Done: v.record.Succeeded + v.record.Failed,
			Succeeded: v.record.Succeeded, Failed: v.record.Failed, Concurrency: opts.Concurrency}
		if !v.resume {
			agg.last[i] = evalrun.Progress{Total: n, Concurrency: opts.Concurrency}
		}
		opts.Progress = agg.update(i)
		v.opts = opts
	}
	prog := st.newProgress(total, f.quiet)
	prog.configured = configured
	agg.prog = prog
	var storeNote sync.Once
	for _, v := range x.variants {
		v.opts.OnStoreFailure = func(err error) {
			storeNote.Do(func() { st.storeFailedNow(prog, fmt.Errorf("run %s (variant %s): %w", v.record.ID, v.name, err)) })
		}
	}

	// Every variant at once. A variant that cannot start (its record
	// refused) stops the others: the experiment would be incomplete.
	expCtx, cancelAll := context.WithCancelCause(ctx)
	defer cancelAll(nil)
	errs := make([]error, len(x.variants))
	var wg sync.WaitGroup
	for i, v := range x.variants {
		wg.Go(func() {
			sum, err := exec(expCtx, v)
			if err != nil {
				errs[i] = fmt.Errorf("variant %s (run %s): %w", v.name, v.record.ID, err)
				cancelAll(errs[i])
				return
			}
			v.sum = sum
		})
	}
	wg.Wait()
	prog.finish()
	if err := errors.Join(errs...); err != nil {
		if slices.ContainsFunc(x.variants, func(v *variantRun) bool { return v.sum != nil }) {
			fmt.Fprintf(st.Stderr, "experiment %s stopped: a variant could not run; the others were cancelled "+
				"(resume them with: evalrun run --resume %s%s)\n", x.id, x.id, p.dbFlag)
		}
		return err
	}

	// The context may be cancelled: reports are read and written regardless.
	bg := context.WithoutCancel(ctx)
	e, err := st.buildExperiment(bg, store, x)
	if err != nil {
		// The runs are stored: their reports can be rebuilt later.
		fmt.Fprintf(st.Stderr, "experiment %s: the experiment report could not be built: %v\n", x.id, err)
		return errors.Join(fmt.Errorf("experiment %s: build the report: %w", x.id, err),
			st.experimentVerdict(x, nil, p))
	}
	writeErr := st.writeExperimentReports(bg, e, stdoutFormat, files, p.conditions)
	st.stepSummaryExperiment(e)
	storeFailed := false
	for _, v := range x.variants {
		if errors.Is(v.sum.Err, engine.ErrStoreFailed) {
			fmt.Fprintf(st.Stderr, "variant %s (run %s): ", v.name, v.record.ID)
			st.whereResultsAre(v.sum, files, writeErr, v.resume, "")
			storeFailed = true
			continue
		}
		st.saveReport(bg, store, e.Report(v.name))
	}
	if storeFailed {
		fmt.Fprintf(st.Stderr, "once the database takes writes again, evalrun run --resume %s%s runs every variant's items without a stored result\n",
			x.id, p.dbFlag)
	}
	return errors.Join(writeErr, st.experimentVerdict(x, e, p))
}

// announceExperiment prints the experiment's first lines on standard
// error: "experiment ID started: …", then "run RUN_ID variant NAME: …" per
// variant (scripts read run ids from lines starting "run "), the baseline
// and the dataset import.
func (st *State) announceExperiment(p *prepared) {
	x := p.experiment
	verb := "started"
	if x.resume {
		verb = "resumed"
	}
	first := x.variants[0].record
	fmt.Fprintf(st.Stderr, "experiment %s %s: suite %s, dataset %s v%d, %d %s, variants %s\n", x.id, verb,
		lineText(p.suite.Name), lineText(first.Dataset), first.DatasetVersion, p.items.Len(), plural(p.items.Len(), "item"),
		strings.Join(x.names(), ", "))
	for _, v := range x.variants {
		rv := ""
		if v.resume {
			rv = " resumed"
		}
		fmt.Fprintf(st.Stderr, "run %s variant %s%s: target %s (%s)\n", v.record.ID, v.name, rv, v.record.Target.Kind, lineText(v.record.Target.Name))
	}
	for _, r := range x.kept {
		fmt.Fprintf(st.Stderr, "run %s variant %s: already %s, kept as it is\n", r.ID, r.Variant, r.Status)
	}
	baseline := x.variants[0].name
	if len(x.kept) > 0 && x.kept[0].VariantIndex < x.variants[0].record.VariantIndex {
		baseline = x.kept[0].Variant
	}
	fmt.Fprintf(st.Stderr, "baseline: %s (the first variant: the others are compared with it)\n", baseline)
	if p.datasetNote != "" {
		fmt.Fprintln(st.Stderr, p.datasetNote)
	}
}

// buildExperiment builds the experiment report: from the results in
// memory when every variant ran whole in this process and kept them, else
// from storage (--no-retain, resume, distributed), each variant's report
// rebuilt from its stored results and the items side by side read again
// from storage while the JSON is written (memory does not grow with
// items × variants × output size).
func (st *State) buildExperiment(ctx context.Context, store evalrun.RunStore, x *experiment) (*report.Experiment, error) {
	inMemory := !x.resume
	for _, v := range x.variants {
		inMemory = inMemory && v.sum.Results != nil
	}
	if inMemory {
		runs := make([]*evalrun.Run, len(x.variants))
		reps := make([]*report.Report, len(x.variants))
		for i, v := range x.variants {
			runs[i], reps[i] = v.record, report.Build(v.record, v.sum.Results)
		}
		exp, err := evalrun.ExperimentOf(x.id, runs)
		if err != nil {
			return nil, err
		}
		return report.BuildExperiment(exp, reps, report.CompareOptions{})
	}
	exp, err := evalrun.GetExperiment(ctx, store, x.id)
	if err != nil {
		return nil, err
	}
	return report.BuildExperimentStreamStore(ctx, store, exp, report.CompareOptions{})
}

// experimentVerdict prints why an experiment is not clean and returns the
// error of its exit code: 130 when a variant was interrupted or cancelled
// (the resume command printed), 1 when a variant has errors or breaches a
// fail_on, nil when clean. e is nil when the experiment report could not
// be built: the summaries then speak alone.
func (st *State) experimentVerdict(x *experiment, e *report.Experiment, p *prepared) error {
	var reasons []string
	stopped := false
	for _, v := range x.variants {
		sum := v.sum
		if sum == nil {
			continue
		}
		if sum.Status == evalrun.RunCanceled {
			why := "interrupted"
			if errors.Is(sum.Err, errCanceled) {
				why = "canceled (evalrun runs cancel)"
			}
			fmt.Fprintf(st.Stderr, "run %s variant %s %s: %d of %d items done, %d skipped\n", sum.RunID, v.name, why,
				sum.Succeeded+sum.Failed, sum.Total, sum.Skipped)
			stopped = true
			continue
		}
		var rep *report.Report
		if e != nil {
			rep = e.Report(v.name)
		}
		for _, r := range runProblems(rep, sum) {
			reasons = append(reasons, fmt.Sprintf("variant %s (run %s): %s", v.name, sum.RunID, r))
		}
	}
	if e != nil && !stopped {
		for _, r := range x.kept {
			for _, msg := range runProblems(e.Report(r.Variant), nil) {
				reasons = append(reasons, fmt.Sprintf("variant %s (run %s): %s", r.Variant, r.ID, msg))
			}
		}
		for _, b := range e.Evaluate(p.conditions) {
			reasons = append(reasons, "fail_on breached: "+b.String())
		}
	}
	st.stepSummaryReasons(reasons)
	if len(reasons) > 0 {
		fmt.Fprintf(st.Stderr, "experiment %s finished with problems:\n", x.id)
		for _, r := range reasons {
			fmt.Fprintf(st.Stderr, "  - %s\n", r)
		}
	}
	if stopped {
		fmt.Fprintf(st.Stderr, "resume with: evalrun run --resume %s%s\n", x.id, p.dbFlag)
		return quietExit(ExitInterrupted, ErrInterrupted)
	}
	if len(reasons) > 0 {
		return quietExit(ExitFailed, errFailed)
	}
	return nil
}

// experimentProgress sums the variants' progress into one display, and
// says per variant how far it is.
type experimentProgress struct {
	prog  *progress
	names []string

	mu   sync.Mutex
	last []evalrun.Progress // per variant
}

// update returns the engine progress callback of variant i.
func (a *experimentProgress) update(i int) func(evalrun.Progress) {
	return func(pr evalrun.Progress) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.last[i] = pr
		var sum evalrun.Progress
		parts := make([]string, len(a.last))
		for k, l := range a.last {
			sum.Total += l.Total
			sum.Done += l.Done
			sum.Succeeded += l.Succeeded
			sum.Failed += l.Failed
			sum.Concurrency += l.Concurrency
			parts[k] = fmt.Sprintf("%s %d/%d", a.names[k], l.Done, l.Total)
		}
		a.prog.setDetail(strings.Join(parts, ", "))
		a.prog.update(sum)
	}
}

// conditions returns the suite's fail_on conditions and those of
// --fail-on, checked against its scorers.
func conditions(s *suite.Suite, failOn []string) ([]report.Condition, error) {
	conds := slices.Clone(s.FailOn)
	for _, src := range failOn {
		c, err := report.ParseCondition(src)
		if err == nil {
			err = c.Check(s.ScorerNames())
		}
		if err != nil {
			return nil, fmt.Errorf("--fail-on: %w", err)
		}
		conds = append(conds, c)
	}
	return conds, nil
}
