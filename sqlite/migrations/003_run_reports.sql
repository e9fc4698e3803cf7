-- evalrun schema, version 3 (SQLite): the final JSON report of a run
-- (evalrun.ReportStore), so that viewers read one value instead of scanning
-- every result. One report per run, replaced on put; created_at is Unix
-- microseconds. A rowid table, not WITHOUT ROWID: a report with item rows
-- may be megabytes.
CREATE TABLE run_reports (
	run_id     TEXT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
	report     BLOB NOT NULL,
	created_at INTEGER NOT NULL
) STRICT;
