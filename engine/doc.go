// Package engine runs a dataset against a target in-process: bounded
// fan-out, per-item deadlines that hold even when a target ignores its
// context, transient-only retries with back-off, scorers in parallel and
// isolated from one another, an asynchronous batched result writer, results
// in input order and a summary that is returned on completion, on cancel
// and on fatal error alike.
//
// [Run] is the entry point for a whole run. Its items are a slice
// (Spec.Items) or an [ItemSource] that streams them (Spec.Source;
// [DatasetSource] reads a stored dataset version page by page), read as
// workers take them; [IndexedItems] serves the same sequence by index with
// a bounded page cache, for distributed workers. [Pipeline] is the per-item part
// (execute with deadline and retries, then score), which the distributed
// worker calls for one item at a time.
//
// The guarantees, each proved by a test in this package:
//   - an item never runs longer than Options.ItemTimeout, retries and
//     back-off included, and its slot is then freed;
//   - cancelling ctx stops new items, cancels in-flight ones (which count as
//     skipped and are not stored, so a resume runs them again) and still
//     returns a summary with Succeeded + Failed + Skipped = Total;
//   - only transient errors are retried, at most MaxRetries times;
//   - a panic, NaN or out-of-range score is an error of that scorer alone;
//   - a slow or failing store never stops execution: writes are batched
//     off the hot path, retried, then counted in PersistErrors;
//   - the counts written to the store equal the summary's;
//   - a run from an [ItemSource] holds at most concurrency + the writer's
//     bound items at once, whatever the dataset's size.
package engine
