package dataset

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"iter"
	"math/big"
	"sort"

	"github.com/evalrun/evalrun"
)

// This file is the planning half of a streamed import, for stores that
// stage the new items (in a temporary table) instead of holding them: the
// store finds which new items equal a current row, and [PlanPositions]
// decides, from positions alone, which rows to close and where to insert,
// with the same economy as [PlanVersion].

// StagedItem is an item checked and encoded for storing: what a store
// writes of it.
type StagedItem struct {
	// Hash is the item's content hash ([Hash]).
	Hash []byte
	// Metadata, ToolMocks and ExpectedTrajectory are the JSON the store
	// keeps ([MarshalMetadata], [MarshalAgent]); nil when absent.
	Metadata, ToolMocks, ExpectedTrajectory []byte
}

// Stage checks the item at 1-based position pos of an import and encodes
// it: it must be non-nil, with a non-empty ID and Input, and metadata that
// marshals; otherwise the error wraps [evalrun.ErrInvalid]. Unique ids are
// the store's to check, across the items (see [DuplicateIDError]).
func Stage(pos int, it *evalrun.Item) (StagedItem, error) {
	switch {
	case it == nil:
		return StagedItem{}, fmt.Errorf("item %d is nil: %w", pos, evalrun.ErrInvalid)
	case it.ID == "":
		return StagedItem{}, fmt.Errorf("item %d has an empty id: %w", pos, evalrun.ErrInvalid)
	case len(bytes.TrimSpace(it.Input)) == 0:
		return StagedItem{}, fmt.Errorf("item %q has an empty input: %w", it.ID, evalrun.ErrInvalid)
	}
	meta, err := MarshalMetadata(it.Metadata)
	if err != nil {
		return StagedItem{}, fmt.Errorf("item %q: %w", it.ID, err)
	}
	mocks, expected, err := MarshalAgent(it)
	if err != nil {
		return StagedItem{}, fmt.Errorf("item %q: %w", it.ID, err)
	}
	return StagedItem{Hash: hashParts(it, meta, mocks, expected), Metadata: meta, ToolMocks: mocks, ExpectedTrajectory: expected}, nil
}

// DuplicateIDError is the error of an import whose items at 1-based
// positions First and Second (the first item repeating an earlier id)
// have the same ID. It wraps [evalrun.ErrInvalid].
type DuplicateIDError struct {
	ID            string
	First, Second int
}

// Error says which items share which id.
func (e *DuplicateIDError) Error() string {
	return fmt.Sprintf("items %d and %d have the same id %q: %v", e.First, e.Second, e.ID, evalrun.ErrInvalid)
}

// Unwrap returns [evalrun.ErrInvalid].
func (e *DuplicateIDError) Unwrap() error { return evalrun.ErrInvalid }

