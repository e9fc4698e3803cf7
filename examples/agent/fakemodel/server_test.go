package fakemodel_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/evalrun/evalrun/examples/agent/fakemodel"
)

// tools is what the example's suite declares.
const tools = `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}},
 {"type":"function","function":{"name":"convert_currency","parameters":{"type":"object"}}},
 {"type":"function","function":{"name":"book_flight","parameters":{"type":"object"}}}]`

type reply struct {
	Choices []struct {
		Message      fakemodel.Message `json:"message"`
		FinishReason string            `json:"finish_reason"`
	} `json:"choices"`
	Usage map[string]int `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func post(t *testing.T, url, body string) (int, reply) {
	t.Helper()
	res, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	var r reply
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("status %d, body %s: %v", res.StatusCode, data, err)
	}
	return res.StatusCode, r
}

// A whole exchange over HTTP: the question gets parallel calls with
// JSON-string arguments and finish_reason tool_calls; the tool messages,
// answered by id, get the final answer with finish_reason stop.
func TestExchange(t *testing.T) {
	m := fakemodel.New()
	srv := httptest.NewServer(m)
	defer srv.Close()

	q := `{"role":"system","content":"Be brief."},{"role":"user","content":"Compare the weather in London and Tokyo."}`
	code, r := post(t, srv.URL, `{"model":"m","tools":`+tools+`,"messages":[`+q+`]}`)
	if code != 200 || len(r.Choices) != 1 || r.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("status %d, reply %+v", code, r)
	}
	calls := r.Choices[0].Message.ToolCalls
	if len(calls) != 2 || r.Choices[0].Message.Content != nil {
		t.Fatalf("want two calls and null content, got %+v", r.Choices[0].Message)
	}
	for i, want := range []string{`{"city":"London"}`, `{"city":"Tokyo"}`} {
		if calls[i].Function.Name != "get_weather" || calls[i].Function.Arguments != want || calls[i].Type != "function" || calls[i].ID == "" {
			t.Errorf("call %d: %+v, want get_weather %s", i, calls[i], want)
		}
	}
	if r.Usage["prompt_tokens"] == 0 || r.Usage["total_tokens"] != r.Usage["prompt_tokens"]+r.Usage["completion_tokens"] {
		t.Errorf("usage %v", r.Usage)
	}

	// The tool messages come back in the other order: they are matched by id.
	assistant, _ := json.Marshal(r.Choices[0].Message)
	turn2 := `{"model":"m","tools":` + tools + `,"messages":[` + q + `,` + string(assistant) +
		`,{"role":"tool","tool_call_id":"` + calls[1].ID + `","content":"{\"temp_c\": 21, \"conditions\": \"cloudy\"}"}` +
		`,{"role":"tool","tool_call_id":"` + calls[0].ID + `","content":"{\"temp_c\": 11, \"conditions\": \"drizzle\"}"}]}`
	code, r = post(t, srv.URL, turn2)
	if code != 200 || r.Choices[0].FinishReason != "stop" {
		t.Fatalf("status %d, reply %+v", code, r)
	}
	if got, want := r.Choices[0].Message.Text(), "London: 11 °C, drizzle. Tokyo: 21 °C, cloudy."; got != want {
		t.Errorf("answer %q, want %q", got, want)
	}
	if m.Served() != 2 || len(m.Requests()) != 2 || len(m.Requests()[1].Messages) != 5 {
		t.Errorf("served %d, logged %d", m.Served(), len(m.Requests()))
	}
}

// Requests that break the protocol are refused with a 400 naming the
// problem, as OpenAI refuses them, and are not logged.
func TestProtocolErrors(t *testing.T) {
	m := fakemodel.New()
	srv := httptest.NewServer(m)
	defer srv.Close()
	user := `{"role":"user","content":"Weather in Paris?"}`
	call := func(args string) string {
		return `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":` + args + `}}]}`
	}
	for _, tc := range []struct{ name, body, want string }{
		{"not JSON", `{"model":`, "not a chat completion request"},
		{"no model", `{"messages":[` + user + `]}`, "model: required"},
		{"no messages", `{"model":"m","messages":[]}`, "messages: must not be empty"},
		{"arguments as an object", `{"model":"m","messages":[` + user + `,` + call(`{"city":"Paris"}`) + `]}`, "not a chat completion request"},
		{"arguments not an object", `{"model":"m","messages":[` + user + `,` + call(`"[1]"`) + `]}`, "must be a JSON string holding an object"},
		{"call unanswered", `{"model":"m","messages":[` + user + `,` + call(`"{}"`) + `]}`, `the calls "c1" have no tool message`},
		{"user before the answer", `{"model":"m","messages":[` + user + `,` + call(`"{}"`) + `,` + user + `]}`, "must be followed by tool messages"},
		{"tool answering nothing", `{"model":"m","messages":[` + user + `,{"role":"tool","tool_call_id":"c9","content":"x"}]}`, `no pending call has id "c9"`},
		{"wrong id", `{"model":"m","messages":[` + user + `,` + call(`"{}"`) + `,{"role":"tool","tool_call_id":"c2","content":"x"}]}`, `no pending call has id "c2"`},
		{"unknown role", `{"model":"m","messages":[{"role":"robot","content":"x"}]}`, `"robot" is not one of`},
		{"bad tool", `{"model":"m","tools":[{"type":"function","function":{}}],"messages":[` + user + `]}`, "tools[0]"},
		{"too big", `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("a", fakemodel.MaxRequestBytes) + `"}]}`, "over 1048576 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, r := post(t, srv.URL, tc.body)
			if code/100 != 4 || r.Error == nil || !strings.Contains(r.Error.Message, tc.want) {
				t.Fatalf("status %d, error %+v, want a 4xx containing %q", code, r.Error, tc.want)
			}
		})
	}
	if m.Served() != 0 {
		t.Errorf("served %d refused requests", m.Served())
	}
	res, err := http.Get(srv.URL + "/v1/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d", res.StatusCode)
	}
	res, err = http.Post(srv.URL+"/v1/embeddings", "application/json", bytes.NewReader(nil))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("embeddings: status %d", res.StatusCode)
	}
}

// The log keeps the latest MaxLogged requests.
func TestRequestLogBounded(t *testing.T) {
	m := fakemodel.New()
	for i := range fakemodel.MaxLogged + 3 {
		body := `{"model":"m","messages":[{"role":"user","content":"hello ` + strings.Repeat("x", i%7) + `"}]}`
		w := httptest.NewRecorder()
		m.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body)))
		if w.Code != 200 {
			t.Fatalf("request %d: %d %s", i, w.Code, w.Body)
		}
	}
	if got := len(m.Requests()); got != fakemodel.MaxLogged || m.Served() != fakemodel.MaxLogged+3 {
		t.Errorf("logged %d, served %d", got, m.Served())
	}
	if last := m.Requests()[fakemodel.MaxLogged-1].Messages[0].Text(); last != "hello "+strings.Repeat("x", (fakemodel.MaxLogged+2)%7) {
		t.Errorf("the last logged request is %q", last)
	}
}
