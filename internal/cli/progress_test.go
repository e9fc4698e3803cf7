package cli

import (
	"bytes"
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
