package sqlstore

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoadMigrations(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	ms, err := LoadMigrations(fstest.MapFS{
		"migrations/002_more.sql": file("B"),
		"migrations/001_init.sql": file("A"),
		"migrations/README":       file("not a migration"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0] != (Migration{1, "001_init.sql", "A"}) || ms[1] != (Migration{2, "002_more.sql", "B"}) {
		t.Fatalf("LoadMigrations = %+v", ms)
	}
	for name, tc := range map[string]struct {
		files []string
		want  string
	}{
		"no version": {[]string{"migrations/init.sql"}, "positive version"},
		"version 0":  {[]string{"migrations/000_init.sql"}, "positive version"},
		"gap":        {[]string{"migrations/001_a.sql", "migrations/003_c.sql"}, "want version 2"},
		"twice":      {[]string{"migrations/001_a.sql", "migrations/001_b.sql"}, "want version 2"},
	} {
		fsys := fstest.MapFS{}
		for _, f := range tc.files {
			fsys[f] = file("SELECT 1")
		}
		if _, err := LoadMigrations(fsys); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", name, err, tc.want)
		}
	}
}
