package sqlstore

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/resultq"
)

// PageSQL builds the queries of [evalrun.ResultPager] for SQLite (Postgres
// false: ? placeholders) or PostgreSQL ($n). Both stores keep the same
// tables for it (migration 007): score_keys (a row per result and run
// scorer, a missing score as -Inf, ordered as a score sort reads it) and
// item_tags (an item row's tags, filled by a trigger).
type PageSQL struct {
	Postgres bool
	args     []any
}

func (b *PageSQL) arg(v any) string {
	b.args = append(b.args, v)
	if b.Postgres {
		return "$" + strconv.Itoa(len(b.args))
	}
	return "?"
}

// Keys returns the query of the keys of a page: idx, rep and the sort
// value (a number, a string) of up to limit results of run matching q after
// the cursor, in q's order; with count, the query counting every matching
// result instead (of results alone: every result has its score_keys rows,
// and an unfiltered count reads a narrow index).
func (b *PageSQL) Keys(run *evalrun.Run, version int, q evalrun.ResultPageQuery, after *resultq.Cursor, limit int, count bool) (string, []any) {
	b.args = nil
	var sb strings.Builder
	valNum, valStr, idx, rep := "0", "''", "r.idx", "r.rep"
	switch q.Sort {
	case evalrun.SortItemID:
		valStr = "r.item_id"
	case evalrun.SortLatency:
		valNum = "r.latency_ns"
	case evalrun.SortScore:
		valNum, idx, rep = "k.score", "k.idx", "k.rep"
	}
	if count {
		sb.WriteString("SELECT count(*)")
	} else {
		sb.WriteString("SELECT " + idx + ", " + rep + ", " + valNum + ", " + valStr)
	}
	filtered := q.FailedOnly || q.ItemID != "" || q.Tag != "" || q.ToolErrors || q.Scorer != "" || q.Search != ""
	// Filters of the item alone (tag=, id=) keep whole indexes: repeats
	// share their item.
	itemOnly := filtered && !q.FailedOnly && !q.ToolErrors && q.Scorer == "" && q.Search == ""
	closeSub := false
	if q.Sort == evalrun.SortScore && !count && itemOnly {
		// score_keys alone, tested against the set of the kept indexes
		// (read once from results_item, not the results' rows): a
		// descending sort reads a whole run of equal scores to order its
		// ties, and joining each of those rows to its result cost SQLite
		// ~1 s for a tag at 100,000 results.
		sb.WriteString(" FROM score_keys k WHERE k.run_id = " + b.arg(run.ID) + " AND k.scorer = " + b.arg(q.SortScorer) +
			" AND k.idx IN (SELECT r.idx FROM results r WHERE r.run_id = " + b.arg(run.ID))
		closeSub = true
	} else if q.Sort == evalrun.SortScore && !count && !filtered {
		// score_keys alone: a descending sort orders the ties of a score
		// by (idx, rep) reading this narrow index, not the results' rows.
		sb.WriteString(" FROM score_keys k WHERE k.run_id = " + b.arg(run.ID) + " AND k.scorer = " + b.arg(q.SortScorer))
	} else if q.Sort == evalrun.SortScore && !count {
		// CROSS JOIN: SQLite reads score_keys first, in the order asked.
		sb.WriteString(" FROM score_keys k CROSS JOIN results r WHERE k.run_id = " + b.arg(run.ID) +
			" AND k.scorer = " + b.arg(q.SortScorer) + " AND r.run_id = k.run_id AND r.idx = k.idx AND r.rep = k.rep")
	} else {
		sb.WriteString(" FROM results r")
		if q.FailedOnly && !b.Postgres {
			// SQLite would walk the primary key (the order asked), reading
			// ~50 results' rows per failed one at a 2% failure rate.
			sb.WriteString(" INDEXED BY results_failed")
		}
		sb.WriteString(" WHERE r.run_id = " + b.arg(run.ID))
	}
	tagCol := ""
	if q.Tag != "" {
		// Not a count: a membership test (+ in SQLite) and not, as SQLite
		// would plan it, one lookup per tagged item for each row read.
		tagCol = "r.item_id"
		if !b.Postgres && !count && !closeSub {
			tagCol = "+r.item_id"
		}
	}
	sb.WriteString(b.filters(run, version, q, tagCol))
	if closeSub {
		sb.WriteString(")")
	}
	if count {
		return sb.String(), b.args
	}
	cursorValue := func(c *resultq.Cursor) (v any, val string) {
		switch q.Sort {
		case evalrun.SortItemID:
			return c.Str, valStr
		case evalrun.SortLatency:
			return int64(c.Num), valNum
		}
		return c.Num, valNum
	}
	if after != nil {
		v, val := cursorValue(after)
		switch {
		case q.Sort == evalrun.SortIndex:
			sb.WriteString(" AND (" + idx + ", " + rep + ") > (" + b.arg(int64(after.Index)) + ", " + b.arg(int64(after.Repeat)) + ")")
		case !q.Desc:
			// The first term is a plain range of the sort's index.
			sb.WriteString(" AND " + val + " >= " + b.arg(v) + " AND (" + val + ", " + idx + ", " + rep + ") > (" + b.arg(v) + ", " +
				b.arg(int64(after.Index)) + ", " + b.arg(int64(after.Repeat)) + ")")
		default:
			sb.WriteString(" AND " + val + " <= " + b.arg(v) + " AND (" + val + " < " + b.arg(v) + " OR (" + idx + ", " + rep + ") > (" +
				b.arg(int64(after.Index)) + ", " + b.arg(int64(after.Repeat)) + "))")
		}
	}
	sb.WriteString(" ORDER BY ")
	switch q.Sort {
	case evalrun.SortItemID:
		sb.WriteString(valStr)
	case evalrun.SortLatency, evalrun.SortScore:
		sb.WriteString(valNum)
	}
	if q.Sort != evalrun.SortIndex {
		if q.Desc {
			sb.WriteString(" DESC")
		}
		sb.WriteString(", ")
	}
	sb.WriteString(idx + ", " + rep + " LIMIT " + b.arg(int64(limit)))
	return sb.String(), b.args
}

