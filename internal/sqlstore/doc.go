// Package sqlstore holds what evalrun's SQL stores (sqlite, postgres) do
// alike whatever their dialect: loading the embedded, numbered schema
// migrations, decoding item metadata through a small cache, putting a batch
// of results and their scores in order, resolving a dataset version, and
// the settable clock of the response cache. The SQL itself, and how each
// backend applies migrations and takes its locks, stay in the backends.
package sqlstore
