package sqlstore

import (
	"slices"
	"testing"
)

func TestIndexRanges(t *testing.T) {
	for _, tc := range []struct {
		in   []int64
		gap  int64
		want [][2]int64
	}{
		{nil, 4, nil},
		{[]int64{7}, 4, [][2]int64{{7, 7}}},
		// Unsorted, repeated (repeats share their index); gaps of 3, 4
		// (joined) and 5 (not).
		{[]int64{5, 0, 5, 1, 10, 16}, 4, [][2]int64{{0, 10}, {16, 16}}},
		{[]int64{9, 19, 29}, 4, [][2]int64{{9, 9}, {19, 19}, {29, 29}}},
		{[]int64{9, 19, 29}, 9, [][2]int64{{9, 29}}},
		{[]int64{3, 4, 5, 6}, 0, [][2]int64{{3, 6}}},
	} {
		if got := IndexRanges(tc.in, tc.gap); !slices.Equal(got, tc.want) {
			t.Errorf("IndexRanges(%v, %d) = %v, want %v", tc.in, tc.gap, got, tc.want)
		}
	}
}
