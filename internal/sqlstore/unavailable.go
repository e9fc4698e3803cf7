package sqlstore

import "github.com/evalrun/evalrun"

// MarkUnavailable returns err marked as [evalrun.ErrStoreUnavailable]
// (errors.Is finds both, the text is unchanged) when refusesWrites says it
// is of a class that refuses every write (disk full, read-only database,
// missing table), which each backend recognises by its driver's codes; any
// other err, nil included, is returned as it is.
func MarkUnavailable(err error, refusesWrites func(error) bool) error {
	if err == nil || !refusesWrites(err) {
		return err
	}
	return &unavailable{err}
}

type unavailable struct{ err error }

func (e *unavailable) Error() string   { return e.err.Error() }
func (e *unavailable) Unwrap() []error { return []error{e.err, evalrun.ErrStoreUnavailable} }
