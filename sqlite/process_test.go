package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/sqlite"
)

// The test binary doubles as the helper processes of TestTwoProcesses: with
// EVALRUN_SQLITE_HELPER set it plays that role and exits.
const (
	helperEnv = "EVALRUN_SQLITE_HELPER"
	pathEnv   = "EVALRUN_SQLITE_PATH"
	runEnv    = "EVALRUN_SQLITE_RUN"

	helperBatches   = 60
	helperBatchSize = 100
)

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		if err := helper(role, os.Getenv(pathEnv), os.Getenv(runEnv)); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", role, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func helper(role, path, runID string) error {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		return err
	}
	defer s.Close()
	switch role {
	case "writer":
		for b := range helperBatches {
			batch := make([]*evalrun.ItemResult, helperBatchSize)
			for i := range batch {
				idx := b*helperBatchSize + i
				batch[i] = &evalrun.ItemResult{RunID: runID, Index: idx, ItemID: fmt.Sprintf("item-%04d", idx%10),
					Output: evalrun.String(strings.Repeat("x", 200)), Attempts: 1,
					Scores: []evalrun.ScorerResult{{Scorer: "exact", Score: evalrun.Float64(1), Passed: true}}}
			}
			if err := s.WriteResults(ctx, batch); err != nil {
				return fmt.Errorf("batch %d: %w", b, err)
			}
		}
		run, err := s.GetRun(ctx, runID)
		if err != nil {
			return err
		}
		run.Status = evalrun.RunCompleted
		return s.UpdateRun(ctx, run)
	case "reader":
		// Read like a report does until both runs are complete; say
		// "ready" after the first round so the writers start while we read.
		for round := 0; ; round++ {
			runs, err := s.ListRuns(ctx, evalrun.RunFilter{})
			if err != nil {
				return fmt.Errorf("round %d: list runs: %w", round, err)
			}
			done := 0
			for _, r := range runs {
				n := 0
				if err := s.ScanResults(ctx, r.ID, evalrun.ResultQuery{}, func(res *evalrun.ItemResult) error {
					n++
					if res.Item == nil || len(res.Scores) != 1 {
						return fmt.Errorf("result %d: item %v, %d scores", res.Index, res.Item, len(res.Scores))
					}
					return nil
				}); err != nil {
					return fmt.Errorf("round %d: scan results of %s: %w", round, r.ID, err)
				}
				if r.Status == evalrun.RunCompleted && n == helperBatches*helperBatchSize {
					done++
				}
			}
			if round == 0 {
				fmt.Println("ready")
			}
			if done == len(runs) && done > 0 {
				fmt.Printf("rounds %d\n", round+1)
				return nil
			}
		}
	}
	return fmt.Errorf("unknown role %q", role)
}

// TestTwoProcesses: two processes write runs into one file while a third
// reads them, all through the store; none sees "database is locked".
func TestTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes; skipped in -short mode")
	}
	path := filepath.Join(t.TempDir(), "shared.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	items := make([]*evalrun.Item, 10)
	for i := range items {
		items[i] = &evalrun.Item{ID: fmt.Sprintf("item-%04d", i), Input: evalrun.String("q")}
	}
	if _, _, err := s.ImportDataset(t.Context(), "qa", items); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"run-a", "run-b"} {
		if err := s.CreateRun(t.Context(), &evalrun.Run{ID: id, Dataset: "qa", DatasetVersion: 1, Status: evalrun.RunRunning,
			Scorers: []evalrun.ScorerInfo{{Name: "exact"}}}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	start := func(role, runID string, stdout *bytes.Buffer) (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.CommandContext(t.Context(), os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"="+role, pathEnv+"="+path, runEnv+"="+runID)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if stdout != nil {
			cmd.Stdout = stdout
		}
		return cmd, &stderr
	}
	reader, readerErr := start("reader", "", nil)
	out, err := reader.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := reader.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("reader did not get ready: %q, stderr: %s", lines.Text(), readerErr)
	}
	var wg sync.WaitGroup
	errs := make([]string, 2)
	for i, id := range []string{"run-a", "run-b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd, stderr := start("writer", id, nil)
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Sprintf("writer of %s: %v: %s", id, err, stderr)
			}
		}()
	}
	wg.Wait()
	// A writer that failed leaves its run unfinished, and the reader would
	// wait for it forever: stop the reader and report the writer's error.
	for _, e := range errs {
		if e != "" {
			reader.Process.Kill()
			reader.Wait()
			t.Fatal(e)
		}
	}
	var rest strings.Builder
	for lines.Scan() {
		rest.WriteString(lines.Text() + "\n")
	}
	readErr := reader.Wait()
	for _, e := range errs {
		if e != "" {
			t.Error(e)
		}
	}
	if readErr != nil {
		t.Fatalf("reader: %v: %s", readErr, readerErr)
	}
	if !strings.HasPrefix(rest.String(), "rounds ") {
		t.Fatalf("reader output %q, want its round count", rest.String())
	}
	t.Logf("reader: %s", strings.TrimSpace(rest.String()))

	s, err = sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range []string{"run-a", "run-b"} {
		n := 0
		if err := s.ScanResultKeys(t.Context(), id, func(evalrun.ResultKey) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		if n != helperBatches*helperBatchSize {
			t.Fatalf("%s has %d results, want %d", id, n, helperBatches*helperBatchSize)
		}
	}
}

