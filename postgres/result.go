package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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
// transaction of a few statements sent together (a pipeline): the results
// are upserted from arrays (unnest), the keys that existed lose their old
// scores, the scores and their score_keys rows are inserted. Of a key repeated within the batch, the last result
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
	var runIDs []string
	for _, r := range results {
		if !slices.Contains(runIDs, r.RunID) {
			runIDs = append(runIDs, r.RunID)
		}
	}
	scorers, err := s.runScorers(ctx, runIDs)
	if err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	rows, err := resultRows(results)
	if err != nil {
		return err
	}
	scores, keys := scoreRows(results, scorers)

	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	defer conn.Release()
	// One round trip carries the transaction's statements (a pipeline),
	// a second its commit or rollback: a worker's batch of results used to
	// take nine, each a system call or two on both sides.
	var b pgx.Batch
	b.Queue(`BEGIN`)
	// A run deleted since its scorers were cached is found here, inside
	// the transaction, and rolls the batch back.
	b.Queue(`SELECT u FROM unnest($1::text[]) u WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = u) LIMIT 1`, runIDs)
	// The upsert. xmax is not 0 on a row it updated: that key had a
	// result, whose scores (and their score_keys rows, see migration 007)
	// the next two statements remove. They read those keys from a setting
	// local to the transaction, since the pipeline sends every statement
	// before any answer comes back. They are statements of their own, not
	// parts of this one: a key another transaction inserted and committed
	// while this upsert waited for it has its scores visible only to a
	// later statement's snapshot. With no key replaced (the common case)
	// their plans stop at once: the condition on the setting, which
	// names no column, is checked before anything is read.
	b.Queue(`WITH up AS (
			INSERT INTO results (`+strings.Join(resultCols, ", ")+`)
			SELECT * FROM unnest($1::text[], $2::integer[], $3::integer[], $4::text[], $5::bytea[], $6::text[], $7::text[],
				$8::integer[], $9::integer[], $10::bigint[], $11::bigint[], $12::bigint[], $13::double precision[], $14::text[],
				$15::boolean[], $16::timestamptz[], $17::timestamptz[], $18::bytea[])
			ON CONFLICT (run_id, idx, rep) DO UPDATE SET item_id = excluded.item_id, output = excluded.output,
				error = excluded.error, error_kind = excluded.error_kind, attempts = excluded.attempts,
				retry_count = excluded.retry_count, latency_ns = excluded.latency_ns, input_tokens = excluded.input_tokens,
				output_tokens = excluded.output_tokens, cost_usd = excluded.cost_usd, trace_id = excluded.trace_id,
				cache_hit = excluded.cache_hit, started_at = excluded.started_at, completed_at = excluded.completed_at,
				trajectory = excluded.trajectory
			RETURNING run_id, idx, rep, xmax <> 0 AS replaced)
		SELECT set_config('evalrun.replaced', COALESCE(
			(SELECT jsonb_agg(jsonb_build_object('run_id', run_id, 'idx', idx, 'rep', rep)) FROM up WHERE replaced), '[]')::text, true)`,
		rows...)
	b.Queue(`DELETE FROM score_keys k USING (
			SELECT o.run_id, o.idx, o.rep, sc ->> 'name' AS scorer,
				COALESCE((SELECT s.score FROM scores s WHERE s.run_id = o.run_id AND s.idx = o.idx AND s.rep = o.rep
					AND s.scorer = sc ->> 'name' ORDER BY s.pos LIMIT 1), '-Infinity') AS score
			FROM jsonb_to_recordset(current_setting('evalrun.replaced')::jsonb) o (run_id text, idx integer, rep integer)
			JOIN runs u ON u.id = o.run_id, jsonb_array_elements(u.scorers) sc) d
		WHERE k.run_id = d.run_id AND k.scorer = d.scorer AND k.score = d.score AND k.idx = d.idx AND k.rep = d.rep
			AND current_setting('evalrun.replaced') <> '[]'`)
	b.Queue(`DELETE FROM scores s USING jsonb_to_recordset(current_setting('evalrun.replaced')::jsonb) o (run_id text, idx integer, rep integer)
		WHERE s.run_id = o.run_id AND s.idx = o.idx AND s.rep = o.rep AND current_setting('evalrun.replaced') <> '[]'`)
	if len(scores) > 0 {
		b.Queue(`INSERT INTO scores (`+strings.Join(scoreCols, ", ")+`)
			SELECT * FROM unnest($1::text[], $2::integer[], $3::integer[], $4::integer[], $5::text[], $6::double precision[],
				$7::boolean[], $8::text[], $9::text[], $10::text[], $11::bigint[], $12::bigint[], $13::double precision[])`, scores...)
	}
	if len(keys) > 0 {
		b.Queue(`INSERT INTO score_keys (run_id, scorer, score, idx, rep)
			SELECT * FROM unnest($1::text[], $2::text[], $3::double precision[], $4::integer[], $5::integer[])`, keys...)
	}
	br := conn.SendBatch(ctx, &b)
	missing, err := readBatch(br, len(b.QueuedQueries))
	if err == nil && missing != "" {
		err = fmt.Errorf("write results: run %q: %w", missing, evalrun.ErrNotFound)
		s.forgetScorers(missing)
	} else if err != nil {
		err = fmt.Errorf("write results: %w", err)
	}
	end := "COMMIT"
	if err != nil {
		end = "ROLLBACK"
	}
	if _, cerr := conn.Exec(ctx, end); cerr != nil {
		if err == nil {
			err = fmt.Errorf("write results: commit: %w", cerr)
		}
		// The connection's state is unknown: it must not go back to the
		// pool inside a transaction.
		_ = conn.Conn().Close(context.WithoutCancel(ctx))
	}
	return err
}

