// Package scorer holds evalrun's built-in scorers. Each is an
// [evalrun.Scorer] and an [evalrun.Thresholder], safe for concurrent use,
// built either from a suite file's scorers entry ([Config], through [New])
// or from Go code with its own constructor (NewExactMatch and so on).
//
// Every scorer gives a score in [0,1] and a reason. Configuration is
// checked when the scorer is built, never while it runs: an unknown kind, a
// key of another kind, a threshold outside [0,1], an invalid regex, schema or
// expression are a *[ConfigError], which matches [evalrun.ErrInvalid].
// While scoring, a scorer never clamps a bad value: a NaN, a number outside
// [0,1] or a non-number is an error of kind invalid_output, and a scorer
// that needs the expected output of an item that has none fails with an
// error matching [ErrNoExpected]. The scorers over an agent's tool calls
// fail with [ErrNoTrajectory] for a target that recorded no trajectory, and
// trajectory with [ErrNoExpectedTrajectory] for an item that expects none.
//
// Values are compared as [evalrun.EqualValues] does: a JSON string as its
// text, anything else as canonical JSON. "The output's text" is
// [evalrun.Text] of the output: a string's text, or the compact JSON of any
// other value.
//
// Every kind takes name (default: the kind) and threshold (default 0.5).
// The kinds and their other keys:
//
//   - exact_match: case_sensitive (true), trim (false). 1 when output equals
//     expected, else 0.
//   - contains: values (a string or a list; default: the expected output's
//     text), mode (any | all; any), case_sensitive (true). 1 when the
//     output's text contains any / all of the values.
//   - regex: pattern (Go RE2 syntax; required). 1 when it matches somewhere
//     in the output's text.
//   - json_valid: 1 when the output is JSON; a string output whose text is
//     JSON counts.
//   - json_schema: schema (inline object) or schema_file (relative to the
//     suite's directory). 1 when the output (or the JSON in a string
//     output) validates.
//   - json_equal: 1 when output and expected are the same JSON value; key
//     order and spacing do not matter, and JSON carried in a string is
//     parsed.
//   - levenshtein: case_sensitive (true), trim (false). 1 − edit distance /
//     max length, in runes.
//   - numeric: tolerance (0), relative (false). 1 when |output − expected|
//     ≤ tolerance (× |expected| when relative); both sides are numbers or
//     numeric strings.
//   - expr: expression (expr-lang, over input, output, expected, metadata,
//     trajectory and steps; required). A bool gives 1 or 0, a number in
//     [0,1] is the score.
//   - tool_called: tool (required), args (a mapping, matched as a subset),
//     count (exactly N matching calls), never (no matching call; conflicts
//     with count). 1 when the agent's trajectory has a matching call.
//   - trajectory: mode (exact | in_order | any_order | subset | f1;
//     in_order). The calls made against the item's expected_trajectory;
//     1 or 0, or the F1 of the matched calls; the reason gives precision
//     and recall.
//   - llm_judge: rubric (required), model, base_url, api_key_env,
//     rate_limit, max_tokens, max_retries, retry_delay. A chat model grades
//     the output with temperature 0, seed 42 and a JSON reply
//     {"score", "reason"}; a malformed reply is an error, never retried.
//   - embedding_similarity: model, base_url, api_key_env, rate_limit,
//     max_retries, retry_delay. The cosine of the output's and the expected
//     output's embeddings, negatives clamped to 0; expected embeddings are
//     cached for the scorer's lifetime.
//   - exec: command (required), env, dir, timeout (30s), persistent
//     (false), processes (1). A program in any language gets the item and
//     output as JSON and answers a number or {"score", "reason"}; one
//     process per scoring, or with persistent one process (or a pool) for
//     the run answering one JSON line per request. See [Exec].
//   - http: url (required), method (POST), headers, timeout (30s),
//     max_retries, retry_delay. The same JSON POSTed to a grading service,
//     retried like the http target. See [HTTP].
//
// The model-backed kinds get their models from [Deps]; the http kind is
// the only one that talks to a network service itself.
package scorer
