package sqlite_test

import (
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/sqlite"
)

// A write the schema can no longer take (a table dropped under the store)
// is marked ErrStoreUnavailable, so the engine stops the run at once; a
// result of an unknown run is not.
func TestWriteResultsMarksUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateRun(t.Context(), &evalrun.Run{ID: "r", Status: evalrun.RunRunning, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	res := func(run string) []*evalrun.ItemResult {
		return []*evalrun.ItemResult{{RunID: run, ItemID: "a", Output: evalrun.String("x"),
			Scores: []evalrun.ScorerResult{{Scorer: "exact", Score: evalrun.Float64(1)}}}}
	}
	if err := s.WriteResults(t.Context(), res("nope")); err == nil || errors.Is(err, evalrun.ErrStoreUnavailable) {
		t.Fatalf("unknown run: %v, want an error not marked unavailable", err)
	}
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DROP TABLE scores`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	err = s.WriteResults(t.Context(), res("r"))
	if !errors.Is(err, evalrun.ErrStoreUnavailable) {
		t.Fatalf("write without a scores table: %v, want it marked ErrStoreUnavailable", err)
	}
}
