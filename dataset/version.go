package dataset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/evalrun/evalrun"
)

// Row is one stored item row of a dataset's latest version, as a store hands
// it to [PlanVersion].
type Row struct {
	// ID is the item id.
	ID string
	// Key is the row's order key: the items of a version are listed by
	// ascending Key (bytewise).
	Key []byte
	// Hash is the content hash [Hash] gave when the row was written.
	Hash []byte
	// Ref identifies the row within its store (a row id); PlanVersion only
	// passes it back in [VersionPlan.Close].
	Ref int64
}

// NewRow is an item row that a store inserts for a new version.
type NewRow struct {
	Item *evalrun.Item
	Key  []byte
	Hash []byte
}

// VersionPlan is what a store writes to record a new version of a dataset:
// it closes some rows (their valid-to becomes the new version) and inserts
// others (valid from the new version). Rows of items that neither changed
// nor moved are left alone, so a version costs rows only for what changed.
type VersionPlan struct {
	// Unchanged is true when the items equal the latest version's (same
	// ids, content and order): the store writes nothing.
	Unchanged bool
	// Close lists the current rows that the new version no longer uses:
	// removed items, changed items and moved items.
	Close []Row
	// Insert lists the rows to add, in the new version's order.
	Insert []NewRow
	// Added, Changed and Removed count items by id against the latest
	// version. An item that only moved counts in none of them.
	Added, Changed, Removed int
}

// PlanVersion compares items (the next version, in order) with current (the
// rows of the latest version, ordered by Key) and returns what to write.
// exists tells whether the dataset has a version yet: importing no items
// into a new dataset creates an empty first version. It validates items first: each must be non-nil,
// with a non-empty, unique ID and a non-empty Input; otherwise it returns an
// error wrapping [evalrun.ErrInvalid] and no plan.
//
// Order keys are chosen so that items keeping their relative order keep
// their rows: inserting, changing or moving one item adds exactly one row.
func PlanVersion(exists bool, current []Row, items []*evalrun.Item) (*VersionPlan, error) {
	hashes, err := hashItems(items)
	if err != nil {
		return nil, err
	}
	if exists && len(current) == len(items) {
		same := true
		for i, it := range items {
			if current[i].ID != it.ID || !bytes.Equal(current[i].Hash, hashes[i]) {
				same = false
				break
			}
		}
		if same {
			return &VersionPlan{Unchanged: true}, nil
		}
	}

	old := make(map[string]int, len(current))
	for i, r := range current {
		old[r.ID] = i
	}
	p := &VersionPlan{}
	// seq[i] is the current position of items[i] when it is kept unchanged
	// (a candidate to keep its row), -1 otherwise.
	seq := make([]int, len(items))
	inNew := make(map[string]struct{}, len(items))
	for i, it := range items {
		inNew[it.ID] = struct{}{}
		seq[i] = -1
		j, ok := old[it.ID]
		switch {
		case !ok:
			p.Added++
		case !bytes.Equal(current[j].Hash, hashes[i]):
			p.Changed++
		default:
			seq[i] = j
		}
	}
	for _, r := range current {
		if _, ok := inNew[r.ID]; !ok {
			p.Removed++
		}
	}
	keep := longestIncreasing(seq)
	kept := make([]bool, len(current))
	for i, k := range keep {
		if k {
			kept[seq[i]] = true
		}
	}
	for j, r := range current {
		if !kept[j] {
			p.Close = append(p.Close, r)
		}
	}
	// Give every run of non-kept items keys between its kept neighbours.
	var lo []byte
	for i := 0; i < len(items); {
		if keep[i] {
			lo = current[seq[i]].Key
			i++
			continue
		}
		end := i
		for end < len(items) && !keep[end] {
			end++
		}
		var hi []byte
		if end < len(items) {
			hi = current[seq[end]].Key
		}
		keys := keysBetween(lo, hi, end-i)
		for k := i; k < end; k++ {
			p.Insert = append(p.Insert, NewRow{Item: items[k], Key: keys[k-i], Hash: hashes[k]})
		}
		i = end
	}
	return p, nil
}

