package web

import (
	"cmp"
	"container/heap"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/resultq"
)

// ItemQuery selects and orders a page of a run's results: the filters and
// the sort of the items table and of GET /api/runs/{id}/items, read from
// the URL query by [ParseItemQuery].
type ItemQuery struct {
	// Failed keeps only results whose target failed (failed=1).
	Failed bool
	// ToolErrors keeps only results of an agent with a failed tool call
	// (tool_errors=1).
	ToolErrors bool
	// Scorer with Below keeps the results whose score by that scorer is
	// below Below, or missing (the scorer failed or the target failed).
	// Below nil means the scorer's threshold: the results it did not pass
	// (scorer=NAME&below=0.5).
	Scorer string
	Below  *float64
	// Tag keeps the results whose item carries that tag (tag=X).
	Tag string
	// Search keeps the results whose item id contains it, ignoring case
	// (q=X).
	Search string
	// ID keeps the results of the item with exactly that id (id=X): its
	// repeats.
	ID string
	// Sort is "" (input order), "latency", "-latency" (descending),
	// "score:NAME" or "-score:NAME". Missing scores sort lowest.
	Sort string
	// From and FromRepeat start an input-order page at that result
	// (from=INDEX[.REPEAT]): the cursor of the "next" link.
	From, FromRepeat int
	// Page is the 1-based page of a sorted listing (page=N, at most
	// 1,000,000); 0 means the first.
	Page int
	// Size is the page size (size=N, 1 to 500); 0 means the server's.
	Size int
	// After is the keyset cursor of a listing paged by the store
	// (from=CURSOR, the "next" link): the page starts after that result.
	After []byte
	// searchBudget is the server's Options.SearchBudget, not a parameter.
	searchBudget int
	// counts is the server's cache of finished runs' counts, not a
	// parameter (nil: none).
	counts *countCache
}

// maxCursor bounds the length of a from= cursor (an item id is in the
// cursor of a listing sorted by id).
const maxCursor = 4096

// isIndexCursor reports whether a from= value is INDEX[.REPEAT] (digits,
// a dot, a sign: what the input-order cursor was) rather than a keyset
// cursor, whose base64 never starts with a digit or a sign.
func isIndexCursor(s string) bool {
	return s[0] >= '0' && s[0] <= '9' || s[0] == '-' || s[0] == '+' || s[0] == '.'
}

// ParseItemQuery reads an [ItemQuery] from URL values. It fails (an
// [evalrun.ErrInvalid] error naming the parameter and what it takes) on a
// parameter the items listing does not take, a malformed or out-of-range
// number and an unknown sort. Whether the scorers it names exist is the
// run's to say: see [ItemQuery.Check].
func ParseItemQuery(v url.Values) (ItemQuery, error) {
	q := ItemQuery{
		Scorer: strings.TrimSpace(v.Get("scorer")),
		Tag:    v.Get("tag"),
		Search: strings.TrimSpace(v.Get("q")),
		ID:     v.Get("id"),
		Sort:   v.Get("sort"),
	}
	if err := checkParams(v, itemsParams); err != nil {
		return q, err
	}
	var err error
	if q.Failed, err = boolParam(v, "failed"); err != nil {
		return q, err
	}
	if q.ToolErrors, err = boolParam(v, "tool_errors"); err != nil {
		return q, err
	}
	if s := strings.TrimSpace(v.Get("below")); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || !(f >= 0 && f <= 1) { // NaN fails both
			return q, badParam("below", s, "want a score from 0 to 1")
		}
		q.Below = &f
	}
	if q.Sort == "index" {
		q.Sort = ""
	}
	switch {
	case q.Sort == "", q.Sort == "latency", q.Sort == "-latency":
	case strings.HasPrefix(q.Sort, "score:") && len(q.Sort) > 6, strings.HasPrefix(q.Sort, "-score:") && len(q.Sort) > 7:
	default:
		return q, badParam("sort", q.Sort, "want latency, -latency, score:SCORER or -score:SCORER")
	}
	if s := v.Get("from"); s != "" && !isIndexCursor(s) {
		// The keyset cursor of a store-paged listing (the next link).
		if len(s) > maxCursor {
			return q, badParam("from", s[:20]+"…", fmt.Sprintf("a cursor is at most %d characters: follow the next link of a listing", maxCursor))
		}
		after, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			return q, badParam("from", s, "want INDEX[.REPEAT] or the cursor of a next link")
		}
		q.After = after
	} else if s != "" {
		idx, rep, hasRep := strings.Cut(s, ".")
		if q.From, err = parseBounded("from", idx, 0, maxIndex); err != nil {
			return q, badParam("from", s, fmt.Sprintf("want INDEX or INDEX.REPEAT, whole numbers from 0 to %d", maxIndex))
		}
		if hasRep {
			if q.FromRepeat, err = parseBounded("from", rep, 0, maxIndex); err != nil {
				return q, badParam("from", s, fmt.Sprintf("want INDEX or INDEX.REPEAT, whole numbers from 0 to %d", maxIndex))
			}
		}
	}
	if q.Page, err = intParam(v, "page", 1, maxPage, 0); err != nil {
		return q, err
	}
	if q.Page > 1 && q.Sort == "" {
		// Input order pages with from= (the next link); page=N used to
		// be ignored there, answering page 1 again.
		return q, badParam("page", v.Get("page"), "page= pages a sorted listing (sort=); in input order follow the next link (from=INDEX)")
	}
	if q.Size, err = intParam(v, "size", 1, maxPageSize, 0); err != nil {
		return q, err
	}
	return q, nil
}

