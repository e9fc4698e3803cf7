package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/bounded"
	"github.com/evalrun/evalrun/report"
)

const (
	runsPerPage     = 50
	failuresShown   = 50
	flakyShown      = 50
	changesWithRows = 200
)

// page is what every template gets: the page's title and data.
type page struct {
	Title string
	Data  any
}

// render executes a page into a buffer first, so that a template error
// gives a clean 500 instead of half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	t := s.pages[name]
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", page{Title: title, Data: data}); err != nil {
		s.log.Error("web: render", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// errorStatus maps an error to an HTTP status: not found 404, invalid 400.
func errorStatus(err error) int {
	switch {
	case errors.Is(err, evalrun.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, evalrun.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func (s *Server) pageError(w http.ResponseWriter, r *http.Request, err error) {
	status := errorStatus(err)
	msg := err.Error()
	if status == http.StatusInternalServerError {
		s.log.Error("web: request", "path", r.URL.Path, "err", err)
		msg = "internal error (see the server's log)"
	}
	s.render(w, r, status, "error", http.StatusText(status), struct {
		Status  int
		Message string
	}{status, msg})
}

func (s *Server) handleNotFound(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed: the viewer is read-only", http.StatusMethodNotAllowed)
		return
	}
	if len(r.URL.Path) >= 5 && r.URL.Path[:5] == "/api/" {
		s.jsonError(w, r, fmt.Errorf("no route %s: %w", r.URL.Path, evalrun.ErrNotFound))
		return
	}
	s.pageError(w, r, fmt.Errorf("no page %s: %w", r.URL.Path, evalrun.ErrNotFound))
}

// fingerprint identifies the state of a run record that a cached report
// reflects.
func fingerprint(run *evalrun.Run) string {
	return fmt.Sprintf("%s|%d|%d|%d|%d|%d|%d|%s", run.Status, run.Total, run.Succeeded, run.Failed, run.Skipped,
		run.PersistErrors, run.CompletedAt.UnixNano(), run.Error)
}

// reportFP is the fingerprint of run's cached report: the record of a
// finished run; only the status of a running one, whose counts move (its
// report is refreshed by age).
func reportFP(run *evalrun.Run) string {
	if !run.Status.Done() {
		return string(run.Status)
	}
	return fingerprint(run)
}

// report returns the report (without item rows) of run with its agent
// figures, cached.
func (s *Server) report(ctx context.Context, run *evalrun.Run) (*report.Report, error) {
	return s.reports.get(ctx, s.bgCtx, run.ID, reportFP(run), run.Status.Done(), s.opts.RefreshInterval,
		func(ctx context.Context) (*report.Report, error) {
			if rs, ok := s.store.(ReportStore); ok && run.Status.Done() {
				rep, err := storedReport(ctx, rs, run)
				if err == nil || !errors.Is(err, evalrun.ErrNotFound) {
					return rep, err
				}
			}
			return buildReport(ctx, s.store, run.ID)
		})
}

// buildReport is the run's report without item rows; its Agent block
// holds the agent figures (nil when no result has a trajectory).
func buildReport(ctx context.Context, store evalrun.RunStore, runID string) (*report.Report, error) {
	return report.FromStore(ctx, store, runID, report.WithoutItems())
}

// ReportStore is an optional ability of a store: keeping the final JSON
// report of a finished run (as report.WriteJSON writes it, with or without
// item rows), so that the viewer reads one value instead of scanning every
// result. A store that implements it is asked first for finished runs; when
// it answers evalrun.ErrNotFound, the report is built from the results.
type ReportStore interface {
	// GetReportJSON returns the stored report of the run, or an error
	// wrapping evalrun.ErrNotFound.
	GetReportJSON(ctx context.Context, runID string) ([]byte, error)
}

// storedReport reads a stored report, used only when it matches the run
// record (a resumed run gets a new one). Its agent figures are its "agent"
// block, when it has one.
func storedReport(ctx context.Context, rs ReportStore, run *evalrun.Run) (*report.Report, error) {
	data, err := rs.GetReportJSON(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	rep, err := report.ReadJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("stored report of run %s: %w", run.ID, err)
	}
	if rep.Run.ID != run.ID || rep.Run.Status != run.Status || rep.Run.Succeeded != run.Succeeded || rep.Run.Failed != run.Failed {
		return nil, fmt.Errorf("stored report of run %s is stale: %w", run.ID, evalrun.ErrNotFound)
	}
	rep.Items = nil
	if rep.Agent != nil && rep.Agent.Items <= 0 {
		rep.Agent = nil // a block without items describes no agent
	}
	return rep, nil
}

// runRow is a line of the runs list.
type runRow struct {
	Run      *evalrun.Run
	PassRate *float64
	Pending  bool // the report is still being computed
	Duration *int64
}

func runDuration(run *evalrun.Run) *int64 {
	if run.StartedAt.IsZero() {
		return nil
	}
	end := run.CompletedAt
	if end.IsZero() {
		return nil
	}
	ms := end.Sub(run.StartedAt).Milliseconds()
	return &ms
}

// listRuns returns the runs of the list with their macro pass rates,
// waiting at most ListWait for reports not cached yet.
func (s *Server) listRuns(ctx context.Context, dataset string, limit int) ([]runRow, bool, error) {
	runs, err := s.store.ListRuns(ctx, evalrun.RunFilter{Dataset: dataset, Limit: limit + 1})
	if err != nil {
		return nil, false, err
	}
	more := len(runs) > limit
	runs = runs[:min(len(runs), limit)]
	rows := make([]runRow, len(runs))
	wctx, cancel := context.WithTimeout(ctx, s.opts.ListWait)
	defer cancel()
	var wg sync.WaitGroup
	for i, run := range runs {
		rows[i] = runRow{Run: run, Duration: runDuration(run)}
		wg.Go(func() {
			rep, err := s.report(wctx, run)
			if err != nil {
				rows[i].Pending = true
				return
			}
			rows[i].PassRate = rep.MacroPassRate
		})
	}
	wg.Wait()
	return rows, more, ctx.Err()
}

// runsQuery reads the parameters of the runs list: dataset= and limit=
// (1 to maxRunsLimit).
func runsQuery(r *http.Request) (dataset string, limit int, err error) {
	v := r.URL.Query()
	if err := checkParams(v, runsParams); err != nil {
		return "", 0, err
	}
	limit, err = intParam(v, "limit", 1, maxRunsLimit, runsPerPage)
	return v.Get("dataset"), limit, err
}

func (s *Server) handleRuns(w http.ResponseWriter, r *http.Request) {
	dataset, limit, err := runsQuery(r)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	rows, more, err := s.listRuns(r.Context(), dataset, limit)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	datasets, err := s.store.ListDatasets(r.Context())
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	var moreURL string
	if more && limit < maxRunsLimit {
		v := url.Values{"limit": {strconv.Itoa(min(limit+runsPerPage, maxRunsLimit))}}
		if dataset != "" {
			v.Set("dataset", dataset)
		}
		moreURL = "/?" + v.Encode()
	}
	s.render(w, r, http.StatusOK, "runs", "Runs", struct {
		Runs     []runRow
		Datasets []*evalrun.Dataset
		Dataset  string
		MoreURL  string
	}{rows, datasets, dataset, moreURL})
}

// runView is the data of the run page.
type runView struct {
	Run          *evalrun.Run
	Report       *report.Report
	Agent        *report.AgentSummary // nil when the run has no trajectories
	Live         bool
	Failures     []report.Failure
	MoreFailures int
	// Flaky are the first flakyShown flaky items of a run with repeats.
	Flaky     []report.FlakyItem
	MoreFlaky int
	Others    []*evalrun.Run // runs of the same dataset, to compare with
}

func (s *Server) handleRun(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := checkParams(r.URL.Query(), nil); err != nil {
		s.pageError(w, r, err)
		return
	}
	run, err := s.store.GetRun(ctx, r.PathValue("id"))
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	rep, err := s.report(ctx, run)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	v := runView{Run: run, Report: rep, Agent: rep.Agent, Live: !run.Status.Done()}
	v.Failures = rep.Failures[:min(len(rep.Failures), failuresShown)]
	v.MoreFailures = len(rep.Failures) - len(v.Failures)
	v.Flaky = rep.Flaky[:min(len(rep.Flaky), flakyShown)]
	v.MoreFlaky = len(rep.Flaky) - len(v.Flaky)
	others, err := s.store.ListRuns(ctx, evalrun.RunFilter{Dataset: run.Dataset, Limit: 21})
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	for _, o := range others {
		if o.ID != run.ID && len(v.Others) < 20 {
			v.Others = append(v.Others, o)
		}
	}
	s.render(w, r, http.StatusOK, "run", runTitle(run), v)
}

func runTitle(run *evalrun.Run) string {
	if run.Name != "" {
		return run.Name + " · " + run.ID
	}
	return run.ID
}

// itemsView is the data of the items table.
type itemsView struct {
	Run     *evalrun.Run
	Scorers []string
	Rows    []report.ItemRow
	Query   ItemQuery
	Below   string
	Tags    []string
	Total   int
	// Showing is the position of the first row (input order) or the page.
	Page, Pages int
	NextURL     string
	FirstURL    string
	// Scanned and Partial are the search's (itemPage).
	Scanned   int
	Partial   bool
	SortLinks []sortLink
	// Calls is, per row, its tool calls; nil when no result of the page
	// has a trajectory (the column is not shown).
	Calls []callsCell
}

// callsCell is a row's tool calls in the items table.
type callsCell struct {
	Agent         bool // the result has a trajectory
	Calls, Failed int
}

type sortLink struct {
	Label, URL string
	Active     bool
}

// itemsPage runs the query of r over run.
func (s *Server) itemsPage(r *http.Request, run *evalrun.Run) (ItemQuery, *itemPage, []report.ItemRow, error) {
	q, err := ParseItemQuery(r.URL.Query())
	if err == nil {
		err = q.Check(run)
	}
	if err != nil {
		return q, nil, nil, err
	}
	if q.Size == 0 {
		q.Size = s.opts.PageSize
	}
	q.searchBudget = s.opts.SearchBudget
	q.counts = s.counts
	p, err := queryItems(r.Context(), s.store, run, q)
	if err != nil {
		return q, nil, nil, err
	}
	return q, p, rowsOf(run, p.Results), nil
}

// rowsOf converts results to report rows, keeping their order.
func rowsOf(run *evalrun.Run, results []*evalrun.ItemResult) []report.ItemRow {
	rep := report.Build(run, results)
	pos := make(map[[2]int]int, len(results))
	for i, res := range results {
		pos[[2]int{res.Index, res.Repeat}] = i
	}
	rows := make([]report.ItemRow, len(results))
	for _, row := range rep.Items {
		rows[pos[[2]int{row.Index, row.Repeat}]] = row
	}
	return rows
}

func (s *Server) handleItems(w http.ResponseWriter, r *http.Request) {
	run, err := s.store.GetRun(r.Context(), r.PathValue("id"))
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	q, p, rows, err := s.itemsPage(r, run)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	base := "/runs/" + url.PathEscape(run.ID) + "/items"
	v := itemsView{Run: run, Rows: rows, Query: q, Total: p.Total, Page: p.Page, Pages: p.Pages, Calls: callsCells(p.Results),
		Scanned: p.Scanned, Partial: p.Partial}
	for _, sc := range run.Scorers {
		v.Scorers = append(v.Scorers, sc.Name)
	}
	if q.Below != nil {
		v.Below = strconv.FormatFloat(*q.Below, 'g', -1, 64)
	}
	if rep, ok := s.reports.cached(run.ID, reportFP(run)); ok {
		for _, c := range rep.Cohorts {
			if c.Tag != nil {
				v.Tags = append(v.Tags, *c.Tag)
			}
		}
	}
	vals := q.Values()
	if p.Next != "" {
		nv := q.Values()
		nv.Set("from", p.Next)
		if r.URL.Query().Has("size") { // the next page is as long
			nv.Set("size", strconv.Itoa(q.Size))
		}
		v.NextURL = base + "?" + nv.Encode()
	}
	if p.NextPage > 0 && p.Next == "" {
		nv := q.Values()
		nv.Set("page", strconv.Itoa(p.NextPage))
		v.NextURL = base + "?" + nv.Encode()
	}
	if q.From > 0 || q.FromRepeat > 0 || q.Page > 1 || q.After != nil {
		v.FirstURL = base + "?" + vals.Encode()
	}
	sorts := []struct{ label, sort string }{{"input order", ""}, {"slowest", "-latency"}, {"fastest", "latency"}}
	for _, sc := range v.Scorers {
		sorts = append(sorts, struct{ label, sort string }{"lowest " + sc, "score:" + sc}, struct{ label, sort string }{"highest " + sc, "-score:" + sc})
	}
	for _, so := range sorts {
		sv := q.Values()
		sv.Del("sort")
		if so.sort != "" {
			sv.Set("sort", so.sort)
		}
		v.SortLinks = append(v.SortLinks, sortLink{Label: so.label, URL: base + "?" + sv.Encode(), Active: so.sort == q.Sort})
	}
	s.render(w, r, http.StatusOK, "items", "Items · "+runTitle(run), v)
}

// callsCells returns the tool calls of results, in order; nil when none
// has a trajectory.
func callsCells(results []*evalrun.ItemResult) []callsCell {
	var cells []callsCell
	for i, r := range results {
		if r.Trajectory == nil {
			continue
		}
		if cells == nil {
			cells = make([]callsCell, len(results))
		}
		c := callsCell{Agent: true, Calls: len(r.Trajectory.Calls)}
		c.Failed, _ = r.Trajectory.CallCounts()
		cells[i] = c
	}
	return cells
}

// itemView is the data of the item page.
type itemView struct {
	Run    *evalrun.Run
	Result *evalrun.ItemResult
	Row    report.ItemRow
	Scores []scoreView
	Meta   value
	Tags   []string
	// Trajectory is nil when the target is not an agent.
	Trajectory *trajectoryView
	// Conversation is nil when the input is not a conversation.
	Conversation *conversationView
}

type scoreView struct {
	evalrun.ScorerResult
	Threshold float64
}

// itemOf reads the result named by r's path (index) and ?repeat=.
func (s *Server) itemOf(r *http.Request) (*evalrun.Run, *evalrun.ItemResult, error) {
	ctx := r.Context()
	v := r.URL.Query()
	if err := checkParams(v, itemParams); err != nil {
		return nil, nil, err
	}
	repeat, err := intParam(v, "repeat", 0, maxIndex, 0)
	if err != nil {
		return nil, nil, err
	}
	run, err := s.store.GetRun(ctx, r.PathValue("id"))
	if err != nil {
		return nil, nil, err
	}
	index, err := strconv.Atoi(r.PathValue("index"))
	if err != nil || index < 0 || index > maxIndex {
		return nil, nil, fmt.Errorf("item %q of run %s (items are numbered from 0): %w", truncateParam(r.PathValue("index")), run.ID, evalrun.ErrNotFound)
	}
	res, err := getResult(ctx, s.store, run.ID, index, repeat)
	if err != nil {
		return nil, nil, err
	}
	return run, res, nil
}

func (s *Server) handleItem(w http.ResponseWriter, r *http.Request) {
	run, res, err := s.itemOf(r)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	v := itemView{Run: run, Result: res, Row: rowsOf(run, []*evalrun.ItemResult{res})[0], Meta: value{Empty: true},
		Trajectory: newTrajectoryView(res.Trajectory, res.Error != "")}
	v.Conversation = newConversationView(v.Row.Input)
	for _, sc := range res.Scores {
		th := evalrun.DefaultThreshold
		if i := slices.IndexFunc(run.Scorers, func(x evalrun.ScorerInfo) bool { return x.Name == sc.Scorer }); i >= 0 {
			th = run.Scorers[i].Threshold
		}
		v.Scores = append(v.Scores, scoreView{ScorerResult: sc, Threshold: th})
	}
	if res.Item != nil && len(res.Item.Metadata) > 0 {
		v.Meta = pretty(evalrun.JSON(res.Item.Metadata))
	}
	s.render(w, r, http.StatusOK, "item", bounded.Cut(res.ItemID, maxLabelBytes)+" · "+runTitle(run), v)
}

// compareView is a comparison with the outputs of its changed items.
type compareView struct {
	Comparison *report.Comparison
	A, B       *evalrun.Run
	// Sides holds both runs' rows of the first changed items, by
	// "id#repeat".
	Sides map[string][2]*report.ItemRow
}

// Side returns both rows of a changed item.
func (v *compareView) Side(ch report.ItemChange) [2]*report.ItemRow {
	return v.Sides[ch.ItemID+"#"+strconv.Itoa(ch.Repeat)]
}

// compare returns the comparison of run b against run a, cached.
func (s *Server) compare(ctx context.Context, a, b *evalrun.Run) (*compareView, error) {
	done := a.Status.Done() && b.Status.Done()
	fp := reportFP(a) + "/" + reportFP(b)
	return s.compares.get(ctx, s.bgCtx, a.ID+"\x00"+b.ID, fp, done, s.opts.RefreshInterval,
		func(ctx context.Context) (*compareView, error) {
			// Stream the comparison, then read back only the outputs of the
			// changed items shown: never both runs' outputs at once.
			c, err := report.CompareStore(ctx, s.store, a.ID, b.ID, report.CompareOptions{})
			if err != nil {
				return nil, err
			}
			v := &compareView{Comparison: c, A: a, B: b, Sides: map[string][2]*report.ItemRow{}}
			want := map[string]bool{}
			for _, list := range [][]report.ItemChange{c.Regressed, c.Improved} {
				for _, ch := range list[:min(len(list), changesWithRows)] {
					want[ch.ItemID+"#"+strconv.Itoa(ch.Repeat)] = true
				}
			}
			if len(want) == 0 {
				return v, nil
			}
			for side, run := range []*evalrun.Run{a, b} {
				var picked []*evalrun.ItemResult
				err := s.store.ScanResults(ctx, run.ID, evalrun.ResultQuery{}, func(r *evalrun.ItemResult) error {
					if want[compareKey(r)] {
						picked = append(picked, r)
					}
					return ctx.Err()
				})
				if err != nil {
					return nil, err
				}
				for _, row := range rowsOf(run, picked) {
					k := row.ID + "#" + strconv.Itoa(row.Repeat)
					pair := v.Sides[k]
					if pair[side] == nil {
						pair[side] = &row
					}
					v.Sides[k] = pair
				}
			}
			return v, nil
		})
}

// compareKey is a result's key in compareView.Sides.
func compareKey(r *evalrun.ItemResult) string {
	id := r.ItemID
	if id == "" && r.Item != nil {
		id = r.Item.ID
	}
	return id + "#" + strconv.Itoa(r.Repeat)
}

// compareRuns reads the runs ?a= and ?b= of r.
func (s *Server) compareRuns(r *http.Request) (*evalrun.Run, *evalrun.Run, error) {
	q := r.URL.Query()
	if err := checkParams(q, compareParams); err != nil {
		return nil, nil, err
	}
	ida, idb := q.Get("a"), q.Get("b")
	if ida == "" || idb == "" {
		return nil, nil, fmt.Errorf("compare needs two runs: ?a=RUN&b=RUN: %w", evalrun.ErrInvalid)
	}
	a, err := s.store.GetRun(r.Context(), ida)
	if err != nil {
		return nil, nil, err
	}
	b, err := s.store.GetRun(r.Context(), idb)
	if err != nil {
		return nil, nil, err
	}
	return a, b, nil
}

func (s *Server) handleCompare(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := checkParams(q, compareParams); err != nil {
		s.pageError(w, r, err)
		return
	}
	if q.Get("a") == "" && q.Get("b") == "" {
		// No runs chosen: show the form.
		runs, err := s.store.ListRuns(r.Context(), evalrun.RunFilter{Limit: 200})
		if err != nil {
			s.pageError(w, r, err)
			return
		}
		s.render(w, r, http.StatusOK, "compare", "Compare runs", struct {
			Runs []*evalrun.Run
			View *compareView
		}{runs, nil})
		return
	}
	a, b, err := s.compareRuns(r)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	v, err := s.compare(r.Context(), a, b)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "compare", "Compare · "+a.ID+" → "+b.ID, struct {
		Runs            []*evalrun.Run
		View            *compareView
		Regressed       []report.ItemChange
		Improved        []report.ItemChange
		MoreRegressed   int
		MoreImproved    int
		ChangesWithRows int
		Generated       time.Time
	}{nil, v,
		v.Comparison.Regressed[:min(len(v.Comparison.Regressed), changesWithRows)],
		v.Comparison.Improved[:min(len(v.Comparison.Improved), changesWithRows)],
		max(len(v.Comparison.Regressed)-changesWithRows, 0),
		max(len(v.Comparison.Improved)-changesWithRows, 0),
		changesWithRows, s.opts.Clock.Now()})
}
