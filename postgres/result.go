package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/dataset"
	"github.com/evalrun/evalrun/internal/sqlstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var (
	resultCols = []string{"run_id", "idx", "rep", "item_id", "output", "error", "error_kind", "attempts", "retry_count",
		"latency_ns", "input_tokens", "output_tokens", "cost_usd", "trace_id", "cache_hit", "started_at", "completed_at",
		"trajectory"}
	scoreCols = []string{"run_id", "idx", "rep", "pos", "scorer", "score", "passed", "reason", "error", "error_kind",
		"input_tokens", "output_tokens", "cost_usd"}
)

// WriteResults implements [evalrun.RunStore]. The batch is one
// transaction: the results are copied (COPY) into a temporary table and
// upserted from there; the keys that existed lose their old scores; the
// scores are copied in. Of a key repeated within the batch, the last result
// wins. It returns an error wrapping ErrNotFound, writing nothing, when a
// result's run does not exist.
//
// An error of a class that refuses every write (see refusesWrites) is
// marked [evalrun.ErrStoreUnavailable].
func (s *Store) WriteResults(ctx context.Context, results []*evalrun.ItemResult) error {
	return sqlstore.MarkUnavailable(s.writeResults(ctx, results), refusesWrites)
}

// refusesWrites reports whether err is a server error of a class that
// every write will meet until someone acts: disk full, a read-only
// transaction (a standby, default_transaction_read_only), a missing table or
// column or database, missing privileges, an I/O error. Too many
// connections, a serialization failure or a lost connection are not: a
// retry may succeed.
func refusesWrites(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code {
	case "53100", // disk_full
		"25006", // read_only_sql_transaction
		"42P01", // undefined_table
		"42703", // undefined_column
		"3D000", // invalid_catalog_name
		"42501", // insufficient_privilege
		"58030": // io_error
		return true
	}
	return false
}

