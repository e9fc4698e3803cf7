package report

import "testing"

func TestFormatUSD(t *testing.T) {
	for _, tt := range []struct {
		x    float64
		want string
	}{
		{0, "$0.0000"},
		{0.00005, "$0.000050"}, // printed "$0.0000" before
		{0.0002, "$0.00020"},
		{0.00099, "$0.00099"},
		{0.0000015, "$0.0000015"},
		{0.001, "$0.0010"},
		{0.0123456, "$0.0123"},
		{12.5, "$12.5000"},
		{-0.00005, "-$0.000050"},
		{1e-20, "$0.000000000000"},
	} {
		if got := FormatUSD(tt.x); got != tt.want {
			t.Errorf("FormatUSD(%v) = %q, want %q", tt.x, got, tt.want)
		}
	}
}
