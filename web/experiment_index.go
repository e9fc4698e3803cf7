package web

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/evalrun/evalrun"
)

// experimentIndex is what the items table of an experiment filters on:
// per item (and repeat), each variant's verdicts, a few bytes each, and
// never an output. A page's outputs are read from the store for that page
// only (readExperimentPage), so the memory of the index is bounded by the
// number of items times variants times scorers, whatever the outputs'
// size.
type experimentIndex struct {
	// Scorers are the scorers of every variant, the baseline's first, in
	// suite order.
	Scorers []string
	Rows    []expIndexRow
}

// verdict is a variant's outcome on an item for one scorer.
type verdict int8

const (
	// noVerdict: the variant has no result for the item, or no such
	// scorer.
	noVerdict verdict = iota
	// notPassed: the scorer did not pass the result (a low score, a
	// scorer error, or the target failed).
	notPassed
	passed
)

// expIndexRow is one item of the index.
type expIndexRow struct {
	Index, Repeat int
	ID            string
	Tags          []string
	// Present, Errored: per variant, whether it has a result, and whether
	// its target failed on it.
	Present, Errored []bool
	// Verdicts are per variant, then per scorer (len(Scorers) each).
	Verdicts []verdict
}

// verdictOf returns variant v's verdict on scorer s.
func (r *expIndexRow) verdictOf(v, s, nscorers int) verdict { return r.Verdicts[v*nscorers+s] }

// Disagree reports whether some scorer passed the item in one variant and
// not in another, a target failure counting as not passed: the definition
// of the experiment report's items[].disagree, so that the viewer's filter
// and the JSON agree. Variants without a result for the item, or without
// the scorer, are left out. (An item where one variant crashed and another
// failed every scorer does not disagree: no verdict differs.)
func (r *expIndexRow) disagree(nscorers int) bool {
	for s := range nscorers {
		var seen verdict
		for v := range r.Present {
			got := r.verdictOf(v, s, nscorers)
			if got == noVerdict {
				continue
			}
			if seen != noVerdict && got != seen {
				return true
			}
			seen = got
		}
	}
	return false
}

// regressed reports whether some scorer passed the baseline (variant 0)
// and not variant v (v < 0: any other variant). A variant without a
// result for the item does not count: it did not run it.
func (r *expIndexRow) regressed(v, nscorers int) bool {
	if len(r.Present) == 0 || !r.Present[0] {
		return false
	}
	for s := range nscorers {
		if r.verdictOf(0, s, nscorers) != passed {
			continue
		}
		for w := 1; w < len(r.Present); w++ {
			if (v < 0 || v == w) && r.Present[w] && r.verdictOf(w, s, nscorers) != passed {
				return true
			}
		}
	}
	return false
}

