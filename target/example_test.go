package target_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/target"
)

func ExampleNewHTTP() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID    string `json:"id"`
			Input string `json:"input"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"answer": {"text": "echo: %s"}}`, req.Input)
	}))
	defer srv.Close()

	t, err := target.NewHTTP(target.HTTPConfig{URL: srv.URL, Output: "answer.text"})
	if err != nil {
		panic(err)
	}
	defer t.Close()
	out, err := t.Execute(context.Background(), &evalrun.Item{ID: "q1", Input: evalrun.String("hello")})
	fmt.Println(string(out.Value), err)
	// Output: "echo: hello" <nil>
}

func ExampleRateLimited() {
	r, err := target.ParseRate("600/m")
	if err != nil {
		panic(err)
	}
	lim, err := target.NewLimiter(target.Limits{Requests: r, TokensPerMinute: 90_000})
	if err != nil {
		panic(err)
	}
	t := target.RateLimited(target.Echo{}, lim)
	out, _ := t.Execute(context.Background(), &evalrun.Item{ID: "a", Input: evalrun.String("hi")})
	fmt.Println(string(out.Value), r.Limit())
	// Output: "hi" 10
}
