package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Baseline runs w's requests with a bare net/http client in this process:
// Concurrency workers each sending one chat completion at a time, decoding
// the reply and comparing it with the input. No start-up, no storage, no
// scoring: the floor a runner in Go can reach on this machine with this
// mock, to tell evalrun's overhead from the machine's.
func Baseline(ctx context.Context, w Workload, base string) (wall time.Duration, passed int, err error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = w.Concurrency
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	next := make(chan int)
	var ok atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for range w.Concurrency {
		wg.Go(func() {
			for i := range next {
				if e := baselineOne(ctx, client, base, i); e != nil {
					once.Do(func() { firstErr = e })
					continue
				}
				ok.Add(1)
			}
		})
	}
	for i := range w.Items {
		next <- i
	}
	close(next)
	wg.Wait()
	return time.Since(start), int(ok.Load()), firstErr
}

func baselineOne(ctx context.Context, client *http.Client, base string, i int) error {
	in := input(i)
	body, _ := json.Marshal(map[string]any{"model": "mock", "messages": []map[string]string{{"role": "user", "content": in}}})
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	var out struct {
		Choices []struct {
			Message struct{ Content string }
		}
	}
	if err := json.Unmarshal(b, &out); err != nil || len(out.Choices) == 0 {
		return fmt.Errorf("bad reply: %v", err)
	}
	if c := out.Choices[0].Message.Content; len(c) < len(in) || c[:len(in)] != in {
		return fmt.Errorf("item %d: reply does not echo the input", i)
	}
	return nil
}
