package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteComparisonJSON writes c as indented JSON (docs/report-schema.md,
// "Comparison"), followed by a newline.
func WriteComparisonJSON(w io.Writer, c *Comparison) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(c)
}

// WriteComparisonMarkdown writes c as Markdown: the two runs, a per-scorer
// table (means, delta, interval, p-value, significance, pass rates) and the
// regressed and improved items, each list capped at opts.MaxFailures
// entries (0: [DefaultMaxFailures]) with "… and N more".
func WriteComparisonMarkdown(w io.Writer, c *Comparison, opts MarkdownOptions) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	name := func(r RunRef) string {
		if r.Name != "" {
			return fmt.Sprintf("%s (`%s`)", mdEscape(r.Name), mdCode(r.ID))
		}
		return fmt.Sprintf("`%s`", mdCode(r.ID))
	}
	p("## evalrun compare\n\n")
	p("**A:** %s, %s v%d  \n**B:** %s, %s v%d\n\n", name(c.A), mdEscape(c.A.Dataset.Name), c.A.Dataset.Version,
		name(c.B), mdEscape(c.B.Dataset.Name), c.B.Dataset.Version)
	for _, w := range c.Warnings {
		p("> **Warning:** %s\n\n", mdEscape(w))
	}
	p("%d items paired (target failed: %d in A, %d in B); %d only in A; %d only in B.\n\n",
		c.Paired, c.CrashedA, c.CrashedB, len(c.OnlyA), len(c.OnlyB))
	if len(c.Scorers) > 0 {
		p("| scorer | pairs | failed A / B | mean A | mean B | Δ (B − A) | %.0f%% CI | p-value | pass A | pass B | regressed | improved |\n",
			c.Method.Confidence*100)
		p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		for _, d := range c.Scorers {
			delta := ptrValue(d.Delta, "%+.3f")
			if d.Significant {
				delta = "**" + delta + "**"
			}
			ci := "—"
			if d.CILow != nil {
				ci = fmt.Sprintf("[%+.3f, %+.3f]", *d.CILow, *d.CIHigh)
			}
			p("| %s | %d | %d / %d | %s | %s | %s | %s | %s | %s | %s | %d | %d |\n", mdEscape(d.Name), d.Paired, d.FailedA, d.FailedB,
				ptrValue(d.MeanA, "%.3f"), ptrValue(d.MeanB, "%.3f"), delta, ci, pText(d.PValue),
				percent(d.PassRateA), percent(d.PassRateB), d.Regressed, d.Improved)
		}
		p("\nPairs: the paired items at least one run scored; a run whose target or scorer failed on an item counts as a failure there (score 0, not passed; \"failed A / B\"). Means, Δ and pass rates are over those pairs.\n")
		p("Δ in bold: significant (p < %s and the interval excludes 0). %s; %s, %d resamples, seed %d.\n\n",
			strconv.FormatFloat(c.Method.Alpha, 'g', -1, 64), c.Method.Test, c.Method.Interval, c.Method.Resamples, c.Method.Seed)
	}
	limit := opts.MaxFailures
	if limit == 0 {
		limit = DefaultMaxFailures
	}
	limit = max(limit, 0)
	list := func(title string, xs []ItemChange) {
		p("### %s (%d)\n\n", title, len(xs))
		if len(xs) == 0 {
			p("None.\n\n")
			return
		}
		shown := min(limit, len(xs))
		if shown > 0 {
			p("| item | scorer | score A | score B | note |\n| --- | --- | ---: | ---: | --- |\n")
			for _, x := range xs[:shown] {
				id := x.ItemID
				if x.Repeat > 0 {
					id += "#" + strconv.Itoa(x.Repeat)
				}
				p("| %s | %s | %s | %s | %s |\n", mdEscape(id), mdEscape(x.Scorer), ptrValue(x.ScoreA, "%.3f"),
					ptrValue(x.ScoreB, "%.3f"), changeNote(&x))
			}
		}
		if more := len(xs) - shown; more > 0 {
			p("\n… and %d more\n", more)
		}
		p("\n")
	}
	list("Regressed", c.Regressed)
	list("Improved", c.Improved)
	return bw.Flush()
}

// changeNote is the note of a regressed or improved item: why B has no
// score, and for an agent how its tool calls and steps moved ("tool calls
// 2 → 5, steps 3 → 6"), escaped for a table cell.
func changeNote(x *ItemChange) string {
	var parts []string
	if x.ErrorB != nil {
		parts = append(parts, mdEscape(truncate(*x.ErrorB, 120)))
	}
	count := func(name string, a, b *int) {
		if a != nil || b != nil {
			parts = append(parts, fmt.Sprintf("%s %s → %s", name, intOrDash(a), intOrDash(b)))
		}
	}
	count("tool calls", x.CallsA, x.CallsB)
	count("steps", x.StepsA, x.StepsB)
	return strings.Join(parts, "; ")
}

func intOrDash(p *int) string {
	if p == nil {
		return "—"
	}
	return strconv.Itoa(*p)
}

// pText is a p-value for people: three decimals, "<0.001" below, "—"
// when there is none.
func pText(p *float64) string {
	switch {
	case p == nil:
		return "—"
	case *p < 0.001:
		return "<0.001"
	}
	return fmt.Sprintf("%.3f", *p)
}
