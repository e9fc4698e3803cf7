package dataset

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/evalrun/evalrun"
)

func TestKeysBetween(t *testing.T) {
	tests := []struct {
		name   string
		lo, hi []byte
		n      int
	}{
		{"unbounded", nil, nil, 5},
		{"many", nil, nil, 100_000},
		{"after", []byte{0xff, 0xff}, nil, 3},
		{"before", nil, []byte{0, 0, 1}, 4},
		{"adjacent", []byte{5}, []byte{6}, 10},
		{"prefix", []byte{5}, []byte{5, 0, 1}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys := keysBetween(tt.lo, tt.hi, tt.n)
			if len(keys) != tt.n {
				t.Fatalf("got %d keys, want %d", len(keys), tt.n)
			}
			prev := tt.lo
			for i, k := range keys {
				if len(k) == 0 || k[len(k)-1] == 0 {
					t.Fatalf("key %d = %x: empty or trailing zero", i, k)
				}
				if prev != nil && bytes.Compare(prev, k) >= 0 {
					t.Fatalf("key %d = %x not above %x", i, k, prev)
				}
				prev = k
			}
			if tt.hi != nil && bytes.Compare(prev, tt.hi) >= 0 {
				t.Fatalf("last key %x not below %x", prev, tt.hi)
			}
		})
	}
}

// apply plays a plan onto current rows and returns the new version's rows.
func apply(current []Row, p *VersionPlan, nextRef *int64) []Row {
	closed := map[int64]bool{}
	for _, r := range p.Close {
		closed[r.Ref] = true
	}
	var rows []Row
	for _, r := range current {
		if !closed[r.Ref] {
			rows = append(rows, r)
		}
	}
	for _, n := range p.Insert {
		*nextRef++
		rows = append(rows, Row{ID: n.Item.ID, Key: n.Key, Hash: n.Hash, Ref: *nextRef})
	}
	// sort by key
	for i := 1; i < len(rows); i++ {
		for j := i; j > 0 && bytes.Compare(rows[j-1].Key, rows[j].Key) > 0; j-- {
			rows[j-1], rows[j] = rows[j], rows[j-1]
		}
	}
	return rows
}

func items(ids ...string) []*evalrun.Item {
	out := make([]*evalrun.Item, len(ids))
	for i, id := range ids {
		out[i] = &evalrun.Item{ID: id, Input: evalrun.String("in " + id)}
	}
	return out
}

func TestPlanVersion(t *testing.T) {
	var ref int64
	v1 := items("a", "b", "c", "d", "e")
	p, err := PlanVersion(false, nil, v1)
	if err != nil {
		t.Fatal(err)
	}
	if p.Added != 5 || len(p.Insert) != 5 || len(p.Close) != 0 {
		t.Fatalf("first version: %+v", p)
	}
	cur := apply(nil, p, &ref)

	tests := []struct {
		name                    string
		next                    []*evalrun.Item
		rows                    int // rows inserted
		added, changed, removed int
	}{
		{"unchanged", items("a", "b", "c", "d", "e"), 0, 0, 0, 0},
		{"insert middle", items("a", "b", "x", "c", "d", "e"), 1, 1, 0, 0},
		{"insert front", items("x", "a", "b", "c", "d", "e"), 1, 1, 0, 0},
		{"append", items("a", "b", "c", "d", "e", "x", "y"), 2, 2, 0, 0},
		{"remove", items("a", "c", "d", "e"), 0, 0, 0, 1},
		{"move one", items("e", "a", "b", "c", "d"), 1, 0, 0, 0},
		{"swap", items("b", "a", "c", "d", "e"), 1, 0, 0, 0},
		{"change one", func() []*evalrun.Item {
			it := items("a", "b", "c", "d", "e")
			it[2].Expected = evalrun.String("new")
			return it
		}(), 1, 0, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := PlanVersion(true, cur, tt.next)
			if err != nil {
				t.Fatal(err)
			}
			if tt.rows == 0 && tt.removed == 0 {
				if !p.Unchanged {
					t.Fatalf("want unchanged, got %+v", p)
				}
				return
			}
			if p.Unchanged {
				t.Fatal("want a new version, got unchanged")
			}
			if len(p.Insert) != tt.rows || p.Added != tt.added || p.Changed != tt.changed || p.Removed != tt.removed {
				t.Fatalf("inserted %d rows, +%d ~%d -%d; want %d rows, +%d ~%d -%d",
					len(p.Insert), p.Added, p.Changed, p.Removed, tt.rows, tt.added, tt.changed, tt.removed)
			}
			r := ref
			got := apply(cur, p, &r)
			if len(got) != len(tt.next) {
				t.Fatalf("new version has %d rows, want %d", len(got), len(tt.next))
			}
			for i, row := range got {
				if row.ID != tt.next[i].ID {
					t.Fatalf("row %d is %q, want %q", i, row.ID, tt.next[i].ID)
				}
			}
		})
	}
}

// TestPlanVersionRandom applies random edits over many versions and checks
// that every version lists exactly its items in order.
func TestPlanVersionRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var ref int64
	var cur []Row
	var ids []string
	next := 0
	for v := range 200 {
		switch op := rng.IntN(4); {
		case op == 0 || len(ids) < 3:
			at := rng.IntN(len(ids) + 1)
			ids = append(ids[:at], append([]string{fmt.Sprint("i", next)}, ids[at:]...)...)
			next++
		case op == 1:
			at := rng.IntN(len(ids))
			ids = append(ids[:at], ids[at+1:]...)
		default:
			a, b := rng.IntN(len(ids)), rng.IntN(len(ids))
			ids[a], ids[b] = ids[b], ids[a]
		}
		its := items(ids...)
		p, err := PlanVersion(v > 0, cur, its)
		if err != nil {
			t.Fatal(err)
		}
		if p.Unchanged {
			continue
		}
		cur = apply(cur, p, &ref)
		if len(cur) != len(ids) {
			t.Fatalf("version %d: %d rows, want %d", v, len(cur), len(ids))
		}
		for i := range cur {
			if cur[i].ID != ids[i] {
				t.Fatalf("version %d: row %d is %q, want %q", v, i, cur[i].ID, ids[i])
			}
		}
	}
}

func TestPlanVersionInvalid(t *testing.T) {
	tests := []struct {
		name  string
		items []*evalrun.Item
		want  string
	}{
		{"nil item", []*evalrun.Item{nil}, "item 1 is nil: invalid"},
		{"empty id", []*evalrun.Item{{Input: evalrun.String("x")}}, "item 1 has an empty id: invalid"},
		{"empty input", []*evalrun.Item{{ID: "a", Input: []byte("  ")}}, `item "a" has an empty input: invalid`},
		{"duplicate", items("a", "b", "a"), `items 1 and 3 have the same id "a": invalid`},
		{"bad metadata", []*evalrun.Item{{ID: "a", Input: evalrun.String("x"), Metadata: map[string]any{"c": make(chan int)}}},
			`item "a": metadata is not JSON: json: unsupported type: chan int: invalid`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := PlanVersion(false, nil, tt.items)
			if !errors.Is(err, evalrun.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if err.Error() != tt.want {
				t.Fatalf("err = %q, want %q", err, tt.want)
			}
		})
	}
}
