package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/evalrun/evalrun/report"
	"github.com/evalrun/evalrun/sqlite"
)

// bin is the evalrun binary built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "evalrun-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "evalrun")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is one finished evalrun process.
type result struct {
	code           int
	stdout, stderr string
}

// env is a test's working directory and database.
type env struct {
	t   *testing.T
	dir string
	db  string
}

func newEnv(t *testing.T) *env {
	dir := t.TempDir()
	return &env{t: t, dir: dir, db: "sqlite:" + filepath.Join(dir, "evalrun.db")}
}

// write creates a file in the env's directory and returns its path.
func (e *env) write(name, content string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) command(args ...string) *exec.Cmd {
	cmd := exec.Command(bin, append(args, "--db", e.db)...)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "EVALRUN_DB=", "GITHUB_STEP_SUMMARY=") // a test run is not this CI step's summary
	return cmd
}

// run runs evalrun to completion.
func (e *env) run(args ...string) result {
	e.t.Helper()
	cmd := e.command(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// readReport reads a JSON report written by a run, validating it against
// docs/report.schema.json.
func (e *env) readReport(name string) *report.Report {
	e.t.Helper()
	data, err := os.ReadFile(filepath.Join(e.dir, name))
	if err != nil {
		e.t.Fatal(err)
	}
	validateSchema(e.t, data)
	rep, err := report.ReadJSON(bytes.NewReader(data))
	if err != nil {
		e.t.Fatal(err)
	}
	return rep
}

func validateSchema(t *testing.T, data []byte) {
	t.Helper()
	f, err := os.Open("../../docs/report.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("report.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("report.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("report does not validate against docs/report.schema.json: %v", err)
	}
}

// items returns n JSONL dataset lines q0..q(n-1), input "question i",
// expected "answer i".
func items(n int) string {
	var b strings.Builder
	for i := range n {
		tag := []string{"a", "b"}[i%2]
		fmt.Fprintf(&b, `{"id": "q%d", "input": "question %d", "expected_output": "answer %d", "metadata": {"tags": [%q]}}`+"\n", i, i, i, tag)
	}
	return b.String()
}

// answerServer answers {"answer": "answer i"} to {"id", "input": "question i"}.
type answerServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string]int
	// hold, when set, is called before answering; it may block.
	hold func(r *http.Request, n int)
	n    int
}

func newAnswerServer(t *testing.T) *answerServer {
	s := &answerServer{seen: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ ID, Input string }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.seen[body.ID]++
		s.n++
		n, hold := s.n, s.hold
		s.mu.Unlock()
		if hold != nil {
			hold(r, n)
			if r.Context().Err() != nil {
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"answer": strings.Replace(body.Input, "question", "answer", 1)})
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *answerServer) suite(extra string) string {
	return fmt.Sprintf(`name: e2e
dataset: {name: e2e, file: data.jsonl}
target:
  kind: http
  url: %s/answer
  output: answer
scorers:
  - exact_match
  - {kind: contains, name: says-answer, values: [answer]}
execution: {concurrency: 2, item_timeout: 30s}
%s`, s.URL, extra)
}

// openStore opens the env's database directly.
func (e *env) openStore() *sqlite.Store {
	e.t.Helper()
	st, err := sqlite.Open(context.Background(), strings.TrimPrefix(e.db, "sqlite:"))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { st.Close() })
	return st
}

// runID returns the id of the first stderr line, "run <ID> ...".
func runID(t *testing.T, stderr string) string {
	t.Helper()
	first, _, _ := strings.Cut(stderr, "\n")
	f := strings.Fields(first)
	if len(f) < 2 || f[0] != "run" {
		t.Fatalf("first stderr line is not \"run <ID> ...\": %q", first)
	}
	return f[1]
}

// waitFor reads the process's stderr until a line contains want.
func waitFor(t *testing.T, r io.Reader, want string, timeout time.Duration) {
	t.Helper()
	done := make(chan bool, 1)
	go func() {
		buf := make([]byte, 0, 4096)
		chunk := make([]byte, 512)
		for {
			n, err := r.Read(chunk)
			buf = append(buf, chunk[:n]...)
			if bytes.Contains(buf, []byte(want)) {
				done <- true
				io.Copy(io.Discard, r)
				return
			}
			if err != nil {
				done <- false
				return
			}
		}
	}()
	select {
	case ok := <-done:
		if !ok {
			t.Fatalf("stream ended before %q", want)
		}
	case <-time.After(timeout):
		t.Fatalf("no %q within %s", want, timeout)
	}
}
