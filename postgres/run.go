package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/jackc/pgx/v5"
)

// CreateRun implements [evalrun.RunStore]. A zero CreatedAt is set to now.
func (s *Store) CreateRun(ctx context.Context, run *evalrun.Run) error {
	return createRun(ctx, s.pool, run)
}

func createRun(ctx context.Context, db execer, run *evalrun.Run) error {
	if run.ID == "" {
		return fmt.Errorf("create run: empty id: %w", evalrun.ErrInvalid)
	}
	// jsonb refuses \u0000 as text refuses NUL: names go through pgText.
	scorers := make([]evalrun.ScorerInfo, len(run.Scorers))
	for i, sc := range run.Scorers {
		scorers[i] = evalrun.ScorerInfo{Name: pgText(sc.Name), Kind: pgText(sc.Kind), Threshold: sc.Threshold}
	}
	target := evalrun.TargetInfo{Kind: pgText(run.Target.Kind), Name: pgText(run.Target.Name)}
	created := run.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	tag, err := db.Exec(ctx, `INSERT INTO runs (id, name, dataset, dataset_version, target, scorers, config,
		status, total, succeeded, failed, skipped, persist_errors, concurrency, error, created_at, started_at, completed_at,
		experiment_id, variant, variant_index)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)
		ON CONFLICT (id) DO NOTHING`,
		run.ID, pgText(run.Name), run.Dataset, run.DatasetVersion, target, scorers, blob(run.Config),
		string(run.Status), run.Total, run.Succeeded, run.Failed, run.Skipped, run.PersistErrors, run.Concurrency, pgText(run.Error),
		created, ts(run.StartedAt), ts(run.CompletedAt),
		pgText(run.Experiment), pgText(run.Variant), run.VariantIndex)
	if err != nil {
		return fmt.Errorf("create run %q: %w", run.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("create run: run %q already exists: %w", run.ID, evalrun.ErrInvalid)
	}
	return nil
}

// UpdateRun implements [evalrun.RunStore]. It also replaces the settled
// concurrency; the experiment fields, set at creation, stay.
func (s *Store) UpdateRun(ctx context.Context, run *evalrun.Run) error {
	tag, err := s.pool.Exec(ctx, `UPDATE runs SET status = $2, total = $3, succeeded = $4, failed = $5, skipped = $6,
		persist_errors = $7, error = $8, started_at = $9, completed_at = $10, concurrency = $11 WHERE id = $1`,
		run.ID, string(run.Status), run.Total, run.Succeeded, run.Failed, run.Skipped, run.PersistErrors, pgText(run.Error),
		ts(run.StartedAt), ts(run.CompletedAt), run.Concurrency)
	if err != nil {
		return fmt.Errorf("update run %q: %w", run.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("update run %q: %w", run.ID, evalrun.ErrNotFound)
	}
	return nil
}

const runColumns = `id, name, dataset, dataset_version, target, scorers, config, status, total, succeeded, failed,
	skipped, persist_errors, concurrency, error, created_at, started_at, completed_at, claimed_by, claim_expires,
	experiment_id, variant, variant_index`

func scanRun(row pgx.Row) (*evalrun.Run, error) {
	r := &evalrun.Run{}
	var config []byte
	var status string
	var started, completed, claimExpires *time.Time
	if err := row.Scan(&r.ID, &r.Name, &r.Dataset, &r.DatasetVersion, &r.Target, &r.Scorers, &config, &status,
		&r.Total, &r.Succeeded, &r.Failed, &r.Skipped, &r.PersistErrors, &r.Concurrency, &r.Error, &r.CreatedAt, &started, &completed,
		&r.ClaimedBy, &claimExpires, &r.Experiment, &r.Variant, &r.VariantIndex); err != nil {
		return nil, err
	}
	r.Status = evalrun.RunStatus(status)
	r.Error, r.Name = fromPGText(r.Error), fromPGText(r.Name)
	r.Experiment, r.Variant = fromPGText(r.Experiment), fromPGText(r.Variant)
	r.Target = evalrun.TargetInfo{Kind: fromPGText(r.Target.Kind), Name: fromPGText(r.Target.Name)}
	for i, sc := range r.Scorers {
		r.Scorers[i].Name, r.Scorers[i].Kind = fromPGText(sc.Name), fromPGText(sc.Kind)
	}
	if len(r.Scorers) == 0 {
		r.Scorers = nil
	}
	if len(config) > 0 {
		r.Config = config
	}
	r.CreatedAt, r.StartedAt, r.CompletedAt = r.CreatedAt.UTC(), fromTS(started), fromTS(completed)
	r.ClaimExpires = fromTS(claimExpires)
	return r, nil
}

// CancelRun implements [evalrun.RunStore]: one conditional UPDATE. The
// coordinator and workers of distributed mode cancel through it too.
func (s *Store) CancelRun(ctx context.Context, id, reason string) (*evalrun.Run, bool, error) {
	return s.updateRunIf(ctx, "cancel", id, `UPDATE runs SET status = $2, error = CASE WHEN error = '' THEN $3 ELSE error END
		WHERE id = $1 AND status = ANY($4) RETURNING `+runColumns,
		id, string(evalrun.RunCanceled), pgText(reason), statusNames(evalrun.CancelableStatuses))
}

// ClaimRun implements [evalrun.RunStore]: one conditional UPDATE, by the
// clock of SetClock (the clients' clocks, which a lease assumes roughly
// agree).
func (s *Store) ClaimRun(ctx context.Context, id string, c evalrun.RunClaim) (*evalrun.Run, bool, error) {
	if c.Owner == "" || c.TTL <= 0 {
		return nil, false, fmt.Errorf("claim run %q: owner %q, ttl %v: %w", id, c.Owner, c.TTL, evalrun.ErrInvalid)
	}
	now := s.clock.Now()
	return s.updateRunIf(ctx, "claim", id, `UPDATE runs SET claimed_by = $2, claim_expires = $3
		WHERE id = $1 AND (claimed_by = $2 OR ((claimed_by = '' OR claim_expires <= $4 OR ($5 <> '' AND claimed_by = $5))
			AND (status = ANY($6) OR (status = 'failed' AND (skipped > 0 OR persist_errors > 0))))) RETURNING `+runColumns,
		id, c.Owner, now.Add(c.TTL), now, c.Replace, statusNames(evalrun.ResumableStatuses))
}

// ReleaseRun implements [evalrun.RunStore].
func (s *Store) ReleaseRun(ctx context.Context, id, owner string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE runs SET claimed_by = '', claim_expires = NULL WHERE id = $1 AND claimed_by = $2`, id, owner)
	if err != nil {
		return fmt.Errorf("release run %q: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		if _, err := s.RunStatus(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// updateRunIf runs a conditional UPDATE … RETURNING of one run and returns
// the run as stored afterwards and whether the update applied.
func (s *Store) updateRunIf(ctx context.Context, verb, id, query string, args ...any) (*evalrun.Run, bool, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, query, args...))
	if err == nil {
		return r, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, false, fmt.Errorf("%s run %q: %w", verb, id, err)
	}
	// Not applied: the run is missing, or its state said no.
	if r, err = getRun(ctx, s.pool, id); err != nil {
		return nil, false, err
	}
	return r, false, nil
}

// statusNames returns statuses as a text array argument.
func statusNames(statuses []evalrun.RunStatus) []string {
	out := make([]string, len(statuses))
	for i, st := range statuses {
		out[i] = string(st)
	}
	return out
}

// GetRun implements [evalrun.RunStore].
func (s *Store) GetRun(ctx context.Context, id string) (*evalrun.Run, error) {
	return getRun(ctx, s.pool, id)
}

func getRun(ctx context.Context, q querier, id string) (*evalrun.Run, error) {
	r, err := scanRun(q.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
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
	rows, err := s.pool.Query(ctx, query, args...)
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
// the filter's conditions, so that a generic plan (made without the
// parameters' values) uses runs_dataset or the experiment indexes too.
func listRunsQuery(f evalrun.RunFilter) (string, []any) {
	where, args := []string{}, []any{}
	if f.Dataset != "" {
		args = append(args, f.Dataset)
		where = append(where, fmt.Sprintf("dataset = $%d", len(args)))
	}
	if f.Experiment != "" {
		args = append(args, pgText(f.Experiment))
		where = append(where, fmt.Sprintf("experiment_id = $%d", len(args)))
	}
	if f.Experiment != "" || f.InExperiment {
		// Literal, as the partial indexes' condition is: the planner then
		// knows they apply.
		where = append(where, "experiment_id <> ''")
	}
	query := `SELECT ` + runColumns + ` FROM runs`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY created_at DESC, id COLLATE "C" DESC`
	if f.Limit > 0 {
		args = append(args, f.Limit)
		query += fmt.Sprintf(" LIMIT $%d", len(args))
	}
	return query, args
}
