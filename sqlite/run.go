package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
		status, total, succeeded, failed, skipped, persist_errors, concurrency, error, created_at, started_at, completed_at,
		experiment_id, variant, variant_index)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		run.ID, run.Name, run.Dataset, run.DatasetVersion, target, sc, blob(run.Config),
		string(run.Status), run.Total, run.Succeeded, run.Failed, run.Skipped, run.PersistErrors, run.Concurrency, run.Error,
		micros(created), micros(run.StartedAt), micros(run.CompletedAt),
		run.Experiment, run.Variant, run.VariantIndex)
	if err != nil {
		return fmt.Errorf("create run %q: %w", run.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("create run: run %q already exists: %w", run.ID, evalrun.ErrInvalid)
	}
	return nil
}

// UpdateRun implements [evalrun.RunStore]. It also replaces the settled
// concurrency; the experiment fields, set at creation, stay.
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
	skipped, persist_errors, concurrency, error, created_at, started_at, completed_at, claimed_by, claim_expires,
	experiment_id, variant, variant_index`

func scanRun(sc interface{ Scan(...any) error }) (*evalrun.Run, error) {
	r := &evalrun.Run{}
	var target, scorers, config []byte
	var created, started, completed, claimExpires sql.NullInt64
	if err := sc.Scan(&r.ID, &r.Name, &r.Dataset, &r.DatasetVersion, &target, &scorers, &config, (*string)(&r.Status),
		&r.Total, &r.Succeeded, &r.Failed, &r.Skipped, &r.PersistErrors, &r.Concurrency, &r.Error, &created, &started, &completed,
		&r.ClaimedBy, &claimExpires, &r.Experiment, &r.Variant, &r.VariantIndex); err != nil {
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
	r.ClaimExpires = fromMicros(claimExpires)
	return r, nil
}

// CancelRun implements [evalrun.RunStore]: one conditional UPDATE.
func (s *Store) CancelRun(ctx context.Context, id, reason string) (*evalrun.Run, bool, error) {
	in, args := statusIn(evalrun.CancelableStatuses)
	args = append([]any{string(evalrun.RunCanceled), reason, id}, args...)
	return s.updateRunIf(ctx, "cancel", id, `UPDATE runs SET status = ?, error = CASE WHEN error = '' THEN ? ELSE error END
		WHERE id = ? AND status IN (`+in+`) RETURNING `+runColumns, args)
}

// ClaimRun implements [evalrun.RunStore]: one conditional UPDATE, by the
// clock of SetClock.
func (s *Store) ClaimRun(ctx context.Context, id string, c evalrun.RunClaim) (*evalrun.Run, bool, error) {
	if c.Owner == "" || c.TTL <= 0 {
		return nil, false, fmt.Errorf("claim run %q: owner %q, ttl %v: %w", id, c.Owner, c.TTL, evalrun.ErrInvalid)
	}
	now := s.clock.Now()
	in, args := statusIn(evalrun.ResumableStatuses)
	args = append([]any{c.Owner, micros(now.Add(c.TTL)), id, c.Owner, micros(now), c.Replace}, args...)
	return s.updateRunIf(ctx, "claim", id, `UPDATE runs SET claimed_by = ?1, claim_expires = ?2
		WHERE id = ?3 AND (claimed_by = ?4 OR ((claimed_by = '' OR claim_expires <= ?5 OR (?6 <> '' AND claimed_by = ?6))
			AND (status IN (`+in+`) OR (status = 'failed' AND (skipped > 0 OR persist_errors > 0))))) RETURNING `+runColumns, args)
}

// ReleaseRun implements [evalrun.RunStore].
func (s *Store) ReleaseRun(ctx context.Context, id, owner string) error {
	res, err := s.writer.ExecContext(ctx, `UPDATE runs SET claimed_by = '', claim_expires = NULL WHERE id = ? AND claimed_by = ?`, id, owner)
	if err != nil {
		return fmt.Errorf("release run %q: %w", id, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		if _, err := getRun(ctx, s.writer, id); err != nil {
			return err
		}
	}
	return nil
}

// updateRunIf runs a conditional UPDATE … RETURNING of one run and returns
// the run as stored afterwards and whether the update applied.
func (s *Store) updateRunIf(ctx context.Context, verb, id, query string, args []any) (*evalrun.Run, bool, error) {
	r, err := scanRun(s.writer.QueryRowContext(ctx, query, args...))
	if err == nil {
		return r, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, false, fmt.Errorf("%s run %q: %w", verb, id, err)
	}
	// Not applied: the run is missing, or its state said no.
	if r, err = getRun(ctx, s.writer, id); err != nil {
		return nil, false, err
	}
	return r, false, nil
}

// statusIn returns the placeholders and arguments of an IN list of
// statuses, numbered after the statement's other arguments.
func statusIn(statuses []evalrun.RunStatus) (string, []any) {
	marks := make([]string, len(statuses))
	args := make([]any, len(statuses))
	for i, st := range statuses {
		marks[i], args[i] = "?", string(st)
	}
	return strings.Join(marks, ", "), args
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
	query, args := listRunsQuery(f)
	rows, err := s.reader.QueryContext(ctx, query, args...)
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

// listRunsQuery returns ListRuns' statement. Its WHERE clause holds only
// the filter's conditions, so that SQLite's plan (made without the
// parameters' values) uses runs_dataset, runs_experiment or
// runs_in_experiment.
func listRunsQuery(f evalrun.RunFilter) (string, []any) {
	where, args := []string{}, []any{}
	if f.Dataset != "" {
		where, args = append(where, "dataset = ?"), append(args, f.Dataset)
	}
	if f.Experiment != "" {
		where, args = append(where, "experiment_id = ?"), append(args, f.Experiment)
	}
	if f.Experiment != "" || f.InExperiment {
		// Literal, as the partial indexes' condition is: SQLite uses
		// them only when the query states it.
		where = append(where, "experiment_id <> ''")
	}
	query := `SELECT ` + runColumns + ` FROM runs`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	limit := -1
	if f.Limit > 0 {
		limit = f.Limit
	}
	return query + ` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, limit)
}
