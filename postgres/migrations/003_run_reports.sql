-- evalrun schema, version 3 (PostgreSQL): the final JSON report of a run
-- (evalrun.ReportStore), so that viewers read one value instead of scanning
-- every result. One report per run, replaced on put. bytea, not jsonb: the
-- report comes back byte for byte.
CREATE TABLE run_reports (
	run_id     text PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
	report     bytea NOT NULL,
	created_at timestamptz NOT NULL
);
