// Package boundedtest makes the hostile values the tests of bounded
// rendering use.
package boundedtest

import "bytes"

// Deep returns a JSON value nested depth levels deep, objects and arrays
// alternating: {"k":[{"k":[… 1 …]}]}. Indented by json.Indent it takes
// about depth² bytes.
func Deep(depth int) []byte {
	var b bytes.Buffer
	for i := range depth {
		b.WriteString([]string{`{"k":`, `[`}[i%2])
	}
	b.WriteString("1")
	for i := depth - 1; i >= 0; i-- {
		b.WriteString([]string{`}`, `]`}[i%2])
	}
	return b.Bytes()
}
