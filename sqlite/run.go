package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/evalrun/evalrun"
)

// CreateRun implements [evalrun.RunStore]. A zero CreatedAt is set to now.
func (s *Store) CreateRun(ctx context.Context, run *evalrun.Run) error {
	if run.ID == "" {
		return fmt.Errorf("create run: empty id: %w", evalrun.ErrInvalid)
	}
	target, err := json.Marshal(run.Target)
	if err != nil {
		return fmt.Errorf("create run %q: target: %w", run.ID, err)
	}
	scorers := run.Scorers
	if scorers == nil {
		scorers = []evalrun.ScorerInfo{}
	}
	sc, err := json.Marshal(scorers)
	if err != nil {
		return fmt.Errorf("create run %q: scorers: %w", run.ID, err)
	}
	created := run.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	res, err := s.writer.ExecContext(ctx, `INSERT INTO runs (id, name, dataset, dataset_version, target, scorers, config,
		status, total, succeeded, failed, skipped, persist_errors, concurrency, error, created_at, started_at, completed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		run.ID, run.Name, run.Dataset, run.DatasetVersion, target, sc, blob(run.Config),
		string(run.Status), run.Total, run.Succeeded, run.Failed, run.Skipped, run.PersistErrors, run.Concurrency, run.Error,
		micros(created), micros(run.StartedAt), micros(run.CompletedAt))
	if err != nil {
		return fmt.Errorf("create run %q: %w", run.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("create run: run %q already exists: %w", run.ID, evalrun.ErrInvalid)
	}
	return nil
}

// UpdateRun implements [evalrun.RunStore]. It also replaces the settled
// concurrency.
func (s *Store) UpdateRun(ctx context.Context, run *evalrun.Run) error {
	res, err := s.writer.ExecContext(ctx, `UPDATE runs SET status = ?, total = ?, succeeded = ?, failed = ?, skipped = ?,
		persist_errors = ?, concurrency = ?, error = ?, started_at = ?, completed_at = ? WHERE id = ?`,
		string(run.Status), run.Total, run.Succeeded, run.Failed, run.Skipped, run.PersistErrors, run.Concurrency, run.Error,
		micros(run.StartedAt), micros(run.CompletedAt), run.ID)
	if err != nil {
		return fmt.Errorf("update run %q: %w", run.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("update run %q: %w", run.ID, evalrun.ErrNotFound)
	}
	return nil
}

const runColumns = `id, name, dataset, dataset_version, target, scorers, config, status, total, succeeded, failed,
	skipped, persist_errors, concurrency, error, created_at, started_at, completed_at`

func scanRun(sc interface{ Scan(...any) error }) (*evalrun.Run, error) {
	r := &evalrun.Run{}
	var target, scorers, config []byte
	var created, started, completed sql.NullInt64
	if err := sc.Scan(&r.ID, &r.Name, &r.Dataset, &r.DatasetVersion, &target, &scorers, &config, (*string)(&r.Status),
		&r.Total, &r.Succeeded, &r.Failed, &r.Skipped, &r.PersistErrors, &r.Concurrency, &r.Error, &created, &started, &completed); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(target, &r.Target); err != nil {
		return nil, fmt.Errorf("run %q: stored target: %w", r.ID, err)
	}
	if err := json.Unmarshal(scorers, &r.Scorers); err != nil {
		return nil, fmt.Errorf("run %q: stored scorers: %w", r.ID, err)
	}
	if len(r.Scorers) == 0 {
		r.Scorers = nil
	}
	if len(config) > 0 {
		r.Config = config
	}
	r.CreatedAt, r.StartedAt, r.CompletedAt = fromMicros(created), fromMicros(started), fromMicros(completed)
	return r, nil
}

// GetRun implements [evalrun.RunStore].
func (s *Store) GetRun(ctx context.Context, id string) (*evalrun.Run, error) {
	return getRun(ctx, s.reader, id)
}

func getRun(ctx context.Context, q querier, id string) (*evalrun.Run, error) {
	r, err := scanRun(q.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("run %q: %w", id, evalrun.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get run %q: %w", id, err)
	}
	return r, nil
}

// ListRuns implements [evalrun.RunStore]: newest first (by creation time,
// then id).
func (s *Store) ListRuns(ctx context.Context, f evalrun.RunFilter) ([]*evalrun.Run, error) {
	limit := -1
	if f.Limit > 0 {
		limit = f.Limit
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT `+runColumns+` FROM runs WHERE (?1 = '' OR dataset = ?1)
		ORDER BY created_at DESC, id DESC LIMIT ?2`, f.Dataset, limit)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	out := []*evalrun.Run{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return out, nil
}
