-- The events an A2A task's stream sent (status and artifact updates), each
-- under its per-task number: the SSE `id:` a client sends back as
-- `Last-Event-ID` to get what it missed, also from a restarted process.
-- Written before the event goes to the live subscribers. Only the newest
-- events of a task are kept (a2a_state::MAX_EVENTS_PER_TASK).
CREATE TABLE a2a_task_events (
    task_id      TEXT NOT NULL,
    seq          BIGINT NOT NULL,   -- 1, 2, 3, ... per task
    event        TEXT NOT NULL,     -- JSON: the A2A StreamResponse
    created_at   BIGINT NOT NULL,   -- ms since the epoch
    PRIMARY KEY (task_id, seq)
);

-- A breaker's counts short of opening (and of closing again): the window of
-- recent calls as JSON. The breakers table now also holds closed breakers
-- that count failures (state `closed`), so a restart does not reset them.
ALTER TABLE breakers ADD COLUMN counters TEXT NOT NULL DEFAULT '{}';
