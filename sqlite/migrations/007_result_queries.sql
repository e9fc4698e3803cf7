-- evalrun schema, version 7 (SQLite): what the viewer's result queries
-- (evalrun.ResultPager) need to sort, filter and page a 100,000-result run
-- in SQL with keyset pagination, reading narrow indexes instead of the
-- results' rows (whose outputs make them ~1 KB of leaf each).
--
-- Latency sort (ties by idx, rep), and the results of one item (id=).
CREATE INDEX results_latency ON results (run_id, latency_ns, idx, rep);
CREATE INDEX results_item ON results (run_id, item_id, idx, rep);
-- The failed results: few, found without reading the others.
CREATE INDEX results_failed ON results (run_id, idx, rep) WHERE error <> '';

-- score_keys: one row per result and scorer of its run, the score a score
-- sort orders by: the result's first score by that scorer, -Inf when it
-- has none or its score is null (missing scores sort lowest). WriteResults
-- keeps it with the scores. A descending sort reads the same index
-- backwards and sorts each run of equal scores by (idx, rep) ascending: a
-- second, descending index would spare that sort but cost every write
-- one more index entry per result and scorer.
CREATE TABLE score_keys (
	run_id TEXT NOT NULL,
	scorer TEXT NOT NULL,
	score  REAL NOT NULL,
	idx    INTEGER NOT NULL,
	rep    INTEGER NOT NULL,
	PRIMARY KEY (run_id, scorer, score, idx, rep)
) STRICT, WITHOUT ROWID;

INSERT OR IGNORE INTO score_keys (run_id, scorer, score, idx, rep)
SELECT r.run_id, sc.value ->> '$.name',
	COALESCE((SELECT s.score FROM scores s WHERE s.run_id = r.run_id AND s.idx = r.idx AND s.rep = r.rep
		AND s.scorer = sc.value ->> '$.name' ORDER BY s.pos LIMIT 1), -1e999),
	r.idx, r.rep
FROM results r JOIN runs u ON u.id = r.run_id, json_each(CAST(u.scorers AS TEXT)) sc;

-- item_tags: the tags of a dataset_items row (metadata.tags, a string or
-- the strings of a list), for tag= filters; a trigger fills it as items
-- are stored.
CREATE TABLE item_tags (
	tag      TEXT NOT NULL,
	item_row INTEGER NOT NULL,
	PRIMARY KEY (tag, item_row)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER item_tags_insert AFTER INSERT ON dataset_items
WHEN NEW.metadata IS NOT NULL AND json_valid(CAST(NEW.metadata AS TEXT))
BEGIN
	INSERT OR IGNORE INTO item_tags (tag, item_row)
	SELECT t.value, NEW.id FROM json_each(CAST(NEW.metadata AS TEXT), '$.tags') t WHERE t.type = 'text';
END;

INSERT OR IGNORE INTO item_tags (tag, item_row)
SELECT t.value, i.id FROM dataset_items i, json_each(CAST(i.metadata AS TEXT), '$.tags') t
WHERE i.metadata IS NOT NULL AND json_valid(CAST(i.metadata AS TEXT)) AND t.type = 'text';
