package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/resultq"
	"github.com/evalrun/evalrun/internal/sqlstore"
)

var _ evalrun.ResultPager = (*Store)(nil)

// QueryResults implements [evalrun.ResultPager]: one query finds the keys
// of the page (see sqlstore.PageSQL and migration 007), a second reads
// those results as ScanResults does.
func (s *Store) QueryResults(ctx context.Context, runID string, q evalrun.ResultPageQuery) (*evalrun.ResultPage, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	// Item ids are stored through pgText (text cannot hold a NUL); a tag
	// with a NUL is never in item_tags (metadata holding \u0000 is not
	// jsonb), so nothing matches it. Either, passed as it is, was an
	// "invalid byte sequence" error: a 500 in the viewer.
	q.ItemID = pgText(q.ItemID)
	if strings.Contains(q.Tag, "\x00") {
		page := &evalrun.ResultPage{Total: -1}
		if q.Count {
			page.Total = 0
		}
		return page, nil
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
