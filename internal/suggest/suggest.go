// Package suggest finds the word a misspelt one likely meant, for the
// "did you mean …" hints of the dataset readers ([Key]) and the suite file
// ([Nearest]).
package suggest

import "strings"

// Key returns the one of known that key likely misspells, or "": the first
// that is the same up to case and separators ('_', '-', ' ', '.'), within
// two edits (for keys of four letters or more), or of which key is a prefix
// of at least five letters ("expected" for "expected_output").
func Key(key string, known []string) string {
	norm := func(s string) string {
		s = strings.ToLower(s)
		return strings.NewReplacer("_", "", "-", "", " ", "", ".", "").Replace(s)
	}
	k := norm(key)
	if k == "" {
		return ""
	}
	for _, kn := range known {
		n := norm(kn)
		if k == n || (len(k) >= 5 && strings.HasPrefix(n, k)) || (len(k) >= 4 && Distance(k, n) <= 2) {
			return kn
		}
	}
	return ""
}

// Nearest returns the one of known closest to word (lowercased; the first
// of those as close), or "" when known is empty or the closest is more than
// max(1, len/3) edits away, len being its length.
func Nearest(word string, known []string) string {
	best, bestD := "", -1
	for _, k := range known {
		if d := Distance(strings.ToLower(word), k); bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	if bestD < 0 || bestD > max(1, len(best)/3) {
		return ""
	}
	return best
}

// Distance is the Levenshtein distance of a and b in bytes: the fewest
// single-byte insertions, deletions and substitutions that turn a into b.
// It is meant for short strings (keys, kinds): it takes O(len(a)·len(b))
// time.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
