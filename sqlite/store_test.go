package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/sqlite"
	"github.com/evalrun/evalrun/storetest"
)

func openTemp(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "sub", "dir", "evalrun.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) evalrun.Store { return openTemp(t) })
}
