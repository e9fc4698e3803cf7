// Package dataset reads dataset files (JSONL, a JSON array, CSV) into
// [evalrun.Item] values, and plans how a store records a new version of a
// dataset (see [PlanVersion]) so that every backend versions alike.
//
// A file is read whole or not at all: the first problem (a malformed line, a
// duplicate id, a missing input, an unknown top-level key) rejects it with an
// error of the form "file:line: reason" that wraps [evalrun.ErrInvalid].
package dataset
