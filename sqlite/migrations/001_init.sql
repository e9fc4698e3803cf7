-- evalrun schema, version 1 (SQLite). Times are Unix microseconds (UTC);
-- NULL is the zero time. JSON values are stored as BLOBs, byte for byte.

CREATE TABLE datasets (
	name           TEXT PRIMARY KEY,
	latest_version INTEGER NOT NULL,
	item_count     INTEGER NOT NULL,
	created_at     INTEGER NOT NULL,
	updated_at     INTEGER NOT NULL
) STRICT;

CREATE TABLE dataset_versions (
	dataset    TEXT NOT NULL REFERENCES datasets (name),
	version    INTEGER NOT NULL,
	created_at INTEGER NOT NULL,
	item_count INTEGER NOT NULL,
	added      INTEGER NOT NULL,
	changed    INTEGER NOT NULL,
	removed    INTEGER NOT NULL,
	PRIMARY KEY (dataset, version)
) STRICT, WITHOUT ROWID;

-- Item history: one row per version of an item, valid in the dataset
-- versions [valid_from, valid_to); valid_to is NULL while the row is in the
-- latest version. A version lists its rows by ord (see dataset.PlanVersion).
CREATE TABLE dataset_items (
	id         INTEGER PRIMARY KEY,
	dataset    TEXT NOT NULL,
	item_id    TEXT NOT NULL,
	valid_from INTEGER NOT NULL,
	valid_to   INTEGER,
	ord        BLOB NOT NULL,
	hash       BLOB NOT NULL,
	input      BLOB NOT NULL,
	expected   BLOB,
	metadata   BLOB
) STRICT;
CREATE INDEX dataset_items_order ON dataset_items (dataset, ord);
CREATE INDEX dataset_items_item ON dataset_items (dataset, item_id, valid_from);

CREATE TABLE runs (
	id              TEXT PRIMARY KEY,
	name            TEXT NOT NULL,
	dataset         TEXT NOT NULL,
	dataset_version INTEGER NOT NULL,
	target          BLOB NOT NULL,
	scorers         BLOB NOT NULL,
	config          BLOB,
	status          TEXT NOT NULL,
	total           INTEGER NOT NULL,
	succeeded       INTEGER NOT NULL,
	failed          INTEGER NOT NULL,
	skipped         INTEGER NOT NULL,
	persist_errors  INTEGER NOT NULL,
	error           TEXT NOT NULL,
	created_at      INTEGER NOT NULL,
	started_at      INTEGER,
	completed_at    INTEGER
) STRICT;
CREATE INDEX runs_created ON runs (created_at, id);
CREATE INDEX runs_dataset ON runs (dataset, created_at, id);

-- Results are keyed by (run, item index, repeat); a rewrite replaces.
CREATE TABLE results (
	run_id        TEXT NOT NULL,
	idx           INTEGER NOT NULL,
	rep           INTEGER NOT NULL,
	item_id       TEXT NOT NULL,
	output        BLOB,
	error         TEXT NOT NULL,
	error_kind    TEXT NOT NULL,
	attempts      INTEGER NOT NULL,
	retry_count   INTEGER NOT NULL,
	latency_ns    INTEGER NOT NULL,
	input_tokens  INTEGER,
	output_tokens INTEGER,
	cost_usd      REAL,
	trace_id      TEXT NOT NULL,
	cache_hit     INTEGER NOT NULL,
	started_at    INTEGER,
	completed_at  INTEGER,
	PRIMARY KEY (run_id, idx, rep)
) STRICT, WITHOUT ROWID;

-- Scores of a result, pos being the score's place in the written result.
CREATE TABLE scores (
	run_id        TEXT NOT NULL,
	idx           INTEGER NOT NULL,
	rep           INTEGER NOT NULL,
	pos           INTEGER NOT NULL,
	scorer        TEXT NOT NULL,
	score         REAL,
	passed        INTEGER NOT NULL,
	reason        TEXT NOT NULL,
	error         TEXT NOT NULL,
	error_kind    TEXT NOT NULL,
	input_tokens  INTEGER,
	output_tokens INTEGER,
	cost_usd      REAL,
	PRIMARY KEY (run_id, idx, rep, pos)
) STRICT, WITHOUT ROWID;
