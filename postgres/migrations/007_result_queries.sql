-- evalrun schema, version 7 (PostgreSQL): what the viewer's result queries
-- (evalrun.ResultPager) need to sort, filter and page a 100,000-result run
-- in SQL with keyset pagination, reading narrow indexes instead of the
-- results' rows.
--
-- Latency sort (ties by idx, rep), and the results of one item (id=).
CREATE INDEX results_latency ON results (run_id, latency_ns, idx, rep);
CREATE INDEX results_item ON results (run_id, item_id, idx, rep);
-- The failed results: few, found without reading the others.
CREATE INDEX results_failed ON results (run_id, idx, rep) WHERE error <> '';

-- score_keys: one row per result and scorer of its run, the score a score
-- sort orders by: the result's first score by that scorer, -Infinity when
-- it has none or its score is null (missing scores sort lowest).
-- WriteResults keeps it with the scores. A descending sort reads the same
-- index backwards and sorts each run of equal scores by (idx, rep)
-- ascending (an incremental sort): a second, descending index would spare
-- that sort but cost every write one more index entry per result and
-- scorer.
CREATE TABLE score_keys (
	run_id text NOT NULL,
	scorer text NOT NULL,
	score  double precision NOT NULL,
	idx    integer NOT NULL,
	rep    integer NOT NULL,
	PRIMARY KEY (run_id, scorer, score, idx, rep)
);

INSERT INTO score_keys (run_id, scorer, score, idx, rep)
SELECT r.run_id, sc ->> 'name',
	COALESCE((SELECT s.score FROM scores s WHERE s.run_id = r.run_id AND s.idx = r.idx AND s.rep = r.rep
		AND s.scorer = sc ->> 'name' ORDER BY s.pos LIMIT 1), '-Infinity'),
	r.idx, r.rep
FROM results r JOIN runs u ON u.id = r.run_id, jsonb_array_elements(u.scorers) sc
ON CONFLICT DO NOTHING;

-- item_tags: the tags of a dataset_items row (metadata.tags, a string or
-- the strings of a list), for tag= filters; a trigger fills it as items
-- are stored. Metadata that is not JSON jsonb takes (a \u0000 in it) has
-- no tags here.
CREATE TABLE item_tags (
	tag      text NOT NULL,
	item_row bigint NOT NULL,
	PRIMARY KEY (tag, item_row)
);

CREATE FUNCTION evalrun_item_tags(meta bytea) RETURNS SETOF text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	tags jsonb;
BEGIN
	IF meta IS NULL THEN
		RETURN;
	END IF;
	BEGIN
		tags := convert_from(meta, 'UTF8')::jsonb -> 'tags';
	EXCEPTION WHEN OTHERS THEN
		RETURN;
	END;
	IF jsonb_typeof(tags) = 'string' THEN
		RETURN NEXT tags #>> '{}';
	ELSIF jsonb_typeof(tags) = 'array' THEN
		RETURN QUERY SELECT e #>> '{}' FROM jsonb_array_elements(tags) e WHERE jsonb_typeof(e) = 'string';
	END IF;
END;
$$;

CREATE FUNCTION evalrun_item_tags_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO item_tags (tag, item_row)
	SELECT t, NEW.id FROM evalrun_item_tags(NEW.metadata) t ON CONFLICT DO NOTHING;
	RETURN NULL;
END;
$$;

CREATE TRIGGER item_tags_insert AFTER INSERT ON dataset_items
FOR EACH ROW EXECUTE FUNCTION evalrun_item_tags_insert();

INSERT INTO item_tags (tag, item_row)
SELECT t, i.id FROM dataset_items i, evalrun_item_tags(i.metadata) t
ON CONFLICT DO NOTHING;
