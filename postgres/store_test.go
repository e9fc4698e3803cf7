package postgres_test

import (
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/postgres"
	"github.com/evalrun/evalrun/postgres/pgtest"
	"github.com/evalrun/evalrun/storetest"
)

func openTemp(t testing.TB) *postgres.Store {
	t.Helper()
	url := pgtest.NewDatabase(t)
	s, err := postgres.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	pgtest.Require(t)
	storetest.Run(t, func(t *testing.T) evalrun.Store { return openTemp(t) })
}
