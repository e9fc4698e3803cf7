package mock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func setup(t *testing.T, cfg Config) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

func post(t *testing.T, c *http.Client, url, body string) (*http.Response, []byte, error) {
	t.Helper()
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

const chatBody = `{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello world"}]}`

func TestChatEchoesLastUserMessage(t *testing.T) {
	_, ts := setup(t, Config{})
	for _, body := range []string{
		chatBody,
		`{"model":"m","messages":[{"role":"user","content":"first"},{"role":"user","content":[{"type":"text","text":"hello "},{"type":"text","text":"world"}]}]}`,
	} {
		resp, b, err := post(t, ts.Client(), ts.URL+"/v1/chat/completions", body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("status %v err %v body %s", resp, err, b)
		}
		var got chatResponse
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Choices) != 1 || got.Choices[0].Message.Content != "hello world" || got.Choices[0].Message.Role != "assistant" {
			t.Errorf("choices = %+v, want the last user message", got.Choices)
		}
		if got.Object != "chat.completion" || got.Model != "m" {
			t.Errorf("object %q model %q", got.Object, got.Model)
		}
		if got.Usage.CompletionTokens != 3 || got.Usage.TotalTokens != got.Usage.PromptTokens+3 || got.Usage.PromptTokens < 3 {
			t.Errorf("usage = %+v", got.Usage)
		}
	}
}

func TestOutputSizePads(t *testing.T) {
	_, ts := setup(t, Config{OutputSize: 10 << 10})
	_, b, err := post(t, ts.Client(), ts.URL+"/v1/chat/completions", chatBody)
	if err != nil {
		t.Fatal(err)
	}
	var got chatResponse
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	c := got.Choices[0].Message.Content
	if len(c) != 10<<10 || !strings.HasPrefix(c, "hello world\nxxx") {
		t.Errorf("content: %d bytes, prefix %q; want 10240 starting with the echo", len(c), c[:min(len(c), 15)])
	}
	_, b, _ = post(t, ts.Client(), ts.URL+"/echo", `{"input":"abc"}`)
	var e struct{ Output string }
	json.Unmarshal(b, &e)
	if len(e.Output) != 10<<10 || !strings.HasPrefix(e.Output, "abc\nx") {
		t.Errorf("echo output: %d bytes", len(e.Output))
	}
}

func TestEchoAndEmbeddings(t *testing.T) {
	_, ts := setup(t, Config{})
	_, b, err := post(t, ts.Client(), ts.URL+"/echo", `{"input":{"a":[1,2]}}`)
	if err != nil || string(b) != `{"output":{"a":[1,2]}}` {
		t.Errorf("echo = %s, %v", b, err)
	}
	resp, _, _ := post(t, ts.Client(), ts.URL+"/echo", `{"nope":1}`)
	if resp.StatusCode != 400 {
		t.Errorf("echo without input: status %d, want 400", resp.StatusCode)
	}

	_, b, err = post(t, ts.Client(), ts.URL+"/v1/embeddings", `{"model":"e","input":["a","b","a"]}`)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Data []embedding
	}
	if err := json.Unmarshal(b, &got); err != nil || len(got.Data) != 3 {
		t.Fatalf("embeddings = %s, %v", b, err)
	}
	dot := func(a, b []float64) (d float64) {
		for i := range a {
			d += a[i] * b[i]
		}
		return d
	}
	if v := got.Data[0].Embedding; len(v) != embeddingDims || dot(v, v) < 0.999 || dot(v, v) > 1.001 {
		t.Errorf("embedding %v is not a unit vector of %d", v, embeddingDims)
	}
	if dot(got.Data[0].Embedding, got.Data[2].Embedding) < 0.999 {
		t.Error("equal texts got different vectors")
	}
	if dot(got.Data[0].Embedding, got.Data[1].Embedding) > 0.999 {
		t.Error("different texts got the same vector")
	}
}

// TestFaults sends many requests with every fault enabled and checks that
// each one happens, that it looks like it should to a client, and that the
// stats count exactly what the client saw.
func TestFaults(t *testing.T) {
	s, ts := setup(t, Config{P429: 0.1, P500: 0.1, PHang: 0.1, PReset: 0.1, PMalformed: 0.1, RetryAfter: 2 * time.Second, HangMax: 20 * time.Millisecond, Seed: 7})
	ts.Client().Transport.(*http.Transport).DisableKeepAlives = true
	seen := map[string]int{}
	const n = 300
	for range n {
		resp, b, err := post(t, ts.Client(), ts.URL+"/v1/chat/completions", chatBody)
		switch {
		case err != nil:
			if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "EOF") {
				t.Errorf("transport error %v: want a reset", err)
			}
			seen["reset"]++
		case resp.StatusCode == 429:
			if resp.Header.Get("Retry-After") != "2" {
				t.Errorf("429 Retry-After %q, want 2", resp.Header.Get("Retry-After"))
			}
			seen["429"]++
		case resp.StatusCode == 500:
			seen["500"]++
		case resp.StatusCode == 504:
			seen["hang"]++
		case resp.StatusCode == 200 && !json.Valid(b):
			seen["malformed"]++
		case resp.StatusCode == 200:
			seen["200"]++
		default:
			t.Errorf("unexpected status %d", resp.StatusCode)
		}
	}
	for _, k := range []string{"200", "429", "500", "hang", "reset", "malformed"} {
		if seen[k] == 0 {
			t.Errorf("no %s in %d requests: %v", k, n, seen)
		}
	}
	if seen["200"] < n/3 || seen["200"] > 2*n/3 {
		t.Errorf("%d plain 200s of %d with half the requests faulty", seen["200"], n)
	}
	st := s.Stats()
	want := Stats{Requests: n, Hung: int64(seen["hang"]), Resets: int64(seen["reset"]), Malformed: int64(seen["malformed"]),
		Status: map[string]int64{"200": int64(seen["200"] + seen["malformed"]), "429": int64(seen["429"]), "500": int64(seen["500"]), "504": int64(seen["hang"])}}
	if st.Requests != want.Requests || st.Hung != want.Hung || st.Resets != want.Resets || st.Malformed != want.Malformed || st.InFlight != 0 || st.PeakInFlight != 1 {
		t.Errorf("stats = %+v, want %+v (in flight 0, peak 1)", st, want)
	}
	for k, v := range want.Status {
		if st.Status[k] != v {
			t.Errorf("status[%s] = %d, want %d", k, st.Status[k], v)
		}
	}
}

