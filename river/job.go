package river

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/evalrun/evalrun/retry"
)

// Kind is the River job kind of an item execution.
const Kind = "evalrun_item"

// DefaultQueue is the River queue runs are enqueued to and workers work
// when none is named.
const DefaultQueue = "evalrun"

// ItemArgs are the arguments of one job: which execution of which run.
// Nothing else travels: the worker loads the rest from storage.
type ItemArgs struct {
	RunID  string `json:"run_id"`
	Index  int    `json:"index"`
	Repeat int    `json:"repeat,omitempty"`
	// TraceParent is the W3C traceparent of the span the run was enqueued
	// under, when that process traced it: the worker's item spans
	// continue its trace (docs/observability.md).
	TraceParent string `json:"trace_parent,omitempty"`
}

// Kind implements river.JobArgs.
func (ItemArgs) Kind() string { return Kind }

// migrationLock is the advisory lock key serialising River migrations of
// processes starting at once ("evalrvr").
const migrationLock = 0x6576616c727672

// Migrate applies River's schema migrations to the database of pool, and
// creates evalrun's worker heartbeat table (liveness.go). It is
// idempotent and safe to call from many processes at once: they take turns
// under an advisory lock. [NewCoordinator] and [NewWorker] call it.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return fmt.Errorf("river migrations: %w", err)
	}
	// Some migrations cannot share a transaction (a new enum value is
	// used), so the lock is a session lock held on a connection of its own.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("river migrations: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		return fmt.Errorf("river migrations: lock: %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLock))
	}()
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river migrations: %w", err)
	}
	if _, err := conn.Exec(ctx, heartbeatTable); err != nil {
		return fmt.Errorf("river migrations: worker heartbeats: %w", err)
	}
	return nil
}

// retryPolicy spaces the queue's retries of a job that failed for an
// infrastructure reason: 1 s, 2 s, 4 s … (plus up to 25% jitter) capped at
// a minute, computed by package retry like every back-off of evalrun.
// Items' own retries happen inside the engine, not here.
type retryPolicy struct{}

// queueRetryDelay and queueRetryCap shape retryPolicy.
const (
	queueRetryDelay = time.Second
	queueRetryCap   = time.Minute
)

// NextRetry implements river.ClientRetryPolicy.
func (retryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	n := max(len(job.Errors), 1) - 1
	return time.Now().Add(min(retry.Policy{Delay: queueRetryDelay}.Backoff(n, nil), queueRetryCap))
}

// newClient returns a River client on pool; config may be nil for an
// insert-only client.
func newClient(pool *pgxpool.Pool, config *river.Config) (*river.Client[pgx.Tx], error) {
	if config == nil {
		config = &river.Config{}
	}
	config.RetryPolicy = retryPolicy{}
	c, err := river.NewClient(riverpgxv5.New(pool), config)
	if err != nil {
		return nil, fmt.Errorf("river client: %w", err)
	}
	return c, nil
}
