package fakemodel

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The model's world: the cities it knows (Lyon is missing on purpose) and
// their currencies.
var cities = []struct{ name, currency string }{
	{"Paris", "EUR"}, {"London", "GBP"}, {"Tokyo", "JPY"}, {"Berlin", "EUR"},
	{"Madrid", "EUR"}, {"Rome", "EUR"}, {"Oslo", "NOK"}, {"New York", "USD"},
	{"Zurich", "CHF"},
}

// cityPatterns match the names of cities as whole words, in any case.
var cityPatterns = func() []*regexp.Regexp {
	ps := make([]*regexp.Regexp, len(cities))
	for i, c := range cities {
		ps[i] = regexp.MustCompile(`(?i)\b` + strings.ReplaceAll(c.name, " ", `\s+`) + `\b`)
	}
	return ps
}()

var (
	weatherWords = regexp.MustCompile(`(?i)\b(weather|temperature|forecast|warm\w*|cold\w*|hot|rain\w*|sunny|snow\w*)\b`)
	compareWords = regexp.MustCompile(`(?i)\b(warmer|colder|warmest|coldest)\b`)
	// "100 EUR to USD", "200 USD in JPY": currency codes are upper case.
	conversion = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*([A-Z]{3})\s+(?i:to|in|into)\s+([A-Z]{3})\b`)
	// "50 EUR into the currency of the colder one": needs the weather first.
	laterConversion = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*([A-Z]{3})\s+(?i:to|in|into)\s+(?i:the\s+currency\s+of\s+the\s+(colder|warmer))\b`)
	flying          = regexp.MustCompile(`(?i)\bfly(?:ing)?\s+to\b`)
	greeting        = regexp.MustCompile(`(?i)\b(hello|hi|hey|what can you do)\b`)
)

// call is a tool call the model decides to make.
type call struct {
	name string
	args map[string]any
}

// result is a call made earlier in the exchange and its tool message.
type result struct {
	call
	output string // the tool message's content
	err    string // the error, when the content is "error: …"
}

// plan is what the model understood of a question.
type plan struct {
	cities  []string // the weather to look up, in the order named
	compare bool     // "which is warmer"
	convert *call    // a conversion with every argument known
	// later is a conversion into the currency of the colder or warmer
	// city: its target is known once the weather is.
	later *struct {
		amount float64
		from   string
		pick   string // "colder" or "warmer"
	}
	flyTo string // the city the user says they fly to
}

// Reply returns the model's next message for a valid request: tool calls
// (all the calls one step of its plan needs, at once), or, when the plan
// is done, an answer in text built from the tools' outputs.
func Reply(req *Request) Message {
	last := -1
	var earlier []string // the user's earlier messages, oldest first
	for i, m := range req.Messages {
		if m.Role == "user" {
			if last >= 0 {
				earlier = append(earlier, req.Messages[last].Text())
			}
			last = i
		}
	}
	if last < 0 {
		return text("How can I help? I can look up the weather in a city and convert currencies.")
	}
	question := req.Messages[last].Text()
	p := understand(question, earlier)

	// The exchange since the question: the turns that called tools and
	// the results, paired with their calls by tool_call_id.
	steps := 0
	callOf := map[string]call{}
	var order []string
	outputs := map[string]string{}
	for _, m := range req.Messages[last+1:] {
		switch m.Role {
		case "assistant":
			if len(m.ToolCalls) > 0 {
				steps++
			}
			for _, c := range m.ToolCalls {
				var args map[string]any
				_ = json.Unmarshal([]byte(c.Function.Arguments), &args) // checked by validate
				callOf[c.ID] = call{c.Function.Name, args}
				order = append(order, c.ID)
			}
		case "tool":
			outputs[m.ToolCallID] = m.Text()
		}
	}
	results := make([]result, 0, len(order))
	for _, id := range order {
		r := result{call: callOf[id], output: outputs[id]}
		if msg, ok := strings.CutPrefix(r.output, "error:"); ok {
			r.err = strings.TrimSpace(msg)
		}
		results = append(results, r)
	}

	var next []call
	switch steps {
	case 0:
		next = p.firstCalls()
	case 1:
		next = p.laterCalls(results)
	}
	next = declared(req, next)
	if len(next) > 0 {
		// Call ids are unique within the conversation: the number of the
		// tool-calling turn in the whole request, then the call's.
		turn := 1
		for _, m := range req.Messages {
			if len(m.ToolCalls) > 0 {
				turn++
			}
		}
		msg := Message{Role: "assistant"}
		for i, c := range next {
			args, _ := json.Marshal(c.args) // sorted keys: deterministic
			var tc ToolCall
			tc.ID = fmt.Sprintf("call_%d_%d", turn, i+1)
			tc.Type = "function"
			tc.Function.Name = c.name
			tc.Function.Arguments = string(args)
			msg.ToolCalls = append(msg.ToolCalls, tc)
		}
		return msg
	}
	return text(answer(question, p, results))
}

