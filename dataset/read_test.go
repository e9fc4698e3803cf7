package dataset_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/dataset"
	"github.com/evalrun/evalrun/inmem"
)

func read(t *testing.T, name, content string) ([]*evalrun.Item, error) {
	t.Helper()
	format, err := dataset.FormatOf(name)
	if err != nil {
		t.Fatal(err)
	}
	return dataset.Read(strings.NewReader(content), name, format)
}

func TestRejections(t *testing.T) {
	tests := []struct {
		name, file, content, want string
	}{
		{"malformed line", "data.jsonl", "{\"id\":\"a\",\"input\":\"x\"}\n{\"id\":\"b\",\"input\":}\n",
			`data.jsonl:2: malformed JSON: invalid character '}' looking for beginning of value`},
		{"two values on a line", "data.jsonl", `{"input":1} {"input":2}`,
			`data.jsonl:1: malformed JSON: invalid character '{' after top-level value`},
		{"duplicate id", "data.jsonl", "{\"id\":\"a\",\"input\":1}\n{\"id\":\"b\",\"input\":2}\n\n{\"id\":\"a\",\"input\":3}\n",
			`data.jsonl:4: duplicate id "a" (first on line 1)`},
		{"duplicate numeric id", "data.jsonl", "{\"id\":7,\"input\":1}\n{\"id\":\"7\",\"input\":2}\n",
			`data.jsonl:2: duplicate id "7" (first on line 1)`},
		{"missing input", "data.jsonl", "{\"id\":\"a\",\"input\":1}\n{\"id\":\"b\",\"expected_output\":2}\n",
			`data.jsonl:2: missing "input"`},
		{"null input", "data.jsonl", `{"input":null}`, `data.jsonl:1: "input" is null`},
		{"misspelt expected_output", "data.jsonl", "{\"input\":1}\n{\"input\":2}\n{\"input\":3,\"expected\":4}\n",
			`data.jsonl:3: unknown key "expected" (did you mean "expected_output"? extra fields belong in "metadata")`},
		{"misspelt input", "data.jsonl", `{"inptu":"x"}`,
			`data.jsonl:1: unknown key "inptu" (did you mean "input"? extra fields belong in "metadata")`},
		{"camel case", "data.jsonl", `{"input":"x","expectedOutput":"y"}`,
			`data.jsonl:1: unknown key "expectedOutput" (did you mean "expected_output"? extra fields belong in "metadata")`},
		{"extra field", "data.jsonl", `{"input":"x","difficulty":"hard"}`,
			`data.jsonl:1: unknown key "difficulty" (extra fields belong in "metadata")`},
		{"tags at top level", "data.jsonl", `{"input":"x","tags":["a"]}`,
			`data.jsonl:1: unknown key "tags" (extra fields belong in "metadata")`},
		{"duplicate key", "data.jsonl", `{"input":"x","input":"y"}`, `data.jsonl:1: duplicate key "input"`},
		{"not an object", "data.jsonl", `["x"]`, `data.jsonl:1: want a JSON object, got an array`},
		{"bad id", "data.jsonl", `{"id":true,"input":"x"}`, `data.jsonl:1: "id" must be a string or an integer, got a boolean`},
		{"empty id", "data.jsonl", `{"id":"","input":"x"}`, `data.jsonl:1: "id" is empty`},
		{"bad metadata", "data.jsonl", `{"input":"x","metadata":"m"}`, `data.jsonl:1: "metadata" must be a JSON object, got a string`},
		{"empty file", "data.jsonl", "\n  \n", `data.jsonl: no items`},

		{"array element key", "data.json", "[\n  {\"input\": 1},\n  {\"input\": 2},\n  {\"input\": 3,\n   \"expected\": 4}\n]\n",
			`data.json:4: unknown key "expected" (did you mean "expected_output"? extra fields belong in "metadata")`},
		{"array syntax", "data.json", "[\n  {\"input\": 1},\n  {\"input\": 2,,}\n]", `data.json:3: malformed JSON: invalid character ',' looking for beginning of object key string`},
		{"array truncated", "data.json", "[\n  {\"input\": 1},\n", `data.json:3: malformed JSON: unexpected end of file`},
		{"array duplicate id", "data.json", `[{"id":"a","input":1},` + "\n" + `{"id":"a","input":2}]`, `data.json:2: duplicate id "a" (first on line 1)`},
		{"object not array", "data.json", "\n{\"input\": 1}", `data.json:2: want a JSON array of items (for one object per line, name the file .jsonl)`},
		{"after array", "data.json", `[{"input":1}] x`, `data.json:1: malformed JSON: unexpected content after the array`},
		{"empty array", "data.json", `[]`, `data.json: no items`},

		{"missing input column", "data.csv", "id,question\na,x\n", `data.csv:1: missing column "input"`},
		{"empty input cell", "data.csv", "id,input\na,x\nb,  \n", `data.csv:3: empty "input"`},
		{"ragged record", "data.csv", "id,input\na,x\nb,y,z\n", `data.csv:3: malformed CSV: wrong number of fields`},
		{"csv duplicate id", "data.csv", "id,input\na,x\nb,y\na,z\n", `data.csv:4: duplicate id "a" (first on line 2)`},
		{"csv misspelt column", "data.csv", "input,expected\nx,y\n",
			`data.csv:1: unknown column "expected" (did you mean "expected_output"? other columns go to metadata: rename it if it is one)`},
		{"csv duplicate column", "data.csv", "input,source,source\nx,a,b\n", `data.csv:1: duplicate column "source"`},
		{"csv header only", "data.csv", "id,input\n", `data.csv: no items`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, err := read(t, tt.file, tt.content)
			if err == nil {
				t.Fatalf("accepted %d items, want error %q", len(items), tt.want)
			}
			if !errors.Is(err, evalrun.ErrInvalid) {
				t.Fatalf("err = %v, does not wrap ErrInvalid", err)
			}
			if err.Error() != tt.want {
				t.Fatalf("err =\n  %s\nwant\n  %s", err, tt.want)
			}
			if items != nil {
				t.Fatalf("rejected file gave %d items", len(items))
			}
		})
	}
}