// buildExperimentIndex streams every variant's results once into an
// index, without their agent data and payloads (outputs, inputs): it keeps
// ids, tags and verdicts only.
func buildExperimentIndex(ctx context.Context, store evalrun.RunStore, exp *evalrun.Experiment) (*experimentIndex, error) {
	idx := &experimentIndex{}
	for _, run := range exp.Runs {
		for _, sc := range run.Scorers {
			if !slices.Contains(idx.Scorers, sc.Name) {
				idx.Scorers = append(idx.Scorers, sc.Name)
			}
		}
	}
	nv, ns := len(exp.Runs), len(idx.Scorers)
	scorerPos := make(map[string]int, ns)
	for i, name := range idx.Scorers {
		scorerPos[name] = i
	}
	rowOf := map[[2]int]int{}
	for v, run := range exp.Runs {
		err := store.ScanResults(ctx, run.ID, evalrun.ResultQuery{SkipAgentData: true, SkipPayloads: true}, func(res *evalrun.ItemResult) error {
			key := [2]int{res.Index, res.Repeat}
			i, ok := rowOf[key]
			if !ok {
				i = len(idx.Rows)
				rowOf[key] = i
				idx.Rows = append(idx.Rows, expIndexRow{
					Index: res.Index, Repeat: res.Repeat,
					Present: make([]bool, nv), Errored: make([]bool, nv), Verdicts: make([]verdict, nv*ns),
				})
			}
			row := &idx.Rows[i]
			if row.ID == "" {
				row.ID = res.ItemID
				if row.ID == "" && res.Item != nil {
					row.ID = res.Item.ID
				}
			}
			if row.Tags == nil && res.Item != nil {
				row.Tags = res.Item.Tags()
			}
			row.Present[v], row.Errored[v] = true, res.Failed()
			// A failed target has no scores: every scorer of the run
			// counts it as not passed, as the report does.
			for _, sc := range run.Scorers {
				row.Verdicts[v*ns+scorerPos[sc.Name]] = notPassed
			}
			for _, sr := range res.Scores {
				if p, ok := scorerPos[sr.Scorer]; ok && sr.Score != nil && sr.Passed {
					row.Verdicts[v*ns+p] = passed
				} else if ok {
					row.Verdicts[v*ns+p] = notPassed
				}
			}
			return ctx.Err()
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(idx.Rows, func(a, b expIndexRow) int {
		return cmp.Or(cmp.Compare(a.Index, b.Index), cmp.Compare(a.Repeat, b.Repeat))
	})
	return idx, nil
}

// expFilter selects rows of the items table.
type expFilter struct {
	// Show is "" (every item), "disagree" or "regressed".
	Show string
	// Variant is, for "regressed", the variant compared with the baseline
	// (its position; -1 for any).
	Variant int
	Tag     string
}

// match returns the rows of idx that f keeps, in input order. The rows are
// the index's own, not copies.
func (idx *experimentIndex) match(f expFilter) []*expIndexRow {
	ns := len(idx.Scorers)
	var out []*expIndexRow
	for i := range idx.Rows {
		r := &idx.Rows[i]
		switch {
		case f.Tag != "" && !slices.Contains(r.Tags, f.Tag):
		case f.Show == "disagree" && !r.disagree(ns):
		case f.Show == "regressed" && !r.regressed(f.Variant, ns):
		default:
			out = append(out, r)
		}
	}
	return out
}

// tags returns the distinct tags of the index's items, in order of first
// appearance, at most n.
func (idx *experimentIndex) tags(n int) []string {
	var out []string
	seen := map[string]bool{}
	for i := range idx.Rows {
		for _, t := range idx.Rows[i].Tags {
			if !seen[t] {
				if len(out) == n {
					return out
				}
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// readExperimentPage reads run's results of rows (a page). One scan
// covers the page when its items are close together (an unfiltered page),
// else one short read per item: the cost is the page's either way.
func readExperimentPage(ctx context.Context, store evalrun.RunStore, runID string, rows []*expIndexRow) (map[[2]int]*evalrun.ItemResult, error) {
	out := make(map[[2]int]*evalrun.ItemResult, len(rows))
	if len(rows) == 0 {
		return out, nil
	}
	want := make(map[[2]int]bool, len(rows))
	lastRepeat := map[int]int{}
	lo, hi := rows[0].Index, rows[0].Index
	for _, r := range rows {
		want[[2]int{r.Index, r.Repeat}] = true
		lastRepeat[r.Index] = max(lastRepeat[r.Index], r.Repeat)
		lo, hi = min(lo, r.Index), max(hi, r.Index)
	}
	scan := func(from, to, limit int) error {
		err := store.ScanResults(ctx, runID, evalrun.ResultQuery{FromIndex: from, Limit: limit}, func(res *evalrun.ItemResult) error {
			if res.Index > to {
				return errPageFull
			}
			if k := [2]int{res.Index, res.Repeat}; want[k] {
				out[k] = res
			}
			return ctx.Err()
		})
		if err != nil && !errors.Is(err, errPageFull) {
			return err
		}
		return nil
	}
	if hi-lo <= 4*len(rows) {
		return out, scan(lo, hi, 0)
	}
	for _, index := range slices.Sorted(maps.Keys(lastRepeat)) {
		if err := scan(index, index, lastRepeat[index]+1); err != nil {
			return nil, err
		}
	}
	return out, nil
}
