package report

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/bounded"
)

// maxDisagreeRows caps the items listed under "items where variants
// disagree" in Markdown, maxDisagreeBytes the table's size (32 variants
// with several scorers make wide rows), maxOutputRunes the output shown in
// each cell and maxMarksRunes its scorer marks (each name cut to
// maxMarkNameRunes), so that a PR comment stays readable (and under
// GitHub's size limit) however large the dataset, its outputs and the
// suite's scorers.
const (
	maxDisagreeRows  = 20
	maxDisagreeBytes = 32 << 10
	maxOutputRunes   = 60
	maxMarksRunes    = 160
	maxMarkNameRunes = 24
)

// scorerNames returns the scorers of every variant, the baseline's first,
// then those new in each later variant.
func (e *Experiment) scorerNames() []string {
	var names []string
	for _, v := range e.Variants {
		for _, s := range v.Scorers {
			if !slices.Contains(names, s.Name) {
				names = append(names, s.Name)
			}
		}
	}
	return names
}

// confidenceText is e.g. "95%".
func (e *Experiment) confidenceText() string {
	c := e.Method.Confidence
	if c <= 0 {
		c = 0.95
	}
	return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.1f", c*100), "0"), ".") + "%"
}

// rateCI is a pass rate and its interval as fractions: "0.80 [0.49, 0.94]".
func rateCI(s *VariantScorer) string {
	if s == nil || s.PassRate == nil {
		return "—"
	}
	if s.PassRateCI == nil {
		return fmt.Sprintf("%.2f", *s.PassRate)
	}
	return fmt.Sprintf("%.2f [%.2f, %.2f]", *s.PassRate, s.PassRateCI[0], s.PassRateCI[1])
}

// itemsText is how many items the experiment covers: "16", or with
// repeats "16 × 3 repeats" (e.Items has a row per item and repeat).
func (e *Experiment) itemsText() string {
	items, repeats := 0, 1
	if e.stream != nil && e.Items == nil {
		items, repeats = e.stream.items, max(1, e.stream.repeats)
	} else {
		type key struct {
			index int
			id    string
		}
		seen := make(map[key]bool, len(e.Items))
		for i := range e.Items {
			it := &e.Items[i]
			seen[key{it.Index, it.ID}] = true
			repeats = max(repeats, it.Repeat+1)
		}
		items = len(seen)
	}
	if repeats == 1 {
		return fmt.Sprint(items)
	}
	return fmt.Sprintf("%d × %d repeats", items, repeats)
}

