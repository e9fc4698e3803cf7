package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/jackc/pgx/v5"
)

var _ evalrun.ResponseCache = (*Store)(nil)

// SetClock sets the clock the response cache reads to decide expiry, and
// run claims (ClaimRun) their lease ([evalrun.SystemClock] by default); tests inject a fake one. It is safe to
// call at any time. Expiry is decided at microsecond precision.
func (s *Store) SetClock(c evalrun.Clock) { s.clock.Set(c) }

// GetCached implements [evalrun.ResponseCache]. A value whose expiry time
// has come is a miss. Keys are text: valid UTF-8 without NUL bytes.
func (s *Store) GetCached(ctx context.Context, key string) ([]byte, bool, error) {
	var v []byte
	err := s.pool.QueryRow(ctx, `SELECT value FROM response_cache
		WHERE key = $1 AND (expires_at IS NULL OR expires_at > $2)`, key, s.clock.Now()).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("response cache: get: %w", err)
	}
	if v == nil {
		v = []byte{}
	}
	return v, true, nil
}

// PutCached implements [evalrun.ResponseCache]: one upsert. A ttl of 0
// never expires; a negative ttl stores a value that is already expired (it
// replaces an earlier value and reads as a miss).
func (s *Store) PutCached(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	now := s.clock.Now()
	var expires any
	if ttl != 0 {
		expires = now.Add(ttl)
	}
	if value == nil {
		value = []byte{}
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO response_cache (key, value, created_at, expires_at)
		VALUES ($1, $2, $3, $4) ON CONFLICT (key) DO UPDATE SET
		value = excluded.value, created_at = excluded.created_at, expires_at = excluded.expires_at`,
		key, value, now, expires); err != nil {
		return fmt.Errorf("response cache: put: %w", err)
	}
	return nil
}