// Check refuses a query that names a scorer (scorer=, sort=score:) that
// run does not have, or compares a score (below=) without naming its
// scorer; the error ([evalrun.ErrInvalid]) lists the run's scorers.
func (q ItemQuery) Check(run *evalrun.Run) error {
	if q.Scorer != "" {
		if err := checkScorer(run, "scorer="+q.Scorer, q.Scorer); err != nil {
			return err
		}
	}
	if q.Below != nil && q.Scorer == "" {
		return invalidf("below= needs scorer=NAME, the scorer whose score it compares")
	}
	if scorer, byLatency, _ := q.sortKey(); q.Sort != "" && !byLatency {
		return checkScorer(run, "sort="+q.Sort, scorer)
	}
	return nil
}

// Values returns the query as URL values (the inverse of
// [ParseItemQuery]), without the paging fields.
func (q ItemQuery) Values() url.Values {
	v := url.Values{}
	if q.Failed {
		v.Set("failed", "1")
	}
	if q.ToolErrors {
		v.Set("tool_errors", "1")
	}
	if q.Scorer != "" {
		v.Set("scorer", q.Scorer)
	}
	if q.Below != nil {
		v.Set("below", strconv.FormatFloat(*q.Below, 'g', -1, 64))
	}
	if q.Tag != "" {
		v.Set("tag", q.Tag)
	}
	if q.ID != "" {
		v.Set("id", q.ID)
	}
	if q.Search != "" {
		v.Set("q", q.Search)
	}
	if q.Sort != "" {
		v.Set("sort", q.Sort)
	}
	return v
}

// sortKey returns the scorer of a score sort (or latency) and whether it is
// descending.
func (q ItemQuery) sortKey() (scorer string, latency, desc bool) {
	s := q.Sort
	desc = strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if s == "latency" {
		return "", true, desc
	}
	return strings.TrimPrefix(s, "score:"), false, desc
}

// filtered reports whether the query filters beyond what the store does
// (FailedOnly).
func (q ItemQuery) filtered() bool {
	return q.Scorer != "" || q.Tag != "" || q.Search != "" || q.ID != "" || q.ToolErrors
}

// matcher returns the filter of q over run's results.
func (q ItemQuery) matcher(run *evalrun.Run) func(*evalrun.ItemResult) bool {
	threshold := evalrun.DefaultThreshold
	for _, sc := range run.Scorers {
		if sc.Name == q.Scorer {
			threshold = sc.Threshold
		}
	}
	search := strings.ToLower(q.Search)
	return func(r *evalrun.ItemResult) bool {
		if q.Failed && !r.Failed() {
			return false
		}
		if q.ToolErrors && !hasToolError(r.Trajectory) {
			return false
		}
		if q.ID != "" && r.ItemID != q.ID {
			return false
		}
		if search != "" && !strings.Contains(strings.ToLower(r.ItemID), search) {
			return false
		}
		if q.Tag != "" && !slices.Contains(r.Item.Tags(), q.Tag) {
			return false
		}
		if q.Scorer != "" {
			sc := scoreOf(r, q.Scorer)
			switch {
			case sc == nil || sc.Score == nil: // no score: below anything
			case q.Below != nil:
				if *sc.Score >= *q.Below {
					return false
				}
			default:
				if *sc.Score >= threshold && sc.Passed {
					return false
				}
			}
		}
		return true
	}
}

// hasToolError reports whether a tool call of t failed.
func hasToolError(t *evalrun.Trajectory) bool {
	if t == nil {
		return false
	}
	return slices.ContainsFunc(t.Calls, func(c evalrun.ToolCall) bool { return c.Error != "" })
}

