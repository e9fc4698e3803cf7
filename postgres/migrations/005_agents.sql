-- evalrun schema, version 5 (PostgreSQL): agents. An item's tool_mocks and
-- expected_trajectory, and a result's trajectory ({"steps", "calls"}).
-- bytea, not jsonb: they come back byte for byte, and a tool's output may
-- hold \u0000, which jsonb refuses. NULL is absent (an item without the
-- key, a target that is not an agent); an empty list ([]) is kept apart
-- from it. Rows stored before this version read back without them.
ALTER TABLE dataset_items ADD COLUMN tool_mocks bytea,
	ADD COLUMN expected_trajectory bytea;
ALTER TABLE results ADD COLUMN trajectory bytea;
