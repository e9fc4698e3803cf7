// Package sqlite is the embedded [evalrun.Store]: one SQLite file, written
// through the pure-Go driver modernc.org/sqlite (no cgo).
//
// The file is in WAL mode with synchronous=NORMAL and a busy timeout; the
// WAL is copied into the file whenever it passes 128 pages. Every write
// goes through one writer connection whose transactions begin
// IMMEDIATE; reads use a separate pool of read-only connections, so a
// report can read while a run writes, also from another process. The
// schema is migrated on [Open].
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	sqlitedrv "modernc.org/sqlite" // also the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/sqlstore"
)

// DefaultPath is the database file the CLI uses when none is given.
const DefaultPath = ".evalrun/evalrun.db"

// BusyTimeout is how long a connection waits for a lock held by another
// connection or process before failing with "database is locked".
const BusyTimeout = 10 * time.Second

// autoCheckpointPages is the WAL size, in pages, past which a commit of
// the writer copies the WAL into the database file (a passive checkpoint,
// SQLite's wal_autocheckpoint; its default is 1,000 pages). Results are
// committed by the engine's writer while the run waits on its target, so
// a small WAL moves the copying and the syncs of a run's writes into that
// wait, where they cost the run nothing: Close, which checkpoints what is
// left so that a run is durable when the process exits, then syncs at
// most this much instead of every page the run wrote (W1: 1.9 MB of WAL
// synced on the exit path; docs/benchmarks.md, "W1 start-up and tail,
// again").
const autoCheckpointPages = 128

var _ evalrun.Store = (*Store)(nil)

// Store is an [evalrun.Store] in a SQLite file. Use [Open]; it is safe for
// concurrent use, and several processes may open the same file.
type Store struct {
	path   string
	writer *sql.DB // one connection: SQLite has one writer at a time
	reader *sql.DB // pooled, query-only

	// Prepared on the writer when first needed (see prepareFull): the
	// full-size multi-row inserts. stmtMu guards them.
	stmtMu                       sync.Mutex
	replaceResults, insertScores *sql.Stmt

	// clock decides the response cache's expiry.
	clock sqlstore.Clock

	closeOnce sync.Once
	closeErr  error
}

// An Option changes how [Open] opens a database.
type Option func(*options)

type options struct {
	mappedReads bool
}

// MappedReads makes the readers map the database file (PRAGMA mmap_size, up
// to SQLite's 2 GB ceiling) instead of reading it with a pread system call
// per page. A result's 10 KB output spans overflow pages that SQLite reads
// past its page cache, and those calls were 60% of the CPU of a viewer
// search page (1,000 outputs; docs/benchmarks.md, "Every page under
// 50 ms"); the viewer (evalrun serve) opens its store with it.
//
// Every other command opens without it: every page a reader touches
// through the map counts in the process's resident memory until exit, and
// a run's report pass, which walks past the outputs of every result
// (SQLite follows the overflow chain to the columns stored after them),
// made a 100,000 × 10 KB --no-retain run peak at 1.3 GB of RSS instead of
// under 60 MB (docs/benchmarks.md, "Scale: memory").
func MappedReads() Option { return func(o *options) { o.mappedReads = true } }

