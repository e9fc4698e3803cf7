package report

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/evalrun/evalrun/internal/bounded"
)

// DefaultMaxFailures is how many failures the Markdown and terminal
// renderers list before "… and N more".
const DefaultMaxFailures = 20

// MarkdownOptions tunes [WriteMarkdown]. The zero value is the default.
type MarkdownOptions struct {
	// MaxFailures caps the failures listed; 0 means [DefaultMaxFailures],
	// a negative value lists none.
	MaxFailures int
	// MaxFlaky caps the flaky items listed, likewise.
	MaxFlaky int
}

// capOf resolves a MaxFailures-like option: 0 is the default, negative 0.
func capOf(n int) int {
	if n == 0 {
		return DefaultMaxFailures
	}
	return max(n, 0)
}

// WriteMarkdown writes rep as GitHub-flavoured Markdown for a pull-request
// comment or a CI step summary: the run header (with cache hits and the
// settled concurrency when known), the per-scorer table, pass@k, pass^k and
// the flaky items (capped) when the run has repeats, the cohorts, usage, the
// agent line when results recorded trajectories, the adversarial block when
// there is one, and the failures (capped). Text from the run (ids,
// messages, tags) is escaped so it cannot break the tables or inject HTML.
func WriteMarkdown(w io.Writer, rep *Report, opts MarkdownOptions) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	run := &rep.Run

	// The heading names the suite and the run: several blocks in one CI
	// step summary (or comments on one pull request) stay apart.
	title := mdEscape(run.ID)
	if run.Name != "" && run.Name != run.ID {
		title = fmt.Sprintf("%s, run `%s`", mdEscape(run.Name), mdCode(run.ID))
	}
	p("## evalrun: %s — %s\n\n", title, run.Status)
	p("| run | dataset | target | total | succeeded | failed | skipped | duration |\n")
	p("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |\n")
	p("| `%s` | %s | %s | %d | %d | %d | %d | %s |\n\n",
		mdCode(run.ID), mdEscape(datasetText(run.Dataset)), mdEscape(targetName(rep)),
		run.Total, run.Succeeded, run.Failed, run.Skipped, durationText(run.DurationMS))
	var notes []string
	if run.CacheHits > 0 {
		notes = append(notes, fmt.Sprintf("**Cache hits:** %d of %d results", run.CacheHits, run.Succeeded+run.Failed))
	}
	if run.Concurrency != nil {
		notes = append(notes, fmt.Sprintf("**Concurrency:** settled at %d", *run.Concurrency))
	}
	if len(notes) > 0 {
		p("%s\n\n", strings.Join(notes, " · "))
	}

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

	if k := rep.Repeats(); k > 0 {
		p("### Repeats (k = %d)\n\n", k)
		p("| scorer | items | pass@%d | pass^%d | flaky |\n| --- | ---: | ---: | ---: | ---: |\n", k, k)
		for _, s := range rep.Scorers {
			if r := s.RepeatStats; r != nil {
				p("| %s | %d | %s | %s | %d |\n", mdEscape(s.Name), r.Items, percent(r.PassAtK), percent(r.PassAllK), r.FlakyCount)
			}
		}
		p("\npass@%d: the item passed in at least one of its %d repeats; pass^%d: in all of them.\n\n", k, k, k)
		p("#### Flaky items (%d)\n\n", len(rep.Flaky))
		if len(rep.Flaky) == 0 {
			p("None.\n\n")
		} else {
			shown := min(capOf(opts.MaxFlaky), len(rep.Flaky))
			if shown > 0 {
				p("| item | scorer | passed | runs |\n| --- | --- | ---: | ---: |\n")
				for _, f := range rep.Flaky[:shown] {
					p("| %s | %s | %d | %d |\n", mdEscape(label(f.ItemID)), mdEscape(f.Scorer), f.Passed, f.Runs)
				}
			}
			if more := len(rep.Flaky) - shown; more > 0 {
				p("\n… and %d more\n", more)
			}
			p("\n")
		}
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
				name = mdEscape(label(*c.Tag))
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
	p("| cost (USD) | %s | %d | %s | %d |\n\n", strings.TrimPrefix(usd(u.CostUSD.Total), "$"), u.CostUSD.Reported,
		strings.TrimPrefix(usd(u.Scorers.CostUSD.Total), "$"), u.Scorers.CostUSD.Reported)
	l := &u.LatencyMS
	p("**Latency (ms):** mean %s · p50 %s · p95 %s · max %s (%d reported)\n\n",
		ptrValue(l.Mean, "%.1f"), ptrValue(l.P50, "%.1f"), ptrValue(l.P95, "%.1f"), ptrValue(l.Max, "%.1f"), l.Reported)

	if a := rep.Agent; a != nil {
		p("**Agent:** %s\n\n", agentLine(a))
	}

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
		shown := min(capOf(opts.MaxFailures), len(rep.Failures))
		if shown > 0 {
			p("| item | stage | scorer | kind | message |\n| --- | --- | --- | --- | --- |\n")
			for _, f := range rep.Failures[:shown] {
				p("| %s | %s | %s | %s | %s |\n", mdEscape(failureItem(&f)), f.Stage,
					mdEscape(strOr(f.Scorer, "—")), kindText(f.Kind), mdEscape(truncate(f.Message, 200)))
			}
		}
		if more := len(rep.Failures) - shown; more > 0 {
			p("\n… and %d more\n", more)
		}
	}
	return bw.Flush()
}

// MarkdownText is s made safe in Markdown as [WriteMarkdown] makes the
// run's text: one line, Markdown punctuation escaped, HTML, mentions and
// links neutralized.
func MarkdownText(s string) string { return mdEscape(s) }

// mdEscape makes s safe in a Markdown table cell: one line, pipes and
// Markdown punctuation escaped, HTML neutralized, and nothing GitHub would
// act on: an @mention (which notifies people), an autolinked URL or
// address, or $math$. A zero-width space (as Dependabot writes it) after
// "@", inside "://" and before the dot of "www." keeps the text readable
// but inert. Control characters (terminal escapes when the file is
// printed in a CI log) become spaces.
func mdEscape(s string) string {
	const zwsp = "&#8203;"
	var b strings.Builder
	for i, r := range s {
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
		case '$':
			b.WriteString("&#36;")
		case '@':
			b.WriteString("@" + zwsp)
		case ':':
			b.WriteRune(r)
			if strings.HasPrefix(s[i+1:], "//") {
				b.WriteString(zwsp)
			}
		case '.':
			if i >= 3 && strings.EqualFold(s[i-3:i], "www") {
				b.WriteString(zwsp)
			}
			b.WriteByte('.')
		default:
			if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
				r = ' '
			}
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

// truncate cuts s to n runes on one line, marking the cut with "…".
func truncate(s string, n int) string { return bounded.Line(s, n) }

// maxLabelBytes bounds a name from the dataset (an item id, a tag) as the
// Markdown and terminal reports and JUnit test names show it.
const maxLabelBytes = 200

// label is s cut to [maxLabelBytes] with the truncation marker.
func label(s string) string { return bounded.Cut(s, maxLabelBytes) }

// failureItem names a failure's item for people: the id, with "#repeat"
// when the repeat is > 0 (as comparisons and JUnit name them), "—" for a
// persist failure.
func failureItem(f *Failure) string {
	id := label(strOr(f.ItemID, "—"))
	if f.Repeat > 0 {
		id += "#" + strconv.Itoa(f.Repeat)
	}
	return id
}
