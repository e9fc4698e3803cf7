package web

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/bounded"
	"github.com/evalrun/evalrun/report"
)

const (
	experimentsPerPage = 50
	// maxExperimentRuns bounds the runs read to list experiments: a list
	// of maxRunsLimit experiments of up to ten variants each.
	maxExperimentRuns = 10 * maxRunsLimit
	// maxTagsOffered bounds the tags offered by the tag filter's list.
	maxTagsOffered = 200
)

var (
	experimentsParams = []string{"limit"}
	experimentParams  = []string{"show", "variant", "tag", "page", "size"}
)

// experimentData is what the experiment page shows, built once per
// finished experiment (memoized like a run's report): the report's JSON
// without item rows, decoded, and the index the items table filters.
type experimentData struct {
	JSON    []byte
	Summary *experimentSummary
	Index   *experimentIndex
}

// experimentFP fingerprints the state of an experiment's runs.
func experimentFP(exp *evalrun.Experiment) string {
	var b strings.Builder
	for _, r := range exp.Runs {
		b.WriteString(r.ID)
		b.WriteByte('=')
		b.WriteString(reportFP(r))
		b.WriteByte(';')
	}
	return b.String()
}

// experimentDone reports whether every run of exp has finished.
func experimentDone(exp *evalrun.Experiment) bool {
	return !slices.ContainsFunc(exp.Runs, func(r *evalrun.Run) bool { return !r.Status.Done() })
}

// experiment returns exp's data, cached: built once while its runs are
// finished, refreshed every RefreshInterval while one runs.
func (s *Server) experiment(ctx context.Context, exp *evalrun.Experiment) (*experimentData, error) {
	return s.experiments.get(ctx, s.bgCtx, exp.ID, experimentFP(exp), experimentDone(exp), s.opts.RefreshInterval,
		func(ctx context.Context) (*experimentData, error) {
			data, sum, err := experimentJSON(ctx, s.store, exp)
			if err != nil {
				return nil, err
			}
			idx, err := buildExperimentIndex(ctx, s.store, exp)
			if err != nil {
				return nil, err
			}
			return &experimentData{JSON: data, Summary: sum, Index: idx}, nil
		})
}

// experimentURL is the path of an experiment's page.
func experimentURL(id string) string { return "/experiments/" + url.PathEscape(id) }

// listExperiments returns the newest limit experiments, and whether there
// are more.
func (s *Server) listExperiments(ctx context.Context, limit int) ([]*evalrun.Experiment, bool, error) {
	runs, err := s.store.ListRuns(ctx, evalrun.RunFilter{InExperiment: true, Limit: maxExperimentRuns})
	if err != nil {
		return nil, false, err
	}
	capped := len(runs) == maxExperimentRuns
	byID := map[string][]*evalrun.Run{}
	var ids []string
	for _, r := range runs {
		if r.Experiment == "" {
			continue // the filter's to drop; never list a run on its own as an experiment
		}
		if _, ok := byID[r.Experiment]; !ok {
			ids = append(ids, r.Experiment)
		}
		byID[r.Experiment] = append(byID[r.Experiment], r)
	}
	if capped && len(ids) > 1 {
		// The oldest experiment read may miss variants past the cap.
		ids = ids[:len(ids)-1]
	}
	exps := make([]*evalrun.Experiment, 0, len(ids))
	for _, id := range ids {
		e, err := evalrun.ExperimentOf(id, byID[id])
		if err != nil {
			return nil, false, err
		}
		exps = append(exps, e)
	}
	slices.SortStableFunc(exps, func(a, b *evalrun.Experiment) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(b.ID, a.ID))
	})
	more := capped || len(exps) > limit
	return exps[:min(len(exps), limit)], more, nil
}

// experimentsQuery reads limit= (1 to maxRunsLimit) of the experiments
// list.
func experimentsQuery(r *http.Request) (int, error) {
	v := r.URL.Query()
	if err := checkParams(v, experimentsParams); err != nil {
		return 0, err
	}
	return intParam(v, "limit", 1, maxRunsLimit, experimentsPerPage)
}

func (s *Server) handleExperiments(w http.ResponseWriter, r *http.Request) {
	limit, err := experimentsQuery(r)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	exps, more, err := s.listExperiments(r.Context(), limit)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	var moreURL string
	if more && limit < maxRunsLimit {
		moreURL = "/experiments?limit=" + strconv.Itoa(min(limit+experimentsPerPage, maxRunsLimit))
	}
	s.render(w, r, http.StatusOK, "experiments", "Experiments", struct {
		Experiments []*evalrun.Experiment
		MoreURL     string
	}{exps, moreURL})
}

