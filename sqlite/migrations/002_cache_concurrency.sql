-- evalrun schema, version 2 (SQLite): the settled concurrency of a run and
-- the response cache. Results already keep cache_hit (version 1).

-- The effective concurrency the run settled at; 0 until the run ends (and
-- for runs stored before this version).
ALTER TABLE runs ADD COLUMN concurrency INTEGER NOT NULL DEFAULT 0;

-- The opt-in response cache (evalrun.ResponseCache): one value per key,
-- replaced on put. expires_at (Unix microseconds) is NULL for a value that
-- never expires; a value is a miss from expires_at on. A rowid table, not
-- WITHOUT ROWID: values may be megabytes.
CREATE TABLE response_cache (
	key        TEXT PRIMARY KEY,
	value      BLOB NOT NULL,
	created_at INTEGER NOT NULL,
	expires_at INTEGER
) STRICT;
CREATE INDEX response_cache_expires ON response_cache (expires_at) WHERE expires_at IS NOT NULL;