// filters returns the conditions (each " AND …") on result r of q's
// filters. A tag is tested as tagCol IN (the tag's items) when tagCol is
// set (the list built once per query), else as a correlated EXISTS by
// index per row (dataset_items_item, item_tags' key): the cheaper one when
// a query reads few rows, as a walk of tied scores does.
func (b *PageSQL) filters(run *evalrun.Run, version int, q evalrun.ResultPageQuery, tagCol string) string {
	var sb strings.Builder
	w := func(s string) { sb.WriteString(s) }
	if q.FailedOnly {
		w(" AND r.error <> ''")
	}
	if q.ItemID != "" {
		w(" AND r.item_id = " + b.arg(q.ItemID))
	}
	validItem := func(alias string) string { return b.validItem(run, version, alias) }
	if q.Tag != "" && tagCol != "" {
		// CROSS JOIN: SQLite reads the tag's rows first, rather than
		// every item of the dataset.
		w(" AND " + tagCol + " IN (SELECT ti.item_id FROM item_tags t CROSS JOIN dataset_items ti WHERE ti.id = t.item_row AND t.tag = " +
			b.arg(q.Tag) + " AND " + validItem("ti") + ")")
	} else if q.Tag != "" {
		// CROSS JOIN: the result's item first (dataset_items_item), then
		// its tag by item_tags' key.
		w(" AND EXISTS (SELECT 1 FROM dataset_items ti CROSS JOIN item_tags t WHERE " + validItem("ti") +
			" AND ti.item_id = r.item_id AND t.tag = " + b.arg(q.Tag) + " AND t.item_row = ti.id)")
	}
	if q.ToolErrors {
		if b.Postgres {
			w(` AND r.trajectory IS NOT NULL AND EXISTS (SELECT 1 FROM jsonb_array_elements(convert_from(r.trajectory, 'UTF8')::jsonb -> 'calls') c
				WHERE COALESCE(c ->> 'error', '') <> '')`)
		} else {
			w(` AND r.trajectory IS NOT NULL AND EXISTS (SELECT 1 FROM json_each(CAST(r.trajectory AS TEXT), '$.calls') c
				WHERE COALESCE(json_extract(c.value, '$.error'), '') <> '')`)
		}
	}
	if q.Scorer != "" {
		w(" AND NOT EXISTS (SELECT 1 FROM scores s WHERE s.run_id = r.run_id AND s.idx = r.idx AND s.rep = r.rep AND s.scorer = " +
			b.arg(q.Scorer) + " AND s.score IS NOT NULL AND ")
		if q.Below != nil {
			w("s.score >= " + b.arg(*q.Below) + ")")
		} else {
			threshold := evalrun.DefaultThreshold
			for _, sc := range run.Scorers {
				if sc.Name == q.Scorer {
					threshold = sc.Threshold
					break
				}
			}
			w("s.score >= " + b.arg(threshold) + " AND s.passed)")
		}
	}
	if q.Search != "" {
		w(" AND " + b.searchClause(run, version, q.Search))
	}
	return sb.String()
}

