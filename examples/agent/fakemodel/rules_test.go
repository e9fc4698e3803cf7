package fakemodel_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/evalrun/evalrun/examples/agent/fakemodel"
)

func msg(role, content string) fakemodel.Message {
	return fakemodel.Message{Role: role, Content: &content}
}

func declare(names ...string) []fakemodel.ToolDef {
	defs := make([]fakemodel.ToolDef, len(names))
	for i, n := range names {
		defs[i].Type = "function"
		defs[i].Function.Name = n
	}
	return defs
}

// converse runs the agent loop against Reply: each turn's calls are
// answered by tool, until a text answer. It returns the turns' calls (as
// "name args") and the answer.
func converse(t *testing.T, req *fakemodel.Request, tool func(name, args string) string) (turns [][]string, answer string) {
	t.Helper()
	for range 10 {
		m := fakemodel.Reply(req)
		if len(m.ToolCalls) == 0 {
			if m.Content == nil {
				t.Fatal("a reply with neither calls nor content")
			}
			return turns, *m.Content
		}
		var calls []string
		req.Messages = append(req.Messages, m)
		for _, c := range m.ToolCalls {
			calls = append(calls, c.Function.Name+" "+c.Function.Arguments)
			req.Messages = append(req.Messages, fakemodel.Message{Role: "tool", ToolCallID: c.ID, Content: ptr(tool(c.Function.Name, c.Function.Arguments))})
		}
		turns = append(turns, calls)
	}
	t.Fatal("no answer after 10 turns")
	return nil, ""
}

func ptr(s string) *string { return &s }

// answerTool answers get_weather from a table, convert_currency at a rate of
// 2 (XYZ is unknown), book_flight with a booking.
func answerTool(name, args string) string {
	var a struct {
		City   string  `json:"city"`
		Amount float64 `json:"amount"`
		To     string  `json:"to"`
	}
	_ = json.Unmarshal([]byte(args), &a)
	switch name {
	case "get_weather":
		temps := map[string]string{"Paris": "18", "Rome": "24", "Oslo": "3", "Madrid": "27", "London": "11", "Tokyo": "21", "New York": "9"}
		return `{"temp_c": ` + temps[a.City] + `, "conditions": "sunny"}`
	case "convert_currency":
		if a.To == "XYZ" {
			return `error: exit status 1: unknown currency "XYZ"`
		}
		b, _ := json.Marshal(map[string]any{"result": a.Amount * 2})
		return string(b)
	case "book_flight":
		return `{"booking": "RX42"}`
	}
	return "?"
}

