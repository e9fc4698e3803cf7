package evalrun

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ResultPager pages a run's results filtered and sorted by the store, with
// the indexes that keep a page of a 100,000-result run within milliseconds:
// the viewer's items table and API. Stores implement it as an optional
// capability, found by type assertion; the inmem, sqlite and postgres
// stores do.
type ResultPager interface {
	// QueryResults returns the page of the run's results that q selects,
	// in q's order, each with its Scores (in the run's scorer order) and
	// its dataset Item, as ScanResults gives them. An unknown run is
	// ErrNotFound; a malformed cursor, a cursor of another sort or a
	// negative limit is ErrInvalid.
	QueryResults(ctx context.Context, runID string, q ResultPageQuery) (*ResultPage, error)
}

// ResultSort is the order of a [ResultPageQuery].
type ResultSort string

const (
	// SortIndex is input order: (Index, Repeat).
	SortIndex ResultSort = ""
	// SortItemID orders by the item id, ties by (Index, Repeat).
	SortItemID ResultSort = "id"
	// SortLatency orders by the result's latency.
	SortLatency ResultSort = "latency"
	// SortScore orders by the score of ResultPageQuery.SortScorer; a
	// missing score (no score by that scorer, or a score that is nil)
	// sorts lowest.
	SortScore ResultSort = "score"
)

// MaxResultSearch is the longest text search (bytes) a [ResultPageQuery]
// takes; a longer one is ErrInvalid.
const MaxResultSearch = 1000

// ResultPageQuery selects a page of a run's results for [ResultPager]. The
// filters combine (all must hold). The zero value is the first page of
// every result in input order, of the store's default size.
type ResultPageQuery struct {
	// FailedOnly keeps the results whose target failed.
	FailedOnly bool
	// ToolErrors keeps the results with a failed tool call in their
	// trajectory.
	ToolErrors bool
	// Scorer keeps the results that did not pass that scorer: no score by
	// it (the target or the scorer failed), or, with Below nil, a score
	// below the scorer's threshold (the run's) or not passed; with Below
	// set, a score below *Below.
	Scorer string
	Below  *float64
	// Tag keeps the results whose item carries that tag (metadata.tags).
	Tag string
	// ItemID keeps the results of the item with exactly that id (its
	// repeats).
	ItemID string
	// Search keeps the results whose item id, item input or output
	// contains it, ignoring case (Unicode simple folding, as
	// strings.ToLower): plain text, no wildcards. A JSON input or output
	// is searched as stored, so a needle matches it also in its JSON
	// string form (a quote as \", < as \u003c, é as \u00e9).
	Search string
	// Sort orders the page; ties always go by (Index, Repeat) ascending.
	// Desc reverses the sort value's order (not the ties'). SortScorer
	// names the scorer of SortScore.
	Sort       ResultSort
	Desc       bool
	SortScorer string
	// After is the cursor of the last result of the previous page
	// (ResultPage.Next), nil for the first page. It is opaque and valid
	// only with the same Sort, Desc and SortScorer.
	After []byte
	// Limit is the page size (0: 50).
	Limit int
	// Count asks for ResultPage.Total, which costs a pass over the
	// matching results' keys.
	Count bool
	// SkipPayloads is as in [ResultQuery].
	SkipPayloads bool
	// SearchBudget bounds the work of a Search: the page examines at most
	// this many results (of those the other filters keep, in the
	// listing's order, after After) and returns the matches among them.
	// When the budget runs out before the page is full, ResultPage.Next
	// is the cursor of the last result examined (not necessarily a
	// match), so following Next reaches every match, each once. 0 is no
	// bound (the search reads until the page is full or the run ends).
	SearchBudget int
}

// ResultPage is a page of [ResultPager.QueryResults].
type ResultPage struct {
	Results []*ItemResult
	// Next is the cursor of the page's last result when more results
	// follow it; nil on the last page.
	Next []byte
	// Total is the number of matching results when Count was asked, -1
	// otherwise.
	Total int
	// Scanned is, for a Search with a SearchBudget, the number of results
	// the page examined (at most the budget), up to and including the
	// one Next names; 0 otherwise.
	Scanned int
}

// DefaultSearchBudget is the SearchBudget the viewer gives a search: a
// page of it reads 500 results' outputs (~5 MB at 10 KB each). At 1,000 a
// rare term's page took 50–56 ms on SQLite and PostgreSQL alike (PostgreSQL
// decompressing the outputs, SQLite reading them), over the viewer's 50 ms
// goal; the cost is per result examined (docs/benchmarks.md).
const DefaultSearchBudget = 500

// DefaultResultPageSize is the page size of a [ResultPageQuery] of Limit 0.
const DefaultResultPageSize = 50

// PageSize returns the page size q asks for.
func (q ResultPageQuery) PageSize() int {
	if q.Limit <= 0 {
		return DefaultResultPageSize
	}
	return q.Limit
}

// SortName is the sort of q as one string ("", "-latency", "score:NAME"…),
// what a cursor records so that it is refused under another sort.
func (q ResultPageQuery) SortName() string {
	s := string(q.Sort)
	if q.Sort == SortScore {
		s += ":" + q.SortScorer
	}
	if q.Desc {
		s = "-" + s
	}
	return s
}

