package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// One item carrying 20,000 distinct tags (a dataset from an untrusted pull
// request, or tags generated per user) must not blow the HTML report up:
// the cohort table stops at maxHTMLListRows rows and an item's header at
// maxHTMLTags tags, each saying how many more there are (the JSON report
// has them all).
func TestHTMLManyTagsBounded(t *testing.T) {
	const n = 20000
	tags := make([]any, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("tag-%05d", i)
	}
	rs := fixtureResults()
	rs[0].Item = item(rs[0].ItemID, tags)
	rep := Build(fixtureRun(), rs)
	var buf bytes.Buffer
	if err := WriteHTML(&buf, rep, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	checkHTML(t, buf.Bytes())
	doc := buf.String()
	_, cohorts, _ := strings.Cut(doc, `<table class="grid" id="cohort-table">`)
	cohorts, afterCohorts, _ := strings.Cut(cohorts, "</table>")
	if rows := strings.Count(cohorts, "<tr><td>"); rows > maxHTMLListRows {
		t.Errorf("%d cohort rows, want at most %d", rows, maxHTMLListRows)
	}
	if !strings.Contains(afterCohorts[:200], "more cohorts (the JSON report lists them all)") {
		t.Error("no line saying how many cohorts are not listed")
	}
	_, items, _ := strings.Cut(doc, `<h2 id="items">`)
	first, _, _ := strings.Cut(items, "</h3>")
	if got := strings.Count(first, `<span class="tag">`); got != maxHTMLTags {
		t.Errorf("the first item shows %d tags, want %d", got, maxHTMLTags)
	}
	if want := "and " + Thousands(n-maxHTMLTags) + " more tags"; !strings.Contains(first, want) {
		t.Errorf("the first item's header lacks %q", want)
	}
	if len(doc) > 1<<20 {
		t.Errorf("report of 6 items is %d bytes", len(doc))
	}
}
