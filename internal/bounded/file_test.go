package bounded

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(path, 5); err != nil || string(b) != "12345" {
		t.Errorf("at the limit: %q, %v", b, err)
	}
	if b, err := ReadFile(path, 4); !errors.Is(err, ErrTooLarge) || b != nil {
		t.Errorf("past the limit: %q, %v; want ErrTooLarge", b, err)
	}
	// An endless file is refused without reading it whole.
	if _, err := ReadFile("/dev/zero", 1<<10); !errors.Is(err, ErrTooLarge) {
		t.Errorf("/dev/zero: %v, want ErrTooLarge", err)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing"), 10); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
