package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
