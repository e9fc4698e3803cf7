package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// htmlGates are the fail_on conditions of the golden run report: one
// holds, one is breached, one cannot be computed (broken never scored).
func htmlGates(t *testing.T) []Condition {
	t.Helper()
	conds, err := ParseConditions([]string{"failed > 2", "pass_rate(exact) < 0.9", "mean(broken) < 0.5"})
	if err != nil {
		t.Fatal(err)
	}
	return conds
}

func TestHTMLGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, fixtureReport(t), HTMLOptions{FailOn: htmlGates(t)}); err != nil {
		t.Fatal(err)
	}
	checkHTML(t, buf.Bytes())
	golden(t, "report.html", buf.Bytes())
	for _, want := range []string{
		`<td><code>failed &gt; 2</code></td><td class="n">1</td><td><span class="good">holds</span>`,
		`<td><code>pass_rate(exact) &lt; 0.9</code></td><td class="n">0.6</td><td><span class="bad strong">breached</span>`,
		`<td><code>mean(broken) &lt; 0.5</code></td><td class="n">null</td><td><span class="bad strong">breached</span>`,
		`<h2 id="items">Items (6)</h2>`,
		`<a href="#i4">q5</a>`, // a failure links to its item
		`<article class="it f" id="i4">`,
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("report.html lacks %s", want)
		}
	}

	buf.Reset()
	if err := WriteHTML(&buf, agentReport(), HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	checkHTML(t, buf.Bytes())
	golden(t, "report-agent.html", buf.Bytes())
	for _, want := range []string{
		"system: You are a weather bot.\n\nuser: Weather in Paris?\nAnd &lt;b&gt;tomorrow&lt;/b&gt;?", // a conversation
		`trajectory: 2 tool calls in 3 steps`,
		`<code>get_weather</code> <code>{&#34;city&#34;:&#34;Paris&#34;}</code> → <code>{&#34;temp_c&#34;:18}</code> <span class="badge">mocked</span>`,
		`<span class="bad">error: search is down</span>`,
		`<p class="m">No fail_on thresholds.</p>`,
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("report-agent.html lacks %s", want)
		}
	}
}

func TestExperimentHTMLGolden(t *testing.T) {
	var buf bytes.Buffer
	e := expFixtureBuilt(t)
	if err := WriteExperimentHTML(context.Background(), &buf, e, HTMLOptions{FailOn: htmlGates(t)[:2]}); err != nil {
		t.Fatal(err)
	}
	checkHTML(t, buf.Bytes())
	golden(t, "experiment.html", buf.Bytes())
	doc := buf.String()
	for _, want := range []string{
		`<td>broken</td><td><code>failed &gt; 2</code></td><td class="n">10</td><td><span class="bad strong">breached</span>`,
		`<td class="n">1.00 [0.72, 1.00] ▲</td>`, // big's exact, significantly better
		`<h2 id="items">Items side by side (11; variants disagree on 10)</h2>`,
		`<h4>broken <span class="m">100ms</span></h4><div class="bad"><pre>connection refused</pre></div>`,
		`<h4>mini</h4><p class="m">no result</p>`, // q10 only big has
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("experiment.html lacks %s", want)
		}
	}
	// Four variants side by side on each of the 11 items.
	if n := strings.Count(doc, "<article "); n != 11 {
		t.Errorf("%d items, want 11", n)
	}
	// One histogram per scorer and variant that has it: 2 × 4.
	if n := strings.Count(doc, `<svg class="hist"`); n != 8 {
		t.Errorf("%d histograms, want 8", n)
	}
}