// validItem is the condition that the dataset_items row alias is of the
// run's dataset at version.
func (b *PageSQL) validItem(run *evalrun.Run, version int, alias string) string {
	v := int64(version)
	return alias + ".dataset = " + b.arg(run.Dataset) + " AND " + alias + ".valid_from <= " + b.arg(v) +
		" AND (" + alias + ".valid_to IS NULL OR " + alias + ".valid_to > " + b.arg(v) + ")"
}

// searchClause is the condition that result r's item id, output or item
// input contains search (evalrun.ResultPageQuery.Search).
func (b *PageSQL) searchClause(run *evalrun.Run, version int, search string) string {
	needles := evalrun.SearchNeedles(search)
	var contains func(text string) string
	if b.Postgres {
		contains = func(text string) string {
			var parts []string
			for _, n := range needles {
				parts = append(parts, "strpos(lower("+text+"), "+b.arg(n)+") > 0")
			}
			return "(" + strings.Join(parts, " OR ") + ")"
		}
	} else if isASCII(needles) {
		// SQLite's LIKE folds ASCII only, which is all an ASCII needle
		// can match: a built-in, without a call into Go per row, and a
		// quarter of the CPU of instr(lower(…)), which copies the text
		// (measured here on 100,000 2 KB outputs: 0.1 s against 0.4 s).
		// CAST: LIKE does not match inside a BLOB.
		contains = func(text string) string {
			var parts []string
			for _, n := range needles {
				parts = append(parts, "CAST("+text+" AS TEXT) LIKE "+b.arg("%"+likeEscaper.Replace(n)+"%")+` ESCAPE '\'`)
			}
			return "(" + strings.Join(parts, " OR ") + ")"
		}
	} else {
		joined, _ := json.Marshal(needles) // strings: cannot fail
		contains = func(text string) string { return "evalrun_search(" + text + ", " + b.arg(string(joined)) + ")" }
	}
	text := func(col string) string {
		if b.Postgres && isASCII(needles) {
			// Collation "C", whose lower() folds ASCII only: all an ASCII
			// needle can match (as SQLite's LIKE above), and a byte loop
			// instead of the locale's case mapping per character.
			return "(convert_from(" + col + ", 'UTF8') COLLATE \"C\")"
		}
		if b.Postgres {
			// The database's collation folds the rest of Unicode.
			return "(convert_from(" + col + ", 'UTF8') COLLATE \"default\")"
		}
		return col
	}
	return "(" + contains("r.item_id") + " OR " + contains(text("r.output")) +
		" OR EXISTS (SELECT 1 FROM dataset_items si WHERE si.item_id = r.item_id AND " + b.validItem(run, version, "si") + " AND " + contains(text("si.input")) + "))"
}

