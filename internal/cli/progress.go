package cli

import (
	"fmt"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/evalrun/evalrun"
)

// progress shows a run's progress on standard error: a bar on a terminal,
// a plain line every State.ProgressEvery otherwise, nothing when quiet.
type progress struct {
	st    *State
	total int
	start time.Time
	bar   *progressbar.ProgressBar
	// configured is the run's configured concurrency: the display shows
	// the effective one when adaptive concurrency lowered it below this.
	configured int

	mu      sync.Mutex
	last    evalrun.Progress
	first   int // Done at the first update (a resume starts above 0)
	seen    bool
	printed int // Done at the last plain line
	// detail, when set, ends the status text: an experiment's progress
	// per variant.
	detail string

	stop chan struct{}
	done chan struct{}
}

// newProgress starts showing progress of total executions.
func (st *State) newProgress(total int, quiet bool) *progress {
	p := &progress{st: st, total: total, start: st.Now()}
	switch {
	case quiet:
	case st.Terminal:
		// The bar draws only the bar: the counts, rate and ETA are one text
		// (status) set before the bar moves, so a frame never shows the
		// ok count of one update beside the done count of another, and the
		// rate comes from the injected clock (the library's own rate says
		// "0 items/hr" on its first frame).
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(st.Stderr),
			progressbar.OptionSetDescription("running"),
			progressbar.OptionShowDescriptionAtLineEnd(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	default:
		p.stop, p.done = make(chan struct{}), make(chan struct{})
		go p.lines()
	}
	return p
}

// update is the engine's progress callback.
func (p *progress) update(pr evalrun.Progress) {
	p.mu.Lock()
	if !p.seen {
		p.first, p.seen = pr.Done-1, true
	}
	p.last = pr
	p.mu.Unlock()
	if p.bar != nil {
		p.bar.Describe(p.status(pr))
		_ = p.bar.Set(pr.Done)
	}
}

// lines prints a plain progress line every ProgressEvery when something
// changed.
func (p *progress) lines() {
	defer close(p.done)
	t := time.NewTicker(p.st.ProgressEvery)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.printLine()
		}
	}
}

func (p *progress) printLine() {
	p.mu.Lock()
	pr := p.last
	changed := pr.Done != p.printed
	p.printed = pr.Done
	p.mu.Unlock()
	if !changed {
		return
	}
	fmt.Fprintf(p.st.Stderr, "progress: %s\n", p.status(pr))
}

// status is the progress text of pr: "3/10 items (ok 3, failed 0), 1.5
// items/s, ETA 5s". The rate counts the items done since the first update
// (a resumed run starts above 0); before it can be measured it reads
// "rate ?".
func (p *progress) status(pr evalrun.Progress) string {
	p.mu.Lock()
	first, detail := p.first, p.detail
	p.mu.Unlock()
	if detail != "" {
		detail = "; " + detail
	}
	rate, eta := "rate ?", "?"
	if s := p.st.Now().Sub(p.start).Seconds(); s > 0 && pr.Done > first {
		perSec := float64(pr.Done-first) / s
		rate = fmt.Sprintf("%.1f items/s", perSec)
		if perSec < 0.1 {
			rate = fmt.Sprintf("%.1f items/min", perSec*60)
		}
		eta = time.Duration(float64(pr.Total-pr.Done) / perSec * float64(time.Second)).Round(time.Second).String()
	}
	return fmt.Sprintf("%d/%d items (ok %d, failed %d)%s, %s, ETA %s%s",
		pr.Done, pr.Total, pr.Succeeded, pr.Failed, p.concurrencyNote(pr), rate, eta, detail)
}

// setDetail sets the text that ends the status from now on.
func (p *progress) setDetail(s string) {
	p.mu.Lock()
	p.detail = s
	p.mu.Unlock()
}

// concurrencyNote is ", concurrency E/C" while the effective concurrency E
// is below the configured C (adaptive concurrency cut it after 429s), else
// "".
func (p *progress) concurrencyNote(pr evalrun.Progress) string {
	if pr.Concurrency <= 0 || pr.Concurrency >= p.configured {
		return ""
	}
	return fmt.Sprintf(", concurrency %d/%d", pr.Concurrency, p.configured)
}

// finish stops the display.
func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
	if p.stop != nil {
		close(p.stop)
		<-p.done
	}
}
