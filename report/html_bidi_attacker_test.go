package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
)

// A bidi override (U+202E) in a run name, an item id, a tag or a scorer
// name is never closed by the text after it on the same line: in the
// report's <title>, an item's header and a tool call's line it reversed
// what followed
// (the tags, the latency, " · evalrun"), so a hostile dataset could make
// a line read as it likes. Those labels show every bidi control as a
// visible [U+XXXX]; values (inputs, outputs), each in its own block, are
// shown as they are.
func TestHTMLBidiControlsVisible(t *testing.T) {
	const rlo = "\u202e"
	run := fixtureRun()
	run.Name = "nightly" + rlo + "ko"
	run.Scorers = []evalrun.ScorerInfo{{Name: "exact" + rlo + "x", Kind: "exact_match", Threshold: 0.5}}
	id := "item" + rlo + "\u2066evil\u2069"
	it := item(id, []any{"t" + rlo + "ag", "plain"})
	it.Input, it.Expected = evalrun.String("question"), evalrun.String("answer")
	s := score("exact"+rlo+"x", 1, 0.5)
	s.Reason = "equal"
	res := []*evalrun.ItemResult{{RunID: run.ID, Index: 0, ItemID: id, Item: it, Output: evalrun.String("answer"),
		Scores: []evalrun.ScorerResult{s}, Attempts: 1,
		Trajectory: &evalrun.Trajectory{Steps: 1, Calls: []evalrun.ToolCall{
			{Name: "search" + rlo, Args: json.RawMessage(`{"q":"\u202e"}`), Error: "down" + rlo},
			{Name: "get", Args: json.RawMessage(`{}`), Output: json.RawMessage(`"ok\u202e"`)},
		}}}}
	run.Total, run.Succeeded, run.Failed, run.PersistErrors = 1, 1, 0, 0
	var buf bytes.Buffer
	if err := WriteHTML(&buf, Build(run, res), HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	checkHTML(t, buf.Bytes())
	doc := buf.String()
	for _, c := range []string{"\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f"} {
		if strings.Contains(doc, c) {
			t.Errorf("the report holds the bidi control %U", []rune(c)[0])
		}
	}
	// html/template writes "+" as &#43; (a browser shows "+").
	for _, want := range []string{
		"<title>nightly[U&#43;202E]ko · evalrun</title>",
		"item[U&#43;202E][U&#43;2066]evil[U&#43;2069]",
		`<span class="tag">t[U&#43;202E]ag</span>`,
		"exact[U&#43;202E]x",
		"error: down[U&#43;202E]", // a tool call's line goes on with its badges
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("the report lacks %s", want)
		}
	}
}
