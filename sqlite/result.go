package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/dataset"
)

const resultColumns = `run_id, idx, rep, item_id, output, error, error_kind, attempts, retry_count, latency_ns,
	input_tokens, output_tokens, cost_usd, trace_id, cache_hit, started_at, completed_at`

const (
	resultArgs = 17
	scoreArgs  = 13
	// Rows per multi-row INSERT: SQLite allows 32766 parameters.
	resultChunk = 64
	scoreChunk  = 128
)

// valuesSQL returns "INSERT ... VALUES (?, …), (?, …)" for rows rows.
func valuesSQL(prefix string, args, rows int) string {
	one := "(" + strings.Repeat("?, ", args-1) + "?)"
	var b strings.Builder
	b.WriteString(prefix)
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(one)
	}
	return b.String()
}

const (
	replaceResultPrefix = `INSERT OR REPLACE INTO results (` + resultColumns + `) VALUES `
	insertScorePrefix   = `INSERT INTO scores (run_id, idx, rep, pos, scorer, score, passed, reason, error, error_kind,
		input_tokens, output_tokens, cost_usd) VALUES `
)

var (
	replaceResultsSQL = valuesSQL(replaceResultPrefix, resultArgs, resultChunk)
	insertScoresSQL   = valuesSQL(insertScorePrefix, scoreArgs, scoreChunk)
)

type resultKey struct {
	run         string
	index, rept int
}

// lastOfEachKey drops all but the last result of each key, keeping order.
func lastOfEachKey(results []*evalrun.ItemResult) []*evalrun.ItemResult {
	last := make(map[resultKey]int, len(results))
	for i, r := range results {
		last[resultKey{r.RunID, r.Index, r.Repeat}] = i
	}
	if len(last) == len(results) {
		return results
	}
	out := make([]*evalrun.ItemResult, 0, len(last))
	for i, r := range results {
		if last[resultKey{r.RunID, r.Index, r.Repeat}] == i {
			out = append(out, r)
		}
	}
	return out
}

// WriteResults implements [evalrun.RunStore]: the batch is one
// transaction of multi-row inserts. A key written before (found with one
// range query per run of the batch) is replaced along with its scores; of a
// key repeated within the batch, the last result wins. It returns an error
// wrapping ErrNotFound, writing nothing, when a result's run does not exist.
func (s *Store) WriteResults(ctx context.Context, results []*evalrun.ItemResult) error {
	if len(results) == 0 {
		return nil
	}
	results = lastOfEachKey(results)
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	defer tx.Rollback()
	if err := checkRuns(ctx, tx, results); err != nil {
		return err
	}
	if err := deleteOldScores(ctx, tx, results); err != nil {
		return fmt.Errorf("write results: replace scores: %w", err)
	}
	args := make([]any, 0, resultChunk*resultArgs)
	for chunk := range slices.Chunk(results, resultChunk) {
		args = args[:0]
		for _, r := range chunk {
			args = append(args, r.RunID, r.Index, r.Repeat, r.ItemID, blob(r.Output), r.Error, string(r.ErrorKind),
				r.Attempts, r.RetryCount, int64(r.Latency), nullInt(r.Usage.InputTokens), nullInt(r.Usage.OutputTokens),
				nullFloat(r.Usage.CostUSD), r.TraceID, r.CacheHit, micros(r.StartedAt), micros(r.CompletedAt))
		}
		if len(chunk) == resultChunk {
			_, err = tx.StmtContext(ctx, s.replaceResults).ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, valuesSQL(replaceResultPrefix, resultArgs, len(chunk)), args...)
		}
		if err != nil {
			return fmt.Errorf("write results %d/%d… of run %q: %w", chunk[0].Index, chunk[0].Repeat, chunk[0].RunID, err)
		}
	}
	args = args[:0]
	rows := 0
	flush := func() error {
		if rows == 0 {
			return nil
		}
		var err error
		if rows == scoreChunk {
			_, err = tx.StmtContext(ctx, s.insertScores).ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, valuesSQL(insertScorePrefix, scoreArgs, rows), args...)
		}
		args, rows = args[:0], 0
		return err
	}
	for _, r := range results {
		for pos, sc := range r.Scores {
			args = append(args, r.RunID, r.Index, r.Repeat, pos, sc.Scorer, nullFloat(sc.Score), sc.Passed,
				sc.Reason, sc.Error, string(sc.ErrorKind), nullInt(sc.Usage.InputTokens), nullInt(sc.Usage.OutputTokens),
				nullFloat(sc.Usage.CostUSD))
			if rows++; rows == scoreChunk {
				if err := flush(); err != nil {
					return fmt.Errorf("write scores of run %q: %w", r.RunID, err)
				}
			}
		}
	}
	if err := flush(); err != nil {
		return fmt.Errorf("write scores: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("write results: commit: %w", err)
	}
	return nil
}

// deleteOldScores deletes the scores of the batch's keys that were written
// before. One range query per run finds them; a fresh batch deletes nothing.
func deleteOldScores(ctx context.Context, tx *sql.Tx, results []*evalrun.ItemResult) error {
	type span struct{ lo, hi int }
	spans := map[string]*span{}
	inBatch := make(map[resultKey]bool, len(results))
	for _, r := range results {
		inBatch[resultKey{r.RunID, r.Index, r.Repeat}] = true
		if sp := spans[r.RunID]; sp == nil {
			spans[r.RunID] = &span{r.Index, r.Index}
		} else {
			sp.lo, sp.hi = min(sp.lo, r.Index), max(sp.hi, r.Index)
		}
	}
	var old []resultKey
	for run, sp := range spans {
		rows, err := tx.QueryContext(ctx, `SELECT idx, rep FROM results WHERE run_id = ? AND idx BETWEEN ? AND ?`, run, sp.lo, sp.hi)
		if err != nil {
			return err
		}
		for rows.Next() {
			k := resultKey{run: run}
			if err := rows.Scan(&k.index, &k.rept); err != nil {
				rows.Close()
				return err
			}
			if inBatch[k] {
				old = append(old, k)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	for _, k := range old {
		if _, err := tx.ExecContext(ctx, `DELETE FROM scores WHERE run_id = ? AND idx = ? AND rep = ?`, k.run, k.index, k.rept); err != nil {
			return err
		}
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
