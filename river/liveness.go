package river

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Worker liveness. River's rescuer is age-based only: it would either
// leave a killed worker's jobs running for RescueStuckJobsAfter (15 min
// here before) or, set short, take a live worker's slow item from it. So
// evalrun decides by liveness instead: every worker writes a heartbeat row
// (the database's now(), so machines' clocks never matter) every
// HeartbeatInterval, and every worker, at the same pace, makes the running
// jobs of workers whose heartbeat is older than their DeadAfter available
// again. River's own job timeout and rescuer are disabled for evalrun jobs
// (JobTimeout -1, which the rescuer honours by ignoring them), so a live
// worker's item is never taken from it however long it runs.
//
// A killed worker's items therefore run again after at most
// DeadAfter + HeartbeatInterval + FetchPollInterval (20 s + 3 s + 1 s by
// default), independent of item_timeout.

// Defaults of the liveness options.
const (
	DefaultHeartbeatInterval = 3 * time.Second
	DefaultDeadAfter         = 20 * time.Second
	// heartbeatTimeout bounds one heartbeat (and reap) statement.
	heartbeatTimeout = 10 * time.Second
	// heartbeatRetention is how long the row of a worker that vanished is
	// kept (for operators) before a live worker deletes it.
	heartbeatRetention = 24 * time.Hour
)

// heartbeatTable is created with River's schema by [Migrate]; it belongs to
// distributed mode only, so it is not one of the store's migrations.
const heartbeatTable = `CREATE TABLE IF NOT EXISTS evalrun_worker_heartbeat (
	worker_id    text PRIMARY KEY,
	started_at   timestamptz NOT NULL DEFAULT now(),
	heartbeat_at timestamptz NOT NULL DEFAULT now(),
	dead_after   interval NOT NULL
)`

// beat records that worker id is alive now (the database's clock), with
// the window after which it may be presumed dead.
func beat(ctx context.Context, pool *pgxpool.Pool, id string, deadAfter time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, heartbeatTimeout)
	defer cancel()
	_, err := pool.Exec(ctx, `INSERT INTO evalrun_worker_heartbeat (worker_id, dead_after) VALUES ($1, $2)
		ON CONFLICT (worker_id) DO UPDATE SET heartbeat_at = now(), dead_after = EXCLUDED.dead_after`, id, deadAfter)
	if err != nil {
		return fmt.Errorf("worker %s: heartbeat: %w", id, err)
	}
	return nil
}

// retire removes the heartbeat of a worker that stopped gracefully: its
// jobs went back to the queue through River.
func retire(ctx context.Context, pool *pgxpool.Pool, id string) error {
	ctx, cancel := context.WithTimeout(ctx, heartbeatTimeout)
	defer cancel()
	_, err := pool.Exec(ctx, `DELETE FROM evalrun_worker_heartbeat WHERE worker_id = $1`, id)
	return err
}

// reapDead makes the running evalrun jobs of dead workers available again
// and returns how many it took back. A worker is dead when its heartbeat
// is older than its own dead_after; a job whose worker left no heartbeat
// row (it never wrote one, or stopped and was retired) is taken once it has
// run longer than fallback. The statement is the one River's rescuer runs
// (state running → available, or discarded when its attempts are spent,
// or cancelled when a cancel was attempted; an attempt error recorded),
// with a liveness predicate in place of the rescuer's age predicate. It is
// one conditional UPDATE, so workers reaping at once never take a job
// twice, and a job another worker already fetched again (its last
// attempted_by is alive) is left alone.
func reapDead(ctx context.Context, pool *pgxpool.Pool, fallback time.Duration) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, heartbeatTimeout)
	defer cancel()
	tag, err := pool.Exec(ctx, `
WITH dead AS (
	SELECT j.id,
		CASE WHEN j.metadata ? 'cancel_attempted_at' THEN 'cancelled'
			WHEN j.attempt >= j.max_attempts THEN 'discarded'
			ELSE 'available' END AS state,
		jsonb_build_object('at', now(), 'attempt', j.attempt, 'trace', '',
			'error', 'evalrun: worker ' || (j.attempted_by[array_upper(j.attempted_by, 1)]) ||
				' presumed dead: no heartbeat since ' || coalesce(h.heartbeat_at::text, 'it started this job')) AS error
	FROM river_job j
	LEFT JOIN evalrun_worker_heartbeat h ON h.worker_id = j.attempted_by[array_upper(j.attempted_by, 1)]
	WHERE j.state = 'running' AND j.kind = $1
		AND (h.worker_id IS NULL AND j.attempted_at < now() - $2::interval
			OR h.heartbeat_at < now() - h.dead_after)
	FOR UPDATE OF j SKIP LOCKED
)
UPDATE river_job j SET
	state = dead.state::river_job_state,
	-- An available job keeps its place in River's fetch order (priority,
	-- scheduled_at, id): at now() it would wait behind the run's whole backlog.
	scheduled_at = CASE WHEN dead.state = 'available' THEN least(j.scheduled_at, now()) ELSE now() END,
	finalized_at = CASE WHEN dead.state = 'available' THEN NULL ELSE now() END,
	errors = array_append(j.errors, dead.error),
	metadata = j.metadata || jsonb_build_object('evalrun:presumed_dead', j.attempted_by[array_upper(j.attempted_by, 1)])
FROM dead
WHERE j.id = dead.id AND j.state = 'running'`, Kind, fallback)
	if err != nil {
		return 0, fmt.Errorf("take back the jobs of dead workers: %w", err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM evalrun_worker_heartbeat WHERE heartbeat_at < now() - $1::interval`,
		heartbeatRetention); err != nil {
		return tag.RowsAffected(), fmt.Errorf("forget vanished workers: %w", err)
	}
	return tag.RowsAffected(), nil
}
