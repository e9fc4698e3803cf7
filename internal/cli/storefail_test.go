package cli

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/evalrun/evalrun"
)

// A database that stops taking results mid-run (its scores table is
// dropped by another process after the 5th answer) stops the run at once:
// the cause is said once, no further item is executed (the target holds
// every later request until the run gives up on it, so only a stopped run
// can end), the run ends failed with exit 1, and the user is told where
// the results are: the -o report written from memory, or, with --no-retain,
// that they are lost.
func TestStoreRefusingResultsStopsTheRun(t *testing.T) {
	for _, noRetain := range []bool{false, true} {
		t.Run(fmt.Sprintf("no-retain=%v", noRetain), func(t *testing.T) {
			b := setup(t)
			path := strings.TrimPrefix(b.db, "sqlite:")
			var mu sync.Mutex
			n := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var body struct{ Input string }
				json.NewDecoder(r.Body).Decode(&body)
				mu.Lock()
				n++
				k := n
				mu.Unlock()
				if k > 5 {
					<-r.Context().Done()
					return
				}
				if k == 5 {
					db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
					if err == nil {
						_, err = db.Exec(`DROP TABLE scores`)
						db.Close()
					}
					if err != nil {
						t.Errorf("drop the scores table: %v", err)
					}
				}
				json.NewEncoder(w).Encode(map[string]string{"out": body.Input})
			}))
			defer srv.Close()
			suite := storefailSuite(b, srv.URL, 50)
			report := filepath.Join(b.dir, "out", "r.json")
			args := []string{"run", suite, "-q", "-o", report}
			if noRetain {
				args = append(args, "--no-retain")
			}
			code, _, stderr := b.run(args...)
			if code != ExitFailed {
				t.Fatalf("exit %d, want 1\n%s", code, stderr)
			}
			if got := strings.Count(stderr, "error: storage:"); got != 1 || !strings.Contains(stderr, "no such table: scores") ||
				!strings.Contains(stderr, "stopping the run") {
				t.Fatalf("the cause must be said once, at once (%d times):\n%s", got, stderr)
			}
			if !strings.Contains(stderr, "failed: the store refuses to save results") {
				t.Errorf("the verdict does not say why the run failed:\n%s", stderr)
			}
			mu.Lock()
			requests := n
			mu.Unlock()
			if requests > 6 {
				t.Errorf("the target got %d requests: the run went on after the store refused results", requests)
			}
			id := strings.Fields(stderr)[1]
			// The store no longer opens (its schema is broken): read its run
			// record directly.
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			var status, msg string
			err = db.QueryRow(`SELECT status, error FROM runs WHERE id = ?`, id).Scan(&status, &msg)
			db.Close()
			if err != nil || status != string(evalrun.RunFailed) || !strings.Contains(msg, "no such table: scores") {
				t.Fatalf("stored run: %v %s %q", err, status, msg)
			}
			if noRetain {
				if !strings.Contains(stderr, "are lost") {
					t.Errorf("with --no-retain the loss is not said:\n%s", stderr)
				}
				return
			}
			if !strings.Contains(stderr, "all of them are in "+report+" (built from memory)") {
				t.Errorf("the user is not told where the results are:\n%s", stderr)
			}
			raw, err := os.ReadFile(report)
			if err != nil {
				t.Fatal(err)
			}
			var rep struct {
				Run   struct{ Status evalrun.RunStatus }
				Items []json.RawMessage
			}
			if err := json.Unmarshal(raw, &rep); err != nil || rep.Run.Status != evalrun.RunFailed || len(rep.Items) != 5 {
				t.Errorf("report: %v status %s with %d items, want failed with the 5 results", err, rep.Run.Status, len(rep.Items))
			}
		})
	}
}

// A run its store stopped (failed, with items that never ran) is resumed
// once the store takes results again: the resume executes exactly the
// items without a stored result and the run ends completed. Here the
// scores table is renamed away after the 5th answer (the store refuses
// every result) and renamed back before the resume.
func TestResumeAfterTheStoreRecovers(t *testing.T) {
	b := setup(t)
	path := strings.TrimPrefix(b.db, "sqlite:")
	exec := sqliteExec(t, path)
	var mu sync.Mutex
	n, broken := 0, true
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ ID, Input string }
		json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		n++
		k, hold := n, broken && n > 5
		calls[body.ID]++
		mu.Unlock()
		if hold {
			<-r.Context().Done()
			return
		}
		if k == 5 {
			exec(`ALTER TABLE scores RENAME TO scores_away`)
		}
		json.NewEncoder(w).Encode(map[string]string{"out": body.Input})
	}))
	defer srv.Close()
	suite := storefailSuite(b, srv.URL, 20)
	code, _, stderr := b.run("run", suite, "-q")
	if code != ExitFailed {
		t.Fatalf("exit %d, want 1\n%s", code, stderr)
	}
	id := strings.Fields(stderr)[1]
	if !strings.Contains(stderr, "evalrun run --resume "+id+" runs the items without a stored result") {
		t.Errorf("the way on (a resume) is not said:\n%s", stderr)
	}

	exec(`ALTER TABLE scores_away RENAME TO scores`)
	stored := -1
	if db, err := sql.Open("sqlite", path); err == nil {
		err = db.QueryRow(`SELECT count(*) FROM results WHERE run_id = ?`, id).Scan(&stored)
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	broken = false
	clear(calls)
	mu.Unlock()
	code, _, stderr = b.run("run", "--resume", id, "-q")
	if code != ExitOK {
		t.Fatalf("resume: exit %d, want 0\n%s", code, stderr)
	}
	code, stdout, stderr := b.run("runs", "show", id, "--json")
	if code != ExitOK {
		t.Fatalf("runs show: exit %d\n%s", code, stderr)
	}
	var run evalrun.Run
	if err := json.Unmarshal([]byte(stdout), &run); err != nil {
		t.Fatal(err)
	}
	if run.Status != evalrun.RunCompleted || run.Succeeded != 20 || run.Skipped != 0 {
		t.Fatalf("resumed run: %s, %d succeeded, %d skipped; want completed, 20, 0", run.Status, run.Succeeded, run.Skipped)
	}
	mu.Lock()
	defer mu.Unlock()
	// The stored results were not run again; each missing item ran once.
	for id, c := range calls {
		if c != 1 {
			t.Errorf("item %s was requested %d times by the resume", id, c)
		}
	}
	if stored < 0 || len(calls) != 20-stored {
		t.Errorf("the resume requested %d items, want the %d without a stored result", len(calls), 20-stored)
	}
}

// storefailSuite writes n items and a suite running them one at a time
// against the http target at url, and returns the suite's path.
func storefailSuite(b *bundle, url string, n int) string {
	var data strings.Builder
	for i := range n {
		fmt.Fprintf(&data, `{"id": "q%d", "input": "x%d", "expected_output": "x%d"}`+"\n", i, i, i)
	}
	b.write("d.jsonl", data.String())
	return b.write("suite.yaml", `name: storefail
dataset: {name: d, file: d.jsonl}
target: {kind: http, url: `+url+`, output: out}
scorers: [exact_match]
execution: {concurrency: 1}
`)
}

// sqliteExec returns a function running one statement on the SQLite
// database file at path behind evalrun's back (to break or mend its
// schema), reporting a failure as a test error.
func sqliteExec(t *testing.T, path string) func(q string) {
	return func(q string) {
		t.Helper()
		db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
		if err == nil {
			_, err = db.Exec(q)
			db.Close()
		}
		if err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
}