// Check refuses a query that cannot be answered (ErrInvalid): a negative
// limit, an unknown sort, a score sort without its scorer, an over-long or
// invalid UTF-8 search, or one with a NUL byte.
func (q ResultPageQuery) Check() error {
	switch {
	case q.Limit < 0:
		return invalidf("result page: limit %d is negative", q.Limit)
	case q.Sort != SortIndex && q.Sort != SortItemID && q.Sort != SortLatency && q.Sort != SortScore:
		return invalidf("result page: unknown sort %q (want %q, %q, %q or %q)", q.Sort, SortIndex, SortItemID, SortLatency, SortScore)
	case q.SearchBudget < 0:
		return invalidf("result page: search budget %d is negative", q.SearchBudget)
	case q.Sort == SortScore && q.SortScorer == "":
		return invalidf("result page: a score sort needs its scorer")
	case len(q.Search) > MaxResultSearch:
		return invalidf("result page: the search is %d bytes; at most %d are taken", len(q.Search), MaxResultSearch)
	case !utf8.ValidString(q.Search):
		return invalidf("result page: the search is not valid UTF-8")
	case strings.IndexByte(q.Search, 0) >= 0:
		// SQLite's LIKE would end the pattern there (matching every
		// result), and PostgreSQL text cannot hold it (an error).
		return invalidf("result page: the search contains a NUL byte")
	}
	return nil
}

// SortScoreOf returns the sort value of r's score by scorer: the first
// score of that scorer, or -Inf when there is none or it is nil (missing
// scores sort lowest). Stores keep -Inf for a missing score.
func SortScoreOf(r *ItemResult, scorer string) float64 {
	for i := range r.Scores {
		if r.Scores[i].Scorer == scorer {
			if s := r.Scores[i].Score; s != nil && !math.IsNaN(*s) {
				return *s
			}
			return math.Inf(-1)
		}
	}
	return math.Inf(-1)
}

// KeepsResult reports whether q's filters keep r in run (the reference
// semantics that stores implement in their queries): r.Item must be set
// for Tag and for a search of the input.
func (q ResultPageQuery) KeepsResult(run *Run, r *ItemResult) bool {
	if q.FailedOnly && !r.Failed() {
		return false
	}
	if q.ToolErrors && (r.Trajectory == nil || !slices.ContainsFunc(r.Trajectory.Calls, func(c ToolCall) bool { return c.Error != "" })) {
		return false
	}
	if q.ItemID != "" && r.ItemID != q.ItemID {
		return false
	}
	if q.Tag != "" && !slices.Contains(r.Item.Tags(), q.Tag) {
		return false
	}
	if q.Scorer != "" && !q.belowScorer(run, r) {
		return false
	}
	if q.Search != "" {
		var input []byte
		if r.Item != nil {
			input = r.Item.Input
		}
		needles := SearchNeedles(q.Search)
		if !ContainsFolded([]byte(r.ItemID), needles) && !ContainsFolded(input, needles) && !ContainsFolded(r.Output, needles) {
			return false
		}
	}
	return true
}

func (q ResultPageQuery) belowScorer(run *Run, r *ItemResult) bool {
	threshold := DefaultThreshold
	for _, sc := range run.Scorers {
		if sc.Name == q.Scorer {
			threshold = sc.Threshold
			break
		}
	}
	for i := range r.Scores {
		sc := &r.Scores[i]
		if sc.Scorer != q.Scorer {
			continue
		}
		switch {
		case sc.Score == nil:
			return true
		case q.Below != nil:
			return *sc.Score < *q.Below
		default:
			return *sc.Score < threshold || !sc.Passed
		}
	}
	return true
}

// SearchNeedles returns the lower-cased forms under which a search matches
// stored text: the text itself and, when they differ, its forms inside a
// JSON string (quotes, backslashes and control characters escaped, with and
// without the HTML escaping of <, > and & that encoding/json does by
// default), and for non-ASCII text its ASCII-only JSON form (every
// non-ASCII character as \uXXXX, as Python's json.dumps writes by default),
// escaped both after and before folding, so that "É" finds an escaped "é"
// and an escaped "É".
func SearchNeedles(search string) []string {
	low := strings.ToLower(search)
	out := []string{low}
	add := func(e string) {
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	for _, html := range []bool{false, true} {
		add(strings.ToLower(jsonEscape(search, html)))
	}
	if !isASCIIText(search) {
		add(asciiJSONEscape(low))
		add(strings.ToLower(asciiJSONEscape(search)))
	}
	return out
}

func isASCIIText(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// asciiJSONEscape returns s as an ASCII-only JSON encoder writes it inside
// a string: jsonEscape, then every non-ASCII character as \uXXXX (a
// surrogate pair past U+FFFF), lower-case hex.
func asciiJSONEscape(s string) string {
	var b strings.Builder
	const hex = "0123456789abcdef"
	u := func(r rune) {
		b.WriteString(`\u`)
		b.WriteByte(hex[r>>12&0xf])
		b.WriteByte(hex[r>>8&0xf])
		b.WriteByte(hex[r>>4&0xf])
		b.WriteByte(hex[r&0xf])
	}
	for _, r := range jsonEscape(s, false) {
		switch {
		case r < 0x80:
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			u(r1)
			u(r2)
		default:
			u(r)
		}
	}
	return b.String()
}

// jsonEscape returns s as encoding/json writes it inside a string, without
// the quotes.
func jsonEscape(s string, html bool) string {
	var b strings.Builder
	const hex = "0123456789abcdef"
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || html && (r == '<' || r == '>' || r == '&') || r == '\u2028' || r == '\u2029':
			b.WriteString(`\u`)
			b.WriteByte(hex[r>>12&0xf])
			b.WriteByte(hex[r>>8&0xf])
			b.WriteByte(hex[r>>4&0xf])
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// ContainsFolded reports whether text, lower-cased, contains one of
// needles (lower-cased already, as SearchNeedles returns them).
func ContainsFolded(text []byte, needles []string) bool {
	if len(text) == 0 {
		return false
	}
	low := strings.ToLower(string(text))
	for _, n := range needles {
		if strings.Contains(low, n) {
			return true
		}
	}
	return false
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrInvalid)...)
}
