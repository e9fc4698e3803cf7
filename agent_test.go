package evalrun_test

import (
	"encoding/json"
	"testing"

	"github.com/evalrun/evalrun"
)

func TestMockForMatchesArgumentsAsJSON(t *testing.T) {
	it := &evalrun.Item{ToolMocks: []evalrun.ToolMock{
		{Name: "weather", Output: evalrun.String("any")},
		{Name: "weather", Args: json.RawMessage(`{"city":"Paris","unit":"c"}`), Output: evalrun.String("paris")},
		{Name: "search", Args: json.RawMessage(`{"q":"x"}`), Output: evalrun.String("x")},
	}}
	for _, c := range []struct {
		name, args string
		want       string // "" = no mock
		mocked     bool
	}{
		{"weather", `{ "unit": "c", "city": "Paris" }`, `"paris"`, true}, // order and spacing ignored; exact beats catch-all
		{"weather", `{"city":"Rome"}`, `"any"`, true},                    // catch-all
		{"search", `{"q":"x"}`, `"x"`, true},
		{"search", `{"q":"y"}`, "", true}, // mocked tool, no match: the item fails
		{"search", `{"q":1}`, "", true},
		{"other", `{}`, "", false},
	} {
		m, mocked := it.MockFor(c.name, json.RawMessage(c.args))
		got := ""
		if m != nil {
			got = string(m.Output)
		}
		if got != c.want || mocked != c.mocked {
			t.Errorf("MockFor(%s, %s) = %q, %v; want %q, %v", c.name, c.args, got, mocked, c.want, c.mocked)
		}
	}
}

func TestArgsContain(t *testing.T) {
	for _, c := range []struct {
		args, want string
		ok         bool
	}{
		{`{"city":"Paris","unit":"c"}`, `{"city":"Paris"}`, true},
		{`{"city":"Paris"}`, `{"city":"Paris","unit":"c"}`, false},
		{`{"n":1}`, `{"n":1.0}`, true},
		{`{"n":"1"}`, `{"n":1}`, true}, // as scorers compare: texts when either is a string
		{`{"o":{"b":2,"a":1}}`, `{"o":{"a":1,"b":2}}`, true},
		{`{"city":"paris"}`, `{"city":"Paris"}`, false},
		{`{}`, ``, true},
		{`not json`, `{"a":1}`, false},
	} {
		if got := evalrun.ArgsContain(json.RawMessage(c.args), json.RawMessage(c.want)); got != c.ok {
			t.Errorf("ArgsContain(%s, %s) = %v, want %v", c.args, c.want, got, c.ok)
		}
	}
}

func TestParseArguments(t *testing.T) {
	for in, want := range map[string]string{
		`"{\"city\":\"Paris\"}"`: `{"city":"Paris"}`,
		`{"city":"Paris"}`:       `{"city":"Paris"}`,
		`""`:                     `{}`,
		``:                       `{}`,
		`null`:                   `{}`,
	} {
		got, err := evalrun.ParseArguments(json.RawMessage(in))
		if err != nil || string(got) != want {
			t.Errorf("ParseArguments(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{`"{city"`, `{`} {
		if _, err := evalrun.ParseArguments(json.RawMessage(bad)); err == nil {
			t.Errorf("ParseArguments(%s) succeeded", bad)
		}
	}
}

func TestConversation(t *testing.T) {
	msgs, ok := evalrun.Conversation(json.RawMessage(`[{"role":"user","content":"hi"},{"role":"assistant","content":"yes?"},{"role":"user","content":"bye"}]`))
	if !ok || len(msgs) != 3 || msgs[2].Content != "bye" || msgs[1].Role != "assistant" {
		t.Fatalf("conversation = %+v, %v", msgs, ok)
	}
	for _, not := range []string{`"hi"`, `[]`, `[{"role":"user"}]`, `[{"role":"tool","content":"x"}]`,
		`[{"role":"user","content":{"a":1}}]`, `[1,2]`, `[{"role":"user","content":"x","extra":1}]`} {
		if _, ok := evalrun.Conversation(json.RawMessage(not)); ok {
			t.Errorf("%s taken for a conversation", not)
		}
	}
}

func TestTrajectoryMarshalsEmptyCallsAsList(t *testing.T) {
	b, err := json.Marshal(evalrun.Trajectory{Steps: 1})
	if err != nil || string(b) != `{"steps":1,"calls":[]}` {
		t.Fatalf("got %s, %v", b, err)
	}
	ms := 1.5
	b, _ = json.Marshal(evalrun.Trajectory{Steps: 2, Calls: []evalrun.ToolCall{{Name: "t", Args: json.RawMessage(`{}`), Mocked: true, LatencyMS: &ms}}})
	if string(b) != `{"steps":2,"calls":[{"name":"t","args":{},"mocked":true,"latency_ms":1.5}]}` {
		t.Fatalf("got %s", b)
	}
}
