package report

import (
	"math"
	"strconv"
)

// FormatUSD formats a cost in US dollars for people: four decimals from
// $0.001 up ("$0.0123", "$12.5000"), and below that as many as show two
// significant digits ("$0.00020", "$0.0000015"), so that a small but real
// cost never reads "$0.0000". Zero is "$0.0000". The terminal, Markdown
// and viewer renderings and the dry-run estimate all use it.
func FormatUSD(x float64) string {
	decimals := 4
	if a := math.Abs(x); a > 0 && a < 0.001 {
		// Two significant digits, capped where costs stop meaning anything.
		decimals = min(int(math.Ceil(-math.Log10(a)))+1, 12)
	}
	s := strconv.FormatFloat(x, 'f', decimals, 64)
	if s[0] == '-' {
		return "-$" + s[1:]
	}
	return "$" + s
}
