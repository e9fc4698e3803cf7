package sqlite

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evalrun/evalrun/internal/sqlstore"
)

var update = flag.Bool("update", false, "rewrite fresh.db.gz, the template of a new database, from the migrations")

// migrated creates a database at path as Open did before the template:
// SQLite creates the file, switches it to WAL mode, and every migration
// runs.
func migrated(t *testing.T, path string) {
	t.Helper()
	all, err := sqlstore.LoadMigrations(migrationFS)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := migrate(context.Background(), db, all); err != nil {
		t.Fatal(err)
	}
}

// writeFreshTemplate rewrites fresh.db.gz: a migrated database whose
// migrations carry applied_at 0, vacuumed, gzipped without a name or time
// (the same migrations give the same bytes).
func writeFreshTemplate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "template.db")
	migrated(t, path)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`UPDATE schema_migrations SET applied_at = 0`, `VACUUM`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("fresh.db.gz", buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	freshDB = buf.Bytes()
	t.Logf("wrote fresh.db.gz: %d bytes (%d uncompressed)", buf.Len(), len(raw))
}

// describe lists what a database's schema is made of, one line per fact:
// the file's settings, every schema object with its SQL, every table's
// columns, indexes and foreign keys, every index's columns, and the
// migrations it records (without their times).
func describe(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []string
	rows := func(prefix, query string) []string {
		t.Helper()
		r, err := db.Query(query)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		defer r.Close()
		cols, _ := r.Columns()
		var lines []string
		for r.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := r.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			b.WriteString(prefix)
			for i, v := range vals {
				fmt.Fprintf(&b, " %s=%v", cols[i], v)
			}
			lines = append(lines, b.String())
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		out = append(out, lines...)
		return lines
	}
	for _, p := range []string{"page_size", "auto_vacuum", "encoding", "journal_mode", "user_version", "application_id"} {
		rows(p, "PRAGMA "+p)
	}
	objects := rows("object", `SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name`)
	for _, o := range objects {
		name := strings.Fields(strings.SplitN(o, " name=", 2)[1])[0]
		switch {
		case strings.HasPrefix(o, "object type=table"):
			rows("table "+name, `SELECT * FROM pragma_table_xinfo('`+name+`')`)
			rows("table "+name, `SELECT * FROM pragma_index_list('`+name+`') ORDER BY name`)
			rows("table "+name, `SELECT * FROM pragma_foreign_key_list('`+name+`')`)
		case strings.HasPrefix(o, "object type=index"):
			rows("index "+name, `SELECT * FROM pragma_index_xinfo('`+name+`')`)
		}
	}
	rows("migration", `SELECT version, name FROM schema_migrations ORDER BY version`)
	return out
}

