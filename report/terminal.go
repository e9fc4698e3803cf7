package report

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// WriteTerminal writes a compact summary of rep for people: the run line
// (with cache hits and the settled concurrency when known), an aligned
// per-scorer table, the macro pass rate, pass@k, pass^k and the first flaky
// items when the run has repeats, cohorts, usage and latency, the agent line
// when results recorded trajectories, and the first failures. It writes no colour codes.
func WriteTerminal(w io.Writer, rep *Report) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	run := &rep.Run
	name := run.Name
	if name == "" {
		name = "—"
	}
	p("run %s  %s  %s\n", oneLine(run.ID), oneLine(name), run.Status)
	p("dataset %s  target %s  duration %s\n", oneLine(datasetText(run.Dataset)),
		oneLine(targetName(rep)), durationText(run.DurationMS))
	p("items %d  succeeded %d  failed %d  skipped %d", run.Total, run.Succeeded, run.Failed, run.Skipped)
	if run.PersistErrors > 0 {
		p("  not stored %d", run.PersistErrors)
	}
	if run.CacheHits > 0 {
		p("  cache hits %d", run.CacheHits)
	}
	if run.Concurrency != nil {
		p("  concurrency %d", *run.Concurrency)
	}
	p("\n\n")

	if len(rep.Scorers) > 0 {
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "SCORER\tCOUNT\tERRORS\tMEAN\tP50\tP95\tPASS\tTHRESHOLD\n")
		for _, s := range rep.Scorers {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%.2f\n", oneLine(s.Name), s.Count, s.Errors,
				ptrValue(s.Mean, "%.3f"), ptrValue(s.P50, "%.3f"), ptrValue(s.P95, "%.3f"), percent(s.PassRate), s.Threshold)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		p("macro pass rate %s\n\n", percent(rep.MacroPassRate))
	}

	if k := rep.Repeats(); k > 0 {
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "REPEATS k=%d\tITEMS\tPASS@%d\tPASS^%d\tFLAKY\n", k, k, k)
		for _, s := range rep.Scorers {
			if r := s.RepeatStats; r != nil {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\n", oneLine(s.Name), r.Items, percent(r.PassAtK), percent(r.PassAllK), r.FlakyCount)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if len(rep.Flaky) > 0 {
			p("flaky %d\n", len(rep.Flaky))
			const shown = 10
			for i, f := range rep.Flaky {
				if i == shown {
					p("  … and %d more\n", len(rep.Flaky)-shown)
					break
				}
				p("  %s  %s: passed %d of %d\n", oneLine(label(f.ItemID)), oneLine(f.Scorer), f.Passed, f.Runs)
			}
		}
		p("\n")
	}

	if len(rep.Cohorts) > 1 || len(rep.Cohorts) == 1 && rep.Cohorts[0].Tag != nil {
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		head := []string{"COHORT", "ITEMS"}
		for _, s := range rep.Scorers {
			head = append(head, strings.ToUpper(oneLine(s.Name)))
		}
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, c := range rep.Cohorts {
			name := "(untagged)"
			if c.Tag != nil {
				name = oneLine(label(*c.Tag))
			}
			row := []string{name, fmt.Sprint(c.Count)}
			for _, s := range c.Scorers {
				row = append(row, percent(s.PassRate))
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		p("\n")
	}

	u := &rep.Usage
	p("tokens in %s (%d reported)  out %s (%d reported)  cost %s (%d reported)\n",
		intText(u.InputTokens.Total), u.InputTokens.Reported, intText(u.OutputTokens.Total), u.OutputTokens.Reported,
		usd(u.CostUSD.Total), u.CostUSD.Reported)
	if s := &u.Scorers; s.InputTokens.Reported+s.OutputTokens.Reported+s.CostUSD.Reported > 0 {
		p("scorer tokens in %s (%d reported)  out %s (%d reported)  cost %s (%d reported)\n",
			intText(s.InputTokens.Total), s.InputTokens.Reported, intText(s.OutputTokens.Total), s.OutputTokens.Reported,
			usd(s.CostUSD.Total), s.CostUSD.Reported)
	}
	l := &u.LatencyMS
	p("latency mean %s  p50 %s  p95 %s  max %s (%d reported)\n",
		msText(l.Mean), msText(l.P50), msText(l.P95), msText(l.Max), l.Reported)

	if a := rep.Agent; a != nil {
		p("agent: %s\n", agentLine(a))
	}

	if a := rep.Adversarial; a != nil {
		p("adversarial %d item%s in %d categor%s (critical %d, high %d, medium %d, low %d, unknown %d)\n",
			a.Count, plural(a.Count), len(a.Categories), map[bool]string{true: "y", false: "ies"}[len(a.Categories) == 1], a.Severities.Critical, a.Severities.High, a.Severities.Medium, a.Severities.Low, a.Severities.Unknown)
	}

	if len(rep.Failures) > 0 {
		var target, scorer int
		for _, f := range rep.Failures {
			switch f.Stage {
			case StageTarget:
				target++
			case StageScorer:
				scorer++
			}
		}
		p("\nfailures %d (target %d, scorer %d)\n", len(rep.Failures), target, scorer)
		const shown = 10
		for i, f := range rep.Failures {
			if i == shown {
				p("  … and %d more\n", len(rep.Failures)-shown)
				break
			}
			where := f.Stage
			if f.Scorer != nil {
				where += " " + oneLine(*f.Scorer)
			}
			if f.Kind != nil {
				where += " " + string(*f.Kind)
			}
			p("  %s  %s: %s\n", oneLine(failureItem(&f)), where, oneLine(truncate(f.Message, 120)))
		}
	}
	return bw.Flush()
}

// oneLine replaces control characters (newlines, escapes) so that text
// from the run cannot break the layout or drive the terminal.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return ' '
		}
		return r
	}, s)
}

func usd(p *float64) string {
	if p == nil || math.IsNaN(*p) {
		return "—"
	}
	return FormatUSD(*p)
}

func msText(p *float64) string {
	if p == nil {
		return "—"
	}
	if *p >= 1000 {
		return fmt.Sprintf("%.2fs", *p/1000)
	}
	return fmt.Sprintf("%.0fms", *p)
}