func (s *Store) writeResults(ctx context.Context, results []*evalrun.ItemResult) error {
	if len(results) == 0 {
		return nil
	}
	results = sqlstore.LastOfEachKey(results)
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS tmp_results (LIKE results) ON COMMIT DELETE ROWS`); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	var rowErr error
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"tmp_results"}, resultCols, pgx.CopyFromSlice(len(results), func(i int) ([]any, error) {
		r := results[i]
		traj, err := sqlstore.MarshalTrajectory(r.Trajectory)
		if err != nil {
			rowErr = fmt.Errorf("write result %d/%d of run %q: %w", r.Index, r.Repeat, r.RunID, err)
			return nil, rowErr
		}
		return []any{r.RunID, r.Index, r.Repeat, pgText(r.ItemID), blob(r.Output), pgText(r.Error), string(r.ErrorKind), r.Attempts, r.RetryCount,
			int64(r.Latency), r.Usage.InputTokens, r.Usage.OutputTokens, r.Usage.CostUSD, pgText(r.TraceID), r.CacheHit,
			ts(r.StartedAt), ts(r.CompletedAt), blob(traj)}, nil
	})); err != nil {
		if rowErr != nil {
			return rowErr
		}
		return fmt.Errorf("write results: copy: %w", err)
	}
	var missing string
	err = tx.QueryRow(ctx, `SELECT t.run_id FROM tmp_results t WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = t.run_id) LIMIT 1`).Scan(&missing)
	if err == nil {
		return fmt.Errorf("write results: run %q: %w", missing, evalrun.ErrNotFound)
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("write results: check runs: %w", err)
	}
	// xmax is not 0 on a row the upsert updated: that key had a result.
	rows, err := tx.Query(ctx, `INSERT INTO results SELECT * FROM tmp_results
		ON CONFLICT (run_id, idx, rep) DO UPDATE SET item_id = excluded.item_id, output = excluded.output,
			error = excluded.error, error_kind = excluded.error_kind, attempts = excluded.attempts,
			retry_count = excluded.retry_count, latency_ns = excluded.latency_ns, input_tokens = excluded.input_tokens,
			output_tokens = excluded.output_tokens, cost_usd = excluded.cost_usd, trace_id = excluded.trace_id,
			cache_hit = excluded.cache_hit, started_at = excluded.started_at, completed_at = excluded.completed_at,
			trajectory = excluded.trajectory
		RETURNING run_id, idx, rep, xmax <> 0`)
	if err != nil {
		return fmt.Errorf("write results: upsert: %w", err)
	}
	var oldRuns []string
	var oldIdx, oldRep []int32
	for rows.Next() {
		var run string
		var idx, rep int32
		var updated bool
		if err := rows.Scan(&run, &idx, &rep, &updated); err != nil {
			rows.Close()
			return fmt.Errorf("write results: upsert: %w", err)
		}
		if updated {
			oldRuns, oldIdx, oldRep = append(oldRuns, run), append(oldIdx, idx), append(oldRep, rep)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("write results: upsert: %w", err)
	}
	if len(oldRuns) > 0 {
		// The score_keys rows of the replaced results, computed from their
		// scores before those go (see migration 007).
		if _, err := tx.Exec(ctx, `DELETE FROM score_keys k USING (
				SELECT o.run_id, o.idx, o.rep, sc ->> 'name' AS scorer,
					COALESCE((SELECT s.score FROM scores s WHERE s.run_id = o.run_id AND s.idx = o.idx AND s.rep = o.rep
						AND s.scorer = sc ->> 'name' ORDER BY s.pos LIMIT 1), '-Infinity') AS score
				FROM unnest($1::text[], $2::integer[], $3::integer[]) o (run_id, idx, rep)
				JOIN runs u ON u.id = o.run_id, jsonb_array_elements(u.scorers) sc) d
			WHERE k.run_id = d.run_id AND k.scorer = d.scorer AND k.score = d.score AND k.idx = d.idx AND k.rep = d.rep`,
			oldRuns, oldIdx, oldRep); err != nil {
			return fmt.Errorf("write results: replace score keys: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM scores WHERE (run_id, idx, rep) IN
			(SELECT * FROM unnest($1::text[], $2::integer[], $3::integer[]))`, oldRuns, oldIdx, oldRep); err != nil {
			return fmt.Errorf("write results: replace scores: %w", err)
		}
	}
	var scores [][]any
	for _, r := range results {
		for pos, sc := range r.Scores {
			scores = append(scores, []any{r.RunID, r.Index, r.Repeat, pos, pgText(sc.Scorer), sc.Score, sc.Passed, pgText(sc.Reason),
				pgText(sc.Error), string(sc.ErrorKind), sc.Usage.InputTokens, sc.Usage.OutputTokens, sc.Usage.CostUSD})
		}
	}
	if len(scores) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"scores"}, scoreCols, pgx.CopyFromRows(scores)); err != nil {
			return fmt.Errorf("write results: copy scores: %w", err)
		}
	}
	if err := writeScoreKeys(ctx, tx, results); err != nil {
		return fmt.Errorf("write results: score keys: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("write results: commit: %w", err)
	}
	return nil
}

// ScanResults implements [evalrun.RunStore]: one streamed query joining
// each result with its item at the run's pinned version and with its
// scores, one row per score. A result's own columns are sent on its first
// row only (the one with pos 0: WriteResults numbers a result's scores from
// 0), so a result's output and item cross the wire, and are decoded, once
// rather than once per score. The query runs in a read-only transaction
// with JIT off: compiling this plan cost up to 0.5 s and saves nothing on a
// scan. Scan destinations are reused from row to row, and a small cache
// skips decoding repeated item metadata. With q.SkipAgentData the agent
// columns come back as NULL, neither sent nor decoded.
func (s *Store) ScanResults(ctx context.Context, runID string, q evalrun.ResultQuery, fn func(*evalrun.ItemResult) error) error {
	return s.scanResults(ctx, runID, q, nil, fn)
}

