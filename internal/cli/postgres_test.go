package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/evalrun/evalrun/postgres/pgtest"
)

// The same commands against PostgreSQL (skipped without TEST_DATABASE_URL).
func TestPostgres(t *testing.T) {
	url := pgtest.NewDatabase(t)
	b := setup(t)
	b.env = []string{"EVALRUN_DB=" + url}
	srv := newServer(t, false)
	suite := b.httpSuite(srv.URL)
	code, _, stderr := b.run("run", suite, "-q")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	id := strings.Fields(stderr)[1]
	_, out, _ := b.run("runs", "list", "--json")
	var runs []map[string]any
	if err := json.Unmarshal([]byte(out), &runs); err != nil || len(runs) != 1 || runs[0]["id"] != id || runs[0]["succeeded"] != 3.0 {
		t.Fatalf("runs list: %v %s", err, out)
	}
	if code, out, errs := b.run("report", id, "--format", "json"); code != 0 || !strings.Contains(out, `"schema_version"`) {
		t.Errorf("report: exit %d %s", code, errs)
	}
	if code, _, errs := b.run("run", "--resume", id, "-q"); code != 2 || !strings.Contains(errs, "run "+id+" is already completed") {
		t.Errorf("resume of a completed run: exit %d %s; want it refused (exit 2)", code, errs)
	}
	if srv.n != 3 {
		t.Errorf("the target got %d requests, want 3 (the resume of a finished run calls nothing)", srv.n)
	}
}
