package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/resultq"
	"github.com/evalrun/evalrun/internal/sqlstore"
)

var _ evalrun.ResultPager = (*Store)(nil)

// writeScoreKeys copies the score_keys rows of results (one per scorer of
// their run; see migration 007) in tx.
func writeScoreKeys(ctx context.Context, tx pgx.Tx, results []*evalrun.ItemResult) error {
	var ids []string
	for _, r := range results {
		if !slices.Contains(ids, r.RunID) {
			ids = append(ids, r.RunID)
		}
	}
	scorers := make(map[string][]evalrun.ScorerInfo, len(ids))
	rows, err := tx.Query(ctx, `SELECT id, scorers FROM runs WHERE id = ANY ($1)`, ids)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id string
		var raw []byte
		if err := rows.Scan(&id, &raw); err != nil {
			rows.Close()
			return err
		}
		var list []evalrun.ScorerInfo
		if err := json.Unmarshal(raw, &list); err != nil {
			rows.Close()
			return fmt.Errorf("scorers of run %q: %w", id, err)
		}
		scorers[id] = sqlstore.UniqueScorers(list)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var keys [][]any
	for _, r := range results {
		runScorers := scorers[r.RunID]
		for i, v := range sqlstore.ScoreKeys(r, runScorers) {
			keys = append(keys, []any{r.RunID, runScorers[i].Name, v, r.Index, r.Repeat})
		}
	}
	if len(keys) == 0 {
		return nil
	}
	_, err = tx.CopyFrom(ctx, pgx.Identifier{"score_keys"}, []string{"run_id", "scorer", "score", "idx", "rep"}, pgx.CopyFromRows(keys))
	return err
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
	run, err := getRun(ctx, s.pool, runID)
	if err != nil {
		return nil, err
	}
	version := run.DatasetVersion
	if version == 0 {
		version, _ = resolveVersion(ctx, s.pool, run.Dataset, 0)
	}
	page := &evalrun.ResultPage{Total: -1}
	b := sqlstore.PageSQL{Postgres: true}
	if q.Count {
		query, args := b.Keys(run, version, q, nil, 0, true)
		if err := s.pool.QueryRow(ctx, query, args...).Scan(&page.Total); err != nil {
			return nil, fmt.Errorf("count results of run %q: %w", runID, err)
		}
	}
	keys, next, scanned, err := b.PageKeys(run, version, q, after, func(query string, args []any) ([]resultq.Cursor, error) {
		rows, err := s.pool.Query(ctx, query, args...)
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
	if len(keys) == 0 {
		return page, nil
	}
	pos := make(map[[2]int]int, len(keys))
	var indexes []int32
	for i, k := range keys {
		pos[[2]int{k.Index, k.Repeat}] = i
		indexes = append(indexes, int32(k.Index))
	}
	out := make([]*evalrun.ItemResult, len(keys))
	err = s.scanResults(ctx, runID, evalrun.ResultQuery{SkipPayloads: q.SkipPayloads}, indexes, func(r *evalrun.ItemResult) error {
		if i, ok := pos[[2]int{r.Index, r.Repeat}]; ok {
			out[i] = r
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	page.Results = slices.DeleteFunc(out, func(r *evalrun.ItemResult) bool { return r == nil })
	return page, nil
}
