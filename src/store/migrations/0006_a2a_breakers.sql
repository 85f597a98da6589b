-- State that outlives a restart of `switchboard serve`: the A2A tasks (the
-- task as a client reads it, with its history and artifacts) and the circuit
-- breakers that are not closed. The processes keep caches of both.
CREATE TABLE a2a_tasks (
    id           TEXT PRIMARY KEY,  -- the task id: the request id of its first turn
    owner        TEXT NOT NULL,     -- the caller's principal label; only it (or an admin) sees the task
    agent        TEXT NOT NULL,     -- the agent the task was sent to
    context_id   TEXT NOT NULL,
    session_id   TEXT,              -- the session its turns ran in
    state        TEXT NOT NULL,     -- TASK_STATE_*
    task         TEXT NOT NULL,     -- JSON: the A2A Task (status, history, artifacts, metadata)
    seq          BIGINT NOT NULL,   -- a write with a lower seq does not replace a higher one
    updated_at   BIGINT NOT NULL    -- the status timestamp, ms since the epoch
);
CREATE INDEX a2a_tasks_owner ON a2a_tasks (owner, agent, updated_at);
CREATE INDEX a2a_tasks_context ON a2a_tasks (owner, agent, context_id);

CREATE TABLE breakers (
    agent        TEXT NOT NULL,
    user_id      TEXT NOT NULL,     -- '' for the agent's own breaker, else the user's breaker for the agent
    state        TEXT NOT NULL,     -- open | half_open
    opened_at    BIGINT NOT NULL,   -- wall clock, ms since the epoch: the cool-down counts from here
    consecutive  BIGINT NOT NULL,   -- failures in a row when it opened
    run_faults   BIGINT NOT NULL,
    run_users    TEXT NOT NULL,     -- JSON array of the users whose requests failed in that run
    probe_successes BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (agent, user_id)
);
