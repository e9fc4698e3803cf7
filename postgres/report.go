package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/evalrun/evalrun"
	"github.com/jackc/pgx/v5"
)

var _ evalrun.ReportStore = (*Store)(nil)

// PutReportJSON implements [evalrun.ReportStore]: an upsert replacing an
// earlier report of the run. It returns an error wrapping ErrNotFound,
// storing nothing, when the run does not exist.
func (s *Store) PutReportJSON(ctx context.Context, runID string, report []byte) error {
	if report == nil {
		report = []byte{}
	}
	// INSERT … SELECT FROM runs: no row for an unknown run (rather than a
	// foreign key violation to decode).
	tag, err := s.pool.Exec(ctx, `INSERT INTO run_reports (run_id, report, created_at)
		SELECT id, $2, now() FROM runs WHERE id = $1
		ON CONFLICT (run_id) DO UPDATE SET report = excluded.report, created_at = excluded.created_at`,
		runID, report)
	if err != nil {
		return fmt.Errorf("put report of run %q: %w", runID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("put report: run %q: %w", runID, evalrun.ErrNotFound)
	}
	return nil
}

// GetReportJSON implements [evalrun.ReportStore]. It returns an error
// wrapping ErrNotFound when the run has no stored report (or does not
// exist).
func (s *Store) GetReportJSON(ctx context.Context, runID string) ([]byte, error) {
	var v []byte
	err := s.pool.QueryRow(ctx, `SELECT report FROM run_reports WHERE run_id = $1`, runID).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("report of run %q: %w", runID, evalrun.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get report of run %q: %w", runID, err)
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}