// cacheHitsText is "mini 10 of 10 results, terse 1 of 10": the variants
// with results from the response cache, their names through esc; "" when
// none has any.
func (e *Experiment) cacheHitsText(esc func(string) string) string {
	var parts []string
	for i := range e.Variants {
		v := &e.Variants[i]
		if v.CacheHits == 0 {
			continue
		}
		part := fmt.Sprintf("%s %d of %d", esc(label(v.Name)), v.CacheHits, v.Succeeded+v.Failed)
		if len(parts) == 0 {
			part += " results"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// signed is x with its sign, "%+.2f"; -0 shows as +0.00.
func signed(x float64) string {
	if x == 0 {
		x = 0
	}
	return fmt.Sprintf("%+.2f", x)
}

// tokensText sums a variant's input and output tokens, "—" when neither
// was reported.
func tokensText(u *UsageSummary) string {
	if u.InputTokens.Total == nil && u.OutputTokens.Total == nil {
		return "—"
	}
	var n int64
	if t := u.InputTokens.Total; t != nil {
		n += *t
	}
	if t := u.OutputTokens.Total; t != nil {
		n += *t
	}
	return fmt.Sprint(n)
}

func variantTarget(v *VariantSummary) string {
	return targetName(&Report{Run: RunSummary{Target: v.Target}})
}

// verdictMark is the mark of a scorer's cell: ▲ better, ▼ worse.
func verdictMark(v *VariantSummary, scorer string) string {
	d := v.VsBaseline.Get(scorer)
	switch {
	case d == nil:
		return ""
	case d.Verdict == VerdictBetter:
		return " ▲"
	case d.Verdict == VerdictWorse:
		return " ▼"
	}
	return ""
}

// WriteExperiment renders e in format f: JSON, Markdown, HTML or the
// terminal table (the default). JUnit has no experiment form: an error
// wrapping [evalrun.ErrInvalid].
func WriteExperiment(w io.Writer, e *Experiment, f Format) error {
	switch f {
	case FormatHTML:
		return WriteExperimentHTML(context.Background(), w, e, HTMLOptions{})
	case FormatJSON:
		return WriteExperimentJSON(w, e)
	case FormatMarkdown:
		return WriteExperimentMarkdown(w, e)
	case FormatTable, "":
		return WriteExperimentTable(w, e)
	}
	return fmt.Errorf("%w: an experiment report is written as table, json, markdown or html, not %q", evalrun.ErrInvalid, f)
}

// WriteExperimentTable writes the experiment for the terminal: a header
// line, the matrix (one row per variant: each scorer's pass rate with its
// interval and mean, the macro pass rate, failures, tokens, cost and
// latency p50/p95), then one line per variant and scorer against the
// baseline, e.g. "big vs mini: exact +0.20 [+0.05, +0.35] p=0.031 better".
// Names from the suite are put on one line; no colour codes.
func WriteExperimentTable(w io.Writer, e *Experiment) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	info := &e.Experiment
	p("experiment %s  %s  dataset %s  baseline %s  variants %d  items %s\n", oneLine(info.ID), oneLine(cmpOr(info.Name, "—")),
		oneLine(datasetText(info.Dataset)), oneLine(label(info.Baseline)), len(e.Variants), e.itemsText())
	conf := e.confidenceText()
	p("pass rate [%s Wilson interval]; vs baseline: delta of pass rate [paired bootstrap %s interval], exact sign test\n\n", conf, conf)

	scorers := e.scorerNames()
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	head := []string{"VARIANT", "STATUS"}
	for _, s := range scorers {
		head = append(head, strings.ToUpper(oneLine(label(s))), "MEAN")
	}
	head = append(head, "MACRO", "FAILURES", "TOKENS", "COST", "P50", "P95")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for i := range e.Variants {
		v := &e.Variants[i]
		name := oneLine(label(v.Name))
		if i == 0 {
			name += " (baseline)"
		}
		row := []string{name, string(v.Status)}
		for _, s := range scorers {
			vs := v.Scorers.Get(s)
			mean := "—"
			if vs != nil {
				mean = ptrValue(vs.Mean, "%.3f")
			}
			row = append(row, rateCI(vs)+verdictMark(v, s), mean)
		}
		row = append(row, ptrValue(v.MacroPassRate, "%.2f"), fmt.Sprint(v.Failures), tokensText(&v.Usage),
			usd(v.Usage.CostUSD.Total), msText(v.Usage.LatencyMS.P50), msText(v.Usage.LatencyMS.P95))
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if hits := e.cacheHitsText(oneLine); hits != "" {
		p("cache hits: %s (no tokens, cost or model latency for those)\n", hits)
	}

	if len(e.Variants) > 1 {
		p("\n")
		base := oneLine(label(info.Baseline))
		for i := 1; i < len(e.Variants); i++ {
			v := &e.Variants[i]
			for _, d := range v.VsBaseline {
				p("%s vs %s: %s %s\n", oneLine(label(v.Name)), base, oneLine(label(d.Name)), deltaText(&d))
			}
		}
	}
	return bw.Flush()
}

// deltaText is "+0.20 [+0.05, +0.35] p=0.031 better", or says there was
// no pair.
func deltaText(d *BaselineDelta) string {
	if d.Delta == nil || d.CI == nil {
		return "— (no paired results) same"
	}
	p := "p=" + pText(d.PValue)
	if strings.HasPrefix(pText(d.PValue), "<") {
		p = "p" + pText(d.PValue)
	}
	return fmt.Sprintf("%s [%s, %s] %s %s", signed(*d.Delta), signed(d.CI[0]), signed(d.CI[1]), p, d.Verdict)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// WriteExperimentMarkdown writes the experiment as GitHub-flavoured
// Markdown for a pull-request comment: the header, the matrix (pass rate
// with its interval per scorer and variant, ▲/▼ where the variant is
// significantly better/worse than the baseline, macro pass rate), the
// comparisons with the baseline, failures/tokens/cost/latency per variant,
// and the first items on which the variants disagree. Text from the
// suite and the run (names, ids, outputs, errors) is escaped so that it
// cannot break the tables or inject HTML, and cut short.
func WriteExperimentMarkdown(w io.Writer, e *Experiment) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	info := &e.Experiment
	conf := e.confidenceText()
	title := mdEscape(label(info.ID))
	if info.Name != "" && info.Name != info.ID {
		title = fmt.Sprintf("%s, experiment `%s`", mdEscape(label(info.Name)), mdCode(label(info.ID)))
	}
	p("## evalrun experiment: %s\n\n", title)
	p("| experiment | dataset | baseline | variants | items |\n| --- | --- | --- | ---: | ---: |\n")
	p("| `%s` | %s | %s | %d | %s |\n\n", mdCode(label(info.ID)), mdEscape(datasetText(info.Dataset)),
		mdEscape(label(info.Baseline)), len(e.Variants), e.itemsText())

	scorers := e.scorerNames()
	p("### Pass rate (%s interval)\n\n", conf)
	p("| variant | target | run | status |")
	for _, s := range scorers {
		p(" %s |", mdEscape(label(s)))
	}
	p(" macro | failures |\n| --- | --- | --- | --- |%s ---: | ---: |\n", strings.Repeat(" ---: |", len(scorers)))
	for i := range e.Variants {
		v := &e.Variants[i]
		name := mdEscape(label(v.Name))
		if i == 0 {
			name = "**" + name + "** (baseline)"
		}
		p("| %s | %s | `%s` | %s |", name, mdEscape(variantTarget(v)), mdCode(label(v.RunID)), mdEscape(string(v.Status)))
		for _, s := range scorers {
			p(" %s%s |", pctCI(v.Scorers.Get(s)), verdictMark(v, s))
		}
		p(" %s | %d |\n", percent(v.MacroPassRate), v.Failures)
	}
	if hits := e.cacheHitsText(mdEscape); hits != "" {
		p("\n**Cache hits:** %s (no tokens, cost or model latency for those).\n", hits)
	}
	p("\n▲ better, ▼ worse than the baseline: p < %s (exact sign test) and the paired %s interval of the difference excludes 0.\n\n",
		strconvAlpha(e.Method.Alpha), conf)

	if len(e.Variants) > 1 {
		p("### Against the baseline (%s)\n\n", mdEscape(label(info.Baseline)))
		p("| variant | scorer | Δ pass rate | %s interval | p | verdict | pairs | improved | regressed |\n", conf)
		p("| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |\n")
		for i := 1; i < len(e.Variants); i++ {
			v := &e.Variants[i]
			for _, d := range v.VsBaseline {
				delta, ci := "—", "—"
				if d.Delta != nil && d.CI != nil {
					delta = signedPP(*d.Delta)
					ci = "[" + strings.TrimSuffix(signedPP(d.CI[0]), " pp") + ", " + signedPP(d.CI[1]) + "]"
				}
				mark := map[string]string{VerdictBetter: "▲ better", VerdictWorse: "▼ worse"}[d.Verdict]
				p("| %s | %s | %s | %s | %s | %s | %d | %d | %d |\n", mdEscape(label(v.Name)), mdEscape(label(d.Name)),
					delta, ci, pText(d.PValue), cmpOr(mark, mdEscape(d.Verdict)), d.Paired, d.Improved, d.Regressed)
			}
		}
		p("\nΔ in percentage points (pp); a result whose target or scorer failed counts as not passed.\n\n")
	}

	p("### Usage\n\n")
	p("| variant | items | failed | failures | input tokens | output tokens | cost (USD) | latency p50 | latency p95 |\n")
	p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for i := range e.Variants {
		v := &e.Variants[i]
		u := &v.Usage
		p("| %s | %d | %d | %d | %s | %s | %s | %s | %s |\n", mdEscape(label(v.Name)), v.Total, v.Failed, v.Failures,
			intText(u.InputTokens.Total), intText(u.OutputTokens.Total), strings.TrimPrefix(usd(u.CostUSD.Total), "$"),
			msText(u.LatencyMS.P50), msText(u.LatencyMS.P95))
	}
	p("\n")

	disagree, ndisagree := e.disagreeRows(maxDisagreeRows)
	p("### Items where variants disagree (%d of %d)\n\n", ndisagree, e.ItemCount())
	if ndisagree == 0 {
		p("None.\n")
		return bw.Flush()
	}
	p("| item |")
	for _, v := range e.Variants {
		p(" %s |", mdEscape(label(v.Name)))
	}
	p("\n| --- |%s\n", strings.Repeat(" --- |", len(e.Variants)))
	shown, size := 0, 0
	for _, it := range disagree {
		var row strings.Builder
		fmt.Fprintf(&row, "| %s |", mdEscape(keyText(label(it.ID), it.Repeat)))
		for _, v := range e.Variants {
			fmt.Fprintf(&row, " %s |", mdCell(it.Variants.Get(v.Name)))
		}
		if shown > 0 && size+row.Len() > maxDisagreeBytes {
			break
		}
		p("%s\n", row.String())
		shown, size = shown+1, size+row.Len()+1
	}
	if more := ndisagree - shown; more > 0 {
		p("\n… and %d more\n", more)
	}
	p("\n✓ passed, ✗ not passed, per scorer; then the output (cut to %d characters).\n", maxOutputRunes)
	return bw.Flush()
}

// pctCI is a pass rate and its interval in percent: "80.0% [49.0–94.3]".
func pctCI(s *VariantScorer) string {
	if s == nil || s.PassRate == nil {
		return "—"
	}
	if s.PassRateCI == nil {
		return percent(s.PassRate)
	}
	return fmt.Sprintf("%s [%.1f–%.1f]", percent(s.PassRate), s.PassRateCI[0]*100, s.PassRateCI[1]*100)
}

// signedPP is a difference of rates in percentage points: "+20.0 pp".
func signedPP(x float64) string {
	x *= 100
	if x == 0 || math.Abs(x) < 0.05 {
		x = 0
	}
	return fmt.Sprintf("%+.1f pp", x)
}

func strconvAlpha(a float64) string {
	if a <= 0 {
		a = 0.05
	}
	return fmt.Sprint(a)
}

// mdCell is one variant's result in the disagreement table: a mark per
// scorer, then the output or the target's error, escaped and cut.
func mdCell(r *VariantResult) string {
	if r == nil {
		return "—"
	}
	var parts, marks []string
	for _, s := range r.Scores {
		mark := "✗"
		if r.Passed.Get(s.Scorer) {
			mark = "✓"
		}
		marks = append(marks, mark+" "+truncate(s.Scorer, maxMarkNameRunes))
	}
	if len(marks) > 0 {
		parts = append(parts, mdEscape(truncate(strings.Join(marks, " · "), maxMarksRunes)))
	}
	text := outputText(r.Output)
	if r.Error != nil {
		text = "error: " + *r.Error
	}
	if text != "" {
		parts = append(parts, mdEscape(truncate(text, maxOutputRunes)))
	}
	return strings.Join(parts, " · ")
}

// maxOutputScan bounds how much of an output [outputText] reads: the
// cell shows [maxOutputRunes] of it, however large it is.
const maxOutputScan = 1024

// outputText is the start of an output for people: a JSON string's text,
// any other value as its JSON. A string longer than [maxOutputScan] bytes
// is shown from its raw JSON (escapes as written) rather than decoded
// whole.
func outputText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	head := bounded.Prefix(raw, maxOutputScan)
	if raw[0] != '"' {
		return string(head)
	}
	var s string
	if len(head) == len(raw) && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(head[1:])
}
