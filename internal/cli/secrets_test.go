package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalrun/evalrun/web"
)

// leakSecret is the secret of TestSecretsNeverLeak; a yaml type error
// quotes the first 7 bytes of a value, so its prefix is searched too.
const leakSecret = "Zq8-LEAKED-4f1c9e27ab"

// leakBasic is the secret as an HTTP client sends it for a URL with
// alice:leakSecret@: base64("alice:" + leakSecret) in Authorization.
var leakBasic = base64.StdEncoding.EncodeToString([]byte("alice:" + leakSecret))

// echoServer is a fake service that betrays its callers: under /echo it
// answers 401 with the request's Authorization header and URL in the body
// (as a careless API does), under /fail 500 with the same, and under /ok
// {"out": input}.
func echoServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		echo := "credentials " + r.Header.Get("Authorization") + " for " + r.URL.RequestURI()
		switch {
		case strings.HasPrefix(r.URL.Path, "/echo"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": "invalid " + echo, "type": "invalid_request_error"}})
		case strings.HasPrefix(r.URL.Path, "/fail"):
			http.Error(w, "broken: "+echo, http.StatusInternalServerError)
		default:
			var body struct{ Input string }
			json.NewDecoder(r.Body).Decode(&body)
			json.NewEncoder(w).Encode(map[string]string{"out": body.Input})
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// refusedURL returns the base URL of a port nothing listens on.
func refusedURL(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

// Every way a secret used to leak (issue 12): after each, neither the
// database file, nor any report format, nor standard output or error, nor
// any page or API answer of the viewer holds the secret or a prefix of it.
func TestSecretsNeverLeak(t *testing.T) {
	srv := echoServer(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct {
		name string
		// target is the suite's target mapping; scorers its scorers list.
		target, scorers string
		execution       string
		code            int
		// shown must appear in the stored report: proof the path ran.
		shown string
	}{
		{name: "env secret in the URL query, connection refused",
			target: `{kind: http, url: "` + refusedURL(t) + `/x?api_key=${KEY}", output: out}`,
			code:   1, shown: "api_key=[redacted]"},
		{name: "401 echoing the Authorization header, http target",
			target: `{kind: http, url: "` + srv.URL + `/echo", headers: {Authorization: "Bearer ${KEY}"}}`,
			code:   1, shown: "HTTP 401"},
		{name: "401 echoing the Authorization header, openai target",
			target: `{kind: openai, base_url: "` + srv.URL + `/echo/v1", api_key_env: KEY, model: m}`,
			code:   1, shown: "HTTP 401"},
		{name: "401 echoing the Authorization header, llm_judge",
			target:  `{kind: http, url: "` + srv.URL + `/ok", output: out}`,
			scorers: `[{kind: llm_judge, rubric: be right, base_url: "` + srv.URL + `/echo/v1", api_key_env: KEY, model: j}]`,
			code:    1, shown: "HTTP 401"},
		{name: "401 echoing the Authorization header, embedding_similarity",
			target:  `{kind: http, url: "` + srv.URL + `/ok", output: out}`,
			scorers: `[{kind: embedding_similarity, base_url: "` + srv.URL + `/echo/v1", api_key_env: KEY, model: e}]`,
			code:    1, shown: "HTTP 401"},
		{name: "literal user:password@ in the URL, Basic credentials echoed by a 401",
			target: `{kind: http, url: "http://alice:` + leakSecret + `@` + host + `/echo"}`,
			code:   1, shown: "alice:[redacted]@"},
		{name: "literal secret-named query parameter echoed by a 500",
			target: `{kind: http, url: "` + srv.URL + `/fail?token=` + leakSecret + `&x=1"}`,
			code:   1, shown: "token=[redacted]"},
		{name: "env secret in a wrongly typed field",
			// Block style: in a flow mapping the braces of ${KEY} end it.
			target:    "\n  kind: http\n  url: " + srv.URL + "/ok\n  max_response_bytes: ${KEY}",
			execution: "\n  concurrency: ${KEY}",
			code:      2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t)
			b.env = append(b.env, "KEY="+leakSecret)
			b.write("d.jsonl", data3)
			scorers := tc.scorers
			if scorers == "" {
				scorers = "[exact_match]"
			}
			execution := tc.execution
			if execution == "" {
				execution = "{concurrency: 1}"
			}
			suite := b.write("suite.yaml", "dataset: {name: d, file: d.jsonl}\ntarget: "+tc.target+
				"\nscorers: "+scorers+"\nexecution: "+execution+"\n")
			out := func(name string) string { return filepath.Join(b.dir, "out", name) }
			if err := os.Mkdir(filepath.Join(b.dir, "out"), 0o755); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := b.run("run", suite, "-o", out("r.json"), "-o", out("r.md"),
				"-o", out("r.xml"), "-o", out("r.txt"))
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, stderr)
			}
			texts := map[string]string{"run stdout": stdout, "run stderr": stderr}
			if code != 2 {
				id := strings.Fields(stderr)[1]
				for _, args := range [][]string{{"runs", "show", id, "--json"}, {"runs", "list"},
					{"report", id, "--format", "json"}, {"report", id}} {
					_, o, e := b.run(args...)
					texts[strings.Join(args, " ")] = o + e
				}
				for path, page := range viewerPages(t, b.db, id) {
					texts["viewer "+path] = page
				}
				report, err := os.ReadFile(out("r.json"))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(report), tc.shown) {
					t.Errorf("the report lacks %q: the path under test did not run\n%s", tc.shown, report)
				}
			} else if !strings.Contains(stderr, `got "${KEY}"`) {
				t.Errorf("the validation error does not name the reference:\n%s", stderr)
			}
			// Every file evalrun wrote: reports, the database and its
			// journal; the suite file holds the literal secrets itself.
			filepath.WalkDir(b.dir, func(path string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() || path == suite {
					return err
				}
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				texts[filepath.Base(path)] = string(data)
				return nil
			})
			for name, text := range texts {
				for _, s := range []string{leakSecret[:7], leakBasic} {
					if strings.Contains(text, s) {
						t.Errorf("%s holds the secret:\n%s", name, excerpt(text, s))
					}
				}
			}
		})
	}
}

