package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"slices"

	sqlitedrv "modernc.org/sqlite"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/resultq"
	"github.com/evalrun/evalrun/internal/sqlstore"
)

var _ evalrun.ResultPager = (*Store)(nil)

func init() {
	// evalrun_search(text, needles) is the text search of result pages:
	// whether text, lower-cased as Go does (SQLite's lower() folds ASCII
	// only), contains one of needles (lower-cased, a JSON list).
	sqlitedrv.MustRegisterDeterministicScalarFunction("evalrun_search", 2,
		func(_ *sqlitedrv.FunctionContext, args []driver.Value) (driver.Value, error) {
			list, _ := args[1].(string)
			var needles []string
			if err := json.Unmarshal([]byte(list), &needles); err != nil {
				return nil, fmt.Errorf("evalrun_search: needles %q: %v", list, err)
			}
			var text []byte
			switch v := args[0].(type) {
			case string:
				text = []byte(v)
			case []byte:
				text = v
			}
			if evalrun.ContainsFolded(text, needles) {
				return int64(1), nil
			}
			return int64(0), nil
		})
}

const scoreKeyChunk = 200

// writeScoreKeys writes the score_keys rows of results: one per scorer of
// their run (see migration 007).
func writeScoreKeys(ctx context.Context, tx *sql.Tx, results []*evalrun.ItemResult, scorers map[string][]evalrun.ScorerInfo) error {
	args := make([]any, 0, scoreKeyChunk*5)
	rows := 0
	flush := func() error {
		if rows == 0 {
			return nil
		}
		_, err := tx.ExecContext(ctx, valuesSQL(`INSERT OR REPLACE INTO score_keys (run_id, scorer, score, idx, rep) VALUES `, 5, rows), args...)
		args, rows = args[:0], 0
		return err
	}
	for _, r := range results {
		runScorers := scorers[r.RunID]
		for i, v := range sqlstore.ScoreKeys(r, runScorers) {
			args = append(args, r.RunID, runScorers[i].Name, v, r.Index, r.Repeat)
			if rows++; rows == scoreKeyChunk {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

// deleteScoreKeys deletes the score_keys rows of a stored result about to
// be replaced, computed from its stored scores.
func deleteScoreKeys(ctx context.Context, tx *sql.Tx, k resultKey, scorers []evalrun.ScorerInfo) error {
	if len(scorers) == 0 {
		return nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT scorer, score FROM scores WHERE run_id = ? AND idx = ? AND rep = ? ORDER BY pos`, k.run, k.index, k.rept)
	if err != nil {
		return err
	}
	old := &evalrun.ItemResult{}
	for rows.Next() {
		var sc evalrun.ScorerResult
		if err := rows.Scan(&sc.Scorer, &sc.Score); err != nil {
			rows.Close()
			return err
		}
		old.Scores = append(old.Scores, sc)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for i, v := range sqlstore.ScoreKeys(old, scorers) {
		if _, err := tx.ExecContext(ctx, `DELETE FROM score_keys WHERE run_id = ? AND scorer = ? AND score = ? AND idx = ? AND rep = ?`,
			k.run, scorers[i].Name, v, k.index, k.rept); err != nil {
			return err
		}
	}
	return nil
}

// QueryResults implements [evalrun.ResultPager]: one query finds the keys
// of the page (see sqlstore.PageSQL and migration 007), a second reads
// those results as ScanResults does.
func (s *Store) QueryResults(ctx context.Context, runID string, q evalrun.ResultPageQuery) (*evalrun.ResultPage, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	after, err := resultq.Decode(q)
	if err != nil {
		return nil, err
	}
	run, err := getRun(ctx, s.reader, runID)
	if err != nil {
		return nil, err
	}
	version := run.DatasetVersion
	if version == 0 {
		version, _ = resolveVersion(ctx, s.reader, run.Dataset, 0)
	}
	page := &evalrun.ResultPage{Total: -1}
	b := sqlstore.PageSQL{}
	if q.Count {
		query, args := b.Keys(run, version, q, nil, 0, true)
		if err := s.reader.QueryRowContext(ctx, query, args...).Scan(&page.Total); err != nil {
			return nil, fmt.Errorf("count results of run %q: %w", runID, err)
		}
	}
	keys, next, scanned, err := b.PageKeys(run, version, q, after, func(query string, args []any) ([]resultq.Cursor, error) {
		rows, err := s.reader.QueryContext(ctx, query, args...)
		if err != nil {
			return nil, fmt.Errorf("query results of run %q: %w", runID, err)
		}
		defer rows.Close()
		var keys []resultq.Cursor
		for rows.Next() {
			c := resultq.Cursor{Sort: q.SortName()}
			if err := rows.Scan(&c.Index, &c.Repeat, &c.Num, &c.Str); err != nil {
				return nil, fmt.Errorf("query results of run %q: %w", runID, err)
			}
			keys = append(keys, c)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("query results of run %q: %w", runID, err)
		}
		return keys, nil
	})
	if err != nil {
		return nil, err
	}
	page.Next, page.Scanned = next, scanned
	page.Results, err = loadPage(ctx, keys, func(indexes []int64, fn func(*evalrun.ItemResult) error) error {
		return s.scanResults(ctx, runID, evalrun.ResultQuery{SkipPayloads: q.SkipPayloads}, indexes, fn)
	})
	return page, err
}

// loadPage reads the results of keys with scan (of their indexes) and
// returns them in keys' order; a result no longer found (rewritten since)
// is left out.
func loadPage(ctx context.Context, keys []resultq.Cursor, scan func([]int64, func(*evalrun.ItemResult) error) error) ([]*evalrun.ItemResult, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	pos := make(map[[2]int]int, len(keys))
	var indexes []int64
	for i, k := range keys {
		pos[[2]int{k.Index, k.Repeat}] = i
		indexes = append(indexes, int64(k.Index))
	}
	slices.Sort(indexes)
	indexes = slices.Compact(indexes)
	out := make([]*evalrun.ItemResult, len(keys))
	err := scan(indexes, func(r *evalrun.ItemResult) error {
		if i, ok := pos[[2]int{r.Index, r.Repeat}]; ok {
			out[i] = r
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(out, func(r *evalrun.ItemResult) bool { return r == nil }), nil
}
