package dataset_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/evalrun/evalrun/dataset"
)

func TestReadAgentKeys(t *testing.T) {
	src := `{"id":"a","input":"weather in Paris?","tool_mocks":[{"name":"get_weather","args":{"city":"Paris"},"output":{"temp_c":18}},{"name":"search","output":"x"}],"expected_trajectory":[{"name":"get_weather","args":{"city":"Paris"}}]}
{"id":"b","input":"hi","expected_trajectory":[]}
{"id":"c","input":"hi","tool_mocks":null,"expected_trajectory":null}
`
	items, err := dataset.Read(strings.NewReader(src), "d.jsonl", dataset.JSONL)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := items[0], items[1], items[2]
	if len(a.ToolMocks) != 2 || a.ToolMocks[0].Name != "get_weather" || string(a.ToolMocks[0].Args) != `{"city":"Paris"}` ||
		string(a.ToolMocks[0].Output) != `{"temp_c":18}` || a.ToolMocks[1].Args != nil {
		t.Errorf("mocks = %+v", a.ToolMocks)
	}
	if len(a.ExpectedTrajectory) != 1 || a.ExpectedTrajectory[0].Name != "get_weather" {
		t.Errorf("expected = %+v", a.ExpectedTrajectory)
	}
	if b.ExpectedTrajectory == nil || len(b.ExpectedTrajectory) != 0 {
		t.Errorf("[] must stay an empty list apart from absent: %#v", b.ExpectedTrajectory)
	}
	if c.ToolMocks != nil || c.ExpectedTrajectory != nil {
		t.Errorf("null must be absent: %+v", c)
	}
}

func TestReadAgentKeysRejectsBadShapes(t *testing.T) {
	for src, want := range map[string]string{
		`{"input":"x","tool_mocks":{"name":"a"}}`:                         `"tool_mocks" must be a list of objects, got an object`,
		`{"input":"x","tool_mocks":[1]}`:                                  `tool_mocks[0] must be an object, got a number`,
		`{"input":"x","tool_mocks":[{"name":"a"}]}`:                       `tool_mocks[0]: missing "output"`,
		`{"input":"x","tool_mocks":[{"name":"","output":1}]}`:             `tool_mocks[0]: "name" must be a non-empty string`,
		`{"input":"x","tool_mocks":[{"name":"a","args":"x","output":1}]}`: `tool_mocks[0]: "args" must be a JSON object`,
		`{"input":"x","tool_mocks":[{"name":"a","arg":{},"output":1}]}`:   `unknown key "arg" (did you mean "args"?)`,
		`{"input":"x","expected_trajectory":[{"tool":"a"}]}`:              `expected_trajectory[0]: unknown key "tool"`,
		`{"input":"x","expected_trajectory":[{"name":"a","args":[1]}]}`:   `"args" must be a JSON object of arguments, got an array`,
		`{"input":"x","tool_mock":[]}`:                                    `did you mean "tool_mocks"?`,
	} {
		_, err := dataset.Read(strings.NewReader(src+"\n"), "d.jsonl", dataset.JSONL)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "d.jsonl:1: ") {
			t.Errorf("%s: err = %v, want d.jsonl:1: ...%s", src, err, want)
		}
	}
}

func TestHashCoversAgentKeysOnlyWhenPresent(t *testing.T) {
	read := func(line string) []byte {
		t.Helper()
		items, err := dataset.Read(strings.NewReader(line+"\n"), "d.jsonl", dataset.JSONL)
		if err != nil {
			t.Fatal(err)
		}
		h, err := dataset.Hash(items[0])
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	plain := read(`{"id":"a","input":"x"}`)
	// An item without agent keys hashes as before they existed: the
	// golden value was computed by the version before them.
	if got := read(`{"id":"a","input":"x","tool_mocks":null}`); !bytes.Equal(got, plain) {
		t.Error("a null tool_mocks changed the hash")
	}
	m1 := read(`{"id":"a","input":"x","tool_mocks":[{"name":"t","output":1}]}`)
	m2 := read(`{"id":"a","input":"x","tool_mocks":[{"name":"t","output":2}]}`)
	e0 := read(`{"id":"a","input":"x","expected_trajectory":[]}`)
	for _, h := range [][]byte{m1, m2, e0} {
		if bytes.Equal(h, plain) {
			t.Error("agent keys left the hash unchanged")
		}
	}
	if bytes.Equal(m1, m2) {
		t.Error("a changed mock is not a changed item")
	}
}

func TestReadAgentKeysFromCSV(t *testing.T) {
	src := "id,input,tool_mocks,expected_trajectory\n" +
		`a,hi,"[{""name"":""t"",""output"":1}]","[{""name"":""t""}]"` + "\n" +
		`b,hi,,` + "\n"
	items, err := dataset.Read(strings.NewReader(src), "d.csv", dataset.CSV)
	if err != nil {
		t.Fatal(err)
	}
	if len(items[0].ToolMocks) != 1 || len(items[0].ExpectedTrajectory) != 1 || items[1].ToolMocks != nil || items[1].ExpectedTrajectory != nil {
		t.Fatalf("items = %+v %+v", items[0], items[1])
	}
	if items[0].Metadata["tool_mocks"] != nil {
		t.Fatal("tool_mocks went to metadata")
	}
}
