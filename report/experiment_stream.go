package report

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/bounded"
)

// The experiment report of runs not in memory.
//
// [BuildExperimentStore] holds every item with every variant's output:
// memory grows with items × variants × output size (gigabytes for a large
// dataset with --no-retain). [BuildExperimentStreamStore] keeps what
// [BuildExperimentSummaryStore] keeps (ids and verdicts) plus the count of
// items and the first disagreeing ones the Markdown lists, and
// [WriteExperimentJSON] writes its "items" by reading the variants'
// stored results again, merged in (index, repeat, id) order a page at a
// time: memory is bounded by a page of results per variant.

// expPageSize is the number of results a page of one run holds at first
// (an index with more results, e.g. many repeats, doubles it).
const expPageSize = 128

// experimentStream is where an experiment built by
// [BuildExperimentStreamStore] reads its items.
type experimentStream struct {
	store evalrun.RunStore
	runs  []string // run ids, in variant order
	names []string // variant names, in variant order
	// count is the number of item rows; disagree the number of them on
	// which the variants disagree, first the first maxDisagreeRows of
	// those.
	count, disagree int
	first           []ExperimentItem
	// items counts the distinct items (index, id) among the rows, and
	// repeats is the largest repeat seen plus one (see itemsText).
	items, repeats int
	last           struct {
		index int
		id    string
	}
}

// ItemCount returns the number of item rows of e: len(e.Items), or for an
// experiment built by [BuildExperimentStreamStore] (whose Items are
// written from storage) the number it will write.
func (e *Experiment) ItemCount() int {
	if e.stream != nil && e.Items == nil {
		return e.stream.count
	}
	return len(e.Items)
}

// disagreeRows returns the first n items on which the variants disagree
// and how many do in all.
func (e *Experiment) disagreeRows(n int) ([]*ExperimentItem, int) {
	if e.stream != nil && e.Items == nil {
		out := make([]*ExperimentItem, 0, min(n, len(e.stream.first)))
		for i := range e.stream.first[:min(n, len(e.stream.first))] {
			out = append(out, &e.stream.first[i])
		}
		return out, e.stream.disagree
	}
	var out []*ExperimentItem
	total := 0
	for i := range e.Items {
		if e.Items[i].Disagree {
			total++
			if len(out) < n {
				out = append(out, &e.Items[i])
			}
		}
	}
	return out, total
}

