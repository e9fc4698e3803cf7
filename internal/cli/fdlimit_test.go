package cli

import "testing"

func TestClampToOpenFiles(t *testing.T) {
	for _, tc := range []struct {
		concurrency int
		kind        string
		limit       uint64
		want        int
		lowered     bool
	}{
		{1000, "http", 1024, 480, true},    // (1024-64)/2
		{1000, "openai", 128, 32, true},    // (128-64)/2
		{1000, "exec", 1024, 106, true},    // (1024-64)/9
		{400, "http", 1024, 400, false},    // fits
		{480, "http", 1024, 480, false},    // exactly fits
		{10, "http", 32, 1, true},          // a limit below the reserve still runs one
		{10000, "echo", 256, 10000, false}, // echo holds no file
		{10000, "outputs", 256, 10000, false},
		{10000, "http", 0, 10000, false}, // unknown limit
		{5, "http", 1 << 62, 5, false},   // huge limit
	} {
		got, lowered := clampToOpenFiles(tc.concurrency, tc.kind, tc.limit)
		if got != tc.want || lowered != tc.lowered {
			t.Errorf("clampToOpenFiles(%d, %s, %d) = %d, %v; want %d, %v", tc.concurrency, tc.kind, tc.limit, got, lowered, tc.want, tc.lowered)
		}
	}
}
