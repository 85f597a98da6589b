-- Durable trees. Every admitted delegation is a step, written before its
-- agent runs and again when it ends (in the transaction of its record), so
-- a restarted process knows which trees were in flight, what each finished
-- step answered (a resumed parent gets it back without running it again)
-- and when each tree's deadline passes. Envelopes and answers are stored as
-- the agents saw them: PII redacted.
CREATE TABLE tree_steps (
    request_id   TEXT PRIMARY KEY,  -- a child's id is derived from its parent's and its place in it
    root_id      TEXT NOT NULL,
    parent_id    TEXT,
    user_id      TEXT NOT NULL,
    target       TEXT NOT NULL,
    state        TEXT NOT NULL,     -- running | waiting | done | failed | cancelled
    entry        TEXT NOT NULL,     -- user | delegation | remote | child
    caller       TEXT NOT NULL,     -- the principal it came from (kind:subject)
    request      TEXT NOT NULL,     -- the envelope as JSON, PII redacted
    response     TEXT,              -- the answer as JSON once it ended or waits
    deadline_at  BIGINT NOT NULL,   -- epoch ms: a restart does not restart the clock
    budget       BIGINT NOT NULL,   -- tokens granted to it (its subtree included)
    attempts     BIGINT NOT NULL,   -- attempts made, once it ended
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX tree_steps_root ON tree_steps (root_id);
CREATE INDEX tree_steps_open ON tree_steps (state, entry);

-- A person's yes or no to an action an agent may take only with approval
-- (`requires_approval`). The node that asked waits (step state `waiting`);
-- a decision is taken once.
CREATE TABLE approvals (
    id           TEXT PRIMARY KEY,
    root_id      TEXT NOT NULL,
    request_id   TEXT NOT NULL,     -- the waiting node
    user_id      TEXT NOT NULL,
    agent        TEXT NOT NULL,
    action       TEXT NOT NULL,     -- e.g. send_email
    summary      TEXT NOT NULL,     -- what would be done, PII redacted
    state        TEXT NOT NULL,     -- pending | approved | rejected | expired
    reason       TEXT,
    decided_by   TEXT,
    created_at   BIGINT NOT NULL,
    decided_at   BIGINT
);
CREATE UNIQUE INDEX approvals_node_action ON approvals (request_id, action);
CREATE INDEX approvals_user ON approvals (user_id, state);
