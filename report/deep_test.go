package report

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/inmem"
	"github.com/evalrun/evalrun/internal/bounded/boundedtest"
)

// deepDepth is how deep the hostile values nest: as deep as a dataset line
// can be (encoding/json reads at most 10,000 levels, the item object one of
// them) less the three levels the JSON report puts around an item value, so
// that the report still reads back.
const deepDepth = 9_990

// deepRun is a run of two results: one whose input, expected output and
// output nest deepDepth levels (an echo target), with a judge reason and
// a long id; one whose target error echoes a 1 MB body.
func deepRun() (*evalrun.Run, []*evalrun.ItemResult) {
	run := fixtureRun()
	run.ID, run.Total, run.Succeeded, run.Failed, run.PersistErrors = "20260102T030405-deep0001", 2, 1, 1, 0
	run.Scorers = run.Scorers[:2]
	deep := json.RawMessage(boundedtest.Deep(deepDepth))
	long := strings.Repeat("x", 1<<20)
	judge := score("judge", 0.1, 0.7)
	judge.Reason = "the output " + string(deep) + " is not " + long
	rs := []*evalrun.ItemResult{
		{RunID: run.ID, Index: 0, ItemID: "deep-" + long, Output: deep, Attempts: 1, Latency: time.Second,
			Item:   &evalrun.Item{ID: "deep-" + long, Input: deep, Expected: deep, Metadata: map[string]any{"tags": []any{long}}},
			Scores: []evalrun.ScorerResult{score("exact", 0, 0.5), judge}},
		{RunID: run.ID, Index: 1, ItemID: "echo", Attempts: 1, Latency: time.Second,
			Item:  &evalrun.Item{ID: "echo", Input: deep},
			Error: "HTTP 500: " + long + string(deep), ErrorKind: evalrun.ErrorPermanent},
	}
	for _, r := range rs {
		r.StartedAt, r.CompletedAt = t0, t0.Add(r.Latency)
	}
	return run, rs
}

// TestDeepValuesRenderBounded: values nested ~10,000 deep (which indent to
// ~200 MB each with json.Indent) and 1 MB texts give reports of a bounded
// size in every format, and the JSON report still carries the values
// themselves.
func TestDeepValuesRenderBounded(t *testing.T) {
	run, rs := deepRun()
	rep := Build(run, rs)
	deep := json.RawMessage(boundedtest.Deep(deepDepth))
	// Bounds: the JSON report holds the values and the 1 MB texts as data,
	// its indentation adds little to the compact form; the others show
	// none of that.
	compact, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	// The HTML shows each value (five here) cut to maxHTMLValueBytes, which
	// escaping may lengthen (a quote is 5 bytes as &#34;).
	limits := map[Format]int{FormatJSON: len(compact) + 16<<10, FormatMarkdown: 16 << 10,
		FormatTable: 16 << 10, FormatJUnit: 2*maxProblemBytes + 16<<10, FormatHTML: 1 << 20}
	for _, f := range Formats {
		var buf bytes.Buffer
		if err := Write(&buf, rep, f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if buf.Len() > limits[f] {
			t.Errorf("%s report of the deep run: %d bytes, want at most %d", f, buf.Len(), limits[f])
		}
		if f != FormatJSON && !strings.Contains(buf.String(), "(truncated, ") {
			t.Errorf("%s report: no truncation marker", f)
		}
		if f == FormatJSON {
			back, err := ReadJSON(&buf)
			if err != nil {
				t.Fatalf("the JSON report does not read back: %v", err)
			}
			for name, v := range map[string]json.RawMessage{"input": back.Items[0].Input, "expected_output": back.Items[0].Expected,
				"output": back.Items[0].Output} {
				var compact bytes.Buffer
				if err := json.Compact(&compact, v); err != nil || !bytes.Equal(compact.Bytes(), deep) {
					t.Errorf("%s of the JSON report is not the deep value (%v)", name, err)
				}
			}
		}
	}
}

// TestDeepValuesStreamSameBytes: the streamed JSON report caps the
// indentation of item rows at the same depth as WriteJSON.
func TestDeepValuesStreamSameBytes(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	t.Cleanup(func() { st.Close() })
	run, rs := deepRun()
	seed(t, st, run, rs)
	full, err := FromStore(ctx, st, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var want, got bytes.Buffer
	if err := WriteJSON(&want, full); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSONStream(ctx, &got, full, ItemSource{Store: st, RunID: run.ID}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("streamed JSON report (%d bytes) differs from WriteJSON's (%d bytes)", got.Len(), want.Len())
	}
}
