package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/bounded"
	"github.com/evalrun/evalrun/report"
)

// parseTemplates parses each page with the layout. Every value reaches
// the HTML through html/template's contextual escaping: no function here
// returns template.HTML.
func parseTemplates() (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, err
	}
	pages := make(map[string]*template.Template)
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, n)
		if err != nil {
			return nil, err
		}
		pages[name] = t
	}
	return pages, nil
}

var funcs = template.FuncMap{
	"pct":      pct,
	"num":      num,
	"signed":   signed,
	"ms":       msText,
	"duration": durationText,
	"usd":      usdText,
	"int64":    int64Text,
	"when":     whenText,
	"whenp":    func(t *time.Time) string { return whenText(derefTime(t)) },
	"str":      func(p *string) string { return deref(p) },
	"kind":     func(k *evalrun.ErrorKind) string { return string(deref(k)) },
	"trunc":    truncate,
	"cut":      func(s string) string { return bounded.Cut(s, maxShownBytes) },
	"label":    func(s string) string { return bounded.Cut(s, maxLabelBytes) },
	"text":     func(v json.RawMessage) string { return evalrun.Text(v) },
	"pretty":   pretty,
	"histogram": func(s report.ScorerStats) histogram {
		return newHistogram(s.Histogram, s.Threshold)
	},
	"itemURL": itemURL,
	"trajectoryOf": func(t *trajectoryView, runID string, index, repeat int) trajectoryPage {
		return trajectoryPage{T: t, ItemURL: itemURL(runID, index, repeat)}
	},
	"runURL":        func(runID string) string { return "/runs/" + url.PathEscape(runID) },
	"experimentURL": experimentURL,
	"ci": func(ci []*float64) string {
		if len(ci) != 2 || ci[0] == nil || ci[1] == nil {
			return ""
		}
		return "[" + strconv.FormatFloat(*ci[0]*100, 'f', 1, 64) + ", " + strconv.FormatFloat(*ci[1]*100, 'f', 1, 64) + "]"
	},
	"cis": func(ci []*float64) string {
		if len(ci) != 2 || ci[0] == nil || ci[1] == nil {
			return "—"
		}
		return "[" + signed(ci[0]) + ", " + signed(ci[1]) + "]"
	},
	"tokens": func(u report.UsageSummary) string {
		if u.InputTokens.Total == nil && u.OutputTokens.Total == nil {
			return "—"
		}
		return int64Text(u.InputTokens.Total) + " / " + int64Text(u.OutputTokens.Total)
	},
	"add": func(a, b int) int { return a + b },
	"score": func(p *float64) string {
		if p == nil {
			return "—"
		}
		return strconv.FormatFloat(*p, 'f', 3, 64)
	},
	"comma": report.Thousands,
	"mean": func(p *float64) string {
		if p == nil {
			return "—"
		}
		return strconv.FormatFloat(*p, 'f', 2, 64)
	},
	"mulf":   func(x float64) float64 { return x * 100 },
	"deref0": func(p *float64) float64 { return deref(p) },
	"deltaClass": func(p *float64) string {
		switch {
		case p == nil || *p == 0:
			return ""
		case *p < 0:
			return "bad"
		}
		return "good"
	},
	"pvalue": func(p *float64) string {
		switch {
		case p == nil:
			return "—"
		case *p < 0.001:
			return "< 0.001"
		}
		return strconv.FormatFloat(*p, 'f', 3, 64)
	},
	"changes": func(v *compareView, list []report.ItemChange, id string) changesView {
		return changesView{View: v, List: list, ID: id}
	},
}

// itemURL is the path of a result's page.
func itemURL(runID string, index, repeat int) string {
	u := "/runs/" + url.PathEscape(runID) + "/items/" + strconv.Itoa(index)
	if repeat > 0 {
		u += "?repeat=" + strconv.Itoa(repeat)
	}
	return u
}

// trajectoryPage is the data of the "trajectory" template: the timeline
// and the path of its item, whose JSON holds what the page leaves out.
type trajectoryPage struct {
	T       *trajectoryView
	ItemURL string
}