// TestHTMLStream: the report streamed from storage is byte for byte the
// one written from memory, for a run and an experiment.
func TestHTMLStream(t *testing.T) {
	ctx := context.Background()
	rep := fixtureReport(t)
	var mem, streamed bytes.Buffer
	if err := WriteHTML(&mem, rep, HTMLOptions{FailOn: htmlGates(t)}); err != nil {
		t.Fatal(err)
	}
	st := &fakeStore{run: fixtureRun(), results: fixtureResults()}
	head, err := FromStore(ctx, st, st.run.ID, WithoutItems())
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteStream(ctx, &streamed, head, FormatHTML, ItemSource{Store: st, RunID: st.run.ID}); err != nil {
		t.Fatal(err)
	}
	// WriteStream has no gates; compare with the same options.
	streamed.Reset()
	if err := WriteHTMLStream(ctx, &streamed, head, ItemSource{Store: st, RunID: st.run.ID}, HTMLOptions{FailOn: htmlGates(t)}); err != nil {
		t.Fatal(err)
	}
	if mem.String() != streamed.String() {
		t.Errorf("streamed HTML differs from the in-memory one:\n%s", firstDiff(mem.String(), streamed.String()))
	}

	exp, results := expFixture()
	es, err := BuildExperimentStreamStore(ctx, expStore(exp, results), exp, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mem.Reset()
	streamed.Reset()
	if err := WriteExperimentHTML(ctx, &mem, expFixtureBuilt(t), HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteExperimentHTML(ctx, &streamed, es, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	if mem.String() != streamed.String() {
		t.Errorf("streamed experiment HTML differs from the in-memory one:\n%s", firstDiff(mem.String(), streamed.String()))
	}

	// A store failing halfway is an error, not a short document passed
	// off as complete.
	st.failAt = 3
	if err := WriteHTMLStream(ctx, &bytes.Buffer{}, head, ItemSource{Store: st, RunID: st.run.ID}, HTMLOptions{}); err == nil {
		t.Error("a failing store: no error")
	}
}

func firstDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return fmt.Sprintf("at byte %d:\n%s\n---\n%s", i, a[max(0, i-80):min(len(a), i+80)], b[max(0, i-80):min(len(b), i+80)])
}

// TestHTMLBounds: a value past maxHTMLValueBytes is cut with the marker,
// a long one is folded in <details>, a short one is not.
func TestHTMLBounds(t *testing.T) {
	huge := strings.Repeat("x", 3*maxHTMLValueBytes)
	for _, tc := range []struct {
		name     string
		v        htmlValue
		long     bool
		maxBytes int
	}{
		{"short", jsonValue(evalrun.String("hello")), false, 5},
		{"at the fold", textValue(strings.Repeat("a", htmlFoldBytes)), false, htmlFoldBytes},
		{"past the fold", textValue(strings.Repeat("a", htmlFoldBytes+1)), true, htmlFoldBytes + 1},
		{"many lines", textValue(strings.Repeat("a\n", htmlFoldLines)), true, 2 * htmlFoldLines},
		{"huge text", textValue(huge), true, maxHTMLValueBytes + 64},
		{"huge JSON string", jsonValue(evalrun.String(huge)), true, maxHTMLValueBytes + 64},
		{"huge JSON object", jsonValue(json.RawMessage(`{"a":"` + huge + `"}`)), true, maxHTMLValueBytes + 64},
		{"at the cap", textValue(strings.Repeat("b", maxHTMLValueBytes)), true, maxHTMLValueBytes},
	} {
		if tc.v.Long != tc.long || len(tc.v.Text) > tc.maxBytes {
			t.Errorf("%s: long %v, %d bytes; want long %v, at most %d bytes", tc.name, tc.v.Long, len(tc.v.Text), tc.long, tc.maxBytes)
		}
		if tc.maxBytes > maxHTMLValueBytes && !strings.Contains(tc.v.Text, "… (truncated, ") {
			t.Errorf("%s: cut without the marker", tc.name)
		}
		if tc.long && len([]rune(tc.v.Summary)) > htmlSummaryRunes+32 {
			t.Errorf("%s: summary of %d runes", tc.name, len([]rune(tc.v.Summary)))
		}
	}
	if v := jsonValue(nil); !v.Null {
		t.Error("an absent value is not shown as absent")
	}
	if v := jsonValue(json.RawMessage("null")); !v.Null {
		t.Error("null is not shown as absent")
	}
	if v := jsonValue(json.RawMessage(`{"a":[1,2]}`)); v.Text != "{\n  \"a\": [\n    1,\n    2\n  ]\n}" {
		t.Errorf("an object is shown as %q, want it indented", v.Text)
	}
}

// TestHTMLRepeats: a run with repeats shows pass@k, pass^k and the flaky
// items, and each repeat of an item has its own block and anchor.
func TestHTMLRepeats(t *testing.T) {
	rep := Build(repeatsRun(), repeatsResults())
	var buf bytes.Buffer
	if err := WriteHTML(&buf, rep, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	checkHTML(t, buf.Bytes())
	doc := buf.String()
	k := rep.Repeats()
	for _, want := range []string{
		fmt.Sprintf(`<h2 id="repeats">Repeats (k = %d)</h2>`, k),
		fmt.Sprintf(`<th class="n">pass@%d</th><th class="n">pass^%d</th>`, k, k),
		fmt.Sprintf("<h3>Flaky items (%d)</h3>", len(rep.Flaky)),
		`id="i0-2"`, `<span class="m">repeat 2</span>`,
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("the report lacks %s", want)
		}
	}
	if n := strings.Count(doc, "<article "); n != len(rep.Items) {
		t.Errorf("%d item blocks, want %d", n, len(rep.Items))
	}
}

// TestHTMLFailuresCapped: the failures table stops at maxHTMLListRows
// and says how many more there are; every failed item is still listed.
func TestHTMLFailuresCapped(t *testing.T) {
	run := fixtureRun()
	n := maxHTMLListRows + 5
	var rs []*evalrun.ItemResult
	for i := range n {
		id := fmt.Sprintf("f%04d", i)
		rs = append(rs, &evalrun.ItemResult{RunID: run.ID, Index: i, ItemID: id, Item: item(id, nil),
			Error: "boom", ErrorKind: evalrun.ErrorPermanent, Attempts: 1})
	}
	run.Scorers, run.Total, run.Succeeded, run.Failed, run.PersistErrors = nil, n, 0, n, 0
	var buf bytes.Buffer
	if err := WriteHTML(&buf, Build(run, rs), HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(buf.String(), `<table class="grid" id="failure-table">`)
	table, rest, _ := strings.Cut(table, "</table>")
	if rows := strings.Count(table, "<tr><td><a href="); rows != maxHTMLListRows {
		t.Errorf("%d failure rows, want %d", rows, maxHTMLListRows)
	}
	if !strings.Contains(rest, "and 5 more: every failed item below shows its error.") {
		t.Error("no line saying how many failures are not listed")
	}
	if items := strings.Count(rest, `<article class="it f"`); items != n {
		t.Errorf("%d failed items, want %d", items, n)
	}
}

func TestLatencyHistogram(t *testing.T) {
	for _, tc := range []struct {
		max   float64
		width float64
		n     int
	}{{40, 2, 21}, {100, 5, 21}, {283.6, 20, 15}, {1, 0.05, 21}, {12345, 1000, 13}} {
		l := newLatencyCounter(&tc.max)
		if l.width != tc.width || len(l.counts) != tc.n {
			t.Errorf("max %v: width %v, %d buckets; want %v, %d", tc.max, l.width, len(l.counts), tc.width, tc.n)
		}
		l.add(&tc.max) // the maximum lands in the last bucket
		zero := 0.0
		l.add(&zero)
		if l.counts[len(l.counts)-1] != 1 || l.counts[0] != 1 {
			t.Errorf("max %v: counts %v", tc.max, l.counts)
		}
	}
	if h := newLatencyCounter(nil).hist(); h != nil {
		t.Error("no latency reported: a histogram")
	}
}

// The rule checkHTML enforces: the document can run nothing and fetch
// nothing, and everything from the run is text.
//
//   - no "<script" anywhere, in any case: escaped text reads "&lt;script";
//   - every element is one the renderer writes (no img, iframe, object,
//     embed, link, base, form, input, ...);
//   - no attribute loads or runs anything: none named src, srcset, action,
//     formaction, poster, data, background, xlink:href, or on…; href only
//     as an in-page "#anchor";
//   - no attribute value holds a URL scheme ("://", "javascript:",
//     "data:"), so an http(s) address can only be text;
//   - the style sheet has no url(, @import or expression(.
//
// It is sound because html/template escapes "<" in text and "<", ">" and
// quotes in attribute values, so every "<" of the document outside the
// style sheet opens a tag the template wrote, and every ">" inside a tag
// closes it.
func checkHTML(t *testing.T, doc []byte) {
	t.Helper()
	for _, p := range htmlProblems(doc) {
		t.Error(p)
	}
}

// htmlProblems returns every breach of the rule in doc.
func htmlProblems(doc []byte) []string {
	var out []string
	problem := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if bytes.Contains(bytes.ToLower(doc), []byte("<script")) {
		problem("the document contains <script")
	}
	css, rest, ok := cutStyle(string(doc))
	if !ok {
		return append(out, "the document has no single <style> element")
	}
	for _, bad := range []string{"url(", "@import", "expression(", "<", "://"} {
		if strings.Contains(strings.ToLower(css), bad) {
			problem("the style sheet contains %q", bad)
		}
	}
	allowed := []string{"html", "head", "meta", "title", "style", "body", "header", "main", "footer", "nav", "section",
		"h1", "h2", "h3", "h4", "p", "span", "div", "strong", "br", "code", "pre", "a", "table", "thead", "tbody", "tr",
		"th", "td", "details", "summary", "dl", "dt", "dd", "article", "ol", "li", "figure", "figcaption",
		"svg", "rect", "line", "text"}
	forbiddenAttrs := []string{"src", "srcset", "action", "formaction", "poster", "data", "background", "xlink:href",
		"style", "srcdoc", "ping", "manifest", "codebase", "archive", "lowsrc", "dynsrc"}
	tags := tagRE.FindAllStringSubmatch(rest, -1)
	if len(tags) < 3 {
		return append(out, fmt.Sprintf("only %d tags found: the scan is broken", len(tags)))
	}
	for _, m := range tags {
		name, attrs := strings.ToLower(m[2]), m[3]
		if !slices.Contains(allowed, name) {
			problem("element <%s> is not one the renderer writes", name)
		}
		left := attrRE.ReplaceAllStringFunc(attrs, func(a string) string {
			am := attrRE.FindStringSubmatch(a)
			an, av := strings.ToLower(am[1]), strings.ToLower(am[2])
			switch {
			case slices.Contains(forbiddenAttrs, an), strings.HasPrefix(an, "on"):
				problem("<%s> has attribute %s", name, an)
			case an == "href" && !strings.HasPrefix(av, "#"):
				problem("<%s> links out of the file: href=%q", name, am[2])
			}
			for _, scheme := range []string{"://", "javascript:", "data:", "vbscript:"} {
				if strings.Contains(av, scheme) {
					problem("<%s %s> holds %q: %q", name, an, scheme, am[2])
				}
			}
			return ""
		})
		if l := strings.TrimSpace(left); l != "" && l != "/" {
			problem("<%s>: attributes that do not parse: %q", name, l)
		}
	}
	return out
}

// TestHTMLRuleCatches: the rule of checkHTML finds what it is for.
func TestHTMLRuleCatches(t *testing.T) {
	const page = "<html><head><style>%s</style></head><body><p>%s</p></body></html>"
	for _, tc := range []struct{ css, body, want string }{
		{"", "<SCRIPT>x</SCRIPT>", "<script"},
		{"", `<img src=x onerror=alert(1)>`, "element <img>"},
		{"", `<a href="https://evil.example/">x</a>`, "links out of the file"},
		{"", `<a href="javascript:alert(1)">x</a>`, "links out of the file"},
		{"", `<span onclick="x">x</span>`, "has attribute onclick"},
		{"", `<span title="see http://x">x</span>`, `holds "://"`},
		{"", `<span style="color:red">x</span>`, "has attribute style"},
		{"", `<span hidden=yes>x</span>`, "attributes that do not parse"},
		{"body{background:url(x.png)}", "", `style sheet contains "url("`},
		{"@import 'x.css';", "", `style sheet contains "@import"`},
	} {
		doc := fmt.Sprintf(page, tc.css, tc.body)
		got := strings.Join(htmlProblems([]byte(doc)), "\n")
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s%s: problems %q, want one saying %q", tc.css, tc.body, got, tc.want)
		}
	}
	clean := fmt.Sprintf(page, "p{color:red}", `escaped &lt;script&gt; https://example.com <a href="#i1">x</a>`)
	if got := htmlProblems([]byte(clean)); len(got) > 0 {
		t.Errorf("a clean page: %q", got)
	}
}

var (
	tagRE  = regexp.MustCompile(`<(/?)([a-zA-Z][a-zA-Z0-9:-]*)([^>]*)>`)
	attrRE = regexp.MustCompile(`\s([a-zA-Z][a-zA-Z0-9:_-]*)(?:="([^"]*)")?`)
)

// cutStyle returns the content of the document's one <style> element and
// the document without it.
func cutStyle(doc string) (css, rest string, ok bool) {
	before, after, ok := strings.Cut(doc, "<style>")
	if !ok || strings.Count(doc, "<style") != 1 {
		return "", "", false
	}
	css, after, ok = strings.Cut(after, "</style>")
	return css, before + "<style></style>" + after, ok
}

// The payloads of the XSS tests: markup, attribute breakouts, URLs and
// schemes, template syntax, a comment and CDATA opener.
var xssPayloads = []string{
	`<script>alert(1)</script>`,
	`"><img src=x onerror=alert(1)>`,
	`'><svg onload=alert(1)>`,
	`javascript:alert(1)`,
	`</title></style></textarea><iframe src="https://evil.example/">`,
	`https://evil.example/track.png`,
	`{{.}} <!-- ]]> &amp; &#x3c;`,
}

func hostile(i int) string { return xssPayloads[i%len(xssPayloads)] }

// hostileReport is a run whose every user-supplied string carries markup:
// its name, dataset, target, scorer names, item ids, tags, inputs,
// expected outputs, outputs, reasons, errors, adversarial labels and tool
// calls.
func hostileReport() *Report {
	s1, s2 := "exact "+hostile(0), "judge "+hostile(1)
	run := &evalrun.Run{
		ID: "20260102T030405-xss00001", Name: "run " + hostile(2), Dataset: "data " + hostile(3), DatasetVersion: 1,
		Target:  evalrun.TargetInfo{Kind: "http", Name: "t " + hostile(4)},
		Scorers: []evalrun.ScorerInfo{{Name: s1, Threshold: 0.5}, {Name: s2, Threshold: 0.5}},
		Status:  evalrun.RunCompleted, Total: 2 * len(xssPayloads),
		CreatedAt: t0, StartedAt: t0, CompletedAt: t0.Add(time.Second),
	}
	var rs []*evalrun.ItemResult
	for i := range 2 * len(xssPayloads) {
		p := hostile(i)
		it := &evalrun.Item{ID: "id " + p, Input: evalrun.String("in " + p), Expected: evalrun.String("exp " + p),
			Metadata: map[string]any{"tags": []any{"tag " + p}, "adversarial": map[string]any{"category": p, "label": "label " + p}}}
		if i%3 == 0 {
			it.Input = json.RawMessage(`[{"role":"user","content":` + string(evalrun.String(p)) + `}]`)
		}
		r := &evalrun.ItemResult{RunID: run.ID, Index: i, ItemID: it.ID, Item: it, Attempts: 1, Latency: time.Duration(i+1) * time.Millisecond}
		if i%4 == 3 {
			r.Error, r.ErrorKind = "err "+p, evalrun.ErrorPermanent
		} else {
			r.Output = evalrun.String("out " + p)
			v := float64(i%2) * 0.9
			r.Scores = []evalrun.ScorerResult{
				{Scorer: s1, Score: &v, Passed: v >= 0.5, Reason: "reason " + p + strings.Repeat(" long", 80*(i%2))},
				{Scorer: s2, Error: "scorer err " + p, ErrorKind: evalrun.ErrorPermanent},
			}
			r.Trajectory = &evalrun.Trajectory{Steps: 1, Calls: []evalrun.ToolCall{
				{Name: "tool " + p, Args: json.RawMessage(`{"q":` + string(evalrun.String(p)) + `}`), Output: evalrun.String(p)},
				{Name: p, Error: "tool err " + p},
			}}
		}
		rs = append(rs, r)
	}
	for _, r := range rs {
		if r.Failed() {
			run.Failed++
		} else {
			run.Succeeded++
		}
	}
	return Build(run, rs)
}

// TestHTMLEscapesEverything: a run with markup in every string gives a
// document that passes checkHTML, in which no payload appears as markup
// and each appears escaped (shown as text).
func TestHTMLEscapesEverything(t *testing.T) {
	var buf bytes.Buffer
	conds, err := ParseConditions([]string{`pass_rate("exact ` + strings.ReplaceAll(hostile(0), `"`, `\"`) + `") < 0.9`})
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&buf, hostileReport(), HTMLOptions{FailOn: conds}); err != nil {
		t.Fatal(err)
	}
	checkHostile(t, buf.String())
}

func TestExperimentHTMLEscapesEverything(t *testing.T) {
	exp, results := expFixture()
	exp.Name = "exp " + hostile(0)
	for i, r := range exp.Runs {
		r.Variant = hostile(i + 1)
		r.Target.Name = hostile(i)
		for _, res := range results[i] {
			res.ItemID, res.Item.ID = "id "+hostile(res.Index), "id "+hostile(res.Index)
			res.Item.Input = evalrun.String("in " + hostile(res.Index+1))
			res.Item.Metadata["tags"] = []any{hostile(res.Index + 2)}
			if res.Failed() {
				res.Error = "err " + hostile(res.Index+3)
			} else {
				res.Output = evalrun.String("out " + hostile(res.Index+4))
			}
		}
	}
	x, err := evalrun.ExperimentOf(exp.Runs[0].Experiment, exp.Runs)
	if err != nil {
		t.Fatal(err)
	}
	x.Name = exp.Name
	e, err := BuildExperiment(x, expReports(x, results), CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteExperimentHTML(context.Background(), &buf, e, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	checkHostile(t, buf.String())
}

func checkHostile(t *testing.T, doc string) {
	t.Helper()
	checkHTML(t, []byte(doc))
	for _, raw := range []string{"<img", "<svg onload", "<iframe", "<script", "</title></style>", "<!-- ]]>"} {
		if strings.Contains(strings.ToLower(doc), raw) {
			t.Errorf("the document contains %q unescaped", raw)
		}
	}
	// Each payload is there, as text.
	for _, escaped := range []string{
		`&lt;script&gt;alert(1)&lt;/script&gt;`,
		`&#34;&gt;&lt;img src=x onerror=alert(1)&gt;`,
		`&#39;&gt;&lt;svg onload=alert(1)&gt;`,
		`javascript:alert(1)`,
		`&lt;/title&gt;&lt;/style&gt;&lt;/textarea&gt;&lt;iframe src=&#34;https://evil.example/&#34;&gt;`,
		`https://evil.example/track.png`,
		`{{.}} &lt;!-- ]]&gt; &amp;amp; &amp;#x3c;`,
	} {
		if !strings.Contains(doc, escaped) {
			t.Errorf("the document does not show %s as text", escaped)
		}
	}
}

// BenchmarkWriteHTML writes the HTML report of 10,000 rows of 200-byte
// values (M1's items) from memory; the figures of a streamed 100,000-item
// report are in docs/benchmarks.md ("HTML report").
func BenchmarkWriteHTML(b *testing.B) {
	run := &evalrun.Run{ID: "20260102T030405-bench001", Name: "bench", Dataset: "d", DatasetVersion: 1,
		Target: evalrun.TargetInfo{Kind: "echo"}, Scorers: []evalrun.ScorerInfo{{Name: "exact_match", Threshold: 0.5}},
		Status: evalrun.RunCompleted, CreatedAt: t0, StartedAt: t0, CompletedAt: t0.Add(time.Second)}
	const n = 10_000
	rs := make([]*evalrun.ItemResult, n)
	for i := range rs {
		text := evalrun.String(fmt.Sprintf("item %06d: what is %d + %d?", i, i, i) + strings.Repeat(".", 170))
		rs[i] = &evalrun.ItemResult{RunID: run.ID, Index: i, ItemID: fmt.Sprintf("i%06d", i),
			Item: &evalrun.Item{ID: fmt.Sprintf("i%06d", i), Input: text, Expected: text}, Output: text, Attempts: 1,
			Latency: time.Duration(i%1000) * time.Microsecond, Scores: []evalrun.ScorerResult{score("exact_match", 1, 0.5)}}
	}
	run.Total, run.Succeeded = n, n
	rep := Build(run, rs)
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := WriteHTML(&buf, rep, HTMLOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len())/n, "bytes/item")
}
