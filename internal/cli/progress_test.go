package cli

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// The progress line shows the effective concurrency only while adaptive
// concurrency holds it below the configured one.
func TestProgressConcurrency(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	st := &State{Stderr: &buf, Now: func() time.Time { return now }}
	p := st.newProgress(10, true) // quiet: lines are printed by hand below
	p.configured = 20
	p.update(evalrun.Progress{Total: 10, Done: 3, Succeeded: 3, Concurrency: 8})
	now = now.Add(time.Second)
	p.printLine()
	if !strings.Contains(buf.String(), "progress: 3/10 items (ok 3, failed 0), concurrency 8/20,") {
		t.Errorf("progress line with concurrency cut to 8 of 20:\n%s", buf.String())
	}
	buf.Reset()
	p.update(evalrun.Progress{Total: 10, Done: 4, Succeeded: 4, Concurrency: 20})
	p.printLine()
	if line := buf.String(); !strings.Contains(line, "4/10") || strings.Contains(line, "concurrency") {
		t.Errorf("progress line at the configured concurrency shows it:\n%s", line)
	}
	p.finish()
}

// Every frame of the terminal bar shows the counts of one update: ok +
// failed = done (the ok count used to run one ahead of the bar's done
// count), and the first frame shows no made-up rate ("0 items/hr").
func TestProgressBarFramesConsistent(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	st := &State{Stderr: &buf, Terminal: true, Now: func() time.Time { return now }}
	p := st.newProgress(10, false)
	p.update(evalrun.Progress{Total: 10, Done: 1, Succeeded: 1})
	first := buf.String()
	if !strings.Contains(first, "1/10 items (ok 1, failed 0), rate ?, ETA ?") || strings.Contains(first, "/hr") {
		t.Errorf("first frame = %q, want 1/10 items with ok 1 and no rate yet", first)
	}
	for done := 2; done <= 10; done++ {
		now = now.Add(500 * time.Millisecond)
		p.update(evalrun.Progress{Total: 10, Done: done, Succeeded: done - done/4, Failed: done / 4})
	}
	p.finish()
	re := regexp.MustCompile(`(\d+)/10 items \(ok (\d+), failed (\d+)\)`)
	frames := re.FindAllStringSubmatch(buf.String(), -1)
	if len(frames) == 0 {
		t.Fatalf("no frames in %q", buf.String())
	}
	for _, f := range frames {
		done, _ := strconv.Atoi(f[1])
		ok, _ := strconv.Atoi(f[2])
		failed, _ := strconv.Atoi(f[3])
		if ok+failed != done {
			t.Errorf("frame %q: ok %d + failed %d ≠ done %d", f[0], ok, failed, done)
		}
	}
	// The text at 4 of 10 done 1.5 s after the start: 4 items in 1.5 s =
	// 2.7 items/s; 6 left take 2.25 s, shown as 2s.
	p2 := (&State{Stderr: &bytes.Buffer{}, Now: func() time.Time { return now }}).newProgress(10, true)
	p2.update(evalrun.Progress{Total: 10, Done: 1, Succeeded: 1})
	now = now.Add(1500 * time.Millisecond)
	if got, want := p2.status(evalrun.Progress{Total: 10, Done: 4, Succeeded: 4}), "4/10 items (ok 4, failed 0), 2.7 items/s, ETA 2s"; got != want {
		t.Errorf("status = %q, want %q", got, want)
	}
}
