-- evalrun schema, version 1 (PostgreSQL). JSON values that must come back
-- byte for byte (inputs, outputs, run config) are bytea.

CREATE TABLE datasets (
	name           text PRIMARY KEY,
	latest_version integer NOT NULL,
	item_count     integer NOT NULL,
	created_at     timestamptz NOT NULL,
	updated_at     timestamptz NOT NULL
);

CREATE TABLE dataset_versions (
	dataset    text NOT NULL REFERENCES datasets (name),
	version    integer NOT NULL,
	created_at timestamptz NOT NULL,
	item_count integer NOT NULL,
	added      integer NOT NULL,
	changed    integer NOT NULL,
	removed    integer NOT NULL,
	PRIMARY KEY (dataset, version)
);

-- Item history: one row per version of an item, valid in the dataset
-- versions [valid_from, valid_to); valid_to is NULL while the row is in the
-- latest version. A version lists its rows by ord (see dataset.PlanVersion).
CREATE TABLE dataset_items (
	id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	dataset    text NOT NULL,
	item_id    text NOT NULL,
	valid_from integer NOT NULL,
	valid_to   integer,
	ord        bytea NOT NULL,
	hash       bytea NOT NULL,
	input      bytea NOT NULL,
	expected   bytea,
	metadata   bytea
);
CREATE INDEX dataset_items_order ON dataset_items (dataset, ord);
CREATE INDEX dataset_items_item ON dataset_items (dataset, item_id, valid_from);

CREATE TABLE runs (
	id              text PRIMARY KEY,
	name            text NOT NULL,
	dataset         text NOT NULL,
	dataset_version integer NOT NULL,
	target          jsonb NOT NULL,
	scorers         jsonb NOT NULL,
	config          bytea,
	status          text NOT NULL,
	total           integer NOT NULL,
	succeeded       integer NOT NULL,
	failed          integer NOT NULL,
	skipped         integer NOT NULL,
	persist_errors  integer NOT NULL,
	error           text NOT NULL,
	created_at      timestamptz NOT NULL,
	started_at      timestamptz,
	completed_at    timestamptz
);
CREATE INDEX runs_created ON runs (created_at, id);
CREATE INDEX runs_dataset ON runs (dataset, created_at, id);

-- Results are keyed by (run, item index, repeat); a rewrite replaces.
CREATE TABLE results (
	run_id        text NOT NULL,
	idx           integer NOT NULL,
	rep           integer NOT NULL,
	item_id       text NOT NULL,
	output        bytea,
	error         text NOT NULL,
	error_kind    text NOT NULL,
	attempts      integer NOT NULL,
	retry_count   integer NOT NULL,
	latency_ns    bigint NOT NULL,
	input_tokens  bigint,
	output_tokens bigint,
	cost_usd      double precision,
	trace_id      text NOT NULL,
	cache_hit     boolean NOT NULL,
	started_at    timestamptz,
	completed_at  timestamptz,
	PRIMARY KEY (run_id, idx, rep)
);

-- Scores of a result, pos being the score's place in the written result.
CREATE TABLE scores (
	run_id        text NOT NULL,
	idx           integer NOT NULL,
	rep           integer NOT NULL,
	pos           integer NOT NULL,
	scorer        text NOT NULL,
	score         double precision,
	passed        boolean NOT NULL,
	reason        text NOT NULL,
	error         text NOT NULL,
	error_kind    text NOT NULL,
	input_tokens  bigint,
	output_tokens bigint,
	cost_usd      double precision,
	PRIMARY KEY (run_id, idx, rep, pos)
);