// Open opens (creating it and its parent directories when missing) the
// SQLite database at path and migrates its schema. A new file is written
// from a template of the latest schema (see freshDB).
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if path == "" {
		return nil, fmt.Errorf("sqlite: empty database path: %w", evalrun.ErrInvalid)
	}
	if strings.Contains(path, "?") {
		// The driver takes what follows a '?' for its parameters: SQLite
		// would open the file named by the part before it, not path.
		return nil, fmt.Errorf("sqlite: database path %q contains a '?', which SQLite cannot open as a plain file name: %w", path, evalrun.ErrInvalid)
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("sqlite: create the directory of %s: %w", path, err)
		}
	}
	migrations, err := sqlstore.LoadMigrations(migrationFS)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	createFromTemplate(path) // a new file: the migrated schema in one write
	busy := fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds())
	checkpoint := fmt.Sprintf("wal_autocheckpoint(%d)", autoCheckpointPages)
	w := url.Values{"_pragma": {busy, "journal_mode(WAL)", "synchronous(NORMAL)", checkpoint}, "_txlock": {"immediate"}}
	writer, err := sql.Open("sqlite", path+"?"+w.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	writer.SetConnMaxIdleTime(0)
	if err := migrateRetryingBusy(ctx, writer, migrations); err != nil {
		writer.Close()
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	r := url.Values{"_pragma": {busy, "query_only(1)"}}
	if o.mappedReads { // see MappedReads; pages past 2 GB are read
		r["_pragma"] = append(r["_pragma"], "mmap_size(2147418112)")
	}
	reader, err := sql.Open("sqlite", path+"?"+r.Encode())
	if err != nil {
		writer.Close()
		return nil, fmt.Errorf("sqlite: open %s for reading: %w", path, err)
	}
	reader.SetMaxOpenConns(4)
	reader.SetMaxIdleConns(4)
	if err := reader.PingContext(ctx); err != nil {
		writer.Close()
		reader.Close()
		return nil, fmt.Errorf("sqlite: open %s for reading: %w", path, err)
	}
	return &Store{path: path, writer: writer, reader: reader}, nil
}

// openBusyTries bounds how often Open retries a migration that SQLite
// refused with SQLITE_BUSY without waiting.
const openBusyTries = 50

// migrateRetryingBusy runs migrate, trying again when SQLite answers
// SQLITE_BUSY at once. The busy timeout covers ordinary lock waits, but
// not every case: while another process turns a brand-new file to WAL
// mode (or recovers its WAL), BEGIN IMMEDIATE fails with SQLITE_BUSY
// without calling the busy handler. Two processes opening one new file at
// the same moment would otherwise see "database is locked".
func migrateRetryingBusy(ctx context.Context, db *sql.DB, migrations []sqlstore.Migration) error {
	for try := 1; ; try++ {
		err := migrate(ctx, db, migrations)
		var se *sqlitedrv.Error
		if err == nil || try >= openBusyTries || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(try) * 5 * time.Millisecond):
		}
	}
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// Close closes the database. Closing twice is safe.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.stmtMu.Lock()
		for _, st := range []*sql.Stmt{s.replaceResults, s.insertScores} {
			if st != nil {
				st.Close()
			}
		}
		s.stmtMu.Unlock()
		s.closeErr = errors.Join(s.reader.Close(), s.writer.Close())
	})
	return s.closeErr
}

// prepareFull returns *st, the full-size statement of query, preparing it
// on the writer the first time. Open used to prepare both: ~1 ms of a
// run's start that a run of small batches (W1's are 20 to 40 results)
// never uses, and that a large one spends in its writer, off the path of
// its items. It must be called outside a transaction: the writer has one
// connection, which a transaction holds.
func (s *Store) prepareFull(ctx context.Context, st **sql.Stmt, query string) (*sql.Stmt, error) {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if *st == nil {
		p, err := s.writer.PrepareContext(ctx, query)
		if err != nil {
			return nil, fmt.Errorf("prepare: %w", err)
		}
		*st = p
	}
	return *st, nil
}

// CountItemRows returns the number of item rows ever stored for the dataset
// (one per version of an item), 0 for an unknown dataset.
func (s *Store) CountItemRows(ctx context.Context, dataset string) (int, error) {
	var n int
	if err := s.reader.QueryRowContext(ctx, `SELECT COUNT(*) FROM dataset_items WHERE dataset = ?`, dataset).Scan(&n); err != nil {
		return 0, fmt.Errorf("count item rows of %q: %w", dataset, err)
	}
	return n, nil
}

// micros encodes a time as Unix microseconds, NULL for the zero time.
func micros(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMicro(), Valid: true}
}

func fromMicros(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.UnixMicro(n.Int64).UTC()
}

func nullInt(p *int64) sql.NullInt64 {
	if p == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: *p, Valid: true}
}

func fromNullInt(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	return &n.Int64
}

func nullFloat(p *float64) sql.NullFloat64 {
	if p == nil {
		return sql.NullFloat64{}
	}
	return sql.NullFloat64{Float64: *p, Valid: true}
}

func fromNullFloat(n sql.NullFloat64) *float64 {
	if !n.Valid {
		return nil
	}
	return &n.Float64
}

// blob stores nil (and empty) raw JSON as NULL.
func blob(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}
