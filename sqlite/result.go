package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/dataset"
)

const resultColumns = `run_id, idx, rep, item_id, output, error, error_kind, attempts, retry_count, latency_ns,
	input_tokens, output_tokens, cost_usd, trace_id, cache_hit, started_at, completed_at`

const (
	insertResultSQL = `INSERT INTO results (` + resultColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (run_id, idx, rep) DO NOTHING`
	replaceResultSQL = `INSERT OR REPLACE INTO results (` + resultColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	deleteScoresSQL  = `DELETE FROM scores WHERE run_id = ? AND idx = ? AND rep = ?`
	insertScoreSQL   = `INSERT INTO scores (run_id, idx, rep, pos, scorer, score, passed, reason, error, error_kind,
		input_tokens, output_tokens, cost_usd) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
)

// WriteResults implements [evalrun.RunStore]: the batch is one
// transaction. A new key costs one insert per result and per score; a key
// written before is replaced along with its scores. It returns an error
// wrapping ErrNotFound, writing nothing, when a result's run does not exist.
func (s *Store) WriteResults(ctx context.Context, results []*evalrun.ItemResult) error {
	if len(results) == 0 {
		return nil
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	defer tx.Rollback()
	if err := checkRuns(ctx, tx, results); err != nil {
		return err
	}
	ins, err := tx.PrepareContext(ctx, insertResultSQL)
	if err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	defer ins.Close()
	insScore, err := tx.PrepareContext(ctx, insertScoreSQL)
	if err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	defer insScore.Close()
	var repl, del *sql.Stmt
	args := make([]any, 17)
	for _, r := range results {
		args[0], args[1], args[2], args[3], args[4] = r.RunID, r.Index, r.Repeat, r.ItemID, blob(r.Output)
		args[5], args[6], args[7], args[8], args[9] = r.Error, string(r.ErrorKind), r.Attempts, r.RetryCount, int64(r.Latency)
		args[10], args[11], args[12] = nullInt(r.Usage.InputTokens), nullInt(r.Usage.OutputTokens), nullFloat(r.Usage.CostUSD)
		args[13], args[14], args[15], args[16] = r.TraceID, r.CacheHit, micros(r.StartedAt), micros(r.CompletedAt)
		res, err := ins.ExecContext(ctx, args...)
		if err != nil {
			return fmt.Errorf("write result %d/%d of run %q: %w", r.Index, r.Repeat, r.RunID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			// Written before: replace the result and drop its scores.
			if repl == nil {
				if repl, err = tx.PrepareContext(ctx, replaceResultSQL); err != nil {
					return fmt.Errorf("write results: %w", err)
				}
				defer repl.Close()
				if del, err = tx.PrepareContext(ctx, deleteScoresSQL); err != nil {
					return fmt.Errorf("write results: %w", err)
				}
				defer del.Close()
			}
			if _, err := repl.ExecContext(ctx, args...); err != nil {
				return fmt.Errorf("replace result %d/%d of run %q: %w", r.Index, r.Repeat, r.RunID, err)
			}
			if _, err := del.ExecContext(ctx, r.RunID, r.Index, r.Repeat); err != nil {
				return fmt.Errorf("replace scores of %d/%d of run %q: %w", r.Index, r.Repeat, r.RunID, err)
			}
		}
		for pos, sc := range r.Scores {
			if _, err := insScore.ExecContext(ctx, r.RunID, r.Index, r.Repeat, pos, sc.Scorer, nullFloat(sc.Score), sc.Passed,
				sc.Reason, sc.Error, string(sc.ErrorKind), nullInt(sc.Usage.InputTokens), nullInt(sc.Usage.OutputTokens),
				nullFloat(sc.Usage.CostUSD)); err != nil {
				return fmt.Errorf("write score %q of %d/%d of run %q: %w", sc.Scorer, r.Index, r.Repeat, r.RunID, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("write results: commit: %w", err)
	}
	return nil
}

// checkRuns fails with ErrNotFound when a result's run does not exist.
func checkRuns(ctx context.Context, tx *sql.Tx, results []*evalrun.ItemResult) error {
	last := ""
	seen := map[string]bool{}
	for _, r := range results {
		if r.RunID == last || seen[r.RunID] {
			continue
		}
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM runs WHERE id = ?`, r.RunID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("write results: run %q: %w", r.RunID, evalrun.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("write results: %w", err)
		}
		last = r.RunID
		seen[r.RunID] = true
	}
	return nil
}

// ScanResults implements [evalrun.RunStore]: one streamed query joining
// each result with its scores and with its item at the run's pinned
// version.
func (s *Store) ScanResults(ctx context.Context, runID string, q evalrun.ResultQuery, fn func(*evalrun.ItemResult) error) error {
	run, err := getRun(ctx, s.reader, runID)
	if err != nil {
		return err
	}
	version := run.DatasetVersion
	if version == 0 {
		version, _ = resolveVersion(ctx, s.reader, run.Dataset, 0)
	}
	limit := -1
	if q.Limit > 0 {
		limit = q.Limit
	}
	failedOnly := 0
	if q.FailedOnly {
		failedOnly = 1
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT r.idx, r.rep, r.item_id, r.output, r.error, r.error_kind, r.attempts,
			r.retry_count, r.latency_ns, r.input_tokens, r.output_tokens, r.cost_usd, r.trace_id, r.cache_hit,
			r.started_at, r.completed_at,
			i.id, i.input, i.expected, i.metadata,
			s.pos, s.scorer, s.score, s.passed, s.reason, s.error, s.error_kind, s.input_tokens, s.output_tokens, s.cost_usd
		FROM (SELECT * FROM results WHERE run_id = ?1 AND idx >= ?2 AND (?3 = 0 OR error != '')
			ORDER BY idx, rep LIMIT ?4) r
		LEFT JOIN dataset_items i ON i.dataset = ?5 AND i.item_id = r.item_id
			AND i.valid_from <= ?6 AND (i.valid_to IS NULL OR i.valid_to > ?6)
		LEFT JOIN scores s ON s.run_id = ?1 AND s.idx = r.idx AND s.rep = r.rep
		ORDER BY r.idx, r.rep, s.pos`, runID, q.FromIndex, failedOnly, limit, run.Dataset, version)
	if err != nil {
		return fmt.Errorf("scan results of run %q: %w", runID, err)
	}
	defer rows.Close()
	order := make(map[string]int, len(run.Scorers))
	for i, sc := range run.Scorers {
		order[sc.Name] = i
	}
	var cur *evalrun.ItemResult
	emit := func() error {
		if cur == nil {
			return nil
		}
		sortScores(cur.Scores, order)
		r := cur
		cur = nil
		return fn(r)
	}
	for rows.Next() {
		var (
			idx, rep                      int
			r                             evalrun.ItemResult
			itemID                        string
			output                        []byte
			latency                       int64
			inTok, outTok                 sql.NullInt64
			cost                          sql.NullFloat64
			started, completed            sql.NullInt64
			rowID                         sql.NullInt64
			input, expected, meta         []byte
			pos                           sql.NullInt64
			scorer, reason, scErr, scKind sql.NullString
			score, scCost                 sql.NullFloat64
			passed                        sql.NullBool
			scIn, scOut                   sql.NullInt64
		)
		if err := rows.Scan(&idx, &rep, &itemID, &output, &r.Error, (*string)(&r.ErrorKind), &r.Attempts, &r.RetryCount,
			&latency, &inTok, &outTok, &cost, &r.TraceID, &r.CacheHit, &started, &completed,
			&rowID, &input, &expected, &meta,
			&pos, &scorer, &score, &passed, &reason, &scErr, &scKind, &scIn, &scOut, &scCost); err != nil {
			return fmt.Errorf("scan results of run %q: %w", runID, err)
		}
		if cur == nil || cur.Index != idx || cur.Repeat != rep {
			if err := emit(); err != nil {
				return err
			}
			r.RunID, r.Index, r.Repeat, r.ItemID = runID, idx, rep, itemID
			if len(output) > 0 {
				r.Output = output
			}
			r.Latency = time.Duration(latency)
			r.Usage = evalrun.Usage{InputTokens: fromNullInt(inTok), OutputTokens: fromNullInt(outTok), CostUSD: fromNullFloat(cost)}
			r.StartedAt, r.CompletedAt = fromMicros(started), fromMicros(completed)
			if rowID.Valid {
				it := &evalrun.Item{ID: itemID, Input: input}
				if len(expected) > 0 {
					it.Expected = expected
				}
				if it.Metadata, err = dataset.UnmarshalMetadata(meta); err != nil {
					return fmt.Errorf("item %q of run %q: %w", itemID, runID, err)
				}
				r.Item = it
			}
			cur = &r
		}
		if pos.Valid {
			cur.Scores = append(cur.Scores, evalrun.ScorerResult{
				Scorer: scorer.String, Score: fromNullFloat(score), Passed: passed.Bool, Reason: reason.String,
				Error: scErr.String, ErrorKind: evalrun.ErrorKind(scKind.String),
				Usage: evalrun.Usage{InputTokens: fromNullInt(scIn), OutputTokens: fromNullInt(scOut), CostUSD: fromNullFloat(scCost)},
			})
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("scan results of run %q: %w", runID, err)
	}
	return emit()
}

// sortScores orders scores by their scorer's position in order (the run's
// scorers); scores of scorers the run does not name follow, as written.
func sortScores(scores []evalrun.ScorerResult, order map[string]int) {
	if len(scores) < 2 || len(order) == 0 {
		return
	}
	pos := func(s *evalrun.ScorerResult) int {
		if p, ok := order[s.Scorer]; ok {
			return p
		}
		return len(order)
	}
	slices.SortStableFunc(scores, func(a, b evalrun.ScorerResult) int { return cmp.Compare(pos(&a), pos(&b)) })
}

// ScanResultKeys implements [evalrun.RunStore].
func (s *Store) ScanResultKeys(ctx context.Context, runID string, fn func(evalrun.ResultKey) error) error {
	if _, err := getRun(ctx, s.reader, runID); err != nil {
		return err
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT idx, rep, error != '' FROM results WHERE run_id = ? ORDER BY idx, rep`, runID)
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