func TestSameSeedSameFaults(t *testing.T) {
	seq := func(seed uint64) []Fault {
		s, err := New(Config{P429: 0.2, P500: 0.2, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		out := make([]Fault, 50)
		for i := range out {
			out[i] = s.draw()
		}
		return out
	}
	a, b, c := seq(3), seq(3), seq(4)
	if !slicesEqual(a, b) {
		t.Error("same seed, different faults")
	}
	if slicesEqual(a, c) {
		t.Error("different seeds, same faults")
	}
}

func slicesEqual(a, b []Fault) bool { return bytes.Equal(faultBytes(a), faultBytes(b)) }

func faultBytes(fs []Fault) []byte {
	b := make([]byte, len(fs))
	for i, f := range fs {
		b[i] = byte(f)
	}
	return b
}

// TestHangEndsWhenClientGivesUp: a hang is answered by nothing; the
// request is no longer in flight once the client gives up.
func TestHangEndsWhenClientGivesUp(t *testing.T) {
	s, ts := setup(t, Config{PHang: 1, HangMax: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/echo", strings.NewReader(`{"input":1}`))
	start := time.Now()
	_, err := ts.Client().Do(req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the client's deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("hang took %v after the client gave up", d)
	}
	waitFor(t, func() bool { return s.Stats().InFlight == 0 })
	if st := s.Stats(); st.Hung != 1 || len(st.Status) != 0 {
		t.Errorf("stats = %+v, want 1 hung and no status", st)
	}
}

// TestPeakInFlightExact holds n requests in the server at once (hangs that
// the test ends), then checks the peak is exactly n, and stays n after a
// smaller wave.
func TestPeakInFlightExact(t *testing.T) {
	s, ts := setup(t, Config{PHang: 1, HangMax: time.Minute})
	wave := func(n int) {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/chat/completions", strings.NewReader(chatBody))
				if resp, err := ts.Client().Do(req); err == nil {
					resp.Body.Close()
				}
			})
		}
		waitFor(t, func() bool { return s.Stats().InFlight == int64(n) })
		cancel()
		wg.Wait()
		waitFor(t, func() bool { return s.Stats().InFlight == 0 })
	}
	wave(25)
	if st := s.Stats(); st.PeakInFlight != 25 || st.Requests != 25 {
		t.Fatalf("after 25 at once: peak %d requests %d", st.PeakInFlight, st.Requests)
	}
	wave(3)
	if st := s.Stats(); st.PeakInFlight != 25 || st.Requests != 28 {
		t.Errorf("after 3 more: peak %d requests %d, want 25 and 28", st.PeakInFlight, st.Requests)
	}

	resp, b, err := post(t, ts.Client(), ts.URL+"/stats/reset", "")
	if err != nil || resp.StatusCode != 200 {
		t.Fatal(err)
	}
	var st Stats
	json.Unmarshal(b, &st)
	if st.Requests != 0 || st.PeakInFlight != 0 || st.Hung != 0 {
		t.Errorf("after reset: %+v", st)
	}
}

func TestLatency(t *testing.T) {
	_, ts := setup(t, Config{Latency: 80 * time.Millisecond})
	start := time.Now()
	post(t, ts.Client(), ts.URL+"/echo", `{"input":1}`)
	if d := time.Since(start); d < 80*time.Millisecond {
		t.Errorf("answered after %v, want at least 80ms", d)
	}
}

func TestStatsEndpointNotCounted(t *testing.T) {
	_, ts := setup(t, Config{})
	post(t, ts.Client(), ts.URL+"/echo", `{"input":1}`)
	resp, err := ts.Client().Get(ts.URL + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st Stats
	json.NewDecoder(resp.Body).Decode(&st)
	if st.Requests != 1 || st.Status["200"] != 1 || st.PeakInFlight != 1 {
		t.Errorf("stats = %+v, want 1 request, one 200", st)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{P429: -0.1}, {P500: 1.1}, {P429: 0.6, P500: 0.6}, {Latency: -1}, {OutputSize: -1}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
	if _, err := New(Config{P429: 0.5, P500: 0.5}); err != nil {
		t.Errorf("sum of 1 refused: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 5s")
}
