package cli

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A report whose writing fails half-way (a store error while the HTML
// streams, a full disk) must not leave half a file where the previous
// report was: the old file stays as it was, and no temporary file is left.
func TestWriteFileFailureKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	if err := os.WriteFile(path, []byte("old report"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("store went away")
	err := writeFile(path, func(f *os.File) error {
		if _, err := f.WriteString("<!DOCTYPE html><html><body>half"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "old report" {
		t.Errorf("after a failed write the file holds %q, want the old report", got)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only report.html", names)
	}

	// A failed first write leaves no file at all.
	fresh := filepath.Join(dir, "new.html")
	if err := writeFile(fresh, func(f *os.File) error { f.WriteString("half"); return boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("a failed write left %s (stat: %v)", fresh, err)
	}
}

// A successful write replaces the file whole, keeps an existing file's
// mode, writes through a symbolic link, and still writes to a device such
// as /dev/null in place (it is never replaced).
func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.md")
	if err := os.WriteFile(path, []byte("a much longer old report"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(path, func(f *os.File) error { _, err := f.WriteString("new"); return err }); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if string(got) != "new" || fi.Mode().Perm() != 0o640 {
		t.Errorf("file = %q mode %v, want \"new\" mode 0640", got, fi.Mode().Perm())
	}
	link := filepath.Join(dir, "link.md")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(link, func(f *os.File) error { _, err := f.WriteString("via link"); return err }); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "via link" {
		t.Errorf("through the link the target holds %q", got)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced by a file")
	}
	if err := writeFile(os.DevNull, func(f *os.File) error { _, err := f.WriteString("x"); return err }); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(os.DevNull); err != nil || fi.Mode()&os.ModeDevice == 0 {
		t.Fatalf("%s is no longer a device: %v %v", os.DevNull, fi, err)
	}
}
