-- evalrun schema, version 5 (SQLite): agents. An item's tool_mocks and
-- expected_trajectory, and a result's trajectory ({"steps", "calls"}), as
-- JSON BLOBs, byte for byte. NULL is absent (an item without the key, a
-- target that is not an agent); an empty list ([]) is kept apart from it.
-- Rows stored before this version read back without them.
ALTER TABLE dataset_items ADD COLUMN tool_mocks BLOB;
ALTER TABLE dataset_items ADD COLUMN expected_trajectory BLOB;
ALTER TABLE results ADD COLUMN trajectory BLOB;
