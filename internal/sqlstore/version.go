package sqlstore

import (
	"fmt"

	"github.com/evalrun/evalrun"
)

// ResolveVersion returns the version of the named dataset a caller asked
// for, given the dataset's latest version: latest for 0, version itself
// when it exists, and an error wrapping [evalrun.ErrNotFound] otherwise.
func ResolveVersion(name string, version, latest int) (int, error) {
	if version == 0 {
		return latest, nil
	}
	if version < 1 || version > latest {
		return 0, fmt.Errorf("dataset %q version %d (latest is %d): %w", name, version, latest, evalrun.ErrNotFound)
	}
	return version, nil
}