// TestFreshTemplate: the embedded template is, column for column and
// index for index, the database the migrations make (the same objects with
// the same SQL, settings and recorded migrations), with its migrations
// not yet stamped. With -update it is rewritten first.
func TestFreshTemplate(t *testing.T) {
	if *update {
		writeFreshTemplate(t)
	}
	dir := t.TempDir()
	tpl := filepath.Join(dir, "template.db")
	f, err := os.Create(tpl)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeTemplate(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	want := filepath.Join(dir, "migrated.db")
	migrated(t, want)
	got, exp := describe(t, tpl), describe(t, want)
	if !slices.Equal(got, exp) {
		for _, l := range exp {
			if !slices.Contains(got, l) {
				t.Errorf("the template lacks: %s", l)
			}
		}
		for _, l := range got {
			if !slices.Contains(exp, l) {
				t.Errorf("the template has more: %s", l)
			}
		}
		t.Fatalf("fresh.db.gz is not the migrated schema: go test ./sqlite -run TestFreshTemplate -update")
	}
	if len(got) < 50 || !slices.Contains(got, "journal_mode journal_mode=wal") {
		t.Fatalf("description too short or not in WAL mode: %q", got)
	}
	db, err := sql.Open("sqlite", tpl)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var stamped int
	if err := db.QueryRow(`SELECT count(*) FROM schema_migrations WHERE applied_at <> 0`).Scan(&stamped); err != nil || stamped != 0 {
		t.Fatalf("template migrations with a time: %d (%v), want 0", stamped, err)
	}
}

// TestOpenNewFileFromTemplate: Open makes a new file from the template,
// stamped with the time it was made, with the mode SQLite gives a new
// file, leaving no temporary file; it never replaces a file that exists,
// even an empty one.
func TestOpenNewFileFromTemplate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "new.db")
	if !createFromTemplate(path) {
		t.Fatal("createFromTemplate on a new path: false")
	}
	if createFromTemplate(path) {
		t.Fatal("createFromTemplate on an existing file: true")
	}
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if createFromTemplate(empty) {
		t.Fatal("createFromTemplate on an empty file: true")
	}
	if st, err := os.Stat(empty); err != nil || st.Size() != 0 {
		t.Fatalf("the empty file after createFromTemplate: %v, %v", st, err)
	}

	opened := filepath.Join(dir, "opened.db")
	before := time.Now().UnixMicro()
	s, err := Open(t.Context(), opened)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now().UnixMicro()
	defer s.Close()
	var lo, hi, n int64
	if err := s.reader.QueryRow(`SELECT min(applied_at), max(applied_at), count(*) FROM schema_migrations`).Scan(&lo, &hi, &n); err != nil {
		t.Fatal(err)
	}
	all, _ := sqlstore.LoadMigrations(migrationFS)
	if n != int64(len(all)) || lo < before || hi > after {
		t.Fatalf("migrations of a new file: %d stamped %d..%d, want %d stamped within %d..%d", n, lo, hi, len(all), before, after)
	}
	var fromTemplate string
	if err := s.reader.QueryRow(`PRAGMA journal_mode`).Scan(&fromTemplate); err != nil || fromTemplate != "wal" {
		t.Fatalf("journal_mode %q (%v)", fromTemplate, err)
	}
	ref := filepath.Join(dir, "ref")
	if err := os.WriteFile(ref, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	want, _ := os.Stat(ref)
	got, err := os.Stat(opened)
	if err != nil || got.Mode() != want.Mode() {
		t.Fatalf("mode of the new file: %v (%v), want %v", got.Mode(), err, want.Mode())
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".new-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

// TestOpenNewFileIgnoresALeftoverWAL: a database deleted after a crash
// (kill -9, power loss) leaves PATH-wal behind, holding its last
// transactions. SQLite replays the WAL of a file in WAL mode that has
// pages, the template's case: the deleted database's runs came back in
// the new one, or pages of another database were laid over the template.
// A file SQLite creates has no page, and SQLite deletes such a WAL: Open
// leaves a path with a leftover WAL (or rollback journal) to SQLite.
func TestOpenNewFileIgnoresALeftoverWAL(t *testing.T) {
	dir := t.TempDir()
	old, err := Open(t.Context(), filepath.Join(dir, "old.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if _, err := old.writer.Exec(`CREATE TABLE leftover (x); INSERT INTO leftover VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	wal, err := os.ReadFile(filepath.Join(dir, "old.db-wal"))
	if err != nil || len(wal) == 0 {
		t.Fatalf("the old database's WAL: %d bytes, %v", len(wal), err)
	}
	path := filepath.Join(dir, "new.db")
	if err := os.WriteFile(path+"-wal", wal, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	if err := s.reader.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'leftover'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("the deleted database's table is in the new one: %d (%v)", n, err)
	}
	var ok string
	if err := s.reader.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Errorf("integrity_check: %q, %v", ok, err)
	}

	journal := filepath.Join(dir, "journal.db")
	if err := os.WriteFile(journal+"-journal", []byte("a hot journal of a deleted database"), 0o644); err != nil {
		t.Fatal(err)
	}
	if createFromTemplate(journal) {
		t.Error("createFromTemplate next to a leftover rollback journal: true")
	}
}
