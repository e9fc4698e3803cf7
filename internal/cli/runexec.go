package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/report"
	"github.com/evalrun/evalrun/suite"
)

// execFlags are the flags of evalrun run for the response cache, adaptive
// concurrency, attempt deadlines and dry runs.
type execFlags struct {
	cache, noCache       bool
	adaptive, noAdaptive bool
	attemptTimeout       time.Duration
	cacheTTL             time.Duration
	dryRun               bool
}

// add defines the flags on fl.
func (f *execFlags) add(fl *pflag.FlagSet) {
	fl.BoolVar(&f.cache, "cache", false, "use the response cache: reuse stored target and judge answers (overrides execution.cache)")
	fl.BoolVar(&f.noCache, "no-cache", false, "call the target and judges even when execution.cache is on")
	fl.DurationVar(&f.cacheTTL, "cache-ttl", 0, "how long a cached answer is kept; 0 = forever (overrides execution.cache_ttl)")
	fl.BoolVar(&f.adaptive, "adaptive", true, "cut concurrency on HTTP 429 and regrow it (--adaptive=false: fixed; overrides execution.adaptive)")
	fl.BoolVar(&f.noAdaptive, "no-adaptive", false, "keep concurrency fixed on HTTP 429 (same as --adaptive=false)")
	fl.DurationVar(&f.attemptTimeout, "attempt-timeout", 0, "deadline of one attempt, retried on expiry; 0 = none (overrides execution.attempt_timeout)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "validate the suite and dataset, print the items, requests and estimated cost; run and store nothing")
}

// apply adds the overrides of the flags the user set to o.
func (f *execFlags) apply(cmd *cobra.Command, o *suite.Overrides) error {
	set := cmd.Flags().Changed
	if set("cache") && set("no-cache") {
		return invalidf("--cache and --no-cache contradict each other: give one")
	}
	if set("cache") {
		o.Cache = &f.cache
	}
	if set("no-cache") {
		on := !f.noCache
		o.Cache = &on
	}
	if set("adaptive") && set("no-adaptive") {
		return invalidf("--adaptive and --no-adaptive contradict each other: give one")
	}
	if set("adaptive") {
		o.Adaptive = &f.adaptive
	}
	if set("no-adaptive") {
		on := !f.noAdaptive
		o.Adaptive = &on
	}
	if set("attempt-timeout") {
		o.AttemptTimeout = &f.attemptTimeout
	}
	if set("cache-ttl") {
		o.CacheTTL = &f.cacheTTL
	}
	return nil
}

// saveReport stores rep without its item rows as the run's final report
// when the store keeps reports ([evalrun.ReportStore]), so that viewers
// read one value instead of every result. A failure is a warning: the run
// and its results are stored, and the report can be rebuilt.
func (st *State) saveReport(ctx context.Context, store any, rep *report.Report) {
	rs, ok := store.(evalrun.ReportStore)
	if !ok || rep == nil || !rep.Run.Status.Done() {
		return
	}
	slim := *rep
	slim.Items = nil
	var buf bytes.Buffer
	err := report.WriteJSON(&buf, &slim)
	if err == nil {
		err = rs.PutReportJSON(ctx, rep.Run.ID, buf.Bytes())
	}
	if err != nil {
		fmt.Fprintf(st.Stderr, "warning: run %s: could not store its final report (evalrun report %s rebuilds it): %v\n",
			rep.Run.ID, rep.Run.ID, err)
	}
}

// saveReportIfMissing stores the run's report (see [State.saveReport])
// when the store keeps reports and holds none for the run yet.
func (st *State) saveReportIfMissing(ctx context.Context, store any, rep *report.Report) {
	rs, ok := store.(evalrun.ReportStore)
	if !ok || rep == nil {
		return
	}
	if _, err := rs.GetReportJSON(ctx, rep.Run.ID); !errors.Is(err, evalrun.ErrNotFound) {
		return // stored already, or the store cannot tell: leave it
	}
	st.saveReport(ctx, store, rep)
}

// storeFailedNow says, as soon as the engine finds that the store refuses
// results, why and what happens now: once, not per result, above the
// progress display.
func (st *State) storeFailedNow(prog *progress, err error) {
	if prog.bar != nil {
		_ = prog.bar.Clear()
	}
	fmt.Fprintf(st.Stderr, "error: storage: %v\n  stopping the run: no more items are executed, as their results could not be saved\n", err)
}

// whereResultsAre tells, after a run stopped because its store refuses
// results, where the results that exist are: the -o reports, written from
// the results held in memory, or nowhere (lost) when none was asked for or
// results were not retained. resume is the command that goes on once the
// store takes writes again (--db included), said last; "" says nothing (an
// experiment says its own once for all its variants).
func (st *State) whereResultsAre(sum *evalrun.Summary, files []reportFile, writeErr error, resumed bool, resume string) {
	if resume != "" {
		defer fmt.Fprintf(st.Stderr, "once the database takes writes again, %s runs the items without a stored result\n", resume)
	}
	lost := sum.PersistErrors
	if sum.Results == nil {
		fmt.Fprintf(st.Stderr, "results: results are not retained (--no-retain or retain_results: false), so the %d the store refused are lost; the report covers only what it holds\n", lost)
		return
	}
	scope := "this run's"
	if resumed {
		scope = "this session's"
	}
	switch {
	case len(files) == 0:
		fmt.Fprintf(st.Stderr, "results: %d results are not in the database and no -o file was given: they are lost (the summary above was built from memory; -o FILE keeps them next time)\n", lost)
	case writeErr != nil:
		fmt.Fprintf(st.Stderr, "results: %d of %s %d results are not in the database; the -o reports written above hold all of them (built from memory)\n",
			lost, scope, len(sum.Results))
	default:
		paths := make([]string, len(files))
		for i, f := range files {
			paths[i] = f.path
		}
		fmt.Fprintf(st.Stderr, "results: %d of %s %d results are not in the database; all of them are in %s (built from memory)\n",
			lost, scope, len(sum.Results), strings.Join(paths, ", "))
	}
}

// resultsLost is the end of a run whose store refused results and whose
// results were not retained, when the store cannot even be read back.
func (st *State) resultsLost(sum *evalrun.Summary, readErr error) error {
	fmt.Fprintf(st.Stderr, "run %s failed: %v\n", sum.RunID, sum.Err)
	fmt.Fprintf(st.Stderr, "results: the store cannot be read back either (%v): no report could be built, and the %d results it refused are lost\n",
		readErr, sum.PersistErrors)
	return quietExit(ExitFailed, sum.Err)
}