// changesView is the data of the "changes" template: one list of a
// comparison.
type changesView struct {
	View *compareView
	List []report.ItemChange
	ID   string
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func derefTime(p *time.Time) time.Time {
	if p == nil {
		return time.Time{}
	}
	return *p
}

func pct(p *float64) string {
	if p == nil {
		return "—"
	}
	return strconv.FormatFloat(*p*100, 'f', 1, 64) + "%"
}

func num(p *float64) string {
	if p == nil {
		return "—"
	}
	return strconv.FormatFloat(*p, 'f', 3, 64)
}

func signed(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%+.3f", *p)
}

func msText(p *float64) string {
	if p == nil {
		return "—"
	}
	if *p >= 1000 {
		return strconv.FormatFloat(*p/1000, 'f', 2, 64) + " s"
	}
	return strconv.FormatFloat(*p, 'f', 0, 64) + " ms"
}

func durationText(p *int64) string {
	if p == nil {
		return "—"
	}
	d := time.Duration(*p) * time.Millisecond
	switch {
	case d < time.Second:
		return strconv.FormatInt(*p, 10) + " ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	}
	return d.Round(time.Second).String()
}

func usdText(p *float64) string {
	if p == nil {
		return "—"
	}
	return report.FormatUSD(*p)
}

func int64Text(p *int64) string {
	if p == nil {
		return "—"
	}
	return report.Thousands(int(*p))
}

func whenText(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// truncate cuts s to n runes on one line, marking the cut.
func truncate(s string, n int) string { return bounded.Line(s, n) }

// value is a JSON value made readable: a JSON string shown as its text, any
// other value pretty-printed; Long values are shown collapsed. Text holds
// at most maxShownBytes of it: Truncated says it was cut (the marker ends
// the text), Size is then the whole value's size in bytes.
type value struct {
	Text      string
	JSON      bool
	Empty     bool
	Lines     int
	Long      bool
	Truncated bool
	Size      int
}

const longChars, longLines = 1200, 20

// maxShownBytes bounds the text of a value or a message on a page; the API
// serves the whole value.
const maxShownBytes = 64 << 10

// maxLabelBytes bounds a name from the dataset (an item id, a tag) on a
// page.
const maxLabelBytes = 200

// pretty makes v readable within maxShownBytes, however large or deep:
// JSON is indented down to bounded.IndentDepth levels only (deeper
// containers compact on one line) and only the start of a large value is
// read.
func pretty(v json.RawMessage) value { return prettyN(v, maxShownBytes) }

// prettyN is pretty within limit bytes.
func prettyN(v json.RawMessage, limit int) value {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return value{Empty: true}
	}
	out := value{}
	whole := len(v) // the size the marker of a cut names
	switch {
	case v[0] == '"':
		out.Text = evalrun.Text(v)
		whole = len(out.Text)
	case json.Valid(v):
		// Indenting compact JSON only adds bytes, so the first limit
		// bytes of the text come from at most as many bytes of v;
		// a v cut here is marked truncated below.
		out.Text, out.JSON = string(bounded.IndentJSON(nil, bounded.Prefix(v, limit), "", "  ", bounded.IndentDepth)), true
		if len(v) <= limit {
			whole = len(out.Text)
		}
	default:
		out.Text = string(bounded.Prefix(v, limit))
	}
	if whole > limit {
		out.Truncated, out.Size = true, whole
		out.Text = bounded.Prefix(out.Text, limit) + bounded.Marker(whole)
	}
	out.Lines = strings.Count(out.Text, "\n") + 1
	out.Long = len(out.Text) > longChars || out.Lines > longLines
	return out
}

// textValue is a text (not JSON) made readable as pretty makes a JSON
// string, within limit bytes.
func textValue(s string, limit int) value {
	out := value{Text: s}
	if len(s) > limit {
		out.Truncated, out.Size = true, len(s)
		out.Text = bounded.Cut(s, limit)
	}
	out.Lines = strings.Count(out.Text, "\n") + 1
	out.Long = len(out.Text) > longChars || out.Lines > longLines
	return out
}

// histogram is a scorer's ten buckets drawn as SVG bars.
type histogram struct {
	Width, Height int
	Bars          []bar
	Total         int
}

type bar struct {
	X, Y, W, H int
	Count      int
	Label      string
	Pass       bool
}

const histW, histH, histBar, histGap = 240, 64, 22, 2

// newHistogram draws counts; a bucket whose lower edge reaches threshold is
// drawn as passing.
func newHistogram(counts [report.HistogramBuckets]int, threshold float64) histogram {
	h := histogram{Width: histW, Height: histH + 14}
	peak := 0
	for _, c := range counts {
		peak = max(peak, c)
		h.Total += c
	}
	for i, c := range counts {
		height := 0
		if peak > 0 && c > 0 {
			height = max(int(math.Round(float64(c)/float64(peak)*histH)), 1)
		}
		hi := ")"
		if i == report.HistogramBuckets-1 {
			hi = "]"
		}
		h.Bars = append(h.Bars, bar{
			X: i * (histBar + histGap), Y: histH - height, W: histBar, H: height, Count: c,
			Label: fmt.Sprintf("[%.1f, %.1f%s: %s", float64(i)/10, float64(i+1)/10, hi, report.Thousands(c)),
			Pass:  float64(i)/10 >= threshold-1e-9,
		})
	}
	return h
}
