package web

import (
	"bytes"
	"net/http"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/bounded"
	"github.com/evalrun/evalrun/report"
)

// writeJSON writes v as indented JSON, HTML characters escaped. Item
// values deeper than bounded.IndentDepth are written compact: indenting
// them would cost the square of their depth.
func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, err := bounded.MarshalIndent(v, "", bounded.IndentDepth, true)
	if err != nil {
		s.log.Error("web: encode JSON", "path", r.URL.Path, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	s.writeBody(w, r, status, append(body, '\n'))
}

func (s *Server) writeBody(w http.ResponseWriter, r *http.Request, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// apiError is the body of every API error.
type apiError struct {
	Error  string `json:"error"`
	Status int    `json:"status"`
}

func (s *Server) jsonError(w http.ResponseWriter, r *http.Request, err error) {
	status := errorStatus(err)
	msg := err.Error()
	if status == http.StatusInternalServerError {
		s.log.Error("web: request", "path", r.URL.Path, "err", err)
		msg = "internal error (see the server's log)"
	}
	s.writeJSON(w, r, status, apiError{Error: msg, Status: status})
}

// RunJSON is a run in GET /api/runs: the run record (without its config)
// with its macro pass rate and duration.
type RunJSON struct {
	*evalrun.Run
	// MacroPassRate is null when the run has no scores, or when its report
	// was still being computed (Pending).
	MacroPassRate *float64 `json:"macro_pass_rate"`
	// Pending is true when the run's report was still being computed;
	// always written (docs/web.md lists it).
	Pending    bool   `json:"pending"`
	DurationMS *int64 `json:"duration_ms"`
}

// RunsJSON is the body of GET /api/runs.
type RunsJSON struct {
	Runs []RunJSON `json:"runs"`
	// More is true when more runs match than were listed (raise ?limit=).
	More bool `json:"more"`
}

func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	dataset, limit, err := runsQuery(r)
	if err != nil {
		s.jsonError(w, r, err)
		return
	}
	rows, more, err := s.listRuns(r.Context(), dataset, limit)
	if err != nil {
		s.jsonError(w, r, err)
		return
	}
	out := RunsJSON{Runs: make([]RunJSON, len(rows)), More: more}
	for i, row := range rows {
		run := *row.Run
		run.Config = nil
		out.Runs[i] = RunJSON{Run: &run, MacroPassRate: row.PassRate, Pending: row.Pending, DurationMS: row.Duration}
	}
	s.writeJSON(w, r, http.StatusOK, out)
}

func (s *Server) apiRun(w http.ResponseWriter, r *http.Request) {
	if err := checkParams(r.URL.Query(), nil); err != nil {
		s.jsonError(w, r, err)
		return
	}
	run, err := s.store.GetRun(r.Context(), r.PathValue("id"))
	if err != nil {
		s.jsonError(w, r, err)
		return
	}
	rep, err := s.report(r.Context(), run)
	if err != nil {
		s.jsonError(w, r, err)
		return
	}
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, rep); err != nil {
		s.jsonError(w, r, err)
		return
	}
	s.writeBody(w, r, http.StatusOK, buf.Bytes())
}

// ItemsJSON is the body of GET /api/runs/{id}/items.
type ItemsJSON struct {
	RunID string `json:"run_id"`
	// Items are report item rows (docs/report-schema.md), in the listing's
	// order.
	Items []report.ItemRow `json:"items"`
	// Total is the number of matching results; null for an input-order
	// listing, which stops reading once the page is full.
	Total *int `json:"total"`
	// Next is the from= cursor of the next input-order page; NextPage the
	// page= of the next sorted page. Null when there is none.
	Next     *string `json:"next"`
	NextPage *int    `json:"next_page"`
	// Scanned is, for a search (q=), how many results this page examined:
	// a page examines at most evalrun.DefaultSearchBudget of them, so that
	// a rare term costs no more than a common one. Partial is true when
	// that budget ran out before the page filled: Items may be short or
	// empty and Next continues the search after the last result examined.
	// Follow Next until it is null to see every match. Scanned is null
	// when there is no search.
	Scanned *int `json:"scanned"`
	Partial bool `json:"partial"`
}

func (s *Server) apiItems(w http.ResponseWriter, r *http.Request) {
	run, err := s.store.GetRun(r.Context(), r.PathValue("id"))
	if err != nil {
		s.jsonError(w, r, err)
		return
	}
	q, p, rows, err := s.itemsPage(r, run)
	if err != nil {
		s.jsonError(w, r, err)
		return
	}
	out := ItemsJSON{RunID: run.ID, Items: rows}
	if out.Items == nil {
		out.Items = []report.ItemRow{}
	}
	if p.Total >= 0 {
		out.Total = &p.Total
	}
	if p.Next != "" {
		out.Next = &p.Next
	}
	if p.NextPage > 0 {
		out.NextPage = &p.NextPage
	}
	if q.Search != "" {
		out.Scanned = &p.Scanned
	}
	out.Partial = p.Partial
	s.writeJSON(w, r, http.StatusOK, out)
}

// ItemJSON is the body of GET /api/runs/{id}/items/{index}: the report row
// and the stored result (attempts, usage, per-scorer error kinds and usage,
// timestamps) with the item's metadata.
type ItemJSON struct {
	RunID    string              `json:"run_id"`
	Row      report.ItemRow      `json:"row"`
	Result   *evalrun.ItemResult `json:"result"`
	Metadata map[string]any      `json:"metadata"`
}

func (s *Server) apiItem(w http.ResponseWriter, r *http.Request) {
	run, res, err := s.itemOf(r)
	if err != nil {
		s.jsonError(w, r, err)
		return
	}
	out := ItemJSON{RunID: run.ID, Row: rowsOf(run, []*evalrun.ItemResult{res})[0], Result: res}
	if res.Item != nil {
		out.Metadata = res.Item.Metadata
	}
	s.writeJSON(w, r, http.StatusOK, out)
}

func (s *Server) apiCompare(w http.ResponseWriter, r *http.Request) {
	a, b, err := s.compareRuns(r)
	if err != nil {
		s.jsonError(w, r, err)
		return
	}
	v, err := s.compare(r.Context(), a, b)
	if err != nil {
		s.jsonError(w, r, err)
		return
	}
	var buf bytes.Buffer
	if err := report.WriteComparisonJSON(&buf, v.Comparison); err != nil {
		s.jsonError(w, r, err)
		return
	}
	s.writeBody(w, r, http.StatusOK, buf.Bytes())
}