// understand reads a question; earlier user messages give the topic of a
// follow-up ("And in Madrid?").
func understand(q string, earlier []string) plan {
	var p plan
	if m := laterConversion.FindStringSubmatch(q); m != nil {
		amount, _ := strconv.ParseFloat(m[1], 64)
		p.later = &struct {
			amount float64
			from   string
			pick   string
		}{amount, m[2], strings.ToLower(m[3])}
	} else if m := conversion.FindStringSubmatch(q); m != nil {
		amount, _ := strconv.ParseFloat(m[1], 64)
		p.convert = &call{"convert_currency", map[string]any{"amount": amount, "from": m[2], "to": m[3]}}
	}
	named := citiesIn(q, 0)
	weather := weatherWords.MatchString(q) || p.later != nil
	if !weather && p.convert == nil && len(named) > 0 {
		// A follow-up naming only a city continues the last topic.
		for i := len(earlier) - 1; i >= 0; i-- {
			if weatherWords.MatchString(earlier[i]) {
				weather = true
				break
			}
		}
	}
	if weather {
		p.cities = named
		p.compare = compareWords.MatchString(q) && len(named) > 1
	}
	if loc := flying.FindStringIndex(q); loc != nil {
		// The deliberate mistake: saying "I fly to X" is not asking to book.
		if after := citiesIn(q, loc[1]); len(after) > 0 {
			p.flyTo = after[0]
		}
	}
	return p
}

// citiesIn returns the known cities named in q from byte from on, in the
// order they appear.
func citiesIn(q string, from int) []string {
	type found struct {
		at   int
		name string
	}
	var fs []found
	for i, re := range cityPatterns {
		if loc := re.FindStringIndex(q[from:]); loc != nil {
			fs = append(fs, found{loc[0], cities[i].name})
		}
	}
	slices.SortFunc(fs, func(a, b found) int { return cmp.Compare(a.at, b.at) })
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	return names
}

// firstCalls are the calls of the first turn, all at once: the weather of
// each city, the conversion, the booking.
func (p plan) firstCalls() []call {
	var calls []call
	for _, c := range p.cities {
		calls = append(calls, call{"get_weather", map[string]any{"city": c}})
	}
	if p.convert != nil {
		calls = append(calls, *p.convert)
	}
	if p.flyTo != "" {
		calls = append(calls, call{"book_flight", map[string]any{"city": p.flyTo}})
	}
	return calls
}

// laterCalls are the calls of the second turn: a conversion that needed
// the weather.
func (p plan) laterCalls(results []result) []call {
	if p.later == nil {
		return nil
	}
	best, temp := "", 0.0
	for _, r := range results {
		t, ok := temperature(r)
		if !ok {
			continue
		}
		if best == "" || (p.later.pick == "colder" && t < temp) || (p.later.pick == "warmer" && t > temp) {
			best, temp = city(r), t
		}
	}
	if best == "" {
		return nil
	}
	return []call{{"convert_currency", map[string]any{"amount": p.later.amount, "from": p.later.from, "to": currencyOf(best)}}}
}

// declared keeps the calls of tools the request declares (none under
// tool_choice "none").
func declared(req *Request, calls []call) []call {
	if strings.Trim(string(req.ToolChoice), `" `) == "none" {
		return nil
	}
	return slices.DeleteFunc(calls, func(c call) bool {
		return !slices.ContainsFunc(req.Tools, func(t ToolDef) bool { return t.Function.Name == c.name })
	})
}

