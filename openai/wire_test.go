package openai

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
)

// Error bodies are read as the official SDK read them (the client speaks
// the wire protocol itself since evalrun dropped the SDK): the "error"
// object's fields when there is one, numbers as their JSON text; the
// status line alone for a body without one; the body itself when "error"
// is not an object.
func TestChatTargetErrorBodies(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		status     int
		wantMsg    string
		wantAPI    *APIError // nil: not an *APIError
	}{
		{"object", `{"error":{"message":"bad model","type":"invalid_request_error","code":"model_not_found","param":"model"}}`, 404,
			"HTTP 404: OpenAI API error: 404 Not Found: bad model",
			&APIError{StatusCode: 404, Message: "bad model", Type: "invalid_request_error", Code: "model_not_found", Param: "model"}},
		{"numeric code (vLLM)", `{"error":{"message":"too long","type":"BadRequestError","code":400,"param":null}}`, 400,
			"HTTP 400: OpenAI API error: 400 Bad Request: too long",
			&APIError{StatusCode: 400, Message: "too long", Type: "BadRequestError", Code: "400"}},
		{"no error key", `{"detail":"Not Found"}`, 404, "HTTP 404: OpenAI API error: 404 Not Found", &APIError{StatusCode: 404}},
		{"error is a string (Ollama)", `{"error":"model 'x' not found"}`, 404, `HTTP 404: {"error":"model 'x' not found"}`, nil},
		{"status without text", ``, 499, "HTTP 499: OpenAI API error: 499", &APIError{StatusCode: 499}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, reply(tc.status, tc.body))
			ct := newChatTarget(t, ChatTargetConfig{ClientConfig: ClientConfig{BaseURL: api.URL}})
			_, err := ct.Execute(context.Background(), testItem)
			e := wantKind(t, err, evalrun.ErrorPermanent)
			if e.StatusCode != tc.status || err.Error() != tc.wantMsg {
				t.Errorf("error %q (status %d), want %q (%d)", err, e.StatusCode, tc.wantMsg, tc.status)
			}
			var apiErr *APIError
			switch {
			case tc.wantAPI == nil && errors.As(err, &apiErr):
				t.Errorf("error wraps %+v, want no *APIError", apiErr)
			case tc.wantAPI != nil && (!errors.As(err, &apiErr) || *apiErr != *tc.wantAPI):
				t.Errorf("error wraps %+v, want %+v", apiErr, tc.wantAPI)
			}
		})
	}
}

// A body cut short of its Content-Length (the connection dropped) is a
// transient read error, never a truncated reply decoded as malformed.
func TestChatTargetBodyShorterThanContentLength(t *testing.T) {
	api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(completion("4")[:20]))
	})
	ct := newChatTarget(t, ChatTargetConfig{ClientConfig: ClientConfig{BaseURL: api.URL}})
	_, err := ct.Execute(context.Background(), testItem)
	wantKind(t, err, evalrun.ErrorTransient)
	if !strings.Contains(err.Error(), "unexpected EOF") {
		t.Errorf("error %q, want the read's unexpected EOF", err)
	}
}

// The request carries what the protocol needs and nothing of an SDK's:
// JSON both ways, the Bearer key, evalrun's user agent.
func TestChatTargetRequestHeaders(t *testing.T) {
	api := newFakeAPI(t, reply(200, completion("4")))
	ct := newChatTarget(t, ChatTargetConfig{ClientConfig: ClientConfig{BaseURL: api.URL, LookupEnv: env("OPENAI_API_KEY", "sk-test")}})
	if _, err := ct.Execute(context.Background(), testItem); err != nil {
		t.Fatal(err)
	}
	h := api.Header(0)
	for k, want := range map[string]string{"Content-Type": "application/json", "Accept": "application/json", "Authorization": "Bearer sk-test", "User-Agent": userAgent} {
		if got := h.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if api.Path(0) != "/chat/completions" {
		t.Errorf("path = %q", api.Path(0))
	}
}

// Params are set in key order, so that a path inside another param's value
// lands in it whatever the map's iteration order.
func TestChatTargetParamsInKeyOrder(t *testing.T) {
	api := newFakeAPI(t, reply(200, completion("4")))
	ct := newChatTarget(t, ChatTargetConfig{Params: map[string]any{"extra_body.b": 2.0, "extra_body": map[string]any{"a": 1.0}}, ClientConfig: ClientConfig{BaseURL: api.URL}})
	for range 5 {
		if _, err := ct.Execute(context.Background(), testItem); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		eb, _ := api.Body(i)["extra_body"].(map[string]any)
		if eb["a"] != 1.0 || eb["b"] != 2.0 {
			t.Fatalf("request %d: extra_body = %v, want a 1 and b 2", i, api.Body(i)["extra_body"])
		}
	}
}

// A redirect is followed within base_url's origin only: the prompt never
// goes to a server the suite did not name (the SDK's guarantee, kept).
func TestChatTargetRedirects(t *testing.T) {
	other := newFakeAPI(t, reply(200, completion("elsewhere")))
	api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/chat/completions", http.StatusTemporaryRedirect)
	})
	ct := newChatTarget(t, ChatTargetConfig{ClientConfig: ClientConfig{BaseURL: api.URL}})
	_, err := ct.Execute(context.Background(), testItem)
	wantKind(t, err, evalrun.ErrorPermanent)
	if other.Requests() != 0 || !strings.Contains(err.Error(), "another origin") {
		t.Errorf("error %v, %d requests to the other origin; want a refused redirect, none", err, other.Requests())
	}

	same := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/v2/chat/completions", http.StatusPermanentRedirect)
	}, reply(200, completion("4")))
	ct = newChatTarget(t, ChatTargetConfig{ClientConfig: ClientConfig{BaseURL: same.URL + "/v1"}})
	out, err := ct.Execute(context.Background(), testItem)
	if err != nil || string(out.Value) != `"4"` || same.Path(1) != "/v2/chat/completions" || same.Body(1)["model"] != "test-model" {
		t.Errorf("same-origin redirect: %s, %v; want it followed with the body", out.Value, err)
	}
}
