// Package target implements the built-in targets that need no external SDK:
// [HTTP] (any JSON HTTP endpoint), [Exec] (a local program), [WorkflowTarget]
// (ordered steps and guards, or a Go-defined [Workflow]), [ScorerTarget] (a
// scorer under calibration) and [Echo]. It also holds what targets and model
// clients share: the HTTP error classifier ([ClassifyHTTP],
// [ClassifyTransport], [ClassifyStatus], [ParseRetryAfter]), item templates
// ([Template]) and rate limits ([RateLimited], [ParseRate]).
//
// # Error classes
//
// Every error a target of this package returns is an *[evalrun.Error]:
//
//   - transient (retried by the engine): connection refused or reset, an
//     unexpected EOF, a single attempt's timeout (context.DeadlineExceeded or
//     a network timeout), HTTP 408, 429 and 5xx. A Retry-After header (in
//     seconds or an HTTP date) is carried in [evalrun.Error.RetryAfter].
//   - permanent (never retried): other 4xx and 3xx statuses, a malformed 2xx
//     response (invalid JSON, the output path not found), an oversized
//     response ([ErrResponseTooLarge]), invalid UTF-8 ([ErrInvalidUTF8]), a
//     non-zero exit status.
//   - canceled: the caller's context was cancelled (not a deadline).
//   - tripwire: a workflow guard stopped the item.
//   - invalid_output: a scorer target produced a NaN, an infinity or a score
//     outside [0,1].
//
// # Invalid UTF-8
//
// A target's output is raw JSON, and JSON text is UTF-8 (RFC 8259 §8.1); the
// stores and reports rely on it. Output bytes that are not valid UTF-8 are
// therefore never passed on, neither silently replaced by U+FFFD nor kept as
// invalid JSON: the item fails with a permanent error that wraps
// [ErrInvalidUTF8] and gives the offset of the first bad byte. This holds for
// HTTP bodies, a program's standard output and (in package openai) model
// replies.
package target
