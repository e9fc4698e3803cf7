-- evalrun schema, version 4 (PostgreSQL): the claim of the process
-- executing a run (evalrun.RunStore.ClaimRun), so that two resumes of one
-- run never both execute it. claimed_by is the owner's token ('' when
-- unclaimed); after claim_expires another process may take the run over
-- (its owner died without releasing it).
ALTER TABLE runs ADD COLUMN claimed_by text NOT NULL DEFAULT '',
	ADD COLUMN claim_expires timestamptz;
