package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/evalrun/evalrun"
)

var _ evalrun.ReportStore = (*Store)(nil)

// PutReportJSON implements [evalrun.ReportStore]: an upsert through the
// writer, replacing an earlier report of the run. It returns an error
// wrapping ErrNotFound, storing nothing, when the run does not exist.
func (s *Store) PutReportJSON(ctx context.Context, runID string, report []byte) error {
	if report == nil {
		report = []byte{}
	}
	// INSERT … SELECT FROM runs: no row (and no report) for an unknown run,
	// whether or not the connection enforces foreign keys.
	res, err := s.writer.ExecContext(ctx, `INSERT INTO run_reports (run_id, report, created_at)
		SELECT id, ?2, ?3 FROM runs WHERE id = ?1
		ON CONFLICT (run_id) DO UPDATE SET report = excluded.report, created_at = excluded.created_at`,
		runID, report, time.Now().UnixMicro())
	if err != nil {
		return fmt.Errorf("put report of run %q: %w", runID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("put report of run %q: %w", runID, err)
	} else if n == 0 {
		return fmt.Errorf("put report: run %q: %w", runID, evalrun.ErrNotFound)
	}
	return nil
}

// GetReportJSON implements [evalrun.ReportStore] on the read pool. It
// returns an error wrapping ErrNotFound when the run has no stored report
// (or does not exist).
func (s *Store) GetReportJSON(ctx context.Context, runID string) ([]byte, error) {
	var v []byte
	err := s.reader.QueryRowContext(ctx, `SELECT report FROM run_reports WHERE run_id = ?`, runID).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
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
