package report

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/bounded"
)

// The HTML report.
//
// One self-contained file to attach to a build: the sections of the
// viewer's run page (summary, fail_on gates, scorers with histograms,
// repeats, agent, cohorts, adversarial, usage and a latency histogram,
// failures), then every item. It has inline CSS and inline SVG only: no
// script, no reference outside the file (every link is an in-page
// #anchor), and a Content-Security-Policy that forbids both should
// anything slip through. Everything from the run is written by
// html/template, escaped as text; attributes carry only what the report
// computes (numbers, anchors built from item indexes), never a value from
// the run.
//
// A report built [WithoutItems] is written by [WriteHTMLStream], reading
// the rows from storage one at a time while it writes: the document is
// never held whole, so memory does not grow with the run.

// The bounds of what the HTML report shows, chosen so that a file of a
// 100,000-item run stays something a browser opens: each value (input,
// expected, output, reason, error) is cut to maxHTMLValueBytes with the
// truncation marker (the JSON report has it whole); values longer than
// htmlFoldBytes or htmlFoldLines are folded in <details>; the failures
// table and the flaky list show at most maxHTMLListRows rows (every
// failed item still shows its error below).
const (
	maxHTMLValueBytes = 64 << 10
	htmlFoldBytes     = 320
	htmlFoldLines     = 6
	htmlSummaryRunes  = 120
	maxHTMLListRows   = 1000
	// maxHTMLTags bounds the tags shown in an item's header: a dataset may
	// give one item any number of tags.
	maxHTMLTags = 50
)

//go:embed html.css
var htmlCSS string

//go:embed html.tmpl
var htmlTemplates string

// htmlTemplate parses the templates on first use, not at init: most
// evalrun commands never write HTML.
var htmlTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(htmlFuncs).Parse(htmlTemplates))
})

// HTMLOptions tunes [WriteHTML] and [WriteExperimentHTML]. The zero value
// is valid: no fail_on gates.
type HTMLOptions struct {
	// FailOn are the fail_on conditions checked against the run (each
	// variant of an experiment), shown with the actual value and whether
	// it held. None: the section says that no gate was given.
	FailOn []Condition
}

// WriteHTML writes rep as one self-contained HTML document: the run's
// summary sections, then every item row of rep.Items (a report built
// [WithoutItems] has none: write it with [WriteHTMLStream]).
func WriteHTML(w io.Writer, rep *Report, opts HTMLOptions) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	lat := newLatencyCounter(rep.Usage.LatencyMS.Max)
	for i := range rep.Items {
		lat.add(rep.Items[i].LatencyMS)
	}
	if err := writeHTMLHead(bw, rep, opts, lat, len(rep.Items)); err != nil {
		return err
	}
	for i := range rep.Items {
		if err := writeHTMLItem(bw, &rep.Items[i]); err != nil {
			return err
		}
	}
	if err := htmlTemplate().ExecuteTemplate(bw, "tail", nil); err != nil {
		return err
	}
	return bw.Flush()
}