// experimentQuery is the items table's selection: the filter and the page.
type experimentQuery struct {
	Filter      expFilter
	VariantName string
	Page, Size  int
}

// parseExperimentQuery reads show= (disagree, regressed), variant= (for
// regressed: a variant other than the baseline), tag=, page= and size=.
func parseExperimentQuery(v url.Values, exp *evalrun.Experiment, defSize int) (experimentQuery, error) {
	q := experimentQuery{Filter: expFilter{Variant: -1}}
	if err := checkParams(v, experimentParams); err != nil {
		return q, err
	}
	q.Filter.Show = v.Get("show")
	switch q.Filter.Show {
	case "", "disagree", "regressed":
	case "all":
		q.Filter.Show = ""
	default:
		return q, badParam("show", q.Filter.Show, "want disagree (the variants disagree) or regressed (the baseline passes, a variant fails)")
	}
	q.Filter.Tag = v.Get("tag")
	if name := v.Get("variant"); name != "" {
		names := exp.Variants()[1:]
		i := slices.Index(names, name)
		if i < 0 {
			return q, invalidf("bad variant=%q: experiment %s has no such variant besides its baseline %q%s; %s",
				truncateParam(name), exp.ID, exp.Baseline().Variant, didYouMean(name, "", names),
				listed("its other variants are ", names, "it has no other variant"))
		}
		q.VariantName, q.Filter.Variant = name, i+1
	}
	var err error
	if q.Page, err = intParam(v, "page", 1, maxPage, 1); err != nil {
		return q, err
	}
	if q.Size, err = intParam(v, "size", 1, maxPageSize, defSize); err != nil {
		return q, err
	}
	return q, nil
}

// values returns q as URL values, without the page.
func (q experimentQuery) values() url.Values {
	v := url.Values{}
	if q.Filter.Show != "" {
		v.Set("show", q.Filter.Show)
	}
	if q.VariantName != "" {
		v.Set("variant", q.VariantName)
	}
	if q.Filter.Tag != "" {
		v.Set("tag", q.Filter.Tag)
	}
	return v
}

// expItemRow is an item of the items table with each variant's result.
type expItemRow struct {
	Index, Repeat int
	ID            string
	Tags          []string
	Disagree      bool
	// Cells are per variant, in variant order.
	Cells []expCell
}

// expCell is one variant's result for an item.
type expCell struct {
	Variant string
	RunID   string
	// Row is nil when the variant has no result for the item.
	Row *report.ItemRow
	// Regressed: a scorer passed the baseline and not this variant.
	Regressed bool
}

// expItemsPage is a page of the items table.
type expItemsPage struct {
	Rows               []expItemRow
	Total, Page, Pages int
}

// experimentItems returns the page of the items table that q selects.
func (s *Server) experimentItems(ctx context.Context, exp *evalrun.Experiment, idx *experimentIndex, q experimentQuery) (*expItemsPage, error) {
	matched := idx.match(q.Filter)
	p := &expItemsPage{Total: len(matched), Page: q.Page, Pages: max((len(matched)+q.Size-1)/q.Size, 1)}
	from := min((q.Page-1)*q.Size, len(matched)) // page ≤ maxPage, size ≤ maxPageSize: no overflow
	rows := matched[from:min(from+q.Size, len(matched))]
	ns := len(idx.Scorers)
	p.Rows = make([]expItemRow, len(rows))
	for i, r := range rows {
		p.Rows[i] = expItemRow{Index: r.Index, Repeat: r.Repeat, ID: r.ID, Tags: r.Tags, Disagree: r.disagree(ns),
			Cells: make([]expCell, len(exp.Runs))}
	}
	for v, run := range exp.Runs {
		results, err := readExperimentPage(ctx, s.store, run.ID, rows)
		if err != nil {
			return nil, err
		}
		var page []*evalrun.ItemResult
		pos := make([]int, 0, len(rows))
		for i, r := range rows {
			if res := results[[2]int{r.Index, r.Repeat}]; res != nil {
				page = append(page, res)
				pos = append(pos, i)
			}
		}
		items := rowsOf(run, page)
		for i, r := range rows {
			p.Rows[i].Cells[v] = expCell{Variant: run.Variant, RunID: run.ID, Regressed: v > 0 && r.regressed(v, ns)}
		}
		for j, i := range pos {
			p.Rows[i].Cells[v].Row = &items[j]
		}
	}
	return p, nil
}