// readBatch reads the results of writeResults' pipeline (n statements)
// and closes it: the first error, or the run the existence check found
// missing.
func readBatch(br pgx.BatchResults, n int) (missing string, err error) {
	defer func() {
		if cerr := br.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if _, err := br.Exec(); err != nil { // BEGIN
		return "", err
	}
	if err := br.QueryRow().Scan(&missing); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("check runs: %w", err)
	}
	if _, err := br.Exec(); err != nil {
		return "", fmt.Errorf("upsert: %w", err)
	}
	for range 2 {
		if _, err := br.Exec(); err != nil {
			return "", fmt.Errorf("replace scores: %w", err)
		}
	}
	for range n - 5 {
		if _, err := br.Exec(); err != nil {
			return "", fmt.Errorf("insert scores: %w", err)
		}
	}
	return missing, nil
}

// resultRows returns the arguments of writeResults' upsert: one array per
// column of resultCols.
func resultRows(results []*evalrun.ItemResult) ([]any, error) {
	n := len(results)
	var (
		runIDs, itemIDs, errs, kinds, traces = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		idx, rep, attempts, retries          = make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
		outputs, trajs                       = make([][]byte, n), make([][]byte, n)
		latency                              = make([]int64, n)
		inTok, outTok                        = make([]*int64, n), make([]*int64, n)
		cost                                 = make([]*float64, n)
		cacheHit                             = make([]bool, n)
		started, completed                   = make([]*time.Time, n), make([]*time.Time, n)
	)
	for i, r := range results {
		traj, err := sqlstore.MarshalTrajectory(r.Trajectory)
		if err != nil {
			return nil, fmt.Errorf("write result %d/%d of run %q: %w", r.Index, r.Repeat, r.RunID, err)
		}
		runIDs[i], idx[i], rep[i], itemIDs[i] = r.RunID, int32(r.Index), int32(r.Repeat), pgText(r.ItemID)
		outputs[i], errs[i], kinds[i] = nonEmpty(r.Output), pgText(r.Error), string(r.ErrorKind)
		attempts[i], retries[i], latency[i] = int32(r.Attempts), int32(r.RetryCount), int64(r.Latency)
		inTok[i], outTok[i], cost[i] = r.Usage.InputTokens, r.Usage.OutputTokens, r.Usage.CostUSD
		traces[i], cacheHit[i] = pgText(r.TraceID), r.CacheHit
		started[i], completed[i], trajs[i] = tsPtr(r.StartedAt), tsPtr(r.CompletedAt), nonEmpty(traj)
	}
	return []any{runIDs, idx, rep, itemIDs, outputs, errs, kinds, attempts, retries, latency, inTok, outTok, cost,
		traces, cacheHit, started, completed, trajs}, nil
}

// scoreRows returns the arguments of writeResults' inserts of scores (one
// array per column of scoreCols) and of score_keys (nil when there are
// none).
func scoreRows(results []*evalrun.ItemResult, scorers map[string][]evalrun.ScorerInfo) (scores, keys []any) {
	var (
		runIDs, names, reasons, errs, kinds []string
		idx, rep, pos                       []int32
		values, cost                        []*float64
		passed                              []bool
		inTok, outTok                       []*int64
		kRun, kScorer                       []string
		kScore                              []float64
		kIdx, kRep                          []int32
	)
	for _, r := range results {
		for p, sc := range r.Scores {
			runIDs, idx, rep, pos = append(runIDs, r.RunID), append(idx, int32(r.Index)), append(rep, int32(r.Repeat)), append(pos, int32(p))
			names, values, passed = append(names, pgText(sc.Scorer)), append(values, sc.Score), append(passed, sc.Passed)
			reasons, errs, kinds = append(reasons, pgText(sc.Reason)), append(errs, pgText(sc.Error)), append(kinds, string(sc.ErrorKind))
			inTok, outTok, cost = append(inTok, sc.Usage.InputTokens), append(outTok, sc.Usage.OutputTokens), append(cost, sc.Usage.CostUSD)
		}
		runScorers := scorers[r.RunID]
		for i, v := range sqlstore.ScoreKeys(r, runScorers) {
			kRun, kScorer, kScore = append(kRun, r.RunID), append(kScorer, runScorers[i].Name), append(kScore, v)
			kIdx, kRep = append(kIdx, int32(r.Index)), append(kRep, int32(r.Repeat))
		}
	}
	if len(runIDs) > 0 {
		scores = []any{runIDs, idx, rep, pos, names, values, passed, reasons, errs, kinds, inTok, outTok, cost}
	}
	if len(kRun) > 0 {
		keys = []any{kRun, kScorer, kScore, kIdx, kRep}
	}
	return scores, keys
}

// nonEmpty is blob for an array element: an empty value is stored NULL.
func nonEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// tsPtr is ts for an array element: the zero time is stored NULL.
func tsPtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
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
