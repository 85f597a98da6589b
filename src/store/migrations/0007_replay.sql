-- What a replay and a resume need that the steps did not keep, and what replays found.
-- `reads`: what a step's agent read from the store as it ran (the facts and
-- recent messages it was given, every ledger call and its outcome), PII as
-- stored, so `switchboard replay` gives a built-in agent the same data.
-- `resumes`: how many times a restarted process resumed the step.
ALTER TABLE tree_steps ADD COLUMN reads TEXT;
ALTER TABLE tree_steps ADD COLUMN resumes BIGINT NOT NULL DEFAULT 0;
-- `pii`: a top step's PII vault, sealed under a key kept outside the
-- database ([pii] seal_key_file): a tree resumed after a restart gives the
-- user their values back; the database holds only tokens and ciphertext.
ALTER TABLE tree_steps ADD COLUMN pii TEXT;

-- One row per replay that was run (CLI or HTTP): the report, to show beside
-- the tree. A replay changes nothing else.
CREATE TABLE replays (
    id           TEXT PRIMARY KEY,
    root_id      TEXT NOT NULL,
    user_id      TEXT NOT NULL,     -- the tree's user
    mode         TEXT NOT NULL,     -- recorded | live
    identical    BIGINT NOT NULL,   -- 1 when every node is the same
    differing    BIGINT NOT NULL,   -- nodes that differ
    nodes        BIGINT NOT NULL,
    report       TEXT NOT NULL,     -- the report as JSON
    run_by       TEXT NOT NULL,     -- the principal's label
    created_at   BIGINT NOT NULL
);
CREATE INDEX replays_root ON replays (root_id, created_at);
