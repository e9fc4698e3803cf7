package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/postgres"
	"github.com/evalrun/evalrun/postgres/pgtest"
)

// A write the schema can no longer take (a table dropped under the store)
// is marked ErrStoreUnavailable, so the engine stops the run at once; a
// result of an unknown run is not.
func TestWriteResultsMarksUnavailable(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	s, err := postgres.Open(t.Context(), dbURL)
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
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(t.Context(), `DROP TABLE scores`)
	conn.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	err = s.WriteResults(t.Context(), res("r"))
	if !errors.Is(err, evalrun.ErrStoreUnavailable) || !strings.Contains(err.Error(), "42P01") {
		t.Fatalf("write without a scores table: %v, want it marked ErrStoreUnavailable", err)
	}
}