// TestRejectedFileWritesNothing imports every kind of bad file through
// Import into a store holding a good version: nothing changes.
func TestRejectedFileWritesNothing(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	s := inmem.New()
	good := write("good.jsonl", "{\"id\":\"a\",\"input\":1}\n{\"id\":\"b\",\"input\":2}\n")
	if _, created, err := dataset.Import(t.Context(), s, "qa", good); err != nil || !created {
		t.Fatalf("good import: created=%v, %v", created, err)
	}
	bad := map[string]string{
		"malformed.jsonl": "{\"id\":\"a\",\"input\":1}\n{\"id\":\"c\",\"input\":\n",
		"dup.jsonl":       "{\"id\":\"a\",\"input\":1}\n{\"id\":\"a\",\"input\":2}\n",
		"noinput.jsonl":   "{\"id\":\"a\",\"input\":1}\n{\"id\":\"c\"}\n",
		"typo.jsonl":      "{\"id\":\"a\",\"input\":1,\"expected\":2}\n",
		"bad.json":        `[{"id":"a","input":1},{"id":"z","inputs":2}]`,
		"bad.csv":         "id,input\na,1\nz,\n",
		"bad.txt":         "{}",
	}
	for name, content := range bad {
		for _, ds := range []string{"qa", "fresh"} {
			_, created, err := dataset.Import(t.Context(), s, ds, write(name, content))
			if !errors.Is(err, evalrun.ErrInvalid) || created {
				t.Fatalf("%s into %s: created=%v, err=%v; want ErrInvalid", name, ds, created, err)
			}
			if !strings.HasPrefix(err.Error(), filepath.Join(dir, name)+":") {
				t.Fatalf("%s: error %q does not start with the file name", name, err)
			}
		}
	}
	vs, err := s.ListDatasetVersions(t.Context(), "qa")
	if err != nil || len(vs) != 1 {
		t.Fatalf("versions after rejected imports: %d, %v; want 1", len(vs), err)
	}
	if n, _ := s.CountItemRows(t.Context(), "qa"); n != 2 {
		t.Fatalf("item rows after rejected imports = %d, want 2", n)
	}
	if _, err := s.GetDataset(t.Context(), "fresh"); !errors.Is(err, evalrun.ErrNotFound) {
		t.Fatalf("dataset of rejected imports: %v, want ErrNotFound", err)
	}
	// An identical re-import creates nothing either.
	if v, created, err := dataset.Import(t.Context(), s, "qa", good); err != nil || created || v.Version != 1 {
		t.Fatalf("identical re-import: %+v created=%v %v", v, created, err)
	}
}

