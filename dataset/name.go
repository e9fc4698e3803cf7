package dataset

import (
	"fmt"
	"strings"

	"github.com/evalrun/evalrun"
)

// CheckName returns an error wrapping evalrun.ErrInvalid when name cannot
// name a dataset in every store: it is empty, or it holds a NUL byte
// (PostgreSQL's text cannot; a name is typed, not data, so every store
// refuses it alike rather than one storing it and another not).
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty name: %w", evalrun.ErrInvalid)
	case strings.ContainsRune(name, 0):
		return fmt.Errorf("name %q holds a NUL character: %w", name, evalrun.ErrInvalid)
	}
	return nil
}