// answer writes the final answer from the results, in the order of the
// calls.
func answer(q string, p plan, results []result) string {
	if len(results) == 0 {
		switch {
		case p.convert != nil || p.later != nil || len(p.cities) > 0:
			return "I cannot look that up: I have no tool for it here."
		case weatherWords.MatchString(q):
			return "I do not know that city, sorry."
		case greeting.MatchString(q):
			return "Hello! I can look up the current weather in a city and convert amounts between currencies."
		}
		return "I can only help with the weather in a city and with currency conversion."
	}
	var parts []string
	var temps []result
	for _, r := range results {
		switch r.name {
		case "get_weather":
			if r.err != "" {
				parts = append(parts, fmt.Sprintf("I could not get the weather in %s: %s.", city(r), r.err))
				continue
			}
			if _, ok := temperature(r); ok && p.compare {
				temps = append(temps, r)
				continue
			}
			var w struct {
				TempC      *float64 `json:"temp_c"`
				Conditions string   `json:"conditions"`
			}
			if json.Unmarshal([]byte(r.output), &w) != nil || w.TempC == nil {
				parts = append(parts, fmt.Sprintf("%s: %s.", city(r), r.output))
				continue
			}
			parts = append(parts, fmt.Sprintf("%s: %s °C, %s.", city(r), num(*w.TempC), w.Conditions))
		case "convert_currency":
			amount, _ := r.args["amount"].(float64)
			from, _ := r.args["from"].(string)
			to, _ := r.args["to"].(string)
			if r.err != "" {
				parts = append(parts, fmt.Sprintf("Sorry, I could not convert %s %s to %s: %s.", num(amount), from, to, r.err))
				continue
			}
			var c struct {
				Result *float64 `json:"result"`
			}
			if json.Unmarshal([]byte(r.output), &c) != nil || c.Result == nil {
				parts = append(parts, fmt.Sprintf("%s %s in %s: %s.", num(amount), from, to, r.output))
				continue
			}
			parts = append(parts, fmt.Sprintf("%s %s is %.2f %s.", num(amount), from, *c.Result, to))
		case "book_flight":
			var b struct {
				Booking string `json:"booking"`
			}
			if r.err != "" || json.Unmarshal([]byte(r.output), &b) != nil || b.Booking == "" {
				parts = append(parts, fmt.Sprintf("I could not book a flight to %s.", city(r)))
				continue
			}
			parts = append(parts, fmt.Sprintf("I booked your flight to %s (booking %s).", city(r), b.Booking))
		default:
			parts = append(parts, fmt.Sprintf("%s: %s.", r.name, r.output))
		}
	}
	if len(temps) > 0 {
		slices.SortStableFunc(temps, func(a, b result) int {
			ta, _ := temperature(a)
			tb, _ := temperature(b)
			return cmp.Compare(tb, ta)
		})
		list := make([]string, len(temps))
		for i, r := range temps {
			t, _ := temperature(r)
			list[i] = fmt.Sprintf("%s (%s °C)", city(r), num(t))
		}
		sentence := list[0] + " is warmer than " + list[len(list)-1] + "."
		if len(list) > 2 {
			sentence = "From the warmest to the coldest: " + strings.Join(list, ", ") + "."
		}
		parts = append([]string{sentence}, parts...)
	}
	return strings.Join(parts, " ")
}

// temperature returns a weather result's temp_c.
func temperature(r result) (float64, bool) {
	if r.name != "get_weather" || r.err != "" {
		return 0, false
	}
	var w struct {
		TempC *float64 `json:"temp_c"`
	}
	if json.Unmarshal([]byte(r.output), &w) != nil || w.TempC == nil {
		return 0, false
	}
	return *w.TempC, true
}

// city returns the city argument of a call.
func city(r result) string {
	c, _ := r.args["city"].(string)
	return c
}

// currencyOf returns the currency of a known city.
func currencyOf(name string) string {
	for _, c := range cities {
		if c.name == name {
			return c.currency
		}
	}
	return "EUR"
}

// num formats a number without a needless fraction: 100, 12.5.
func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func text(s string) Message { return Message{Role: "assistant", Content: &s} }
