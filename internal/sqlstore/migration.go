package sqlstore

import (
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// Migration is one embedded schema change, "NNN_name.sql".
type Migration struct {
	// Version is NNN: migrations are numbered 1, 2, 3… without gaps.
	Version int
	// Name is the file's name, "NNN_name.sql".
	Name string
	// SQL is the file's content.
	SQL string
}

// LoadMigrations reads the files migrations/*.sql of fsys (a backend's
// embedded files), ordered by version. It returns an error when a name does
// not start with a positive version and '_', or when the versions are not
// 1, 2, 3… without gaps.
func LoadMigrations(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive version and '_'", base)
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: base, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := range out {
		if out[i].Version != i+1 {
			return nil, fmt.Errorf("migration %s: want version %d (versions are 1, 2, 3… without gaps)", out[i].Name, i+1)
		}
	}
	return out, nil
}
