package web

import (
	"net/http"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/report"
)

// ExperimentJSON is an experiment in GET /api/experiments.
type ExperimentJSON struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Dataset struct {
		Name    string `json:"name"`
		Version int    `json:"version"`
	} `json:"dataset"`
	CreatedAt time.Time `json:"created_at"`
	// Variants are in variant order; the first is the baseline.
	Variants []ExperimentVariantJSON `json:"variants"`
}

// ExperimentVariantJSON is a variant of an [ExperimentJSON]: its run.
type ExperimentVariantJSON struct {
	Name   string            `json:"name"`
	RunID  string            `json:"run_id"`
	Status evalrun.RunStatus `json:"status"`
}

// ExperimentsJSON is the body of GET /api/experiments.
type ExperimentsJSON struct {
	Experiments []ExperimentJSON `json:"experiments"`
	// More is true when more experiments exist than were listed (raise
	// ?limit=).
	More bool `json:"more"`
}

func (s *Server) apiExperiments(w http.ResponseWriter, r *http.Request) {
	limit, err := experimentsQuery(r)
	if err != nil {
		s.jsonError(w, r, err)
		return
	}
	exps, more, err := s.listExperiments(r.Context(), limit)
	if err != nil {
		s.jsonError(w, r, err)
		return
	}
	out := ExperimentsJSON{Experiments: make([]ExperimentJSON, len(exps)), More: more}
	for i, e := range exps {
		j := ExperimentJSON{ID: e.ID, Name: e.Name, CreatedAt: e.CreatedAt}
		j.Dataset.Name, j.Dataset.Version = e.Dataset, e.DatasetVersion
		for _, run := range e.Runs {
			j.Variants = append(j.Variants, ExperimentVariantJSON{Name: run.Variant, RunID: run.ID, Status: run.Status})
		}
		out.Experiments[i] = j
	}
	s.writeJSON(w, r, http.StatusOK, out)
}

// apiExperiment serves the experiment report (docs/report-schema.md) with
// an empty "items" list: the items are paged by GET
// /api/experiments/{id}/items.
func (s *Server) apiExperiment(w http.ResponseWriter, r *http.Request) {
	if err := checkParams(r.URL.Query(), nil); err != nil {
		s.jsonError(w, r, err)
		return
	}
	exp, err := s.experimentOf(r)
	if err != nil {
		s.jsonError(w, r, err)
		return
	}
	data, err := s.experiment(r.Context(), exp)
	if err != nil {
		s.jsonError(w, r, err)
		return
	}
	s.writeBody(w, r, http.StatusOK, data.JSON)
}

// ExperimentItemsJSON is the body of GET /api/experiments/{id}/items: a
// page of the items side by side.
type ExperimentItemsJSON struct {
	ExperimentID string               `json:"experiment_id"`
	Items        []ExperimentItemJSON `json:"items"`
	// Total is the number of matching items; Pages the number of pages.
	Total int `json:"total"`
	Page  int `json:"page"`
	Pages int `json:"pages"`
}

// ExperimentItemJSON is an item with each variant's report row (null
// where the variant has no result for it), keyed by variant name.
type ExperimentItemJSON struct {
	Index    int                        `json:"index"`
	Repeat   int                        `json:"repeat"`
	ID       string                     `json:"id"`
	Tags     []string                   `json:"tags"`
	Disagree bool                       `json:"disagree"`
	Variants map[string]*report.ItemRow `json:"variants"`
}

func (s *Server) apiExperimentItems(w http.ResponseWriter, r *http.Request) {
	v, err := s.experimentPage(r)
	if err != nil {
		s.jsonError(w, r, err)
		return
	}
	out := ExperimentItemsJSON{ExperimentID: v.Exp.ID, Items: make([]ExperimentItemJSON, len(v.Items.Rows)),
		Total: v.Items.Total, Page: v.Items.Page, Pages: v.Items.Pages}
	for i, row := range v.Items.Rows {
		it := ExperimentItemJSON{Index: row.Index, Repeat: row.Repeat, ID: row.ID, Tags: row.Tags, Disagree: row.Disagree,
			Variants: make(map[string]*report.ItemRow, len(row.Cells))}
		if it.Tags == nil {
			it.Tags = []string{}
		}
		for _, c := range row.Cells {
			it.Variants[c.Variant] = c.Row
		}
		out.Items[i] = it
	}
	s.writeJSON(w, r, http.StatusOK, out)
}
