package report

import (
	"fmt"
	"math"
	"strconv"
)

// The SVG histograms: the geometry of the viewer's (240 × 64 bars, a
// baseline and three ticks below).
const (
	svgW, svgBarsH, svgH = 240, 64, 78
)

type svgHist struct {
	W, H, BarsH int
	Bars        []svgBar
	Ticks       []svgTick
	Label       string
}

type svgBar struct {
	X, Y, W, H float64
	Pass       bool
	Title      string
}

type svgTick struct {
	X      float64
	Text   string
	Anchor string
}

// scoreHist draws a scorer's ten buckets; a bucket whose lower edge
// reaches the threshold is drawn as passing, as the viewer does.
func scoreHist(counts [HistogramBuckets]int, threshold float64) svgHist {
	titles := make([]string, len(counts))
	pass := make([]bool, len(counts))
	for i, c := range counts {
		hi := ")"
		if i == HistogramBuckets-1 {
			hi = "]"
		}
		titles[i] = fmt.Sprintf("[%.1f, %.1f%s: %s", float64(i)/10, float64(i+1)/10, hi, Thousands(c))
		pass[i] = float64(i)/10 >= threshold-1e-9
	}
	h := bars(counts[:], titles, pass)
	h.Label = "score histogram"
	h.Ticks = []svgTick{{0, "0", "start"}, {svgW / 2, "0.5", "middle"}, {svgW, "1", "end"}}
	return h
}

func bars(counts []int, titles []string, pass []bool) svgHist {
	h := svgHist{W: svgW, H: svgH, BarsH: svgBarsH}
	peak := 0
	for _, c := range counts {
		peak = max(peak, c)
	}
	const gap = 2.0
	w := (float64(svgW) + gap) / float64(len(counts))
	for i, c := range counts {
		height := 0.0
		if peak > 0 && c > 0 {
			height = max(math.Round(float64(c)/float64(peak)*svgBarsH), 1)
		}
		h.Bars = append(h.Bars, svgBar{X: round2(float64(i) * w), Y: svgBarsH - height, W: round2(w - gap), H: height,
			Pass: pass == nil || pass[i], Title: titles[i]})
	}
	return h
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// latencyBuckets is the most buckets of the latency histogram.
const latencyBuckets = 20

// latencyCounter counts latencies into buckets of a round width from 0
// to the run's maximum, known from the report before the rows are read.
type latencyCounter struct {
	width  float64
	counts []int
}

func newLatencyCounter(maxMS *float64) *latencyCounter {
	if maxMS == nil || *maxMS <= 0 || math.IsInf(*maxMS, 0) || math.IsNaN(*maxMS) {
		return &latencyCounter{}
	}
	width := niceWidth(*maxMS / latencyBuckets)
	n := min(int(math.Floor(*maxMS/width))+1, latencyBuckets+1)
	return &latencyCounter{width: width, counts: make([]int, n)}
}

// niceWidth is the smallest of 1, 2 or 5 × 10^k at least x.
func niceWidth(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

func (l *latencyCounter) add(ms *float64) {
	if ms == nil || len(l.counts) == 0 {
		return
	}
	i := min(max(int(*ms/l.width), 0), len(l.counts)-1)
	l.counts[i]++
}

func (l *latencyCounter) hist() *svgHist {
	total := 0
	for _, c := range l.counts {
		total += c
	}
	if total == 0 {
		return nil
	}
	titles := make([]string, len(l.counts))
	for i, c := range l.counts {
		titles[i] = fmt.Sprintf("[%s, %s): %s", msNumber(float64(i)*l.width), msNumber(float64(i+1)*l.width), Thousands(c))
	}
	h := bars(l.counts, titles, nil)
	h.Label = "latency histogram"
	top := float64(len(l.counts)) * l.width
	h.Ticks = []svgTick{{0, "0", "start"}, {svgW / 2, msNumber(top / 2), "middle"}, {svgW, msNumber(top), "end"}}
	return &h
}

// msNumber is a latency for an axis: "250ms", "1.5s".
func msNumber(ms float64) string {
	if ms >= 1000 {
		return strconv.FormatFloat(ms/1000, 'f', -1, 64) + "s"
	}
	return strconv.FormatFloat(ms, 'f', -1, 64) + "ms"
}
