package fakeserve

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// chat stands for an example's fake model: it answers chat completions.
var chat = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	w.Write([]byte(`{"choices":[]}`))
})

// Serve listens on a free port, writes its URL where run.sh waits for
// it, serves the model's chat completions there, and stops when its
// context ends.
func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	file := filepath.Join(t.TempDir(), "url")
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, chat, "127.0.0.1:0", file, func(u string) { urls <- u }) }()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/v1") {
		t.Errorf("url %q", url)
	}
	data, err := os.ReadFile(file)
	if err != nil || string(data) != url+"\n" {
		t.Errorf("url file %q, %v; want %q", data, err, url+"\n")
	}
	res, err := http.Post(url+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"Hello!"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("status %d", res.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve after cancel: %v", err)
	}
}

// A URL file in a directory that does not exist is an error, not a hang.
func TestServeBadURLFile(t *testing.T) {
	err := Serve(context.Background(), chat, "127.0.0.1:0", filepath.Join(t.TempDir(), "no", "url"), func(string) { t.Error("ready called") })
	if err == nil {
		t.Fatal("no error")
	}
}
