// Package report turns the results of a run into a [Report] and renders it.
//
// A [Builder] aggregates results in one pass, in the order the engine or a
// store yields them (index, then repeat): per-scorer counts, errors, mean,
// median, 95th percentile, pass rate and a ten-bucket histogram; the same per
// cohort (metadata.tags); usage and latency with "reported" counts; every
// target and scorer error; an adversarial block; and the per-item rows.
// When the run has repeats it also reduces each scorer over each item's
// repeats (pass@k, pass^k) and lists the flaky items ([RepeatStats]); it
// counts cache hits.
// [FromStore] builds the same report streamed from a [evalrun.RunStore].
//
// The arithmetic is fixed so that two tools can agree on it (see
// docs/report-schema.md):
//
//   - a percentile interpolates linearly between the closest ranks: with the
//     n scores sorted, rank = p·(n−1), so the p95 of 0, .25, .5, .75, 1 is
//     0.95;
//   - a histogram bucket is chosen after rounding the score (and the bucket
//     edges) to 9 decimals, so 0.7−0.4 lands in [0.3, 0.4) and 1.0 in the
//     last bucket;
//   - a number that cannot be computed (no scores) is nil, JSON null, never 0.
//
// Renderers: [WriteJSON] (the versioned contract, schema_version 3, validated
// against docs/report.schema.json in tests), [WriteMarkdown] (PR comments and
// CI step summaries), [WriteJUnit] (one test case per item),
// [WriteTerminal] (an aligned summary for people) and [WriteHTML] (one
// self-contained page: inline CSS and SVG, no script, no reference out of
// the file, everything from the run escaped by html/template). For a run
// too big to hold, build the report [WithoutItems] and write it with
// [WriteStream] ([WriteJSONStream], [WriteJUnitStream], [WriteHTMLStream]):
// the item rows are read from the store one at a time while they are
// written, the output byte for byte the same.
//
// [Compare] pairs the items of two reports by item id and repeat and gives,
// per scorer, the mean delta with a paired bootstrap confidence interval and
// an exact sign-test p-value, and the items that regressed or improved.
//
// [ParseCondition] parses a fail_on threshold such as
// "pass_rate(exact_match) < 0.9"; [Evaluate] checks conditions against a
// report.
package report
