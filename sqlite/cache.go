package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/evalrun/evalrun"
)

var _ evalrun.ResponseCache = (*Store)(nil)

// SetClock sets the clock the response cache reads to decide expiry, and
// run claims (ClaimRun) their lease ([evalrun.SystemClock] by default); tests inject a fake one. It is safe to
// call at any time. Expiry is decided at microsecond precision.
func (s *Store) SetClock(c evalrun.Clock) { s.clock.Set(c) }

// GetCached implements [evalrun.ResponseCache] on the read pool. A value
// whose expiry time has come is a miss.
func (s *Store) GetCached(ctx context.Context, key string) ([]byte, bool, error) {
	var v []byte
	err := s.reader.QueryRowContext(ctx, `SELECT value FROM response_cache
		WHERE key = ? AND (expires_at IS NULL OR expires_at > ?)`, key, s.clock.Now().UnixMicro()).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
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

// PutCached implements [evalrun.ResponseCache]: an upsert through the
// writer. A ttl of 0 never expires; a negative ttl stores a value that is
// already expired (it replaces an earlier value and reads as a miss).
func (s *Store) PutCached(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	now := s.clock.Now()
	var expires sql.NullInt64
	if ttl != 0 {
		expires = sql.NullInt64{Int64: now.Add(ttl).UnixMicro(), Valid: true}
	}
	if value == nil {
		value = []byte{}
	}
	if _, err := s.writer.ExecContext(ctx, `INSERT INTO response_cache (key, value, created_at, expires_at)
		VALUES (?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET
		value = excluded.value, created_at = excluded.created_at, expires_at = excluded.expires_at`,
		key, value, now.UnixMicro(), expires); err != nil {
		return fmt.Errorf("response cache: put: %w", err)
	}
	return nil
}