// SearchIn returns the query of the keys (idx, rep, 0, ”) of run's results of
// the given indexes that match search: a chunk of a budgeted search's
// window, read by primary key whatever the listing's order.
func (b *PageSQL) SearchIn(run *evalrun.Run, version int, search string, indexes []int64) (string, []any) {
	b.args = nil
	if b.Postgres {
		run0 := b.arg(run.ID)
		in := "r.idx = ANY (" + b.arg(indexes) + "::bigint[])"
		return "SELECT r.idx, r.rep, 0, '' FROM results r WHERE r.run_id = " + run0 + " AND " + in + " AND " + b.searchClause(run, version, search), b.args
	}
	// SQLite: a seek per index costs ~7 µs (~13 µs when they are far
	// apart), as results is WITHOUT ROWID and every key compared on the
	// way down is a whole row, read from its overflow pages (~10 KB for a
	// 10 KB output); a step along the table ~1 µs. So nearby indexes are
	// read as one range (a seek, then steps), skipping the rows between
	// them (+r.idx: a test, not a second way in) before their outputs are
	// read: 1,000 consecutive indexes take 7.5 ms of seeks, 1.5 ms as one
	// range (docs/benchmarks.md). Scattered indexes (a descending score
	// sort's window) keep a seek each: a range per index costs more than
	// the list.
	list, _ := json.Marshal(indexes) // integers: cannot fail
	ranges := IndexRanges(indexes, searchRangeGap)
	if 2*len(ranges) > len(indexes) {
		run0 := b.arg(run.ID)
		return "SELECT r.idx, r.rep, 0, '' FROM results r WHERE r.run_id = " + run0 + " AND r.idx IN (SELECT value FROM json_each(" + b.arg(string(list)) + "))" +
			" AND " + b.searchClause(run, version, search), b.args
	}
	joined, _ := json.Marshal(ranges)
	// In the order of the text: SQLite's ? are positional.
	rangesArg := b.arg(string(joined))
	run0 := b.arg(run.ID)
	listArg := b.arg(string(list))
	return "SELECT r.idx, r.rep, 0, '' FROM json_each(" + rangesArg + ") j CROSS JOIN results r WHERE r.run_id = " + run0 +
		" AND r.idx BETWEEN j.value->>0 AND j.value->>1 AND +r.idx IN (SELECT value FROM json_each(" + listArg + "))" +
		" AND " + b.searchClause(run, version, search), b.args
}

// searchRangeGap is the most indexes between two of a chunk that SearchIn
// reads through rather than seeking again (SQLite): stepping over 4 rows
// costs less than a seek.
const searchRangeGap = 4

// IndexRanges returns indexes (in any order, repeated or not) as sorted,
// disjoint [first, last] ranges, joining two indexes at most gap apart
// (gap indexes between them not listed) into one range.
func IndexRanges(indexes []int64, gap int64) [][2]int64 {
	sorted := slices.Clone(indexes)
	slices.Sort(sorted)
	var out [][2]int64
	for _, i := range sorted {
		if n := len(out); n > 0 && i-out[n-1][1] <= gap+1 {
			out[n-1][1] = max(out[n-1][1], i)
			continue
		}
		out = append(out, [2]int64{i, i})
	}
	return out
}

// PageKeys returns the keys of the page q selects after the cursor, with
// the page's Next cursor and Scanned count, running the queries of b
// through read (which scans rows of idx, rep, number, string). A search
// with a budget reads the keys of its window first (the results the other
// filters keep, at most the budget, without reading outputs), then
// searches the window's results by primary key, a growing chunk at a time
// in the window's order, until the page is full: never more than the
// window, however the listing is sorted (a range of a descending score
// sort would read whole runs of tied scores).
func (b *PageSQL) PageKeys(run *evalrun.Run, version int, q evalrun.ResultPageQuery, after *resultq.Cursor,
	read func(query string, args []any) ([]resultq.Cursor, error)) (keys []resultq.Cursor, next []byte, scanned int, err error) {
	size := q.PageSize()
	if q.Search == "" || q.SearchBudget == 0 {
		if keys, err = b.keys(run, version, q, after, size+1, read); err != nil {
			return nil, nil, 0, err
		}
		if len(keys) > size {
			keys = keys[:size]
			next = keys[size-1].Encode()
		}
		return keys, next, 0, nil
	}
	wq := q
	wq.Search = ""
	// One more than the budget: whether results follow the window.
	window, err := b.keys(run, version, wq, after, q.SearchBudget+1, read)
	if err != nil {
		return nil, nil, 0, err
	}
	more := len(window) > q.SearchBudget
	window = window[:min(len(window), q.SearchBudget)]
	chunk := 64 // a common term fills its page in the first chunk
	for start := 0; start < len(window); {
		part := window[start:min(start+chunk, len(window))]
		start += len(part)
		chunk *= 4
		indexes := make([]int64, len(part))
		for i, c := range part {
			indexes[i] = int64(c.Index)
		}
		query, args := b.SearchIn(run, version, q.Search, indexes)
		found, err := read(query, args)
		if err != nil {
			return nil, nil, 0, err
		}
		// Of the indexes' results, those of the window (a repeat the other
		// filters dropped shares its index).
		match := make(map[[2]int]bool, len(found))
		for _, c := range found {
			match[[2]int{c.Index, c.Repeat}] = true
		}
		for i, c := range part {
			if !match[[2]int{c.Index, c.Repeat}] {
				continue
			}
			if len(keys) == size {
				// A match follows the full page, which examined up to its
				// last match.
				return keys, keys[size-1].Encode(), scanned, nil
			}
			keys = append(keys, c)
			scanned = start - len(part) + i + 1
		}
	}
	if more {
		// The budget ran out before the page filled: continue after the
		// last result examined, a match or not.
		return keys, window[len(window)-1].Encode(), len(window), nil
	}
	return keys, nil, len(window), nil
}

