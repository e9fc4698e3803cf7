package evalrun_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		`"q1"`:                  "q1",
		` "a\nb" `:              "a\nb",
		`42`:                    "42",
		`{"b": 1, "a": [1, 2]}`: `{"b":1,"a":[1,2]}`,
		``:                      "",
		`null`:                  "null",
		`not json`:              "not json",
	} {
		if got := evalrun.Text(json.RawMessage(in)); got != want {
			t.Errorf("Text(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestEqualValues(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{`"q1"`, `"q1"`, true},
		{`"42"`, `42`, true}, // a string compares as text
		{`{"a":1,"b":[1,2]}`, `{ "b": [1, 2], "a": 1.0 }`, true},
		{`{"a":1}`, `{"a":2}`, false},
		{`[1,2]`, `[2,1]`, false},
		{`"Q1"`, `"q1"`, false},
		{``, `""`, true},
		{`true`, `true`, true},
	} {
		if got := evalrun.EqualValues(json.RawMessage(c.a), json.RawMessage(c.b)); got != c.want {
			t.Errorf("EqualValues(%s, %s) = %v", c.a, c.b, got)
		}
	}
}

func TestCanonical(t *testing.T) {
	got, err := evalrun.Canonical(json.RawMessage(`{"z": 1e0, "a": {"y": [true, null, "s"]}}`))
	if err != nil || string(got) != `{"a":{"y":[true,null,"s"]},"z":1}` {
		t.Fatalf("Canonical = %s, %v", got, err)
	}
	if _, err := evalrun.Canonical(json.RawMessage(`{`)); err == nil {
		t.Fatal("invalid JSON accepted")
	}
}

func TestUsageAdd(t *testing.T) {
	var u evalrun.Usage
	if !u.IsZero() {
		t.Fatal("zero usage not zero")
	}
	u.Add(evalrun.Usage{InputTokens: evalrun.Int64(0)})
	if u.InputTokens == nil || *u.InputTokens != 0 || u.OutputTokens != nil {
		t.Fatalf("a reported zero must stay reported: %+v", u)
	}
	u.Add(evalrun.Usage{InputTokens: evalrun.Int64(5), CostUSD: evalrun.Float64(0.25)})
	u.Add(evalrun.Usage{CostUSD: evalrun.Float64(0.5)})
	if *u.InputTokens != 5 || *u.CostUSD != 0.75 || u.OutputTokens != nil {
		t.Fatalf("usage %+v", u)
	}
}

func TestErrorKinds(t *testing.T) {
	base := errors.New("boom")
	tr := fmt.Errorf("call: %w", &evalrun.Error{Kind: evalrun.ErrorTransient, StatusCode: 429, RetryAfter: 3 * time.Second, Err: base})
	if !evalrun.IsTransient(tr) || evalrun.RetryAfterOf(tr) != 3*time.Second || !errors.Is(tr, base) {
		t.Fatalf("transient error lost its class: %v", tr)
	}
	if got := tr.Error(); got != "call: HTTP 429: boom" {
		t.Fatalf("message %q", got)
	}
	if evalrun.KindOf(base) != evalrun.ErrorPermanent || evalrun.KindOf(nil) != "" || evalrun.IsTransient(base) {
		t.Fatal("an unclassified error must be permanent")
	}
	if evalrun.Transient(nil) != nil || evalrun.Permanent(nil) != nil {
		t.Fatal("wrapping nil must give nil")
	}
}

func TestTags(t *testing.T) {
	for _, c := range []struct {
		meta map[string]any
		want string
	}{
		{nil, "[]"},
		{map[string]any{"tags": "billing"}, "[billing]"},
		{map[string]any{"tags": []any{"a", 3, "b"}}, "[a b]"},
		{map[string]any{"tags": 7}, "[]"},
	} {
		it := &evalrun.Item{Metadata: c.meta}
		if got := fmt.Sprint(it.Tags()); got != c.want && !(c.want == "[]" && got == "[]") {
			t.Errorf("Tags(%v) = %s, want %s", c.meta, got, c.want)
		}
	}
}
