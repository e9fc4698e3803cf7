package sqlite

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// freshDB is a new database at the latest schema version, already in WAL
// mode, gzipped (3.5 KB): what Open makes of a path where no file is.
// Written in one piece, Open of a new path took 5.7 ms instead of 16.7
// (medians of 25 processes on a loaded machine; docs/benchmarks.md, "W1
// start-up and tail, again"): SQLite switches a new file to WAL mode
// through a rollback journal (four fsyncs), then parses every migration's
// DDL, for a run's start to wait on.
// Its schema_migrations rows carry applied_at 0; migrate stamps them with
// the time the file is created.
//
// After adding a migration, regenerate it:
//
//	go test ./sqlite -run TestFreshTemplate -update
//
// A stale template is still correct (Open applies the migrations it
// lacks), only slower; TestFreshTemplate fails until it is regenerated.
//
//go:embed fresh.db.gz
var freshDB []byte

// createFromTemplate creates the database file at path from freshDB when
// nothing is there (no PATH-wal or PATH-journal either), and reports
// whether it did. It writes a temporary
// file next to path, syncs it and hard-links it into place, then syncs the
// directory: path is either absent or a whole database, even after a
// crash, and a process that creates path at the same moment (another
// evalrun, which may be an older one letting SQLite create it) either
// wins, and this one opens its file, or loses. On any failure it removes
// what it wrote and reports false: Open then lets SQLite create the file,
// as it always did, and reports SQLite's error if that fails too. (A crash
// between the write and the removal leaves PATH.new-…, which nothing
// reads.)
func createFromTemplate(path string) bool {
	if path == ":memory:" || strings.HasPrefix(path, "file:") {
		return false // not a plain file path
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return false // a file (even an empty one), a link, or no telling
	}
	for _, leftover := range []string{path + "-wal", path + "-journal"} {
		// A deleted database's WAL or journal (after a crash): SQLite
		// would replay it over the template, which has pages, bringing
		// the deleted data back or corrupting the file; it deletes it
		// for a file of its own making, which has none.
		if _, err := os.Lstat(leftover); !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	var suffix [8]byte
	_, _ = rand.Read(suffix[:])
	tmp := path + ".new-" + hex.EncodeToString(suffix[:])
	// 0o644 less the umask: the mode SQLite creates database files with.
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return false
	}
	err = writeTemplate(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp, path) // fails when path exists: never replaces a file
	}
	os.Remove(tmp)
	if err != nil {
		return false
	}
	syncDir(filepath.Dir(path))
	return true
}

// writeTemplate writes the decompressed template to f and syncs it.
func writeTemplate(f *os.File) error {
	zr, err := gzip.NewReader(bytes.NewReader(freshDB))
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, zr); err != nil {
		return err
	}
	if err := zr.Close(); err != nil {
		return err
	}
	return f.Sync()
}

// syncDir makes a new name in dir durable, where the system allows it
// (not on Windows, whose directories cannot be synced: there the file's
// own sync is what can be had).
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	d.Close()
}
