package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/sqlstore"
)

// maxCachedScorers bounds the runs whose scorers a store keeps: a worker
// writes for a few runs at a time.
const maxCachedScorers = 256

// scorerCache keeps the scorers of the runs a store wrote results for:
// WriteResults needs them for the score_keys rows (migration 007), and a
// run's scorers never change once it is created, so a batch need not read
// them again. A run deleted meanwhile is still found by WriteResults'
// existence check, inside its transaction.
type scorerCache struct {
	mu   sync.Mutex
	runs map[string][]evalrun.ScorerInfo
}

// runScorers returns the scorers (sqlstore.UniqueScorers) of each run of
// ids that exists, reading those not cached in one query.
func (s *Store) runScorers(ctx context.Context, ids []string) (map[string][]evalrun.ScorerInfo, error) {
	out := make(map[string][]evalrun.ScorerInfo, len(ids))
	var missing []string
	s.scorers.mu.Lock()
	for _, id := range ids {
		if sc, ok := s.scorers.runs[id]; ok {
			out[id] = sc
		} else {
			missing = append(missing, id)
		}
	}
	s.scorers.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT id, scorers FROM runs WHERE id = ANY ($1)`, missing)
	if err != nil {
		return nil, fmt.Errorf("scorers: %w", err)
	}
	defer rows.Close()
	read := make(map[string][]evalrun.ScorerInfo, len(missing))
	for rows.Next() {
		var id string
		var raw []byte
		if err := rows.Scan(&id, &raw); err != nil {
			return nil, fmt.Errorf("scorers: %w", err)
		}
		var list []evalrun.ScorerInfo
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("scorers of run %q: %w", id, err)
		}
		read[id] = sqlstore.UniqueScorers(list)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("scorers: %w", err)
	}
	s.scorers.mu.Lock()
	defer s.scorers.mu.Unlock()
	if s.scorers.runs == nil || len(s.scorers.runs)+len(read) > maxCachedScorers {
		s.scorers.runs = make(map[string][]evalrun.ScorerInfo, len(read))
	}
	for id, sc := range read {
		s.scorers.runs[id] = sc
		out[id] = sc
	}
	return out, nil
}

// forgetScorers drops a run from the cache (it was deleted).
func (s *Store) forgetScorers(id string) {
	s.scorers.mu.Lock()
	delete(s.scorers.runs, id)
	s.scorers.mu.Unlock()
}
