// Package pgtest gives each test its own PostgreSQL database, so that test
// packages running in parallel never see each other's data.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the environment variable holding the URL of a server on
// which tests may create databases, e.g.
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable.
const EnvURL = "TEST_DATABASE_URL"

// Require skips t when TEST_DATABASE_URL is not set.
func Require(t testing.TB) {
	t.Helper()
	if os.Getenv(EnvURL) == "" {
		t.Skip(EnvURL + " is not set: skipping the PostgreSQL tests (scripts/test starts a server and sets it)")
	}
}

// NewDatabase creates a fresh, empty database with a random name and
// returns its URL; t.Cleanup drops it. Without TEST_DATABASE_URL the test
// is skipped.
func NewDatabase(t testing.TB) string {
	t.Helper()
	Require(t)
	admin := os.Getenv(EnvURL)
	u, err := url.Parse(admin)
	if err != nil || u.Scheme == "" {
		t.Fatalf("%s must be a postgres:// URL: %q", EnvURL, admin)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "evalrun_test_" + hex.EncodeToString(b[:])

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connect to %s (%s): %v", EnvURL, u.Redacted(), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("drop test database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}
