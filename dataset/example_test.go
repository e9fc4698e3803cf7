package dataset_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/evalrun/evalrun/dataset"
	"github.com/evalrun/evalrun/inmem"
)

func ExampleRead() {
	file := `{"id": "q1", "input": "2+2?", "expected_output": "4", "metadata": {"tags": ["math"]}}
{"input": "capital of France?", "expected_output": "Paris"}
`
	items, err := dataset.Read(strings.NewReader(file), "qa.jsonl", dataset.JSONL)
	if err != nil {
		fmt.Println(err)
		return
	}
	store := inmem.New()
	v, created, _ := store.ImportDataset(context.Background(), "qa", items)
	fmt.Println(items[0].ID, string(items[0].Input), items[0].Tags())
	fmt.Println(len(items[1].ID), "hex digits derived from the content")
	fmt.Println("version", v.Version, "created", created)

	_, err = dataset.Read(strings.NewReader(`{"input": "x", "expected": "y"}`), "qa.jsonl", dataset.JSONL)
	fmt.Println(err)
	// Output:
	// q1 "2+2?" [math]
	// 12 hex digits derived from the content
	// version 1 created true
	// qa.jsonl:1: unknown key "expected" (did you mean "expected_output"? extra fields belong in "metadata")
}