// The rules, item by item of the example: which calls in which turn, and
// the answer they lead to.
func TestRules(t *testing.T) {
	all := declare("get_weather", "convert_currency", "book_flight")
	for _, tc := range []struct {
		name   string
		msgs   []fakemodel.Message
		tools  []fakemodel.ToolDef
		turns  [][]string
		answer string
	}{
		{"single call", []fakemodel.Message{msg("system", "Be brief."), msg("user", "What's the weather in Paris?")}, all,
			[][]string{{`get_weather {"city":"Paris"}`}}, "Paris: 18 °C, sunny."},
		{"parallel calls in the order named", []fakemodel.Message{msg("user", "Compare the weather in Tokyo and London.")}, all,
			[][]string{{`get_weather {"city":"Tokyo"}`, `get_weather {"city":"London"}`}}, "Tokyo: 21 °C, sunny. London: 11 °C, sunny."},
		{"two words city", []fakemodel.Message{msg("user", "Is it raining in new york?")}, all,
			[][]string{{`get_weather {"city":"New York"}`}}, "New York: 9 °C, sunny."},
		{"conversion", []fakemodel.Message{msg("user", "Convert 12.5 EUR to USD.")}, all,
			[][]string{{`convert_currency {"amount":12.5,"from":"EUR","to":"USD"}`}}, "12.5 EUR is 25.00 USD."},
		{"a tool error is passed on", []fakemodel.Message{msg("user", "Convert 20 EUR to XYZ, please.")}, all,
			[][]string{{`convert_currency {"amount":20,"from":"EUR","to":"XYZ"}`}},
			`Sorry, I could not convert 20 EUR to XYZ: exit status 1: unknown currency "XYZ".`},
		{"two tools at once", []fakemodel.Message{msg("user", "I'm visiting Tokyo. What's the weather there, and what is 200 USD in JPY?")}, all,
			[][]string{{`get_weather {"city":"Tokyo"}`, `convert_currency {"amount":200,"from":"USD","to":"JPY"}`}},
			"Tokyo: 21 °C, sunny. 200 USD is 400.00 JPY."},
		{"a conversion waiting for the weather", []fakemodel.Message{msg("user", "Which is warmer today, Rome or Oslo? Then convert 50 EUR into the currency of the colder one.")}, all,
			[][]string{{`get_weather {"city":"Rome"}`, `get_weather {"city":"Oslo"}`}, {`convert_currency {"amount":50,"from":"EUR","to":"NOK"}`}},
			"Rome (24 °C) is warmer than Oslo (3 °C). 50 EUR is 100.00 NOK."},
		{"the warmer one", []fakemodel.Message{msg("user", "Oslo or Rome: which is warmer? Convert 10 GBP to the currency of the warmer one.")}, all,
			[][]string{{`get_weather {"city":"Oslo"}`, `get_weather {"city":"Rome"}`}, {`convert_currency {"amount":10,"from":"GBP","to":"EUR"}`}},
			"Rome (24 °C) is warmer than Oslo (3 °C). 10 GBP is 20.00 EUR."},
		{"a follow-up keeps the topic", []fakemodel.Message{msg("user", "What's the weather in Berlin?"), msg("assistant", "Berlin: 12 °C, cloudy."), msg("user", "And in Madrid?")}, all,
			[][]string{{`get_weather {"city":"Madrid"}`}}, "Madrid: 27 °C, sunny."},
		{"no tool for a greeting", []fakemodel.Message{msg("user", "Hello! What can you do?")}, all,
			nil, "Hello! I can look up the current weather in a city and convert amounts between currencies."},
		{"mistake: an unknown city is left out", []fakemodel.Message{msg("user", "What's the weather in Paris and in Lyon?")}, all,
			[][]string{{`get_weather {"city":"Paris"}`}}, "Paris: 18 °C, sunny."},
		{"mistake: an unasked booking", []fakemodel.Message{msg("user", "I might fly to Rome next week. What's the weather there?")}, all,
			[][]string{{`get_weather {"city":"Rome"}`, `book_flight {"city":"Rome"}`}}, "Rome: 24 °C, sunny. I booked your flight to Rome (booking RX42)."},
		{"only declared tools are called", []fakemodel.Message{msg("user", "I might fly to Rome next week. What's the weather there?")}, declare("get_weather"),
			[][]string{{`get_weather {"city":"Rome"}`}}, "Rome: 24 °C, sunny."},
		{"no tools at all", []fakemodel.Message{msg("user", "What's the weather in Paris?")}, nil,
			nil, "I cannot look that up: I have no tool for it here."},
		{"no user message", []fakemodel.Message{msg("system", "Be brief.")}, all,
			nil, "How can I help? I can look up the weather in a city and convert currencies."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			turns, answer := converse(t, &fakemodel.Request{Model: "m", Messages: slices.Clone(tc.msgs), Tools: tc.tools}, answerTool)
			if !slices.EqualFunc(turns, tc.turns, slices.Equal) {
				t.Errorf("turns\n got %q\nwant %q", turns, tc.turns)
			}
			if answer != tc.answer {
				t.Errorf("answer\n got %q\nwant %q", answer, tc.answer)
			}
		})
	}
}

// Call ids are unique over the whole conversation, so tool messages of
// different turns never answer each other's calls.
func TestCallIDsUnique(t *testing.T) {
	req := &fakemodel.Request{Model: "m", Tools: declare("get_weather", "convert_currency"),
		Messages: []fakemodel.Message{msg("user", "Which is warmer, Rome or Oslo? Convert 5 EUR to the currency of the colder one.")}}
	seen := map[string]bool{}
	for range 3 {
		m := fakemodel.Reply(req)
		req.Messages = append(req.Messages, m)
		for _, c := range m.ToolCalls {
			if seen[c.ID] || !strings.HasPrefix(c.ID, "call_") {
				t.Fatalf("id %q repeated or malformed", c.ID)
			}
			seen[c.ID] = true
			req.Messages = append(req.Messages, fakemodel.Message{Role: "tool", ToolCallID: c.ID, Content: ptr(answerTool(c.Function.Name, c.Function.Arguments))})
		}
	}
	if len(seen) != 3 {
		t.Errorf("%d calls, want 3", len(seen))
	}
}
