package target

import (
	"context"

	"github.com/evalrun/evalrun"
)

// Echo is a target that returns each item's input as its output, for smoke
// tests and examples. The output shares the input's bytes (values are never
// modified in place), so Execute allocates nothing. The zero value is ready
// to use and safe for concurrent use.
type Echo struct{}

var _ evalrun.Target = Echo{}

// Execute returns item.Input.
func (Echo) Execute(_ context.Context, item *evalrun.Item) (evalrun.Output, error) {
	return evalrun.Output{Value: item.Input}, nil
}