// WriteHTMLStream writes rep like [WriteHTML] with the item rows of src
// (rep.Items is ignored), read from storage while they are written. It
// reads the results twice: once without their payloads for the latency
// histogram and the number of rows the summary shows, then whole to
// write the items one at a time. On an error part of the document may
// have been written.
func WriteHTMLStream(ctx context.Context, w io.Writer, rep *Report, src ItemSource, opts HTMLOptions) error {
	lat := newLatencyCounter(rep.Usage.LatencyMS.Max)
	n := 0
	err := src.Store.ScanResults(ctx, src.RunID, evalrun.ResultQuery{SkipPayloads: true}, func(r *evalrun.ItemResult) error {
		n++
		if r.Latency > 0 {
			ms := float64(r.Latency) / 1e6
			lat.add(&ms)
		}
		return ctx.Err()
	})
	if err != nil {
		return fmt.Errorf("report: results of run %s: %w", src.RunID, err)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := writeHTMLHead(bw, rep, opts, lat, n); err != nil {
		return err
	}
	if err := src.scan(ctx, func(it *ItemRow) error { return writeHTMLItem(bw, it) }); err != nil {
		return err
	}
	if err := htmlTemplate().ExecuteTemplate(bw, "tail", nil); err != nil {
		return err
	}
	return bw.Flush()
}

// htmlRun is what the head of the run report shows.
type htmlRun struct {
	CSS     template.CSS
	Title   string
	Rep     *Report
	Gates   []htmlGate
	Scorers []htmlScorer
	// Latency is nil when no result reported a latency.
	Latency      *svgHist
	Failures     []Failure
	MoreFailures int
	Flaky        []FlakyItem
	MoreFlaky    int
	// Cohorts are at most maxHTMLListRows of the report's cohorts: one
	// per distinct tag, as many as a dataset likes.
	Cohorts     CohortTable
	MoreCohorts int
	Items       int
	Repeats     int
}

type htmlScorer struct {
	*ScorerStats
	Hist svgHist
}

// htmlGate is a fail_on condition and its verdict.
type htmlGate struct {
	Source string
	// Actual is the metric's value, "null" when it cannot be computed.
	Actual   string
	Breached bool
}

func gatesOf(rep *Report, conds []Condition) []htmlGate {
	out := make([]htmlGate, len(conds))
	for i, c := range conds {
		v, breached := c.Eval(rep)
		out[i] = htmlGate{Source: c.Source, Actual: gateValue(v), Breached: breached}
	}
	return out
}

func gateValue(v *float64) string {
	if v == nil {
		return "null"
	}
	return strconv.FormatFloat(*v, 'g', 6, 64)
}

func writeHTMLHead(bw *bufio.Writer, rep *Report, opts HTMLOptions, lat *latencyCounter, items int) error {
	d := htmlRun{CSS: template.CSS(htmlCSS), Rep: rep, Items: items, Repeats: rep.Repeats(),
		Title: htmlLabel(cmpOr(rep.Run.Name, rep.Run.ID)), Gates: gatesOf(rep, opts.FailOn)}
	for i := range rep.Scorers {
		s := &rep.Scorers[i]
		d.Scorers = append(d.Scorers, htmlScorer{ScorerStats: s, Hist: scoreHist(s.Histogram, s.Threshold)})
	}
	d.Latency = lat.hist()
	d.Failures = rep.Failures[:min(len(rep.Failures), maxHTMLListRows)]
	d.MoreFailures = len(rep.Failures) - len(d.Failures)
	d.Flaky = rep.Flaky[:min(len(rep.Flaky), maxHTMLListRows)]
	d.MoreFlaky = len(rep.Flaky) - len(d.Flaky)
	d.Cohorts = rep.Cohorts[:min(len(rep.Cohorts), maxHTMLListRows)]
	d.MoreCohorts = len(rep.Cohorts) - len(d.Cohorts)
	return htmlTemplate().ExecuteTemplate(bw, "run", &d)
}

// htmlItem is one item row as the report shows it. Its fields are
// copied from the row rather than embedding it: the template looks up
// each field by name, and a promoted field costs a search of the
// embedded structs on every item.
type htmlItem struct {
	Index, Repeat, RetryCount int
	ID                        string
	Tags                      []string
	MoreTags                  int
	LatencyMS                 *float64
	Failed                    bool
	ErrorKind                 *evalrun.ErrorKind
	Adversarial               *AdversarialInfo
	Steps, NumCalls           int
	HasTrajectory             bool
	Anchor                    string
	In, Expected, Out         htmlValue
	Err                       htmlValue
	Scores                    []htmlItemScore
	Calls                     []htmlCall
	MoreCalls                 int
	AnyFailed                 bool
}

type htmlItemScore struct {
	Name   string
	Score  string
	Passed bool
	Failed bool // the scorer erred
	Text   htmlValue
}

type htmlCall struct {
	Name, Args, Result string
	Error, Mocked      bool
	Latency            string
}

func writeHTMLItem(bw *bufio.Writer, it *ItemRow) error {
	tags, moreTags := shownTags(it.Tags)
	v := htmlItem{Index: it.Index, Repeat: it.Repeat, RetryCount: it.RetryCount, ID: htmlLabel(it.ID), Tags: tags, MoreTags: moreTags,
		LatencyMS: it.LatencyMS, ErrorKind: it.ErrorKind, Adversarial: it.Adversarial, Steps: it.Steps,
		NumCalls: len(it.Trajectory), HasTrajectory: len(it.Trajectory) > 0, Anchor: itemAnchor(it.Index, it.Repeat),
		In: inputValue(it.Input), Expected: jsonValue(it.Expected), Out: jsonValue(it.Output)}
	if it.Error != nil {
		v.Err = textValue(*it.Error)
		v.Failed, v.AnyFailed = true, true
	}
	for i := range it.Scores {
		s := &it.Scores[i]
		hs := htmlItemScore{Name: htmlLabel(s.Scorer), Score: ptrValue(s.Score, "%.3f"), Passed: s.Passed, Failed: s.Error != nil}
		switch {
		case s.Error != nil:
			hs.Text = textValue(*s.Error)
			v.AnyFailed = true
		case s.Reason != nil:
			hs.Text = textValue(*s.Reason)
		default:
			hs.Text = htmlValue{Null: true}
		}
		if !s.Passed {
			v.AnyFailed = true
		}
		v.Scores = append(v.Scores, hs)
	}
	for i := range it.Trajectory {
		if i == maxShownEntries {
			v.MoreCalls = len(it.Trajectory) - i
			break
		}
		c := &it.Trajectory[i]
		// A call's name, arguments and result share its line (with the
		// mocked badge and the latency): bidi controls are shown.
		hc := htmlCall{Name: htmlLabel(c.Name), Args: bidiVisible(valueLine(c.Args)), Mocked: c.Mocked}
		if c.LatencyMS != nil {
			hc.Latency = msText(c.LatencyMS)
		}
		switch {
		case c.Error != nil:
			hc.Result, hc.Error = bidiVisible(truncate(*c.Error, maxShownValue)), true
		case c.Output != nil:
			hc.Result = bidiVisible(valueLine(c.Output))
		}
		v.Calls = append(v.Calls, hc)
	}
	return htmlTemplate().ExecuteTemplate(bw, "item", &v)
}

// htmlLabel is label for the HTML report, its bidi controls made visible.
func htmlLabel(s string) string { return bidiVisible(label(s)) }

// bidiVisible writes each bidi control of s (embeddings, overrides,
// isolates, marks) as [U+XXXX]. A label shares its line with what the
// report writes after it (an item's tags and latency, " · evalrun" in the
// title), and an override the label leaves open reverses that text: a
// dataset could make the line read as it likes. Shown, the control is
// also what a reader of an untrusted dataset wants to see.
func bidiVisible(s string) string {
	if !strings.ContainsFunc(s, isBidiControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isBidiControl(r) {
			fmt.Fprintf(&b, "[%U]", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isBidiControl(r rune) bool {
	return r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069' || r == '\u200e' || r == '\u200f' || r == '\u061c'
}

// shownTags returns the first maxHTMLTags of tags and how many are left
// out.
func shownTags(tags []string) ([]string, int) {
	n := min(len(tags), maxHTMLTags)
	return tags[:n:n], len(tags) - n
}

// itemAnchor is the id of an item's block, from its index and repeat
// only: an item id from the dataset never becomes an attribute.
func itemAnchor(index, repeat int) string {
	if repeat > 0 {
		return "i" + strconv.Itoa(index) + "-" + strconv.Itoa(repeat)
	}
	return "i" + strconv.Itoa(index)
}

// htmlValue is a value shown to people: its text (cut to
// maxHTMLValueBytes), folded in <details> under Summary when long.
type htmlValue struct {
	Text    string
	Summary string
	Long    bool
	// Null is an absent value, shown as "—".
	Null bool
}

func textValue(s string) htmlValue {
	size := len(s)
	s = bounded.Cut(s, maxHTMLValueBytes)
	v := htmlValue{Text: s}
	if size > htmlFoldBytes || strings.Count(s, "\n") >= htmlFoldLines {
		v.Long = true
		v.Summary = bounded.Line(s, htmlSummaryRunes) + " (" + sizeText(size) + ")"
	}
	return v
}

// jsonValue shows a raw JSON value: a string's text, anything else
// indented (its nesting past [bounded.IndentDepth] on one line); a value
// too large to show whole is shown from its raw JSON, cut.
func jsonValue(raw json.RawMessage) htmlValue {
	if len(raw) == 0 || string(raw) == "null" {
		return htmlValue{Null: true}
	}
	if len(raw) > maxHTMLValueBytes {
		v := textValue(string(bounded.Prefix(raw, maxHTMLValueBytes)))
		v.Text += bounded.Marker(len(raw))
		v.Long = true
		v.Summary = bounded.Line(v.Text, htmlSummaryRunes) + " (" + sizeText(len(raw)) + ")"
		return v
	}
	if raw[0] == '"' {
		return textValue(evalrun.Text(raw))
	}
	return textValue(string(bounded.IndentJSON(nil, raw, "", "  ", bounded.IndentDepth)))
}

// inputValue is jsonValue, a conversation shown as "role: content"
// paragraphs.
func inputValue(raw json.RawMessage) htmlValue {
	msgs, ok := evalrun.Conversation(raw)
	if !ok || len(raw) > maxHTMLValueBytes {
		return jsonValue(raw)
	}
	var b strings.Builder
	for i, m := range msgs {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(m.Role)
		b.WriteString(": ")
		b.WriteString(m.Content)
	}
	return textValue(b.String())
}

func sizeText(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 10<<10:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return Thousands(n) + " bytes"
}

// Thousands writes n with thousands separators: 100,000. The viewer
// writes its counts the same way.
func Thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// htmlFuncs are the template functions: formatting only; escaping is
// html/template's.
var htmlFuncs = template.FuncMap{
	"pct":   percent,
	"num":   func(p *float64) string { return ptrValue(p, "%.3f") },
	"ms":    msText,
	"usd":   usd,
	"int64": intText,
	"comma": Thousands,
	"dur":   durationText,
	"when": func(t *time.Time) string {
		if t == nil {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05 MST")
	},
	"label":   htmlLabel,
	"str":     func(p *string) string { return strOr(p, "—") },
	"kind":    kindText[evalrun.ErrorKind],
	"item":    func(f Failure) string { return bidiVisible(failureItem(&f)) },
	"anchor":  itemAnchor,
	"target":  func(rep *Report) string { return bidiVisible(targetName(rep)) },
	"data":    func(d DatasetRef) string { return bidiVisible(datasetText(d)) },
	"agent":   agentLine,
	"plural":  plural,
	"fixed2":  func(x float64) string { return fmt.Sprintf("%.2f", x) },
	"fixed1":  func(x float64) string { return fmt.Sprintf("%.1f", x) },
	"trunc":   func(s string, n int) string { return truncate(s, n) },
	"rateCI":  rateCI,
	"mark":    func(v VariantSummary, scorer string) string { return verdictMark(&v, scorer) },
	"tokens":  func(u UsageSummary) string { return tokensText(&u) },
	"vtarget": func(v VariantSummary) string { return variantTarget(&v) },
	"delta":   func(d BaselineDelta) string { return deltaText(&d) },
	"scorerOf": func(v VariantSummary, name string) *VariantScorer {
		return v.Scorers.Get(name)
	},
	"add": func(a, b int) int { return a + b },
}
