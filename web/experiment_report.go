package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/report"
)

// experimentSummary is the experiment report without its item rows, as
// the viewer shows it: the matrix and the comparisons with the baseline.
// It is decoded from the report's JSON (docs/report-schema.md, the
// PRODUCT.md shape whose key names are binding), so that the page reads
// exactly what `evalrun report --experiment` writes.
type experimentSummary struct {
	SchemaVersion int `json:"schema_version"`
	Experiment    struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		Baseline string `json:"baseline"`
		Dataset  struct {
			Name    string `json:"name"`
			Version int    `json:"version"`
		} `json:"dataset"`
	} `json:"experiment"`
	Variants []variantSummary `json:"variants"`
}

// variantSummary is one variant's line of the matrix.
type variantSummary struct {
	Name          string                    `json:"name"`
	RunID         string                    `json:"run_id"`
	Status        evalrun.RunStatus         `json:"status"`
	Target        evalrun.TargetInfo        `json:"target"`
	Total         int                       `json:"total"`
	Succeeded     int                       `json:"succeeded"`
	Failed        int                       `json:"failed"`
	CacheHits     int                       `json:"cache_hits"`
	Scorers       map[string]*variantScorer `json:"scorers"`
	MacroPassRate *float64                  `json:"macro_pass_rate"`
	Usage         report.UsageSummary       `json:"usage"`
	VsBaseline    map[string]*baselineDelta `json:"vs_baseline"`
}

// variantScorer is a scorer's statistics in one variant, with the 95%
// interval of its pass rate.
type variantScorer struct {
	report.ScorerStats
	PassRateCI []*float64 `json:"pass_rate_ci"`
}

// baselineDelta is a variant against the baseline on one scorer.
type baselineDelta struct {
	Delta   *float64   `json:"delta"`
	CI      []*float64 `json:"ci"`
	PValue  *float64   `json:"p_value"`
	Verdict string     `json:"verdict"`
}

// experimentJSON builds the experiment report from the store and returns
// its JSON without item rows ("items": []) (the viewer pages them itself, see
// experimentIndex) and the summary decoded from it.
func experimentJSON(ctx context.Context, store evalrun.RunStore, exp *evalrun.Experiment) ([]byte, *experimentSummary, error) {
	// Without the items side by side: they are the one part as large as
	// the dataset's outputs. The page reads a page of them from the store,
	// and the build and the cached JSON stay small.
	e, err := report.BuildExperimentSummaryStore(ctx, store, exp, report.CompareOptions{})
	if err != nil {
		return nil, nil, err
	}
	var buf bytes.Buffer
	if err := report.WriteExperimentJSON(&buf, e); err != nil {
		return nil, nil, err
	}
	var sum experimentSummary
	if err := json.Unmarshal(buf.Bytes(), &sum); err != nil {
		return nil, nil, fmt.Errorf("experiment %s: read its report: %w", exp.ID, err)
	}
	return buf.Bytes(), &sum, nil
}
