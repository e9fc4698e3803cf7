package scorer_test

import (
	"context"
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/scorer"
)

func ExampleNew() {
	var cfgs []scorer.Config
	err := yaml.Unmarshal([]byte(`
- exact_match
- kind: contains
  name: mentions-paris
  values: [paris]
  case_sensitive: false
  threshold: 1
- kind: expr
  expression: "len(output) < 40"
`), &cfgs)
	if err != nil {
		panic(err)
	}
	item := &evalrun.Item{ID: "q1", Input: evalrun.String("Capital of France?"), Expected: evalrun.String("Paris")}
	for _, cfg := range cfgs {
		s, err := scorer.New(cfg, scorer.Deps{})
		if err != nil {
			panic(err)
		}
		sc, err := s.Score(context.Background(), evalrun.ScoreInput{Item: item, Output: evalrun.String("It is Paris.")})
		fmt.Printf("%s: %v (threshold %v) %s\n", s.Name(), sc.Value, evalrun.ThresholdOf(s), sc.Reason)
	}
	// Output:
	// exact_match: 0 (threshold 0.5) output "It is Paris." differs from expected "Paris"
	// mentions-paris: 1 (threshold 1) found "paris"
	// expr: 1 (threshold 0.5) len(output) < 40 is true
}

func ExampleNew_configError() {
	_, err := scorer.New(scorer.Config{Kind: "regex", Name: "phone", Pattern: `(\d{3}`}, scorer.Deps{})
	fmt.Println(err)
	// Output:
	// scorer "phone" (regex): pattern: invalid regular expression: error parsing regexp: missing closing ): `(\d{3}`
}

func ExampleNewJSONEqual() {
	s, err := scorer.NewJSONEqual(scorer.JSONEqualOptions{})
	if err != nil {
		panic(err)
	}
	item := &evalrun.Item{ID: "q1", Input: evalrun.String("x"), Expected: json.RawMessage(`{"a": 1, "b": [true]}`)}
	// The target answered with JSON as text, keys in another order.
	sc, _ := s.Score(context.Background(), evalrun.ScoreInput{Item: item, Output: evalrun.String(`{"b":[true],"a":1.0}`)})
	fmt.Println(sc.Value, sc.Reason)
	// Output:
	// 1 output equals expected as JSON
}
