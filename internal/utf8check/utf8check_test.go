package utf8check

import "testing"

func TestFirstInvalid(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", -1},
		{"plain", -1},
		{"héllo ✓", -1},
		{"\xff", 0},
		{"ab\xffcd", 2},
		{"é\xc3", 2},          // a sequence cut short at the end
		{"a\xed\xa0\x80b", 1}, // a surrogate half is not valid UTF-8
		{"\uFFFD ok", -1},     // U+FFFD itself is valid
	} {
		if got := FirstInvalid([]byte(tc.in)); got != tc.want {
			t.Errorf("FirstInvalid(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
