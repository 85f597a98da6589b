-- A2A push notification configs (TaskPushNotificationConfig): where the
-- events of a task are POSTed. `config` is the config as the client sent it
-- (url, token, authentication) as JSON. `delivered_seq` is the number of
-- the task's newest event (a2a_task_events.seq) a delivery was claimed for:
-- a process advances it (compare-and-set) before it POSTs the event, so two
-- processes sharing the database never both send it.
CREATE TABLE a2a_push_configs (
    task_id       TEXT NOT NULL,
    id            TEXT NOT NULL,     -- the config's id, unique within its task
    config        TEXT NOT NULL,     -- JSON: the TaskPushNotificationConfig
    created_at    BIGINT NOT NULL,   -- ms since the epoch
    delivered_seq BIGINT NOT NULL,   -- events up to this one are delivered (or given up on)
    failures      BIGINT NOT NULL,   -- deliveries that finally failed
    last_error    TEXT,              -- the last of them, with its event number
    PRIMARY KEY (task_id, id)
);
