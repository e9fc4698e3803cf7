package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"
)

// DefaultMaxFailures is how many failures the Markdown and terminal
// renderers list before "… and N more".
const DefaultMaxFailures = 20

// MarkdownOptions tunes [WriteMarkdown]. The zero value is the default.
type MarkdownOptions struct {
	// MaxFailures caps the failures listed; 0 means [DefaultMaxFailures],
	// a negative value lists none.
	MaxFailures int
}

// WriteMarkdown writes rep as GitHub-flavoured Markdown for a pull-request
// comment or a CI step summary: the run header, the per-scorer table, the
// cohorts, usage, the adversarial block when there is one, and the failures
// (capped). Text from the run (ids, messages, tags) is escaped so it cannot
// break the tables or inject HTML.
func WriteMarkdown(w io.Writer, rep *Report, opts MarkdownOptions) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	run := &rep.Run

	title := run.Name
	if title == "" {
		title = run.ID
	}
	p("## evalrun: %s — %s\n\n", mdEscape(title), run.Status)
	p("| run | dataset | target | total | succeeded | failed | skipped | duration |\n")
	p("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |\n")
	p("| `%s` | %s | %s | %d | %d | %d | %d | %s |\n\n",
		mdCode(run.ID), mdEscape(datasetText(run.Dataset)), mdEscape(targetName(rep)),
		run.Total, run.Succeeded, run.Failed, run.Skipped, durationText(run.DurationMS))

	p("### Scorers\n\n")
	if len(rep.Scorers) == 0 {
		p("No scorers.\n\n")
	} else {
		p("| scorer | count | errors | mean | p50 | p95 | pass rate | threshold |\n")
		p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		for _, s := range rep.Scorers {
			p("| %s | %d | %d | %s | %s | %s | %s | %s |\n", mdEscape(s.Name), s.Count, s.Errors,
				ptrValue(s.Mean, "%.3f"), ptrValue(s.P50, "%.3f"), ptrValue(s.P95, "%.3f"),
				percent(s.PassRate), fmt.Sprintf("%.2f", s.Threshold))
		}
		p("\n**Macro pass rate:** %s\n\n", percent(rep.MacroPassRate))
	}

	if len(rep.Cohorts) > 0 && len(rep.Scorers) > 0 {
		p("### Cohorts (pass rate)\n\n")
		p("| cohort | items |")
		for _, s := range rep.Scorers {
			p(" %s |", mdEscape(s.Name))
		}
		p("\n| --- | ---: |%s\n", strings.Repeat(" ---: |", len(rep.Scorers)))
		for _, c := range rep.Cohorts {
			name := "*(untagged)*"
			if c.Tag != nil {
				name = mdEscape(*c.Tag)
			}
			p("| %s | %d |", name, c.Count)
			for _, s := range c.Scorers {
				p(" %s |", percent(s.PassRate))
			}
			p("\n")
		}
		p("\n")
	}

	u := &rep.Usage
	p("### Usage\n\n")
	p("| | target | reported | scorers | reported |\n| --- | ---: | ---: | ---: | ---: |\n")
	p("| input tokens | %s | %d | %s | %d |\n", intText(u.InputTokens.Total), u.InputTokens.Reported,
		intText(u.Scorers.InputTokens.Total), u.Scorers.InputTokens.Reported)
	p("| output tokens | %s | %d | %s | %d |\n", intText(u.OutputTokens.Total), u.OutputTokens.Reported,
		intText(u.Scorers.OutputTokens.Total), u.Scorers.OutputTokens.Reported)
	p("| cost (USD) | %s | %d | %s | %d |\n\n", ptrValue(u.CostUSD.Total, "%.4f"), u.CostUSD.Reported,
		ptrValue(u.Scorers.CostUSD.Total, "%.4f"), u.Scorers.CostUSD.Reported)
	l := &u.LatencyMS
	p("**Latency (ms):** mean %s · p50 %s · p95 %s · max %s (%d reported)\n\n",
		ptrValue(l.Mean, "%.1f"), ptrValue(l.P50, "%.1f"), ptrValue(l.P95, "%.1f"), ptrValue(l.Max, "%.1f"), l.Reported)

	if a := rep.Adversarial; a != nil {
		p("### Adversarial\n\n")
		p("%d item%s · severity: critical %d, high %d, medium %d, low %d, unknown %d\n\n",
			a.Count, plural(a.Count), a.Severities.Critical, a.Severities.High, a.Severities.Medium, a.Severities.Low, a.Severities.Unknown)
		p("| category | items | target failed |")
		for _, s := range rep.Scorers {
			p(" %s |", mdEscape(s.Name))
		}
		p("\n| --- | ---: | ---: |%s\n", strings.Repeat(" ---: |", len(rep.Scorers)))
		for _, c := range a.Categories {
			p("| %s | %d | %d |", mdEscape(c.Category), c.Count, c.Failed)
			for _, s := range c.Scorers {
				p(" %s |", percent(s.PassRate))
			}
			p("\n")
		}
		p("\n")
	}

	p("### Failures (%d)\n\n", len(rep.Failures))
	if len(rep.Failures) == 0 {
		p("None.\n")
	} else {
		limit := opts.MaxFailures
		if limit == 0 {
			limit = DefaultMaxFailures
		}
		limit = max(limit, 0)
		shown := min(limit, len(rep.Failures))
		if shown > 0 {
			p("| item | stage | scorer | kind | message |\n| --- | --- | --- | --- | --- |\n")
			for _, f := range rep.Failures[:shown] {
				p("| %s | %s | %s | %s | %s |\n", mdEscape(strOr(f.ItemID, "—")), f.Stage,
					mdEscape(strOr(f.Scorer, "—")), kindText(f.Kind), mdEscape(truncate(f.Message, 200)))
			}
		}
		if more := len(rep.Failures) - shown; more > 0 {
			p("\n… and %d more\n", more)
		}
	}
	return bw.Flush()
}

// mdEscape makes s safe in a Markdown table cell: one line, pipes and
// Markdown punctuation escaped, HTML neutralized.
func mdEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\n', '\r', '\t':
			b.WriteByte(' ')
		case '|', '\\', '`', '*', '_', '[', ']', '#', '~':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdCode makes s safe inside a code span.
func mdCode(s string) string {
	return strings.NewReplacer("`", "'", "|", "\\|", "\n", " ").Replace(s)
}

func targetName(rep *Report) string {
	t := rep.Run.Target
	switch {
	case t.Kind == "" && t.Name == "":
		return "—"
	case t.Name == "" || t.Name == t.Kind:
		return t.Kind
	}
	return t.Kind + " " + t.Name
}

func datasetText(d DatasetRef) string {
	if d.Name == "" {
		return "—"
	}
	return fmt.Sprintf("%s v%d", d.Name, d.Version)
}

func durationText(ms *int64) string {
	if ms == nil {
		return "—"
	}
	d := time.Duration(*ms) * time.Millisecond
	if d < time.Second {
		return d.String()
	}
	return d.Round(100 * time.Millisecond).String()
}

func percent(p *float64) string { return ptrValue(scale(p, 100), "%.1f%%") }

func scale(p *float64, k float64) *float64 {
	if p == nil {
		return nil
	}
	v := *p * k
	return &v
}

func intText(p *int64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%d", *p)
}

func strOr(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}

func kindText[T ~string](k *T) string {
	if k == nil {
		return "—"
	}
	return string(*k)
}

// truncate cuts s to n runes, marking the cut with "…".
func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