// TestOpenConcurrently: stores opening a new file at once migrate it once.
func TestOpenConcurrently(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fresh.db")
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := sqlite.Open(t.Context(), path)
			if err != nil {
				errs <- err
				return
			}
			errs <- s.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Open: %v", err)
		}
	}
	db := rawDB(t, path)
	var n, latest int
	if err := db.QueryRow(`SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&n, &latest); err != nil {
		t.Fatal(err)
	}
	if n < 2 || n != latest {
		t.Fatalf("schema_migrations has %d rows up to version %d, want one row per migration (at least 2)", n, latest)
	}
}

func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestOpenNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := rawDB(t, path).Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, '099_future.sql', 0)`); err != nil {
		t.Fatal(err)
	}
	_, err = sqlite.Open(t.Context(), path)
	if err == nil || !strings.Contains(err.Error(), "schema version 99, newer than this evalrun knows (") || !strings.HasSuffix(err.Error(), "): upgrade evalrun") {
		t.Fatalf("Open of a newer schema: err = %v", err)
	}
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keep.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ImportDataset(t.Context(), "qa", []*evalrun.Item{{ID: "a", Input: evalrun.String("x")}}); err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := s.CreateRun(t.Context(), &evalrun.Run{ID: "r", Status: evalrun.RunPending, CreatedAt: created}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, err := s.GetDataset(t.Context(), "qa")
	if err != nil || d.ItemCount != 1 {
		t.Fatalf("dataset after reopen: %+v, %v", d, err)
	}
	r, err := s.GetRun(t.Context(), "r")
	if err != nil || !r.CreatedAt.Equal(created) {
		t.Fatalf("run after reopen: %+v, %v", r, err)
	}
}

func TestOpenDefaultPath(t *testing.T) {
	t.Chdir(t.TempDir())
	s, err := sqlite.Open(t.Context(), sqlite.DefaultPath)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := os.Stat(filepath.Join(".evalrun", "evalrun.db")); err != nil {
		t.Fatalf("default database file: %v", err)
	}
	var mode string
	if err := rawDB(t, sqlite.DefaultPath).QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q (%v), want wal", mode, err)
	}
}

// TestWALStaysSmallWhileWriting: a run's results are copied from the WAL
// into the database file as they are written (a checkpoint past 128 WAL
// pages), so the WAL never holds a run's worth of writes: the checkpoint
// of Close, on the exit path, has little left to copy and sync. 3 MB of
// results in 30 batches, written without closing, leave well under 1 MB
// of WAL (SQLite's default, 1,000 pages, would leave all 3 MB), every
// result readable; after Close they are all in the file, the WAL gone.
func TestWALStaysSmallWhileWriting(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "wal.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateRun(ctx, &evalrun.Run{ID: "r", Status: evalrun.RunRunning, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	const batches, perBatch = 30, 25
	output := evalrun.String(strings.Repeat("x", 4000))
	for b := range batches {
		batch := make([]*evalrun.ItemResult, perBatch)
		for i := range batch {
			idx := b*perBatch + i
			batch[i] = &evalrun.ItemResult{RunID: "r", Index: idx, ItemID: fmt.Sprintf("item-%04d", idx), Output: output, Attempts: 1}
		}
		if err := s.WriteResults(ctx, batch); err != nil {
			t.Fatalf("batch %d: %v", b, err)
		}
	}
	st, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() >= 1<<20 {
		t.Fatalf("WAL after writing %d results of 4 KB: %d bytes, want < 1 MB (checkpointed as it grows)", batches*perBatch, st.Size())
	}
	count := func() int {
		n := 0
		if err := s.ScanResults(ctx, "r", evalrun.ResultQuery{}, func(*evalrun.ItemResult) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != batches*perBatch {
		t.Fatalf("%d results read back, want %d", n, batches*perBatch)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); !os.IsNotExist(err) {
		t.Fatalf("WAL after Close: %v, want it removed (everything in the file)", err)
	}
	if s, err = sqlite.Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := count(); n != batches*perBatch {
		t.Fatalf("%d results after reopening, want %d", n, batches*perBatch)
	}
}

func TestOpenEmptyPath(t *testing.T) {
	_, err := sqlite.Open(t.Context(), "")
	if err == nil || !strings.Contains(err.Error(), "empty database path") {
		t.Fatalf("Open(\"\"): err = %v", err)
	}
}

// A '?' in the path: the driver reads what follows it as its parameters,
// so SQLite wrote to "a" in the directory while the template was written
// to "a?b.db": the runs went to a file nobody named. Open refuses it.
func TestOpenPathWithQuestionMark(t *testing.T) {
	dir := t.TempDir()
	_, err := sqlite.Open(t.Context(), filepath.Join(dir, "a?b.db"))
	if err == nil || !errors.Is(err, evalrun.ErrInvalid) || !strings.Contains(err.Error(), "'?'") {
		t.Fatalf("Open(a?b.db): err = %v, want an ErrInvalid naming the '?'", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("Open(a?b.db) left %d files in the directory", len(entries))
	}
}