// viewerPages returns every page and API answer of the viewer about run id
// over the database db, by path.
func viewerPages(t *testing.T, db, id string) map[string]string {
	t.Helper()
	store, err := openStore(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv, err := web.New(store, web.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	pages := map[string]string{}
	for _, p := range []string{"/", "/runs/" + id, "/runs/" + id + "/items", "/runs/" + id + "/items/0",
		"/runs/" + id + "/items/1", "/api/runs", "/api/runs/" + id, "/api/runs/" + id + "/items",
		"/api/runs/" + id + "/items/0", "/api/runs/" + id + "/items/1"} {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+p, nil))
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != http.StatusOK {
			t.Errorf("viewer %s: status %d\n%s", p, rec.Code, body)
		}
		pages[p] = string(body)
	}
	return pages
}

// excerpt returns the text around the first s in text.
func excerpt(text, s string) string {
	i := strings.Index(text, s)
	return strings.ToValidUTF8(text[max(i-200, 0):min(i+200, len(text))], "?")
}

// A worker rebuilds a run's target with its own environment's secrets,
// and scrubs those from the errors it stores: here a value in the URL's
// path, which only the suite's record of its environment knows.
func TestWorkerScrubsItsOwnSecrets(t *testing.T) {
	const workerSecret = "worker-only-7c6b5a49"
	b := setup(t)
	b.env = append(b.env, "KEY="+leakSecret)
	b.write("d.jsonl", data3)
	suite := b.write("suite.yaml", `dataset: {name: d, file: d.jsonl}
target: {kind: http, url: "`+refusedURL(t)+`/x/${KEY}"}
scorers: [exact_match]
`)
	_, _, stderr := b.run("run", suite, "-q", "--limit", "1")
	store, err := openStore(context.Background(), b.db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	run, err := store.GetRun(context.Background(), strings.Fields(stderr)[1])
	if err != nil {
		t.Fatal(err)
	}
	worker := &suiteBuilder{st: &State{Env: []string{"KEY=" + workerSecret}}, store: store}
	target, _, _, err := worker.Build(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	defer target.(interface{ Close() error }).Close()
	items, err := worker.Items(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	first, err := items.Item(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = target.Execute(context.Background(), first)
	if err == nil || !strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), workerSecret) {
		t.Errorf("the worker's target error: %v", err)
	}
}
