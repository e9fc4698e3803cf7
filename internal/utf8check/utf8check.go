// Package utf8check finds the first invalid UTF-8 byte of a text, for the
// errors that name where a dataset file or a target's output stops being
// text.
package utf8check

import "unicode/utf8"

// FirstInvalid returns the offset of the first byte of b that does not
// start a valid UTF-8 sequence, or -1 when b is valid UTF-8.
func FirstInvalid(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	off := 0
	for off < len(b) {
		r, n := utf8.DecodeRune(b[off:])
		if r == utf8.RuneError && n <= 1 {
			return off
		}
		off += n
	}
	return -1
}