func scoreOf(r *evalrun.ItemResult, scorer string) *evalrun.ScorerResult {
	for i := range r.Scores {
		if r.Scores[i].Scorer == scorer {
			return &r.Scores[i]
		}
	}
	return nil
}

// itemPage is one page of a run's results.
type itemPage struct {
	Results []*evalrun.ItemResult
	// Total is the number of matching results; -1 when unknown (an
	// input-order page stops scanning once it is full).
	Total int
	// Next is the cursor of the next input-order page ("" when none);
	// NextPage the next sorted page (0 when none).
	Next     string
	NextPage int
	Page     int
	Pages    int
	// Scanned is, for a search, how many results this page examined
	// (evalrun.ResultPage.Scanned); Partial that its budget ran out before
	// the page filled: Next continues the search after the last result
	// examined.
	Scanned int
	Partial bool
}

// errPageFull stops a scan once a page is complete.
var errPageFull = errors.New("page full")

// queryItems returns the page of run's results that q selects. Memory is
// bounded by the page (and, for a sorted page past the first, by a few
// words per result up to the page's end), never by the run.
func queryItems(ctx context.Context, store evalrun.RunStore, run *evalrun.Run, q ItemQuery) (*itemPage, error) {
	if pager, ok := store.(evalrun.ResultPager); ok && q.Page <= 1 {
		return queryPager(ctx, pager, run, q)
	}
	if q.After != nil {
		return nil, invalidf("from= takes INDEX[.REPEAT] here: this store does not page with cursors")
	}
	if q.Sort != "" {
		return querySorted(ctx, store, run, q)
	}
	match := q.matcher(run)
	page := &itemPage{Total: -1}
	rq := evalrun.ResultQuery{FromIndex: q.From, FailedOnly: q.Failed}
	if !q.filtered() {
		rq.Limit = q.Size + 1 + q.FromRepeat
	} else {
		// A filtered page may scan the whole run for its matches.
		rq.SkipAgentData = q.skipAgentData()
	}
	err := store.ScanResults(ctx, run.ID, rq, func(r *evalrun.ItemResult) error {
		if r.Index == q.From && r.Repeat < q.FromRepeat || !match(r) {
			return nil
		}
		if len(page.Results) == q.Size {
			page.Next = strconv.Itoa(r.Index)
			if r.Repeat > 0 {
				page.Next += "." + strconv.Itoa(r.Repeat)
			}
			return errPageFull
		}
		page.Results = append(page.Results, r)
		return nil
	})
	if err != nil && !errors.Is(err, errPageFull) {
		return nil, err
	}
	if rq.SkipAgentData {
		if err := readAgentData(ctx, store, run.ID, page.Results); err != nil {
			return nil, err
		}
	}
	return page, nil
}

// skipAgentData reports whether the scans that look for the results of a
// page may leave out the agent data (ResultQuery.SkipAgentData), decoding
// which is most of the time of a scan of an agent run: the filters but
// tool_errors= do not look at it, and the page's own results get it back
// by [readAgentData].
func (q ItemQuery) skipAgentData() bool {
	return !q.ToolErrors
}

// readAgentData reads the agent data (trajectory, the item's tool mocks
// and expected trajectory) of results, read without it: the page shows
// them (the Calls column, the API's trajectories). One short read per
// distinct index (its repeats are contiguous from 0), so the cost is the
// page's, whatever the run's size. A result no longer found (rewritten
// meanwhile) keeps what it has.
func readAgentData(ctx context.Context, store evalrun.RunStore, runID string, results []*evalrun.ItemResult) error {
	byKey := make(map[[2]int]*evalrun.ItemResult, len(results))
	lastRepeat := map[int]int{}
	for _, r := range results {
		byKey[[2]int{r.Index, r.Repeat}] = r
		lastRepeat[r.Index] = max(lastRepeat[r.Index], r.Repeat)
	}
	indexes := slices.Sorted(maps.Keys(lastRepeat))
	for _, index := range indexes {
		err := store.ScanResults(ctx, runID, evalrun.ResultQuery{FromIndex: index, Limit: lastRepeat[index] + 1}, func(full *evalrun.ItemResult) error {
			if full.Index != index {
				return errPageFull
			}
			r := byKey[[2]int{full.Index, full.Repeat}]
			if r == nil {
				return nil
			}
			r.Trajectory = full.Trajectory
			if r.Item != nil && full.Item != nil {
				r.Item.ToolMocks, r.Item.ExpectedTrajectory = full.Item.ToolMocks, full.Item.ExpectedTrajectory
			}
			return nil
		})
		if err != nil && !errors.Is(err, errPageFull) {
			return err
		}
	}
	return nil
}

