-- Switchboard's schema, portable between SQLite and PostgreSQL:
-- ids as TEXT, times as BIGINT epoch milliseconds, JSON as TEXT.

CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL,
    agent       TEXT NOT NULL,
    parent_id   TEXT,
    created_at  BIGINT NOT NULL
);
-- one child session per (user, agent, parent)
CREATE UNIQUE INDEX sessions_child ON sessions (user_id, agent, parent_id);

CREATE TABLE messages (
    id          TEXT PRIMARY KEY,          -- UUID v7: time-ordered
    session_id  TEXT NOT NULL,
    role        TEXT NOT NULL,
    content     TEXT NOT NULL,
    metadata    TEXT NOT NULL,             -- {"delegated_from", "delegation_depth"}
    created_at  BIGINT NOT NULL
);
CREATE INDEX messages_session ON messages (session_id, id);

CREATE TABLE memory_facts (
    id              TEXT PRIMARY KEY,
    user_id         TEXT NOT NULL,
    scope           TEXT NOT NULL,         -- global | agent:<slug> | domain:<name>
    fact            TEXT NOT NULL,
    fact_hash       TEXT NOT NULL,
    source_request  TEXT,
    created_at      BIGINT NOT NULL
);
CREATE UNIQUE INDEX memory_facts_unique ON memory_facts (user_id, scope, fact_hash);

-- append-only; each record carries the hash of the previous one
CREATE TABLE audit_log (
    seq          BIGINT PRIMARY KEY,
    request_id   TEXT NOT NULL,
    root_id      TEXT NOT NULL,
    origin       TEXT NOT NULL,
    target       TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    objective    TEXT NOT NULL,
    outcome      TEXT NOT NULL,
    error_code   TEXT,
    duration_ms  BIGINT NOT NULL,
    tokens       BIGINT NOT NULL,
    created_at   BIGINT NOT NULL,
    prev_hash    TEXT NOT NULL,
    hash         TEXT NOT NULL
);
CREATE INDEX audit_log_request ON audit_log (request_id);

CREATE TABLE delegations (
    request_id         TEXT PRIMARY KEY,
    root_id            TEXT NOT NULL,
    parent_id          TEXT,
    user_id            TEXT NOT NULL,
    origin             TEXT NOT NULL,
    target             TEXT NOT NULL,
    objective          TEXT NOT NULL,
    objective_hash     TEXT NOT NULL,
    signature          TEXT NOT NULL,
    status             TEXT NOT NULL,
    error_code         TEXT,
    attempts           BIGINT NOT NULL,
    depth              BIGINT NOT NULL,
    started_at         BIGINT NOT NULL,
    duration_ms        BIGINT NOT NULL,
    prompt_tokens      BIGINT NOT NULL,
    completion_tokens  BIGINT NOT NULL,
    total_tokens       BIGINT NOT NULL
);
CREATE INDEX delegations_root ON delegations (root_id);
CREATE INDEX delegations_history ON delegations (user_id, started_at);

CREATE TABLE seed_scores (
    agent       TEXT NOT NULL,
    signature   TEXT NOT NULL,
    seed        BIGINT NOT NULL,
    score       DOUBLE PRECISION NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (agent, signature, seed)
);

CREATE TABLE idempotency_keys (
    user_id       TEXT NOT NULL,
    idem_key      TEXT NOT NULL,
    request_hash  TEXT NOT NULL,
    response      TEXT,                    -- NULL while the first request runs
    created_at    BIGINT NOT NULL,
    PRIMARY KEY (user_id, idem_key)
);
