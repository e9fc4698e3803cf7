-- evalrun schema, version 4 (SQLite): the claim of the process executing a
-- run (evalrun.RunStore.ClaimRun), so that two resumes of one run never
-- both execute it. claimed_by is the owner's token ('' when unclaimed);
-- claim_expires is Unix microseconds, after which another process may take
-- the run over (its owner died without releasing it).
ALTER TABLE runs ADD COLUMN claimed_by TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN claim_expires INTEGER;