// The bounds of a walk of tied scores (walkDesc): the rows it examines
// before it hands over to the sorting query, and the score values it
// visits (each costs two or three small queries).
const (
	walkBudget = 2048
	walkValues = 16
	walkChunk  = 64
)

// keys returns up to limit keys of listing q after the cursor, with no
// search: through Keys, or by walkDesc for a descending score sort.
func (b *PageSQL) keys(run *evalrun.Run, version int, q evalrun.ResultPageQuery, after *resultq.Cursor, limit int,
	read func(query string, args []any) ([]resultq.Cursor, error)) ([]resultq.Cursor, error) {
	if q.Sort == evalrun.SortScore && q.Desc && q.ItemID == "" && q.Search == "" {
		return b.walkDesc(run, version, q, after, limit, read)
	}
	query, args := b.Keys(run, version, q, after, limit, false)
	return read(query, args)
}

// walkDesc returns the keys of a descending score sort one score value at
// a time, each value's rows in (idx, rep) order as score_keys' index holds
// them, testing the filters per row, and stops when it has limit keys. The
// sorting query (Keys) reads and sorts every row of a value's run of ties
// before its first row (the top score of a 100,000-result run can have
// 10,000), and with a tag filter first lists every tagged result; the walk
// reads about limit / (the filters' share) rows. A filter that keeps few
// rows would make it read many: past walkBudget rows or walkValues values
// it hands over to Keys from where it is, so that it costs at most that
// much more than Keys alone.
func (b *PageSQL) walkDesc(run *evalrun.Run, version int, q evalrun.ResultPageQuery, after *resultq.Cursor, limit int,
	read func(query string, args []any) ([]resultq.Cursor, error)) ([]resultq.Cursor, error) {
	filtered := q.FailedOnly || q.Tag != "" || q.ToolErrors || q.Scorer != ""
	var keys []resultq.Cursor
	// The walk's position: value v, after (pos) when set.
	var v float64
	var pos *resultq.Cursor
	if after != nil {
		v, pos = after.Num, after
	} else {
		top, err := b.nextValue(run, q.SortScorer, nil, read)
		if err != nil || top == nil {
			return nil, err
		}
		v = *top
	}
	examined, values, chunk := 0, 1, walkChunk
	for {
		// The last key of the chunk of value v after pos (none: the value
		// ends within the chunk). Unfiltered, every row is kept: limit
		// bounds the rows read.
		var end *resultq.Cursor
		if filtered {
			query, args := b.valueRows(run, version, evalrun.ResultPageQuery{SortScorer: q.SortScorer}, v, pos, nil, 1, chunk-1)
			ends, err := read(query, args)
			if err != nil {
				return nil, err
			}
			if len(ends) > 0 {
				end = &ends[0]
			}
		}
		query, args := b.valueRows(run, version, q, v, pos, end, limit-len(keys), 0)
		found, err := read(query, args)
		if err != nil {
			return nil, err
		}
		keys = append(keys, found...)
		if len(keys) >= limit {
			return keys[:limit], nil
		}
		if end != nil {
			// More rows of v follow the chunk.
			examined += chunk
			pos, chunk = end, chunk*4
		} else {
			examined += len(found) // unfiltered; filtered, at least this
			next, err := b.nextValue(run, q.SortScorer, &v, read)
			if err != nil || next == nil {
				return keys, err
			}
			values++
			// Before the next value: after every row of v.
			v, pos, chunk = *next, nil, walkChunk
		}
		if examined >= walkBudget || values > walkValues {
			from := pos
			if from == nil {
				// All of value v: after an index no result has.
				from = &resultq.Cursor{Num: v, Index: -1, Repeat: -1}
			}
			query, args := b.Keys(run, version, q, from, limit-len(keys), false)
			rest, err := read(query, args)
			return append(keys, rest...), err
		}
	}
}

