package scorer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/evalrun/evalrun"
)

// ErrNoExpected is matched (errors.Is) by the error of a scorer that needs
// the item's expected output when the item has none (absent or null).
var ErrNoExpected = errors.New("no expected_output")

// missingExpectedError says which scorer needed what, for which item.
type missingExpectedError struct {
	kind, item string
}

func (e *missingExpectedError) Error() string {
	item := "the item"
	if e.item != "" {
		item = "item " + e.item
	}
	return fmt.Sprintf("%s needs expected_output; %s has none", e.kind, item)
}

func (e *missingExpectedError) Is(target error) bool { return target == ErrNoExpected }

// expected returns the item's expected output, or a permanent error naming
// the scorer kind and the item when there is none.
func expected(kind string, in evalrun.ScoreInput) (json.RawMessage, error) {
	var id string
	if in.Item != nil {
		id = in.Item.ID
		if e := bytes.TrimSpace(in.Item.Expected); len(e) > 0 && !bytes.Equal(e, []byte("null")) {
			return e, nil
		}
	}
	return nil, evalrun.Permanent(&missingExpectedError{kind: kind, item: id})
}

// invalidOutput returns a scorer error of kind invalid_output.
func invalidOutput(format string, args ...any) error {
	return evalrun.Errorf(evalrun.ErrorInvalidOutput, format, args...)
}

// checkValue returns an invalid_output error unless v is a number in
// [0,1].
func checkValue(kind string, v float64) error {
	if math.IsNaN(v) {
		return invalidOutput("%s: score is NaN", kind)
	}
	if v < 0 || v > 1 {
		return invalidOutput("%s: score %v is outside [0,1]", kind, v)
	}
	return nil
}

// isString reports whether raw (already trimmed) is a JSON string.
func isString(raw []byte) bool { return len(raw) > 0 && raw[0] == '"' }

// text returns what people compare of raw (see [evalrun.Text]), without
// decoding when raw is a JSON string with no escapes.
func text(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if s, ok := plainString(raw); ok {
		return s
	}
	return evalrun.Text(raw)
}

// plainString returns the text of raw when it is a JSON string without
// escape sequences (see [plainBody]).
func plainString(raw []byte) (string, bool) {
	body, ok := plainBody(raw)
	return string(body), ok
}

// plainBody returns the bytes between the quotes of raw when raw is a JSON
// string without escape sequences: then those bytes are its text.
func plainBody(raw []byte) ([]byte, bool) {
	n := len(raw)
	if n < 2 || raw[0] != '"' || raw[n-1] != '"' {
		return nil, false
	}
	body := raw[1 : n-1]
	for _, c := range body {
		// An escape, a quote or a control character (which JSON requires
		// escaped) needs the decoder.
		if c == '\\' || c == '"' || c < 0x20 {
			return nil, false
		}
	}
	if !utf8.Valid(body) {
		return nil, false
	}
	return body, true
}

// jsonOf returns the JSON that raw denotes for JSON comparisons: the text
// of a JSON string when that text is itself valid JSON (targets often return
// JSON as text), and raw otherwise.
func jsonOf(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if isString(raw) {
		if t := text(raw); json.Valid([]byte(t)) {
			return json.RawMessage(t)
		}
	}
	return raw
}

// quote returns s quoted and shortened for a reason string.
func quote(s string) string {
	const max = 80
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = string(r[:max]) + "…"
	}
	return strconv.Quote(s)
}

// passFail returns the score of a boolean verdict.
func passFail(ok bool, reason string) evalrun.Score {
	if ok {
		return evalrun.Score{Value: 1, Reason: reason}
	}
	return evalrun.Score{Value: 0, Reason: reason}
}
