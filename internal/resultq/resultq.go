// Package resultq holds what the stores share to answer
// [evalrun.ResultPager]: the keyset cursor (the last row's sort value,
// index and repeat, bound to its sort) and the reference ordering that
// the in-memory store applies and the SQL stores' queries reproduce.
package resultq

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/evalrun/evalrun"
)

// Cursor is the position of a result in a sorted listing: its sort value
// (Num for latency and scores, Str for item ids, neither for input order),
// index and repeat.
type Cursor struct {
	Sort          string
	Num           float64
	Str           string
	Index, Repeat int
}

const cursorVersion = 1

// Encode returns c as opaque bytes.
func (c Cursor) Encode() []byte {
	b := []byte{cursorVersion}
	b = binary.AppendUvarint(b, uint64(len(c.Sort)))
	b = append(b, c.Sort...)
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(c.Num))
	b = binary.AppendUvarint(b, uint64(len(c.Str)))
	b = append(b, c.Str...)
	b = binary.AppendUvarint(b, uint64(c.Index))
	b = binary.AppendUvarint(b, uint64(c.Repeat))
	return b
}

// Decode reads a cursor of the listing q, failing with ErrInvalid on bytes
// Encode did not write or a cursor of another sort.
func Decode(q evalrun.ResultPageQuery) (*Cursor, error) {
	if q.After == nil {
		return nil, nil
	}
	bad := fmt.Errorf("result page: the cursor is malformed (start again from the first page): %w", evalrun.ErrInvalid)
	r := bytes.NewReader(q.After)
	if v, err := r.ReadByte(); err != nil || v != cursorVersion {
		return nil, bad
	}
	str := func() (string, bool) {
		n, err := binary.ReadUvarint(r)
		if err != nil || n > uint64(r.Len()) {
			return "", false
		}
		s := make([]byte, n)
		_, _ = r.Read(s)
		return string(s), true
	}
	num := func() (int, bool) {
		n, err := binary.ReadUvarint(r)
		return int(n), err == nil && n <= math.MaxInt32
	}
	var c Cursor
	var ok bool
	if c.Sort, ok = str(); !ok {
		return nil, bad
	}
	var bits [8]byte
	if n, _ := r.Read(bits[:]); n != 8 {
		return nil, bad
	}
	c.Num = math.Float64frombits(binary.BigEndian.Uint64(bits[:]))
	if c.Str, ok = str(); !ok {
		return nil, bad
	}
	if c.Index, ok = num(); !ok {
		return nil, bad
	}
	if c.Repeat, ok = num(); !ok || r.Len() != 0 || math.IsNaN(c.Num) {
		return nil, bad
	}
	if c.Sort != q.SortName() {
		return nil, fmt.Errorf("result page: the cursor belongs to sort %q, not %q (start again from the first page): %w",
			c.Sort, q.SortName(), evalrun.ErrInvalid)
	}
	return &c, nil
}

// Of returns the cursor of r in listing q.
func Of(q evalrun.ResultPageQuery, r *evalrun.ItemResult) Cursor {
	c := Cursor{Sort: q.SortName(), Index: r.Index, Repeat: r.Repeat}
	switch q.Sort {
	case evalrun.SortItemID:
		c.Str = r.ItemID
	case evalrun.SortLatency:
		c.Num = float64(r.Latency)
	case evalrun.SortScore:
		c.Num = evalrun.SortScoreOf(r, q.SortScorer)
	}
	return c
}

// Compare orders two cursors of listing q: the sort value (reversed when
// q.Desc), then index and repeat ascending.
func Compare(q evalrun.ResultPageQuery, a, b *Cursor) int {
	v := cmp.Or(cmp.Compare(a.Num, b.Num), strings.Compare(a.Str, b.Str))
	if q.Desc {
		v = -v
	}
	return cmp.Or(v, cmp.Compare(a.Index, b.Index), cmp.Compare(a.Repeat, b.Repeat))
}