// nextValue returns the highest score of scorer in run below *below (the
// highest of all when below is nil), nil when there is none.
func (b *PageSQL) nextValue(run *evalrun.Run, scorer string, below *float64,
	read func(query string, args []any) ([]resultq.Cursor, error)) (*float64, error) {
	b.args = nil
	query := "SELECT k.idx, k.rep, k.score, '' FROM score_keys k WHERE k.run_id = " + b.arg(run.ID) + " AND k.scorer = " + b.arg(scorer)
	if below != nil {
		query += " AND k.score < " + b.arg(*below)
	}
	rows, err := read(query+" ORDER BY k.score DESC LIMIT 1", b.args)
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	return &rows[0].Num, nil
}

// valueRows returns the query of the keys of run's results with score v
// by q.SortScorer after pos (when set) up to end (when set), that q's
// filters keep, in (idx, rep) order: limit of them after skipping offset.
func (b *PageSQL) valueRows(run *evalrun.Run, version int, q evalrun.ResultPageQuery, v float64, pos, end *resultq.Cursor, limit, offset int) (string, []any) {
	b.args = nil
	filtered := q.FailedOnly || q.Tag != "" || q.ToolErrors || q.Scorer != ""
	var sb strings.Builder
	sb.WriteString("SELECT k.idx, k.rep, k.score, '' FROM score_keys k")
	if filtered {
		// CROSS JOIN: SQLite reads score_keys first, in the order asked,
		// and each row's result by its key.
		sb.WriteString(" CROSS JOIN results r")
	}
	sb.WriteString(" WHERE k.run_id = " + b.arg(run.ID) + " AND k.scorer = " + b.arg(q.SortScorer) + " AND k.score = " + b.arg(v))
	if pos != nil {
		sb.WriteString(" AND (k.idx, k.rep) > (" + b.arg(int64(pos.Index)) + ", " + b.arg(int64(pos.Repeat)) + ")")
	}
	if end != nil {
		sb.WriteString(" AND (k.idx, k.rep) <= (" + b.arg(int64(end.Index)) + ", " + b.arg(int64(end.Repeat)) + ")")
	}
	if filtered {
		sb.WriteString(" AND r.run_id = k.run_id AND r.idx = k.idx AND r.rep = k.rep" + b.filters(run, version, q, ""))
	}
	sb.WriteString(" ORDER BY k.idx, k.rep LIMIT " + b.arg(int64(limit)))
	if offset > 0 {
		sb.WriteString(" OFFSET " + b.arg(int64(offset)))
	}
	return sb.String(), b.args
}

// ScoreKeys returns the sort values of r's scores by scorers (a row of
// score_keys each): the first score by that scorer, -Inf when missing.
func ScoreKeys(r *evalrun.ItemResult, scorers []evalrun.ScorerInfo) []float64 {
	out := make([]float64, len(scorers))
	for i, sc := range scorers {
		out[i] = evalrun.SortScoreOf(r, sc.Name)
	}
	return out
}

// UniqueScorers returns scorers without the repeats of a name (the first
// stays): score_keys has one row per result and scorer name.
func UniqueScorers(scorers []evalrun.ScorerInfo) []evalrun.ScorerInfo {
	out := scorers[:0:0]
	for _, sc := range scorers {
		if !slices.ContainsFunc(out, func(o evalrun.ScorerInfo) bool { return o.Name == sc.Name }) {
			out = append(out, sc)
		}
	}
	return out
}

// likeEscaper makes a needle literal in a LIKE pattern of ESCAPE '\'.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

func isASCII(ss []string) bool {
	for _, s := range ss {
		for i := range len(s) {
			if s[i] >= 0x80 {
				return false
			}
		}
	}
	return true
}