func TestReadJSONL(t *testing.T) {
	content := "\xef\xbb\xbf" + `{"id": "q1", "input": {"question": "2+2?"}, "expected_output": "4", "metadata": {"tags": ["math"], "level": 1}}` + "\r\n" +
		"\n" +
		`{"id": 17, "input": "hello", "expected_output": null}` + "\n" +
		`{"input": "no id", "expected_output": [1, 2]}`
	items, err := read(t, "data.jsonl", content)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 3 {
		t.Fatalf("got %d items, want 3", len(items))
	}
	if it := items[0]; it.ID != "q1" || string(it.Input) != `{"question": "2+2?"}` || string(it.Expected) != `"4"` ||
		len(it.Tags()) != 1 || it.Tags()[0] != "math" || it.Metadata["level"] != 1.0 {
		t.Fatalf("item 1 = %+v", it)
	}
	if it := items[1]; it.ID != "17" || string(it.Input) != `"hello"` || it.Expected != nil || it.Metadata != nil {
		t.Fatalf("item 2 = %+v (expected nil: %v)", it, it.Expected == nil)
	}
	want := dataset.DeriveID(&evalrun.Item{Input: json.RawMessage(`"no id"`), Expected: json.RawMessage(`[1,2]`)})
	if it := items[2]; it.ID != want || len(it.ID) != 12 {
		t.Fatalf("item 3 id = %q, want the derived %q", it.ID, want)
	}
}

func TestDerivedIDs(t *testing.T) {
	// Same content (up to JSON formatting) gets the same id, repeats get
	// -2, -3 in file order, and a derived id steps around a given one.
	base := dataset.DeriveID(&evalrun.Item{Input: json.RawMessage(`{"a":1,"b":2}`)})
	content := `{"input": {"b": 2, "a": 1.0}}` + "\n" +
		`{"input": "other"}` + "\n" +
		`{"input": {"a":1,"b":2}}` + "\n" +
		`{"id": "` + base + `-2", "input": "taken"}` + "\n" +
		`{"input": {"a":1,"b":2}}` + "\n"
	items, err := read(t, "data.jsonl", content)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{items[0].ID, items[2].ID, items[3].ID, items[4].ID}
	want := []string{base, base + "-3", base + "-2", base + "-4"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ids = %v, want %v", got, want)
		}
	}
	again, err := read(t, "data.jsonl", content)
	if err != nil {
		t.Fatal(err)
	}
	for i := range items {
		if again[i].ID != items[i].ID {
			t.Fatalf("second read: id %d = %q, first read %q", i, again[i].ID, items[i].ID)
		}
	}
	if other := dataset.DeriveID(&evalrun.Item{Input: json.RawMessage(`{"a":1,"b":2}`), Expected: json.RawMessage(`"x"`)}); other == base {
		t.Fatal("the expected output does not change the derived id")
	}
}

func TestReadJSONArrayMatchesJSONL(t *testing.T) {
	jsonl := `{"id":"a","input":{"x":[1,2]},"expected_output":"y","metadata":{"tags":"t"}}` + "\n" + `{"input":"b"}` + "\n"
	array := "[\n  {\"id\":\"a\",\"input\":{\"x\":[1,2]},\"expected_output\":\"y\",\"metadata\":{\"tags\":\"t\"}},\n  {\"input\":\"b\"}\n]\n"
	a, err := read(t, "data.jsonl", jsonl)
	if err != nil {
		t.Fatal(err)
	}
	b, err := read(t, "data.json", array)
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatalf("JSON array read as\n %s\nJSONL as\n %s", jb, ja)
	}
}