// matrixCell is a (variant, scorer) cell of the matrix.
type matrixCell struct {
	Stats *variantScorer
	// Delta is nil for the baseline and where the report has none.
	Delta *baselineDelta
}

// Mark is the cell's significance class: "better", "worse" or "".
func (c matrixCell) Mark() string {
	if c.Delta != nil && (c.Delta.Verdict == "better" || c.Delta.Verdict == "worse") {
		return c.Delta.Verdict
	}
	return ""
}

// matrixRow is a variant's line of the matrix.
type matrixRow struct {
	V        *variantSummary
	Baseline bool
	Cells    []matrixCell
}

// histogramRow is a scorer's histograms, one per variant, side by side.
type histogramRow struct {
	Scorer string
	Hists  []variantHistogram
}

type variantHistogram struct {
	Variant string
	Hist    *histogram // nil when the variant has no such scorer
}

// experimentView is the data of the experiment page.
type experimentView struct {
	Exp       *evalrun.Experiment
	Summary   *experimentSummary
	Scorers   []string
	Matrix    []matrixRow
	Histogram []histogramRow
	Query     experimentQuery
	Variants  []string // the variants other than the baseline
	Tags      []string
	Items     *expItemsPage
	PrevURL   string
	NextURL   string
	Live      bool
}

// experimentOf reads the experiment named by r's path.
func (s *Server) experimentOf(r *http.Request) (*evalrun.Experiment, error) {
	return evalrun.GetExperiment(r.Context(), s.store, r.PathValue("id"))
}

// experimentPage gathers the data of the page (and of the items API).
func (s *Server) experimentPage(r *http.Request) (*experimentView, error) {
	exp, err := s.experimentOf(r)
	if err != nil {
		return nil, err
	}
	q, err := parseExperimentQuery(r.URL.Query(), exp, s.opts.PageSize)
	if err != nil {
		return nil, err
	}
	data, err := s.experiment(r.Context(), exp)
	if err != nil {
		return nil, err
	}
	v := &experimentView{Exp: exp, Summary: data.Summary, Scorers: data.Index.Scorers, Query: q,
		Variants: exp.Variants()[1:], Tags: data.Index.tags(maxTagsOffered), Live: !experimentDone(exp)}
	for i := range data.Summary.Variants {
		vs := &data.Summary.Variants[i]
		row := matrixRow{V: vs, Baseline: i == 0}
		for _, sc := range v.Scorers {
			c := matrixCell{Stats: vs.Scorers[sc]}
			if i > 0 {
				c.Delta = vs.VsBaseline[sc]
			}
			row.Cells = append(row.Cells, c)
		}
		v.Matrix = append(v.Matrix, row)
	}
	for _, sc := range v.Scorers {
		hr := histogramRow{Scorer: sc}
		for i := range data.Summary.Variants {
			vs := &data.Summary.Variants[i]
			vh := variantHistogram{Variant: vs.Name}
			if st := vs.Scorers[sc]; st != nil {
				h := newHistogram(st.Histogram, st.Threshold)
				vh.Hist = &h
			}
			hr.Hists = append(hr.Hists, vh)
		}
		v.Histogram = append(v.Histogram, hr)
	}
	if v.Items, err = s.experimentItems(r.Context(), exp, data.Index, q); err != nil {
		return nil, err
	}
	base := experimentURL(exp.ID)
	page := func(n int) string {
		pv := q.values()
		if q.Size != s.opts.PageSize {
			pv.Set("size", strconv.Itoa(q.Size))
		}
		if n > 1 {
			pv.Set("page", strconv.Itoa(n))
		}
		if len(pv) == 0 {
			return base + "#items"
		}
		return base + "?" + pv.Encode() + "#items"
	}
	if v.Items.Page > 1 {
		v.PrevURL = page(min(v.Items.Page-1, v.Items.Pages))
	}
	if v.Items.Page < v.Items.Pages {
		v.NextURL = page(v.Items.Page + 1)
	}
	return v, nil
}

func (s *Server) handleExperiment(w http.ResponseWriter, r *http.Request) {
	v, err := s.experimentPage(r)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	title := v.Exp.ID
	if v.Exp.Name != "" {
		title = bounded.Cut(v.Exp.Name, maxLabelBytes) + " · " + v.Exp.ID
	}
	s.render(w, r, http.StatusOK, "experiment", title, v)
}