// scanResults is ScanResults, of the results whose index is in indexes
// when it is not nil.
func (s *Store) scanResults(ctx context.Context, runID string, q evalrun.ResultQuery, indexes []int32, fn func(*evalrun.ItemResult) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("scan results of run %q: %w", runID, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SET LOCAL jit = off`); err != nil {
		return fmt.Errorf("scan results of run %q: %w", runID, err)
	}
	run, err := getRun(ctx, tx, runID)
	if err != nil {
		return err
	}
	version := run.DatasetVersion
	if version == 0 {
		version, _ = resolveVersion(ctx, tx, run.Dataset, 0)
	}
	var limit *int
	if q.Limit > 0 {
		limit = &q.Limit
	}
	args := []any{runID, q.FromIndex, limit, run.Dataset, version, q.SkipAgentData, q.SkipPayloads}
	if indexes != nil {
		args = append(args, indexes)
	}
	rows, err := tx.Query(ctx, scanResultsSQL(q.FailedOnly, indexes != nil), args...)
	if err != nil {
		return fmt.Errorf("scan results of run %q: %w", runID, err)
	}
	defer rows.Close()
	order := make(map[string]int, len(run.Scorers))
	for i, sc := range run.Scorers {
		order[sc.Name] = i
	}
	var (
		cur  *evalrun.ItemResult
		meta sqlstore.MetaCache
		d    scanDest
	)
	dest := d.args()
	emit := func() error {
		if cur == nil {
			return nil
		}
		sqlstore.SortScores(cur.Scores, order)
		r := cur
		cur = nil
		if err := ctx.Err(); err != nil {
			return err
		}
		return fn(r)
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("scan results of run %q: %w", runID, err)
		}
		if cur == nil || cur.Index != d.idx || cur.Repeat != d.rep {
			if err := emit(); err != nil {
				return err
			}
			r := &evalrun.ItemResult{
				RunID: runID, Index: d.idx, Repeat: d.rep, ItemID: fromPGText(d.itemID), Error: fromPGText(d.errMsg),
				ErrorKind: evalrun.ErrorKind(d.errKind), Attempts: d.attempts, RetryCount: d.retries,
				Latency: time.Duration(d.latency), Usage: copyUsage(d.usage), TraceID: fromPGText(d.trace), CacheHit: d.cacheHit,
				StartedAt: fromTS(d.started), CompletedAt: fromTS(d.completed),
			}
			if len(d.output) > 0 {
				r.Output = d.output
			}
			if r.Trajectory, err = sqlstore.UnmarshalTrajectory(d.trajectory); err != nil {
				return fmt.Errorf("result %d/%d of run %q: %w", d.idx, d.rep, runID, err)
			}
			if d.itemRow != nil {
				it := &evalrun.Item{ID: fromPGText(d.itemID), Input: d.input}
				if len(d.expected) > 0 {
					it.Expected = d.expected
				}
				if it.Metadata, err = meta.Decode(d.meta); err != nil {
					return fmt.Errorf("item %q of run %q: %w", d.itemID, runID, err)
				}
				if err := dataset.UnmarshalAgent(it, d.mocks, d.expectedCalls); err != nil {
					return fmt.Errorf("item %q of run %q: %w", d.itemID, runID, err)
				}
				r.Item = it
			}
			cur = r
		}
		if d.pos != nil {
			if cur.Scores == nil {
				cur.Scores = make([]evalrun.ScorerResult, 0, max(len(run.Scorers), 1))
			}
			cur.Scores = append(cur.Scores, evalrun.ScorerResult{
				Scorer: fromPGText(deref(d.scorer)), Score: copyFloat(d.score), Passed: d.passed != nil && *d.passed, Reason: fromPGText(deref(d.reason)),
				Error: fromPGText(deref(d.scErr)), ErrorKind: evalrun.ErrorKind(deref(d.scKind)), Usage: copyUsage(d.scUsage),
			})
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("scan results of run %q: %w", runID, err)
	}
	return emit()
}

// scanDest receives a row of ScanResults' query; it is reused from row to
// row (pgx gives []byte destinations new slices, and NULL sets pointers to
// nil), so only what is handed out is allocated.
type scanDest struct {
	idx, rep, attempts, retries   int
	itemID, errMsg, errKind       string
	trace                         string
	output, input, expected, meta []byte
	trajectory, mocks             []byte
	expectedCalls                 []byte
	latency                       int64
	usage, scUsage                evalrun.Usage
	cacheHit                      bool
	started, completed            *time.Time
	itemRow                       *int64
	pos                           *int32
	scorer, reason, scErr, scKind *string
	score                         *float64
	passed                        *bool
}

// args returns the scan destinations, in the query's column order.
func (d *scanDest) args() []any {
	return []any{&d.idx, &d.rep, &d.itemID, &d.output, &d.errMsg, &d.errKind, &d.attempts, &d.retries,
		&d.latency, &d.usage.InputTokens, &d.usage.OutputTokens, &d.usage.CostUSD, &d.trace, &d.cacheHit, &d.started, &d.completed,
		&d.itemRow, &d.input, &d.expected, &d.meta, &d.trajectory, &d.mocks, &d.expectedCalls,
		&d.pos, &d.scorer, &d.score, &d.passed, &d.reason, &d.scErr, &d.scKind,
		&d.scUsage.InputTokens, &d.scUsage.OutputTokens, &d.scUsage.CostUSD}
}

// copyUsage copies u's values, so that what is handed out never shares
// memory with reused scan destinations.
func copyUsage(u evalrun.Usage) evalrun.Usage {
	var c evalrun.Usage
	if u.InputTokens != nil {
		c.InputTokens = evalrun.Int64(*u.InputTokens)
	}
	if u.OutputTokens != nil {
		c.OutputTokens = evalrun.Int64(*u.OutputTokens)
	}
	c.CostUSD = copyFloat(u.CostUSD)
	return c
}

func copyFloat(p *float64) *float64 {
	if p == nil {
		return nil
	}
	return evalrun.Float64(*p)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ScanResultKeys implements [evalrun.RunStore].
func (s *Store) ScanResultKeys(ctx context.Context, runID string, fn func(evalrun.ResultKey) error) error {
	if _, err := getRun(ctx, s.pool, runID); err != nil {
		return err
	}
	rows, err := s.pool.Query(ctx, `SELECT idx, rep, error <> '' FROM results WHERE run_id = $1 ORDER BY idx, rep`, runID)
	if err != nil {
		return fmt.Errorf("scan result keys of run %q: %w", runID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k evalrun.ResultKey
		if err := rows.Scan(&k.Index, &k.Repeat, &k.Failed); err != nil {
			return fmt.Errorf("scan result keys of run %q: %w", runID, err)
		}
		if err := fn(k); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("scan result keys of run %q: %w", runID, err)
	}
	return nil
}

// scanResultsSQL is the statement of scanResults: $1 run, $2 first index,
// $3 limit (NULL: none), $4 dataset, $5 its version, $6 SkipAgentData, $7
// SkipPayloads and, with indexes, $8 the indexes. The filters are in the
// statement's text, not tested on parameters (they were "NOT $3 OR …" and
// "$8 IS NULL OR idx = ANY ($8)"): pgx prepares a statement per text and,
// after five runs on a connection, PostgreSQL may keep a generic plan for
// any parameters, and the generic plan of that OR read every result of the
// run to find a viewer page's 50 (0.3–0.4 s at 100,000 results, seen with
// auto_explain: docs/benchmarks.md, "Every page under 50 ms").
// TestScanResultsGenericPlan checks the plans.
func scanResultsSQL(failedOnly, withIndexes bool) string {
	where := ""
	if failedOnly {
		where += ` AND error <> ''` // literal: the partial index results_failed applies
	}
	if withIndexes {
		where += ` AND idx = ANY ($8::integer[])`
	}
	return `SELECT r.idx, r.rep, r.item_id, CASE WHEN first AND NOT $7 THEN r.output END, r.error, r.error_kind,
			r.attempts, r.retry_count, r.latency_ns, r.input_tokens, r.output_tokens, r.cost_usd, r.trace_id, r.cache_hit,
			r.started_at, r.completed_at,
			i.id, CASE WHEN first AND NOT $7 THEN i.input END, CASE WHEN first AND NOT $7 THEN i.expected END, CASE WHEN first THEN i.metadata END,
			CASE WHEN first AND NOT ($6 OR $7) THEN r.trajectory END, CASE WHEN first AND NOT ($6 OR $7) THEN i.tool_mocks END,
			CASE WHEN first AND NOT ($6 OR $7) THEN i.expected_trajectory END,
			s.pos, s.scorer, s.score, s.passed, s.reason, s.error, s.error_kind, s.input_tokens, s.output_tokens, s.cost_usd
		FROM (SELECT * FROM results WHERE run_id = $1 AND idx >= $2` + where + `
			ORDER BY idx, rep LIMIT $3) r
		LEFT JOIN dataset_items i ON i.dataset = $4 AND i.item_id = r.item_id
			AND i.valid_from <= $5 AND (i.valid_to IS NULL OR i.valid_to > $5)
		LEFT JOIN scores s ON s.run_id = $1 AND s.idx = r.idx AND s.rep = r.rep
		CROSS JOIN LATERAL (SELECT COALESCE(s.pos, 0) = 0 AS first) f
		ORDER BY r.idx, r.rep, s.pos`
}
