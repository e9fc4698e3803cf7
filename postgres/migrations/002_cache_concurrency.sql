-- evalrun schema, version 2 (PostgreSQL): the settled concurrency of a run
-- and the response cache. Results already keep cache_hit (version 1).

-- The effective concurrency the run settled at; 0 until the run ends (and
-- for runs stored before this version).
ALTER TABLE runs ADD COLUMN concurrency integer NOT NULL DEFAULT 0;

-- The opt-in response cache (evalrun.ResponseCache): one value per key,
-- replaced on put. expires_at is NULL for a value that never expires; a
-- value is a miss from expires_at on.
CREATE TABLE response_cache (
	key        text PRIMARY KEY,
	value      bytea NOT NULL,
	created_at timestamptz NOT NULL,
	expires_at timestamptz
);
CREATE INDEX response_cache_expires ON response_cache (expires_at) WHERE expires_at IS NOT NULL;
