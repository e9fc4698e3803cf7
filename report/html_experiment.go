package report

import (
	"bufio"
	"context"
	"html/template"
	"io"
)

// WriteExperimentHTML writes e as one self-contained HTML document, as
// [WriteHTML] writes a run: the experiment's header, the fail_on gates of
// every variant, the matrix (variant × scorer: pass rate with its
// interval, ▲/▼ against the baseline, mean; macro pass rate, failures,
// tokens, cost, latency), each variant against the baseline, the score
// histograms side by side, then every item with each variant's output,
// error and scores side by side. An experiment built by
// [BuildExperimentStreamStore] has its items read from storage while they
// are written (memory bounded by a page of results per variant), as
// [WriteExperimentJSON] does; on an error part of the document may have
// been written.
func WriteExperimentHTML(ctx context.Context, w io.Writer, e *Experiment, opts HTMLOptions) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := writeExperimentHTMLHead(bw, e, opts); err != nil {
		return err
	}
	scorers := e.scorerNames()
	write := func(it *ExperimentItem) error { return writeExperimentHTMLItem(bw, e, scorers, it) }
	if e.stream != nil && e.Items == nil {
		if _, err := e.streamItems(ctx, write); err != nil {
			return err
		}
	} else {
		for i := range e.Items {
			if err := write(&e.Items[i]); err != nil {
				return err
			}
		}
	}
	if err := htmlTemplate().ExecuteTemplate(bw, "tail", nil); err != nil {
		return err
	}
	return bw.Flush()
}

// htmlExperiment is what the head of the experiment report shows.
type htmlExperiment struct {
	CSS        template.CSS
	Title      string
	E          *Experiment
	Items      string
	Conf       string
	Alpha      string
	Scorers    []string
	Gates      []htmlVariantGates
	Hists      []htmlHistRow
	Disagree   int
	ItemCount  int
	Comparable bool
}

type htmlVariantGates struct {
	Variant string
	Gates   []htmlGate
}

type htmlHistRow struct {
	Scorer string
	Cells  []*svgHist // nil where the variant lacks the scorer
}

func writeExperimentHTMLHead(bw *bufio.Writer, e *Experiment, opts HTMLOptions) error {
	d := htmlExperiment{CSS: template.CSS(htmlCSS), E: e, Title: htmlLabel(cmpOr(e.Experiment.Name, e.Experiment.ID)),
		Items: e.itemsText(), Conf: e.confidenceText(), Alpha: strconvAlpha(e.Method.Alpha), Scorers: e.scorerNames(),
		ItemCount: e.ItemCount(), Comparable: len(e.Variants) > 1}
	_, d.Disagree = e.disagreeRows(0)
	if len(opts.FailOn) > 0 {
		for i := range e.Variants {
			g := htmlVariantGates{Variant: htmlLabel(e.Variants[i].Name)}
			if i < len(e.reports) && e.reports[i] != nil {
				g.Gates = gatesOf(e.reports[i], opts.FailOn)
			}
			d.Gates = append(d.Gates, g)
		}
	}
	for _, s := range d.Scorers {
		row := htmlHistRow{Scorer: htmlLabel(s)}
		for i := range e.Variants {
			var h *svgHist
			if vs := e.Variants[i].Scorers.Get(s); vs != nil {
				x := scoreHist(vs.Histogram, vs.Threshold)
				h = &x
			}
			row.Cells = append(row.Cells, h)
		}
		d.Hists = append(d.Hists, row)
	}
	return htmlTemplate().ExecuteTemplate(bw, "experiment", &d)
}

// htmlExpItem is one item with every variant's result, in variant order
// (fields copied, not embedded, as in htmlItem).
type htmlExpItem struct {
	Index, Repeat int
	ID            string
	Tags          []string
	MoreTags      int
	Disagree      bool
	Anchor        string
	In, Expect    htmlValue
	Cells         []htmlExpCell
	AnyFailed     bool
	NumVariants   int
}

type htmlExpCell struct {
	Variant string
	Missing bool
	Out     htmlValue
	Err     htmlValue
	Failed  bool
	Latency *float64
	Scores  []htmlItemScore
}

func writeExperimentHTMLItem(bw *bufio.Writer, e *Experiment, scorers []string, it *ExperimentItem) error {
	tags, moreTags := shownTags(it.Tags)
	v := htmlExpItem{Index: it.Index, Repeat: it.Repeat, ID: htmlLabel(it.ID), Tags: tags, MoreTags: moreTags, Disagree: it.Disagree, Anchor: itemAnchor(it.Index, it.Repeat), In: inputValue(it.Input),
		Expect: jsonValue(it.Expected), NumVariants: len(e.Variants)}
	for i := range e.Variants {
		name := e.Variants[i].Name
		c := htmlExpCell{Variant: htmlLabel(name)}
		r := it.Variants.Get(name)
		if r == nil {
			c.Missing = true
			v.Cells = append(v.Cells, c)
			continue
		}
		c.Out, c.Latency = jsonValue(r.Output), r.LatencyMS
		if r.Error != nil {
			c.Failed, c.Err = true, textValue(*r.Error)
			v.AnyFailed = true
		}
		for _, s := range r.Scores {
			passed := r.Passed.Get(s.Scorer)
			c.Scores = append(c.Scores, htmlItemScore{Name: htmlLabel(s.Scorer), Score: ptrValue(s.Score, "%.3f"),
				Passed: passed, Failed: s.Score == nil})
			if !passed {
				v.AnyFailed = true
			}
		}
		v.Cells = append(v.Cells, c)
	}
	return htmlTemplate().ExecuteTemplate(bw, "xitem", &v)
}
