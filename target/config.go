package target

import (
	"fmt"

	"github.com/evalrun/evalrun"
)

// ConfigError is a bad configuration value. Key names the offending key as
// the suite file spells it, relative to the target (e.g. "url",
// "steps[1].guard.min"), so the suite parser can point at its file:line.
// It matches [evalrun.ErrInvalid] with errors.Is.
type ConfigError struct {
	Key string
	Err error
}

// Error returns "KEY: message".
func (e *ConfigError) Error() string { return e.Key + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *ConfigError) Unwrap() error { return e.Err }

// Is reports whether target is [evalrun.ErrInvalid].
func (e *ConfigError) Is(target error) bool { return target == evalrun.ErrInvalid }

// configErrorf returns a *ConfigError for key with a formatted message.
func configErrorf(key, format string, args ...any) error {
	return &ConfigError{Key: key, Err: fmt.Errorf(format, args...)}
}

// PrefixKey returns err with its [ConfigError] key prefixed by prefix and a
// dot (for nested configs, e.g. a workflow step's target); other errors are
// returned unchanged.
func PrefixKey(prefix string, err error) error {
	if ce, ok := err.(*ConfigError); ok {
		return &ConfigError{Key: prefix + "." + ce.Key, Err: ce.Err}
	}
	return err
}
