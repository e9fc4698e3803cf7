package engine_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/inmem"
	"github.com/evalrun/evalrun/scorer"
)

// Run a small dataset against a Go target, grade it with a built-in
// scorer and keep everything in the in-memory store.
func ExampleRun() {
	ctx := context.Background()
	store := inmem.New()
	items := []*evalrun.Item{
		{ID: "greet", Input: evalrun.String("hello"), Expected: evalrun.String("HELLO")},
		{ID: "name", Input: evalrun.String("ada"), Expected: evalrun.String("ADA")},
		{ID: "typo", Input: evalrun.String("wrld"), Expected: evalrun.String("WORLD")},
	}
	shout := evalrun.TargetFunc(func(ctx context.Context, it *evalrun.Item) (evalrun.Output, error) {
		return evalrun.Output{Value: evalrun.String(strings.ToUpper(evalrun.Text(it.Input)))}, nil
	})
	exact, err := scorer.NewExactMatch(scorer.ExactMatchOptions{})
	if err != nil {
		panic(err)
	}

	summary, err := engine.Run(ctx, store, engine.Spec{
		Items:   items,
		Target:  shout,
		Scorers: []evalrun.Scorer{exact},
		Options: engine.Options{Concurrency: 2, MaxRetries: 2},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(summary.Status, summary.Succeeded, "of", summary.Total)
	for _, r := range summary.Results {
		fmt.Printf("%s: %s passed=%v\n", r.ItemID, r.Output, r.Scores[0].Passed)
	}
	// Output:
	// completed 3 of 3
	// greet: "HELLO" passed=true
	// name: "ADA" passed=true
	// typo: "WRLD" passed=false
}

// Process one item with the same pipeline a distributed worker uses.
func ExamplePipeline_Process() {
	p, err := engine.NewPipeline(echo, []evalrun.Scorer{exact}, engine.Options{})
	if err != nil {
		panic(err)
	}
	item := &evalrun.Item{ID: "q1", Input: evalrun.String("hi"), Expected: evalrun.String("hi")}
	r := p.Process(context.Background(), "run-1", item, 0, 0)
	fmt.Println(string(r.Output), *r.Scores[0].Score, r.Attempts)
	// Output: "hi" 1 1
}

// Run a stored dataset version without holding it: the source reads it
// page by page as the workers need items, keeping the tagged ones.
func ExampleDatasetSource() {
	ctx := context.Background()
	store := inmem.New()
	v, _, err := store.ImportDataset(ctx, "greetings", []*evalrun.Item{
		{ID: "a", Input: evalrun.String("hi"), Expected: evalrun.String("hi"), Metadata: map[string]any{"tags": "smoke"}},
		{ID: "b", Input: evalrun.String("yo"), Expected: evalrun.String("yo")},
		{ID: "c", Input: evalrun.String("hey"), Expected: evalrun.String("hey"), Metadata: map[string]any{"tags": "smoke"}},
	})
	if err != nil {
		panic(err)
	}
	src, err := engine.NewDatasetSource(ctx, store, "greetings", v.Version, engine.Selection{Tags: []string{"smoke"}})
	if err != nil {
		panic(err)
	}
	summary, err := engine.Run(ctx, store, engine.Spec{
		Run:     &evalrun.Run{Dataset: "greetings", DatasetVersion: v.Version},
		Source:  src,
		Target:  echo,
		Scorers: []evalrun.Scorer{exact},
		Options: engine.Options{DiscardResults: true},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(src.Len(), "items:", summary.Status, summary.Succeeded, "of", summary.Total)
	// Output:
	// 2 items: completed 2 of 2
}
