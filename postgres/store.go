// Package postgres is the [evalrun.Store] for teams: a PostgreSQL database
// reached through pgx v5 (pgxpool). A batch of results is upserted from
// arrays in one pipelined transaction, so it costs two round trips
// whatever its size. The schema is migrated on [Open].
package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/sqlstore"
	"github.com/jackc/pgx/v5/pgxpool"
)

var _ evalrun.Store = (*Store)(nil)

// Store is an [evalrun.Store] in PostgreSQL. Use [Open]; it is safe for
// concurrent use, and any number of processes may share the database.
type Store struct {
	pool      *pgxpool.Pool
	closeOnce sync.Once
	// clock decides the response cache's expiry.
	clock sqlstore.Clock
	// scorers caches the scorers of runs for WriteResults.
	scorers scorerCache
}

// Open connects to the database at url (a postgres:// URL or a key=value
// connection string, as pgx accepts) and migrates its schema.
func Open(ctx context.Context, url string) (*Store, error) {
	migrations, err := sqlstore.LoadMigrations(migrationFS)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse the database URL: %v: %w", err, evalrun.ErrInvalid)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect to %s: %w", redact(cfg), err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect to %s: %w", redact(cfg), err)
	}
	if err := migrate(ctx, pool, migrations); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %s: %w", redact(cfg), err)
	}
	return &Store{pool: pool}, nil
}

// redact names the database without its password.
func redact(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	return fmt.Sprintf("%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
}

// Pool returns the store's connection pool (for the distributed worker,
// which shares it).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the connection pool. Closing twice is safe.
func (s *Store) Close() error {
	s.closeOnce.Do(s.pool.Close)
	return nil
}

// CountItemRows returns the number of item rows ever stored for the dataset
// (one per version of an item), 0 for an unknown dataset.
func (s *Store) CountItemRows(ctx context.Context, dataset string) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT COUNT(*) FROM dataset_items WHERE dataset = $1`, dataset).Scan(&n); err != nil {
		return 0, fmt.Errorf("count item rows of %q: %w", dataset, err)
	}
	return n, nil
}

// ts gives NULL for the zero time.
func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func fromTS(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// blob stores nil (and empty) raw JSON as NULL.
func blob(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}
