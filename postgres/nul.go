package postgres

import "strings"

// PostgreSQL's text cannot hold a NUL byte, which a program's stderr, an
// HTTP body or an item id can contain; SQLite and the in-memory store keep
// it. So that every store takes the same data and reads it back
// identically, text columns that take such values (item ids, error texts,
// reasons, trace ids, scorer names) go through pgText on the way in and
// fromPGText on the way out. A string without NUL that does not start with
// nulMark, that is every ordinary one, is stored as it is (so existing
// rows, equality and joins on item ids are unaffected); any other is
// stored as nulMark followed by the string with each nulMark written
// nulMark+"1" and each NUL nulMark+"0". JSON values (inputs, outputs,
// metadata) are bytea and need none of this.
const nulMark = "\uFFFF" // a Unicode noncharacter: never meant for interchange

var (
	nulEscaper   = strings.NewReplacer(nulMark, nulMark+"1", "\x00", nulMark+"0")
	nulUnescaper = strings.NewReplacer(nulMark+"1", nulMark, nulMark+"0", "\x00")
)

// pgText returns s in the form a text column can hold.
func pgText(s string) string {
	if !strings.Contains(s, "\x00") && !strings.HasPrefix(s, nulMark) {
		return s
	}
	return nulMark + nulEscaper.Replace(s)
}

// fromPGText returns the string pgText(s) was made from.
func fromPGText(s string) string {
	rest, ok := strings.CutPrefix(s, nulMark)
	if !ok {
		return s
	}
	return nulUnescaper.Replace(rest)
}