// sortEntry is a result's place in a sorted listing.
type sortEntry struct {
	key           float64
	index, repeat int
	res           *evalrun.ItemResult // kept only for the first page
}

// sortHeap keeps the best-ranked n entries: it is a heap of the worst one
// on top, evicted when a better one comes.
type sortHeap struct {
	e    []sortEntry
	desc bool
}

// before reports whether a ranks before b in the listing.
func (h *sortHeap) before(a, b *sortEntry) bool {
	if a.key != b.key {
		return (a.key < b.key) != h.desc
	}
	return cmp.Or(cmp.Compare(a.index, b.index), cmp.Compare(a.repeat, b.repeat)) < 0
}

func (h *sortHeap) Len() int           { return len(h.e) }
func (h *sortHeap) Less(i, j int) bool { return h.before(&h.e[j], &h.e[i]) }
func (h *sortHeap) Swap(i, j int)      { h.e[i], h.e[j] = h.e[j], h.e[i] }
func (h *sortHeap) Push(x any)         { h.e = append(h.e, x.(sortEntry)) }
func (h *sortHeap) Pop() any {
	x := h.e[len(h.e)-1]
	h.e = h.e[:len(h.e)-1]
	return x
}

// querySorted streams every result once, keeping the best-ranked
// page×size entries in a heap; for the first page the entries hold their
// results, for later pages a second scan fetches the page's results.
func querySorted(ctx context.Context, store evalrun.RunStore, run *evalrun.Run, q ItemQuery) (*itemPage, error) {
	scorer, byLatency, desc := q.sortKey()
	match := q.matcher(run)
	pageNo := max(q.Page, 1)
	offset := (pageNo - 1) * q.Size
	keep := offset + q.Size
	first := offset == 0
	h := &sortHeap{desc: desc}
	total := 0
	skip := q.skipAgentData()
	err := store.ScanResults(ctx, run.ID, evalrun.ResultQuery{FailedOnly: q.Failed, SkipAgentData: skip}, func(r *evalrun.ItemResult) error {
		if !match(r) {
			return nil
		}
		total++
		e := sortEntry{index: r.Index, repeat: r.Repeat}
		if byLatency {
			e.key = float64(r.Latency)
		} else if sc := scoreOf(r, scorer); sc != nil && sc.Score != nil {
			e.key = *sc.Score
		} else {
			e.key = math.Inf(-1)
		}
		if first {
			e.res = r
		}
		if h.Len() < keep {
			heap.Push(h, e)
		} else if h.before(&e, &h.e[0]) {
			h.e[0] = e
			heap.Fix(h, 0)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(h.e, func(a, b sortEntry) int {
		if h.before(&a, &b) {
			return -1
		}
		return 1
	})
	page := &itemPage{Total: total, Page: pageNo, Pages: max((total+q.Size-1)/q.Size, 1)}
	if pageNo < page.Pages {
		page.NextPage = pageNo + 1
	}
	if offset >= len(h.e) {
		return page, nil
	}
	entries := h.e[offset:]
	if first {
		for _, e := range entries {
			page.Results = append(page.Results, e.res)
		}
		if skip {
			if err := readAgentData(ctx, store, run.ID, page.Results); err != nil {
				return nil, err
			}
		}
		return page, nil
	}
	// Second scan: fetch the page's results, from the smallest index on,
	// stopping once all are found.
	want := make(map[[2]int]int, len(entries))
	from := entries[0].index
	for i, e := range entries {
		want[[2]int{e.index, e.repeat}] = i
		from = min(from, e.index)
	}
	page.Results = make([]*evalrun.ItemResult, len(entries))
	found := 0
	// It may cross most of the run: it skips the agent data as well.
	err = store.ScanResults(ctx, run.ID, evalrun.ResultQuery{FromIndex: from, FailedOnly: q.Failed, SkipAgentData: skip}, func(r *evalrun.ItemResult) error {
		if i, ok := want[[2]int{r.Index, r.Repeat}]; ok {
			page.Results[i] = r
			if found++; found == len(entries) {
				return errPageFull
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errPageFull) {
		return nil, err
	}
	page.Results = slices.DeleteFunc(page.Results, func(r *evalrun.ItemResult) bool { return r == nil })
	if skip {
		if err := readAgentData(ctx, store, run.ID, page.Results); err != nil {
			return nil, err
		}
	}
	return page, nil
}

// getResult returns the result (index, repeat) of a run, or
// evalrun.ErrNotFound.
func getResult(ctx context.Context, store evalrun.RunStore, runID string, index, repeat int) (*evalrun.ItemResult, error) {
	var found *evalrun.ItemResult
	err := store.ScanResults(ctx, runID, evalrun.ResultQuery{FromIndex: index, Limit: repeat + 1}, func(r *evalrun.ItemResult) error {
		if r.Index == index && r.Repeat == repeat {
			found = r
			return errPageFull
		}
		if r.Index > index {
			return errPageFull
		}
		return nil
	})
	if err != nil && !errors.Is(err, errPageFull) {
		return nil, err
	}
	if found == nil {
		return nil, fmt.Errorf("result %d (repeat %d) of run %s: %w", index, repeat, runID, evalrun.ErrNotFound)
	}
	return found, nil
}

// queryPager returns the page of run's results that q selects, filtered,
// sorted and paged by the store (keyset cursors in from=): a page costs
// the same at any depth. A sorted listing counts its matches (Total).
// page=N (N > 1), the old way to page a sorted listing, goes through
// querySorted.
func queryPager(ctx context.Context, pager evalrun.ResultPager, run *evalrun.Run, q ItemQuery) (*itemPage, error) {
	scorer, byLatency, desc := q.sortKey()
	rq := evalrun.ResultPageQuery{
		FailedOnly: q.Failed, ToolErrors: q.ToolErrors, Scorer: q.Scorer, Below: q.Below, Tag: q.Tag,
		ItemID: q.ID, Search: q.Search, Limit: q.Size, After: q.After,
		// A search's count would read every output: not counted.
		Count: q.Sort != "" && q.Search == "",
	}
	if q.Search != "" {
		// A page of a search reads a bounded number of outputs, however
		// rare the term; the user follows Next to search further.
		rq.SearchBudget = cmp.Or(q.searchBudget, evalrun.DefaultSearchBudget)
	}
	switch {
	case q.Sort == "":
	case byLatency:
		rq.Sort, rq.Desc = evalrun.SortLatency, desc
	default:
		rq.Sort, rq.Desc, rq.SortScorer = evalrun.SortScore, desc, scorer
	}
	if rq.After == nil && (q.From > 0 || q.FromRepeat > 0) {
		// from=INDEX[.REPEAT]: the page starts at that result, so after
		// the one just before it.
		c := resultq.Cursor{Index: q.From, Repeat: q.FromRepeat - 1}
		if q.FromRepeat == 0 {
			c = resultq.Cursor{Index: q.From - 1, Repeat: math.MaxInt32}
		}
		c.Sort = rq.SortName()
		if q.Sort == "" {
			rq.After = c.Encode()
		}
	}
	if rq.After != nil {
		rq.Count = false // counted on the first page
	}
	key, cached := "", false
	total := -1
	if rq.Count {
		key = countKey(run, q)
		if total, cached = q.counts.get(key); cached {
			rq.Count = false
		}
	}
	// One more than the page: an input-order listing's next link names
	// the next result (from=INDEX[.REPEAT], as it always did).
	rq.Limit = q.Size + 1
	p, err := pager.QueryResults(ctx, run.ID, rq)
	if err != nil {
		return nil, err
	}
	if cached {
		p.Total = total
	} else {
		q.counts.put(key, p.Total)
	}
	page := &itemPage{Results: p.Results, Total: p.Total, Page: 1, Scanned: p.Scanned}
	if p.Total >= 0 {
		page.Pages = max((p.Total+q.Size-1)/q.Size, 1)
	}
	if len(p.Results) > q.Size {
		page.Results = p.Results[:q.Size]
		if q.Sort == "" {
			r := p.Results[q.Size]
			page.Next = strconv.Itoa(r.Index)
			if r.Repeat > 0 {
				page.Next += "." + strconv.Itoa(r.Repeat)
			}
		} else {
			page.Next = base64.RawURLEncoding.EncodeToString(resultq.Of(rq, page.Results[q.Size-1]).Encode())
			if q.After == nil {
				page.NextPage = 2 // next_page, for API clients of page=N
			}
		}
	} else if p.Next != nil {
		// The search's budget ran out: the cursor of the last result
		// examined, in any sort. The page is partial only when it is short;
		// one whose size-th match was the last result examined is full.
		page.Partial = len(page.Results) < q.Size
		page.Next = base64.RawURLEncoding.EncodeToString(p.Next)
	}
	return page, nil
}