func hashItems(items []*evalrun.Item) ([][]byte, error) {
	seen := make(map[string]int, len(items))
	hashes := make([][]byte, len(items))
	for i, it := range items {
		switch {
		case it == nil:
			return nil, fmt.Errorf("item %d is nil: %w", i+1, evalrun.ErrInvalid)
		case it.ID == "":
			return nil, fmt.Errorf("item %d has an empty id: %w", i+1, evalrun.ErrInvalid)
		case len(bytes.TrimSpace(it.Input)) == 0:
			return nil, fmt.Errorf("item %q has an empty input: %w", it.ID, evalrun.ErrInvalid)
		}
		if j, dup := seen[it.ID]; dup {
			return nil, &DuplicateIDError{ID: it.ID, First: j + 1, Second: i + 1}
		}
		seen[it.ID] = i
		h, err := Hash(it)
		if err != nil {
			return nil, fmt.Errorf("item %q: %w", it.ID, err)
		}
		hashes[i] = h
	}
	return hashes, nil
}

// Hash returns the content hash of an item (16 bytes of SHA-256 over its
// input, expected output, metadata, tool mocks and expected trajectory,
// byte-exact): two items with the same
// hash have the same content. The id is not part of it. It fails when the
// metadata cannot be marshalled to JSON (wrapping [evalrun.ErrInvalid]).
func Hash(it *evalrun.Item) ([]byte, error) {
	meta, err := MarshalMetadata(it.Metadata)
	if err != nil {
		return nil, err
	}
	mocks, expected, err := MarshalAgent(it)
	if err != nil {
		return nil, err
	}
	return hashParts(it, meta, mocks, expected), nil
}

// MarshalMetadata returns the JSON of an item's metadata (keys sorted), or
// nil when it is empty. Stores use it so that content hashes and stored
// metadata agree.
func MarshalMetadata(m map[string]any) ([]byte, error) {
	if len(m) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("metadata is not JSON: %v: %w", err, evalrun.ErrInvalid)
	}
	return b, nil
}

// UnmarshalMetadata is the inverse of [MarshalMetadata]: nil gives nil.
func UnmarshalMetadata(b []byte) (map[string]any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("stored metadata is not a JSON object: %w", err)
	}
	return m, nil
}

// longestIncreasing marks a longest strictly increasing subsequence of the
// non-negative values of seq (negative values are never marked).
func longestIncreasing(seq []int) []bool {
	keep := make([]bool, len(seq))
	var tails []int // tails[l]: index in seq ending the best subsequence of length l+1
	prev := make([]int, len(seq))
	for i, v := range seq {
		if v < 0 {
			continue
		}
		l := sort.Search(len(tails), func(k int) bool { return seq[tails[k]] >= v })
		if l > 0 {
			prev[i] = tails[l-1]
		} else {
			prev[i] = -1
		}
		if l == len(tails) {
			tails = append(tails, i)
		} else {
			tails[l] = i
		}
	}
	if len(tails) > 0 {
		for i := tails[len(tails)-1]; i >= 0; i = prev[i] {
			keep[i] = true
		}
	}
	return keep
}

// keysBetween returns n strictly increasing order keys strictly between lo
// and hi (nil lo: no lower bound; nil hi: no upper bound). A key is a
// base-256 fraction without trailing zero bytes, so bytewise order is
// numeric order.
func keysBetween(lo, hi []byte, n int) [][]byte {
	keys := make([][]byte, 0, n)
	for k := range KeysBetween(lo, hi, n) {
		keys = append(keys, k)
	}
	return keys
}

func pad(b []byte, size int) []byte {
	if len(b) >= size {
		return b
	}
	p := make([]byte, size)
	copy(p, b)
	return p
}
