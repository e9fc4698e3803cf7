package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/postgres"
	"github.com/evalrun/evalrun/sqlite"
	"github.com/spf13/cobra"
)

// dbURL returns the storage location: --db, else EVALRUN_DB, else DefaultDB.
func (st *State) dbURL(cmd *cobra.Command) string {
	if v, _ := cmd.Flags().GetString("db"); v != "" {
		return v
	}
	if v := st.Getenv("EVALRUN_DB"); v != "" {
		return v
	}
	return DefaultDB
}

// openStore opens the store the command's --db (or EVALRUN_DB) names:
// sqlite:PATH or postgres://... (postgresql:// too).
func (st *State) openStore(cmd *cobra.Command) (evalrun.Store, error) {
	return openStore(cmd.Context(), st.dbURL(cmd))
}

// withStore opens the command's store, calls fn with the command's context
// and the store, and closes the store when fn returns.
func (st *State) withStore(cmd *cobra.Command, fn func(ctx context.Context, store evalrun.Store) error) error {
	return st.withStoreOpts(cmd, nil, fn)
}

// withStoreOpts is withStore opening a SQLite store with opts.
func (st *State) withStoreOpts(cmd *cobra.Command, opts []sqlite.Option, fn func(ctx context.Context, store evalrun.Store) error) error {
	store, err := openStore(cmd.Context(), st.dbURL(cmd), opts...)
	if err != nil {
		return err
	}
	defer store.Close()
	return fn(cmd.Context(), store)
}

// openPostgres opens the command's store, which must be PostgreSQL
// (distributed runs and workers need it); the caller closes it.
func (st *State) openPostgres(cmd *cobra.Command) (*postgres.Store, error) {
	store, err := st.openStore(cmd)
	if err != nil {
		return nil, err
	}
	pg, ok := store.(*postgres.Store)
	if !ok {
		store.Close()
		return nil, invalidf(errNeedsPostgres)
	}
	return pg, nil
}

// openStore opens the store url names; opts apply when it is SQLite.
func openStore(ctx context.Context, url string, opts ...sqlite.Option) (evalrun.Store, error) {
	switch {
	case strings.HasPrefix(url, "sqlite:"):
		path := strings.TrimPrefix(strings.TrimPrefix(url, "sqlite:"), "//")
		if path == "" {
			return nil, invalidf("--db %q: missing the database file (e.g. sqlite:.evalrun/evalrun.db)", url)
		}
		s, err := sqlite.Open(ctx, path, opts...)
		if err != nil {
			return nil, fmt.Errorf("open storage: %w", err)
		}
		return s, nil
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		s, err := postgres.Open(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("open storage: %w", err)
		}
		return s, nil
	}
	return nil, invalidf("--db %q: unknown storage (use sqlite:PATH or postgres://user@host/db)", redactURL(url))
}

// redactURL hides a password in a storage URL for messages.
func redactURL(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		if at := strings.LastIndex(u, "@"); at > i {
			if c := strings.Index(u[i+3:at], ":"); c >= 0 {
				return u[:i+3+c+1] + "xxxxx" + u[at:]
			}
		}
	}
	return u
}
