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

	stop chan struct{}
	done chan struct{}
}

// newProgress starts showing progress of total executions.
func (st *State) newProgress(total int, quiet bool) *progress {
	p := &progress{st: st, total: total, start: st.Now()}
	switch {
	case quiet:
	case st.Terminal:
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(st.Stderr),
			progressbar.OptionSetDescription("running"),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("items"),
			progressbar.OptionSetPredictTime(true),
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
		p.bar.Describe(fmt.Sprintf("ok %d failed %d%s", pr.Succeeded, pr.Failed, p.concurrencyNote(pr)))
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
	pr, first := p.last, p.first
	changed := pr.Done != p.printed
	p.printed = pr.Done
	p.mu.Unlock()
	if !changed {
		return
	}
	elapsed := p.st.Now().Sub(p.start)
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(pr.Done-first) / s
	}
	eta := "?"
	if rate > 0 {
		eta = time.Duration(float64(pr.Total-pr.Done) / rate * float64(time.Second)).Round(time.Second).String()
	}
	fmt.Fprintf(p.st.Stderr, "progress: %d/%d items (ok %d, failed %d)%s, %.1f items/s, ETA %s\n",
		pr.Done, pr.Total, pr.Succeeded, pr.Failed, p.concurrencyNote(pr), rate, eta)
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