func TestReadCSV(t *testing.T) {
	content := "id,input,expected_output,tags,source\n" +
		`q1,What is 2+2?,4,math|easy,book` + "\n" +
		`q2,"{""question"": ""multi, line""}","[1, 2]", smoke ,` + "\n" +
		`,"a ""quoted""` + "\n" + `cell",,,` + "\n" +
		`q4,[not json,{,,` + "\n"
	items, err := read(t, "data.csv", content)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 4 {
		t.Fatalf("got %d items, want 4", len(items))
	}
	if it := items[0]; it.ID != "q1" || string(it.Input) != `"What is 2+2?"` || string(it.Expected) != `"4"` ||
		strings.Join(it.Tags(), ",") != "math,easy" || it.Metadata["source"] != "book" {
		t.Fatalf("item 1 = %+v", it)
	}
	if it := items[1]; string(it.Input) != `{"question": "multi, line"}` || string(it.Expected) != `[1, 2]` ||
		strings.Join(it.Tags(), ",") != "smoke" || it.Metadata["source"] != nil {
		t.Fatalf("item 2 = %+v (input %s, expected %s)", it, it.Input, it.Expected)
	}
	if it := items[2]; it.ID != dataset.DeriveID(it) || string(it.Input) != `"a \"quoted\"\ncell"` || it.Expected != nil || it.Metadata != nil {
		t.Fatalf("item 3 = %+v (input %s)", it, it.Input)
	}
	if it := items[3]; string(it.Input) != `"[not json"` || string(it.Expected) != `"{"` {
		t.Fatalf("item 4: input %s, expected %s; want JSON strings", it.Input, it.Expected)
	}
	// Line numbers count the lines of multi-line records.
	_, err = read(t, "data.csv", content+"q5,,,,\n")
	if err == nil || err.Error() != `data.csv:7: empty "input"` {
		t.Fatalf("err = %v, want data.csv:7: empty \"input\"", err)
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"a.jsonl":  `{"id":"x","input":1}`,
		"a.NDJSON": `{"id":"x","input":1}`,
		"a.json":   `[{"id":"x","input":1}]`,
		"a.csv":    "id,input\nx,1\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		items, err := dataset.ReadFile(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(items) != 1 || items[0].ID != "x" {
			t.Fatalf("%s: %+v", name, items)
		}
	}
	_, err := dataset.ReadFile(filepath.Join(dir, "a.txt"))
	if !errors.Is(err, evalrun.ErrInvalid) || !strings.HasSuffix(err.Error(), `a.txt: unknown dataset format ".txt" (want .jsonl, .json or .csv)`) {
		t.Fatalf("unknown extension: %v", err)
	}
	_, err = dataset.ReadFile(filepath.Join(dir, "missing.jsonl"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v, want ErrNotExist", err)
	}
}

// Repeated items without ids get their suffixes in linear work: each
// repeat continues from the last suffix its content got instead of
// probing -2, -3, … again (40,000 identical lines took 266 s).
func TestDerivedIDsOfRepeatsLinear(t *testing.T) {
	allocs := func(n int) float64 {
		content := []byte(strings.Repeat(`{"input": "x"}`+"\n", n))
		return testing.AllocsPerRun(1, func() {
			items, err := dataset.Read(strings.NewReader(string(content)), "data.jsonl", dataset.JSONL)
			if err != nil || len(items) != n || items[n-1].ID != items[0].ID+"-"+strconv.Itoa(n) {
				t.Fatalf("read %d repeats: %v", n, err)
			}
		})
	}
	small, large := allocs(2000), allocs(4000)
	if large > 2.5*small {
		t.Errorf("twice the repeats take %.1f× the allocations (%.0f, then %.0f): the suffixes are not found in linear work", large/small, small, large)
	}
}

// The top-level scan of an item finds its members wherever braces,
// brackets, quotes and escapes inside strings would mislead a naive one.
func TestReadTrickyMembers(t *testing.T) {
	content := `{ "inp\u0075t" : {"a":"}\"]","b":[1,{"c":"{"}]} , "expected_output":"x\\", "id" : 7 ,"metadata":{"k":"\"}"}}` + "\n" +
		`{"input":-1.5e3}` + "\n" +
		`{"expected_output":[],"input":true }` + "\n"
	items, err := read(t, "data.jsonl", content)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ id, input, expected string }{
		{"7", `{"a":"}\"]","b":[1,{"c":"{"}]}`, `"x\\"`},
		{"", `-1.5e3`, ""},
		{"", `true`, `[]`},
	}
	for i, w := range want {
		it := items[i]
		if (w.id != "" && it.ID != w.id) || string(it.Input) != w.input || string(it.Expected) != w.expected {
			t.Fatalf("item %d = id %q input %s expected %s; want %+v", i, it.ID, it.Input, it.Expected, w)
		}
	}
	if items[0].Metadata["k"] != `"}` {
		t.Fatalf("metadata = %v", items[0].Metadata)
	}
}
