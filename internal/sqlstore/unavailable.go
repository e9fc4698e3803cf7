package sqlstore

import "github.com/evalrun/evalrun"

// Unavailable returns err marked as [evalrun.ErrStoreUnavailable] (errors.Is
// finds both), with err's text unchanged; nil stays nil. The backends call
// it on the error classes that refuse every write (disk full, read-only
// database, missing table), which they recognise by their driver's codes.
func Unavailable(err error) error {
	if err == nil {
		return nil
	}
	return &unavailable{err}
}

type unavailable struct{ err error }

func (e *unavailable) Error() string   { return e.err.Error() }
func (e *unavailable) Unwrap() []error { return []error{e.err, evalrun.ErrStoreUnavailable} }
