-- evalrun schema, version 6 (PostgreSQL): experiments (several variants of
-- a suite run side by side). A run of an experiment carries the
-- experiment's id, its variant's name and the variant's place in the
-- suite's variants list; an experiment is not stored apart
-- (evalrun.GetExperiment gathers its runs). '' is a run on its own, as
-- every run stored before this version reads back (a constant default: no
-- table rewrite). Set when the run is created; never updated.
ALTER TABLE runs ADD COLUMN experiment_id text NOT NULL DEFAULT '',
	ADD COLUMN variant text NOT NULL DEFAULT '',
	ADD COLUMN variant_index integer NOT NULL DEFAULT 0;
-- Partial indexes: runs on their own, most of them, cost them nothing.
-- runs_experiment finds one experiment's runs; runs_in_experiment lists
-- the runs of every experiment newest first (the experiments list). Queries
-- repeat the literal condition experiment_id <> '' so that the planner
-- knows they apply.
CREATE INDEX runs_experiment ON runs (experiment_id, created_at, id) WHERE experiment_id <> '';
CREATE INDEX runs_in_experiment ON runs (created_at, id) WHERE experiment_id <> '';
