package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/evalrun/evalrun"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The methods of this file serve distributed mode (package river), whose
// coordinator and workers share the database through the store.

// execer is what a pool and a transaction share for statements.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// CreateRunTx is [Store.CreateRun] inside the caller's transaction, so that
// the run record and the jobs of a distributed run commit together.
func (s *Store) CreateRunTx(ctx context.Context, tx pgx.Tx, run *evalrun.Run) error {
	return createRun(ctx, tx, run)
}

// RunStatus returns the status of a run without loading its record, or an
// error wrapping ErrNotFound.
func (s *Store) RunStatus(ctx context.Context, runID string) (evalrun.RunStatus, error) {
	var status string
	err := s.pool.QueryRow(ctx, `SELECT status FROM runs WHERE id = $1`, runID).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("run %q: %w", runID, evalrun.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("status of run %q: %w", runID, err)
	}
	return evalrun.RunStatus(status), nil
}

// FailRun marks a pending or running run failed with reason as its error,
// before it is finalized: a worker stopping a strict distributed run. It
// reports whether the run changed: false when it had already ended or been
// canceled. An unknown run is an error wrapping ErrNotFound.
func (s *Store) FailRun(ctx context.Context, runID, reason string) (bool, error) {
	_, changed, err := s.updateRunIf(ctx, "stop as failed", runID, `UPDATE runs SET status = $2, error = $3
		WHERE id = $1 AND status = ANY($4) RETURNING `+runColumns,
		runID, string(evalrun.RunFailed), pgText(reason), statusNames(evalrun.CancelableStatuses))
	return changed, err
}

// CountResults returns how many results of the run are stored: succeeded
// (no target error) and failed.
func (s *Store) CountResults(ctx context.Context, runID string) (succeeded, failed int, err error) {
	err = s.pool.QueryRow(ctx, `SELECT COUNT(*) FILTER (WHERE error = ''), COUNT(*) FILTER (WHERE error <> '')
		FROM results WHERE run_id = $1`, runID).Scan(&succeeded, &failed)
	if err != nil {
		return 0, 0, fmt.Errorf("count results of run %q: %w", runID, err)
	}
	return succeeded, failed, nil
}

// CountScorerErrors returns how many stored scores of the run are errors.
func (s *Store) CountScorerErrors(ctx context.Context, runID string) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT COUNT(*) FROM scores WHERE run_id = $1 AND error <> ''`, runID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count scorer errors of run %q: %w", runID, err)
	}
	return n, nil
}

// HasResult reports whether a result for (run, index, repeat) is stored.
func (s *Store) HasResult(ctx context.Context, runID string, index, repeat int) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM results WHERE run_id = $1 AND idx = $2 AND rep = $3)`,
		runID, index, repeat).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("look up result %d/%d of run %q: %w", index, repeat, runID, err)
	}
	return ok, nil
}
