package web

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/suggest"
)

// The bounds of the query parameters. Every number a request carries is
// checked against one of them before it is used, so that no arithmetic on
// it can overflow (page × size, from + size) and no listing is asked for
// more than the server chooses to give.
const (
	// maxPageSize bounds size=, the rows of an items page.
	maxPageSize = 500
	// maxRunsLimit bounds limit=, the runs of the runs list.
	maxRunsLimit = 1000
	// maxPage bounds page=, the page of a sorted items listing: with
	// maxPageSize rows a page, 500 million results.
	maxPage = 1_000_000
	// maxIndex bounds an item index or a repeat (from=, repeat=, the
	// index of an item's URL).
	maxIndex = 1<<31 - 1
	// maxTextParam bounds a text parameter (q=, tag=, id=, scorer=,
	// dataset=) in bytes.
	maxTextParam = 4096
)

// Query parameters of each route; any other is refused (a misspelt filter
// would otherwise be ignored and list everything).
var (
	runsParams  = []string{"dataset", "limit"}
	itemsParams = []string{"failed", "tool_errors", "scorer", "below", "tag", "q", "id", "sort", "from", "page", "size"}
	itemParams  = []string{"repeat"}
	// compareParams are the two runs of /compare and /api/compare.
	compareParams = []string{"a", "b"}
)

// invalidf is a bad-request error whose message is for people: it is
// [evalrun.ErrInvalid] (a 400, exit code 2) without saying "invalid".
var invalidf = evalrun.Invalidf

// badParam is the error of a parameter's value: what it is, what it should
// be.
func badParam(name, value, want string) error {
	return invalidf("bad %s=%q: %s", name, truncateParam(value), want)
}

// checkParams refuses a query with a parameter the route does not take,
// one given twice, or a text longer than maxTextParam.
func checkParams(v url.Values, known []string) error {
	for name, vals := range v {
		if !slices.Contains(known, name) {
			return invalidf("unknown parameter %q%s: this page takes %s", truncateParam(name),
				didYouMean(name, "=", known), listed("only ", known, "no parameters"))
		}
		if len(vals) > 1 {
			return invalidf("parameter %s= given %d times: give it once", name, len(vals))
		}
		if len(vals[0]) > maxTextParam {
			return badParam(name, vals[0], fmt.Sprintf("at most %d bytes", maxTextParam))
		}
	}
	return nil
}

// truncateParam cuts a parameter's name or value quoted in an error.
func truncateParam(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// intParam reads the whole number name= of v, between lo and hi; def when
// absent or empty.
func intParam(v url.Values, name string, lo, hi, def int) (int, error) {
	s := v.Get(name)
	if s == "" {
		return def, nil
	}
	return parseBounded(name, s, lo, hi)
}

// parseBounded parses s, the value of name=, as a whole number between lo
// and hi.
func parseBounded(name, s string, lo, hi int) (int, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < int64(lo) || n > int64(hi) {
		return 0, badParam(name, s, fmt.Sprintf("want a whole number from %d to %d", lo, hi))
	}
	return int(n), nil
}

// boolParam reads the checkbox name= of v: 1, true or on is true; absent,
// empty, 0, false or off is false.
func boolParam(v url.Values, name string) (bool, error) {
	switch s := v.Get(name); strings.ToLower(s) {
	case "1", "true", "on":
		return true, nil
	case "", "0", "false", "off":
		return false, nil
	default:
		return false, badParam(name, s, "want 1 or 0")
	}
}

// checkScorer refuses a scorer name the run does not have, naming those it
// has. param is the parameter that named it.
func checkScorer(run *evalrun.Run, param, name string) error {
	names := make([]string, len(run.Scorers))
	for i, sc := range run.Scorers {
		names[i] = sc.Name
	}
	if slices.Contains(names, name) {
		return nil
	}
	return invalidf("bad %s: run %s has no scorer %q%s; %s", param, run.ID, truncateParam(name),
		didYouMean(name, "", names), listed("its scorers are ", names, "it has no scorers"))
}

// didYouMean returns " (did you mean X<suffix>?)" for the one of known
// that name likely misspells, or "".
func didYouMean(name, suffix string, known []string) string {
	if s := suggest.Nearest(name, known); s != "" {
		return " (did you mean " + s + suffix + "?)"
	}
	return ""
}

// listed returns known after prefix, separated by commas, or none when
// known is empty.
func listed(prefix string, known []string, none string) string {
	if len(known) == 0 {
		return none
	}
	return prefix + strings.Join(known, ", ")
}
