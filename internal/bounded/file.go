package bounded

import (
	"errors"
	"io"
	"os"
)

// ErrTooLarge is the error of [ReadFile] for a file past its limit.
var ErrTooLarge = errors.New("file too large")

// ReadFile reads the file at path whole when it holds at most limit bytes;
// a larger one is ErrTooLarge, found without reading more than limit+1
// bytes of it. For files a user's configuration names (a schema, a
// certificate), which may be anything: /dev/zero, a log of gigabytes.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, ErrTooLarge
	}
	return data, nil
}