// BuildExperimentStreamStore builds the experiment report of exp from
// storage like [BuildExperimentStore], with the same numbers and the same
// JSON and Markdown, but without holding the items: Items is nil, and
// [WriteExperimentJSON] writes them by reading the runs' stored results
// again (which must not change in between: a finished run's do not).
// Memory grows with the number of results and scorers, as
// [BuildExperimentSummaryStore]'s, plus a page of results per variant;
// never with the outputs of all items. It reads each run's results once,
// merged.
func BuildExperimentStreamStore(ctx context.Context, store evalrun.RunStore, exp *evalrun.Experiment, opts CompareOptions) (*Experiment, error) {
	b, err := newExperimentBuilder(exp, opts)
	if err != nil {
		return nil, err
	}
	b.noItems = true
	rbs := make([]*Builder, len(exp.Runs))
	ids := make([]string, len(exp.Runs))
	for i, r := range exp.Runs {
		run, err := store.GetRun(ctx, r.ID)
		if err != nil {
			return nil, fmt.Errorf("experiment %s: variant %s: run %s: %w", exp.ID, b.names[i], r.ID, err)
		}
		rbs[i] = NewBuilder(run, WithoutItems())
		// As buildExperimentStore: the run's scorers, so that a variant
		// whose target failed on every item still has them.
		names := make([]string, len(run.Scorers))
		for k, sc := range run.Scorers {
			names[k] = sc.Name
		}
		b.sides[i] = newCmpSide(RunRef{ID: run.ID, Name: run.Name}, names)
		ids[i] = r.ID
	}
	src := &experimentStream{store: store, runs: ids, names: b.names}
	err = src.merge(ctx, func(v int, res *evalrun.ItemResult) {
		rbs[v].Add(res)
		b.sides[v].addResult(res)
	}, func(it *ExperimentItem) error {
		if src.count == 0 || it.Index != src.last.index || it.ID != src.last.id {
			src.items++
			src.last.index, src.last.id = it.Index, it.ID
		}
		src.repeats = max(src.repeats, it.Repeat+1)
		src.count++
		if it.Disagree {
			src.disagree++
			if len(src.first) < maxDisagreeRows {
				src.first = append(src.first, *it)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("experiment %s: %w", exp.ID, err)
	}
	for i := range rbs {
		b.reports[i] = rbs[i].Report()
	}
	e := b.build()
	e.Items, e.stream = nil, src
	return e, nil
}

// expPager reads one run's results a page at a time, in (index, repeat)
// order. A page ends at an index boundary: every result of an index is in
// one page.
type expPager struct {
	store evalrun.RunStore
	runID string
	from  int // the first index of the next page
	limit int
	buf   []*evalrun.ItemResult
	pos   int
	done  bool // no page after buf
}

// head returns the next result, nil at the end, reading a page when
// needed.
func (p *expPager) head(ctx context.Context) (*evalrun.ItemResult, error) {
	for p.pos >= len(p.buf) && !p.done {
		var page []*evalrun.ItemResult
		err := p.store.ScanResults(ctx, p.runID, evalrun.ResultQuery{FromIndex: p.from, Limit: p.limit},
			func(r *evalrun.ItemResult) error {
				page = append(page, r)
				return ctx.Err()
			})
		if err != nil {
			return nil, fmt.Errorf("results of run %s: %w", p.runID, err)
		}
		if len(page) < p.limit {
			p.buf, p.pos, p.done = page, 0, true
			break
		}
		// A full page may end inside an index (some of its repeats in
		// the next page): its results are read again with the next one.
		last := page[len(page)-1].Index
		cut := len(page)
		for cut > 0 && page[cut-1].Index == last {
			cut--
		}
		if cut == 0 {
			p.limit *= 2 // one index fills the page: a larger one
			continue
		}
		p.buf, p.pos, p.from = page[:cut], 0, last
	}
	if p.pos < len(p.buf) {
		return p.buf[p.pos], nil
	}
	return nil, nil
}

// merge reads the runs' results, merged: it calls onResult with each
// result (v its variant) and onItem with each item row, in (index,
// repeat, id) order, as [BuildExperimentStore] orders them. The item is
// only valid during the call.
func (s *experimentStream) merge(ctx context.Context, onResult func(v int, r *evalrun.ItemResult), onItem func(*ExperimentItem) error) error {
	pagers := make([]*expPager, len(s.runs))
	kinds := make([]kindSet, len(s.runs))
	for i, id := range s.runs {
		pagers[i] = &expPager{store: s.store, runID: id, limit: expPageSize}
		kinds[i] = make(kindSet)
	}
	type cell struct {
		item  *ExperimentItem
		cells []*VariantResult
	}
	for {
		// The smallest next index of any run: every variant's results of
		// it are in their pagers' current pages.
		index, found := 0, false
		for _, p := range pagers {
			r, err := p.head(ctx)
			if err != nil {
				return err
			}
			if r != nil && (!found || r.Index < index) {
				index, found = r.Index, true
			}
		}
		if !found {
			return nil
		}
		group := map[expKey]*cell{}
		var keys []expKey
		for v, p := range pagers {
			for p.pos < len(p.buf) && p.buf[p.pos].Index == index {
				res := p.buf[p.pos]
				p.buf[p.pos] = nil // done with it: let it go with its output
				p.pos++
				if onResult != nil {
					onResult(v, res)
				}
				row := rowOf(res, kinds[v])
				k := expKey{row.Index, row.Repeat, row.ID}
				c := group[k]
				if c == nil {
					c = &cell{item: newExperimentItem(&row), cells: make([]*VariantResult, len(s.names))}
					group[k] = c
					keys = append(keys, k)
				}
				if c.cells[v] == nil { // a duplicate result: the first one stands
					c.cells[v] = variantResultOf(s.names[v], &row)
				}
			}
		}
		slices.SortFunc(keys, func(x, y expKey) int {
			return cmp.Or(cmp.Compare(x.repeat, y.repeat), cmp.Compare(x.id, y.id))
		})
		for _, k := range keys {
			c := group[k]
			c.item.Variants = VariantResults{}
			for _, r := range c.cells {
				if r != nil {
					c.item.Variants = append(c.item.Variants, *r)
				}
			}
			c.item.Disagree = disagree(c.item.Variants)
			if err := onItem(c.item); err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// writeExperimentJSONStream writes e (built by
// [BuildExperimentStreamStore]) as [WriteExperimentJSON] writes an
// experiment with its items, reading the items from storage.
func writeExperimentJSONStream(ctx context.Context, w io.Writer, e *Experiment) error {
	head := *e
	head.Items = nil
	out, err := bounded.MarshalIndent(&head, "", bounded.IndentDepth, false)
	if err != nil {
		return err
	}
	// "items" is the last field of Experiment, written at depth 1 (as in
	// WriteJSONStream).
	text, ok := bytes.CutSuffix(append(out, '\n'), []byte(itemsTail))
	if !ok {
		return fmt.Errorf("report: the experiment JSON does not end with its items") // a change of Experiment's fields
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(text)
	bw.WriteString("\n  \"items\": [")
	n, err := e.streamItems(ctx, jsonArrayRows[*ExperimentItem](bw))
	if err != nil {
		return err
	}
	if n > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("]\n}\n")
	return bw.Flush()
}

// streamItems merges the stored runs of a stream-built experiment into its
// items, in order, calling write for each, and returns how many there were.
// It fails when the count is not the one the report was built with: the
// stored results changed since, and the items would not match the numbers
// written above them.
func (e *Experiment) streamItems(ctx context.Context, write func(*ExperimentItem) error) (int, error) {
	n := 0
	err := e.stream.merge(ctx, nil, func(it *ExperimentItem) error {
		n++
		return write(it)
	})
	if err != nil {
		return n, fmt.Errorf("experiment %s: %w", e.Experiment.ID, err)
	}
	if n != e.stream.count {
		return n, fmt.Errorf("experiment %s: %d items stored now, %d when the report was built: the runs changed in between",
			e.Experiment.ID, n, e.stream.count)
	}
	return n, nil
}