// hashParts is [Hash] of an item whose metadata and agent keys are
// already marshalled.
func hashParts(it *evalrun.Item, meta, mocks, expected []byte) []byte {
	h := sha256.New()
	var n [9]byte
	part := func(b []byte, present bool) {
		n[0] = 0
		if present {
			n[0] = 1
		}
		binary.BigEndian.PutUint64(n[1:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	part(it.Input, true)
	part(it.Expected, it.Expected != nil)
	part(meta, meta != nil)
	// The agent keys join the hash only when present, so that an item
	// without them keeps the hash it had before they existed (an upgrade
	// does not make every stored item "changed").
	if mocks != nil || expected != nil {
		h.Write([]byte("agent"))
		part(mocks, mocks != nil)
		part(expected, expected != nil)
	}
	return h.Sum(nil)[:16]
}

// Match is an item of the new version that equals (same id and content) a
// row of the latest version: Pos is the item's 1-based position in the new
// version, Rank the row's 1-based position in the latest one.
type Match struct{ Pos, Rank int32 }

// Bitset is a set of small non-negative integers (positions, ranks), one
// bit each. The zero value is empty; Set grows it.
type Bitset []uint64

// Set adds i.
func (b *Bitset) Set(i int) {
	for len(*b) <= i/64 {
		*b = append(*b, 0)
	}
	(*b)[i/64] |= 1 << (i % 64)
}

// Has reports whether i is in the set.
func (b Bitset) Has(i int) bool { return i/64 < len(b) && b[i/64]&(1<<(i%64)) != 0 }

// Span is a run of consecutive new items to insert, at 1-based positions
// From to To (inclusive), between the kept rows of ranks Lo and Hi (0: no
// row, the start or the end of the version). Their order keys are
// [KeysBetween] the keys of those rows.
type Span struct{ From, To, Lo, Hi int32 }

// PositionPlan is what [PlanPositions] decides.
type PositionPlan struct {
	// Close lists the ranks, ascending, of the latest version's rows the
	// new version no longer uses: removed, changed and moved items.
	Close []int32
	// Insert lists the spans of new items to insert, in order.
	Insert []Span
}

// PlanPositions plans a version of n items over a latest version of cur
// rows. The new items equal to a current row are those at the positions in
// inPlace (equal to the row of the same rank: Pos == Rank) and matches (in
// ascending Pos, none in inPlace). Rows of a longest run of equal items
// keeping their relative order are kept (as [PlanVersion] keeps them);
// every other current row is closed and every other new item inserted.
// When the equal items keep their order (no item moved) it holds only a
// bit per row and per item; else 12 bytes per equal item.
func PlanPositions(n, cur int, inPlace Bitset, matches []Match) *PositionPlan {
	// equal yields the equal items in position order.
	equal := func(yield func(Match) bool) {
		j := 0
		for pos := 1; pos <= n; pos++ {
			m := Match{Pos: int32(pos), Rank: int32(pos)}
			switch {
			case inPlace.Has(pos):
			case j < len(matches) && int(matches[j].Pos) == pos:
				m = matches[j]
				j++
			default:
				continue
			}
			if !yield(m) {
				return
			}
		}
	}
	inOrder, last := true, int32(0)
	for m := range equal {
		if m.Rank <= last {
			inOrder = false
			break
		}
		last = m.Rank
	}
	var keptPos, keptRank Bitset
	keep := func(m Match) {
		keptPos.Set(int(m.Pos))
		keptRank.Set(int(m.Rank))
	}
	if inOrder {
		for m := range equal {
			keep(m)
		}
	} else {
		var all []Match
		for m := range equal {
			all = append(all, m)
		}
		for i, k := range keptMatches(all) {
			if k {
				keep(all[i])
			}
		}
	}
	p := &PositionPlan{}
	for r := 1; r <= cur; r++ {
		if !keptRank.Has(r) {
			p.Close = append(p.Close, int32(r))
		}
	}
	// Walk the equal items; lo is the rank of the last kept row passed.
	lo, next := int32(0), int32(1)
	span := func(to, hi int32) {
		if next <= to {
			p.Insert = append(p.Insert, Span{From: next, To: to, Lo: lo, Hi: hi})
		}
	}
	for m := range equal {
		if !keptPos.Has(int(m.Pos)) {
			continue
		}
		span(m.Pos-1, m.Rank)
		lo, next = m.Rank, m.Pos+1
	}
	span(int32(n), 0)
	return p
}

// keptMatches marks a longest run of matches whose ranks increase.
func keptMatches(matches []Match) []bool {
	kept := make([]bool, len(matches))
	var tails []int32 // tails[l]: the match ending the best run of length l+1
	prev := make([]int32, len(matches))
	for i, m := range matches {
		l := sort.Search(len(tails), func(k int) bool { return matches[tails[k]].Rank >= m.Rank })
		prev[i] = -1
		if l > 0 {
			prev[i] = tails[l-1]
		}
		if l == len(tails) {
			tails = append(tails, int32(i))
		} else {
			tails[l] = int32(i)
		}
	}
	if len(tails) > 0 {
		for i := tails[len(tails)-1]; i >= 0; i = prev[i] {
			kept[i] = true
		}
	}
	return kept
}

// KeysBetween yields n strictly increasing order keys strictly between lo
// and hi (nil lo: no lower bound; nil hi: no upper bound), one at a time:
// the keys [PlanVersion] gives a run of n inserted items.
func KeysBetween(lo, hi []byte, n int) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		if n <= 0 {
			return
		}
		size := max(len(lo), len(hi), 1)
		var loN, hiN, d big.Int
		count := big.NewInt(int64(n) + 1)
		for {
			loN.SetBytes(pad(lo, size))
			if hi == nil {
				hiN.Lsh(big.NewInt(1), uint(8*size))
			} else {
				hiN.SetBytes(pad(hi, size))
			}
			d.Sub(&hiN, &loN)
			if d.Cmp(count) >= 0 {
				break
			}
			size++
		}
		var v, m, k big.Int
		for i := range n {
			k.SetInt64(int64(i) + 1)
			m.Mul(&d, &k)
			m.Quo(&m, count)
			v.Add(&loN, &m)
			key := v.FillBytes(make([]byte, size))
			if !yield(bytes.TrimRight(key, "\x00")) {
				return
			}
		}
	}
}
