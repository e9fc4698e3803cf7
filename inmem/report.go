package inmem

import (
	"context"
	"fmt"
	"slices"

	"github.com/evalrun/evalrun"
)

var _ evalrun.ReportStore = (*Store)(nil)

// PutReportJSON implements [evalrun.ReportStore]: it keeps a copy of report,
// replacing an earlier report of the run. It returns an error wrapping
// ErrNotFound when the run does not exist.
func (s *Store) PutReportJSON(_ context.Context, runID string, report []byte) error {
	c := slices.Clone(report)
	if c == nil {
		c = []byte{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.runs[runID]
	if rec == nil {
		return fmt.Errorf("put report: run %q: %w", runID, evalrun.ErrNotFound)
	}
	rec.report = c
	return nil
}

// GetReportJSON implements [evalrun.ReportStore]: a copy of the stored
// report, or an error wrapping ErrNotFound when the run has none (or does
// not exist).
func (s *Store) GetReportJSON(_ context.Context, runID string) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	rec := s.runs[runID]
	if rec == nil || rec.report == nil {
		return nil, fmt.Errorf("report of run %q: %w", runID, evalrun.ErrNotFound)
	}
	return slices.Clone(rec.report), nil
}
