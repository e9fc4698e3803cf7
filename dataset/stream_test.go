package dataset

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/evalrun/evalrun"
)

// applyPositions plays a position plan onto current rows as a store does:
// kept rows stay, inserted items get keys between their kept neighbours.
func applyPositions(t *testing.T, cur []Row, next []*evalrun.Item, hashes [][]byte, p *PositionPlan, ref *int64) []Row {
	t.Helper()
	closed := map[int32]bool{}
	for _, r := range p.Close {
		closed[r] = true
	}
	var rows []Row
	for i, r := range cur {
		if !closed[int32(i+1)] {
			rows = append(rows, r)
		}
	}
	key := func(rank int32) []byte {
		if rank == 0 {
			return nil
		}
		return cur[rank-1].Key
	}
	for _, sp := range p.Insert {
		pos := sp.From
		for k := range KeysBetween(key(sp.Lo), key(sp.Hi), int(sp.To-sp.From+1)) {
			*ref++
			rows = append(rows, Row{ID: next[pos-1].ID, Key: k, Hash: hashes[pos-1], Ref: *ref})
			pos++
		}
	}
	slices.SortFunc(rows, func(a, b Row) int { return bytes.Compare(a.Key, b.Key) })
	return rows
}

// positionsOf finds, as a store does, the new items equal to the current
// row of their rank (in place) and the other equal items (matches).
func positionsOf(cur []Row, next []*evalrun.Item, hashes [][]byte) (Bitset, []Match) {
	rank := map[string]int{}
	for i, r := range cur {
		rank[r.ID] = i + 1
	}
	var inPlace Bitset
	var matches []Match
	for i, it := range next {
		pos := i + 1
		if i < len(cur) && cur[i].ID == it.ID && bytes.Equal(cur[i].Hash, hashes[i]) {
			inPlace.Set(pos)
			continue
		}
		if r, ok := rank[it.ID]; ok && bytes.Equal(cur[r-1].Hash, hashes[i]) {
			matches = append(matches, Match{Pos: int32(pos), Rank: int32(r)})
		}
	}
	return inPlace, matches
}

// TestPlanPositionsEconomy applies random edits (insert, remove, swap,
// move, change) over many versions: a position plan lists every version
// exactly and costs the rows a PlanVersion plan costs.
func TestPlanPositionsEconomy(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var ref int64
	var cur []Row
	var next []*evalrun.Item
	fresh := 0
	for v := range 300 {
		switch op := rng.IntN(5); {
		case op == 0 || len(next) < 3:
			at := rng.IntN(len(next) + 1)
			next = slices.Insert(next, at, &evalrun.Item{ID: fmt.Sprint("i", fresh), Input: evalrun.String("x")})
			fresh++
		case op == 1:
			at := rng.IntN(len(next))
			next = slices.Delete(next, at, at+1)
		case op == 2:
			a, b := rng.IntN(len(next)), rng.IntN(len(next))
			next[a], next[b] = next[b], next[a]
		case op == 3:
			from := rng.IntN(len(next))
			it := next[from]
			next = slices.Delete(next, from, from+1)
			next = slices.Insert(next, rng.IntN(len(next)+1), it)
		default:
			at := rng.IntN(len(next))
			c := *next[at]
			c.Expected = evalrun.String(fmt.Sprint("v", v))
			next[at] = &c
		}
		hashes := make([][]byte, len(next))
		for i, it := range next {
			h, err := Hash(it)
			if err != nil {
				t.Fatal(err)
			}
			hashes[i] = h
		}
		want, err := PlanVersion(v > 0, cur, next)
		if err != nil {
			t.Fatal(err)
		}
		if want.Unchanged {
			continue
		}
		inPlace, matches := positionsOf(cur, next, hashes)
		p := PlanPositions(len(next), len(cur), inPlace, matches)
		inserted := 0
		for _, sp := range p.Insert {
			inserted += int(sp.To - sp.From + 1)
		}
		if len(p.Close) != len(want.Close) || inserted != len(want.Insert) {
			t.Fatalf("version %d: closes %d rows and inserts %d; PlanVersion closes %d and inserts %d",
				v, len(p.Close), inserted, len(want.Close), len(want.Insert))
		}
		cur = applyPositions(t, cur, next, hashes, p, &ref)
		if len(cur) != len(next) {
			t.Fatalf("version %d: %d rows, want %d", v, len(cur), len(next))
		}
		for i := range cur {
			if cur[i].ID != next[i].ID || !bytes.Equal(cur[i].Hash, hashes[i]) {
				t.Fatalf("version %d: row %d is %q, want %q", v, i, cur[i].ID, next[i].ID)
			}
		}
	}
}

// PlanPositions holds no per-item arrays when nothing moved: a plan of a
// million items with one changed allocates about a bit per item.
func TestPlanPositionsInOrderIsCompact(t *testing.T) {
	const n = 1_000_000
	var inPlace Bitset
	for pos := 1; pos <= n; pos++ {
		if pos != n/2 {
			inPlace.Set(pos)
		}
	}
	var p *PositionPlan
	allocs := testing.AllocsPerRun(1, func() { p = PlanPositions(n, n, inPlace, nil) })
	if len(p.Close) != 1 || p.Close[0] != n/2 || len(p.Insert) != 1 || p.Insert[0] != (Span{From: n / 2, To: n / 2, Lo: n/2 - 1, Hi: n/2 + 1}) {
		t.Fatalf("plan = close %v, insert %v; want rank %d closed and reinserted between its neighbours", p.Close, p.Insert, n/2)
	}
	if allocs > 100 {
		t.Fatalf("%.0f allocations: the in-order plan builds per-item structures", allocs)
	}
}
