-- Usage analytics and ratings (docs/ANALYTICS.md), on both databases; the
-- trigger that marks the hours written is each one's own, run after this:
-- 0014_analytics.postgres.sql, 0014_analytics.sqlite.sql.
--
-- `consult`: 1 for an ephemeral consult (`ask_agent`, mode "ephemeral"),
-- counted apart from delegations.
ALTER TABLE delegations ADD COLUMN consult BIGINT NOT NULL DEFAULT 0;
-- every user's trees by time, for an admin's history and the rollups
CREATE INDEX delegations_started ON delegations (started_at);

-- A user's thumbs up (1) or down (-1) on a tree's answer, one per tree (a
-- second replaces the first; `previous` is the one it replaced). Written only
-- by the tree's own user, in the statement that checks it.
CREATE TABLE ratings (
    root_id     TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL,
    rating      BIGINT NOT NULL,
    comment     TEXT,
    previous    BIGINT,
    started_at  BIGINT NOT NULL,       -- the tree's start: ratings are counted with their tree
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE INDEX ratings_started ON ratings (started_at);
CREATE INDEX ratings_user ON ratings (user_id, started_at);

-- Hours whose delegations changed since they were last rolled up. Every
-- write of a delegation marks its hour (the trigger below); the analytics
-- reader rolls the marked hours up before it answers.
-- A rolled hour marks its day (width 86400000), rolled up once the day is past.
CREATE TABLE stats_dirty (
    width   BIGINT NOT NULL,
    bucket  BIGINT NOT NULL,
    PRIMARY KEY (width, bucket)
);
INSERT INTO stats_dirty (width, bucket) SELECT DISTINCT 3600000, started_at / 3600000 * 3600000 FROM delegations;

-- The rollups, by hour (width 3600000) and by day (86400000, whole past days),
-- for everyone (scope '*') and for each user (scope = the user id).
CREATE TABLE stats_calls (
    width       BIGINT NOT NULL,
    bucket      BIGINT NOT NULL,
    scope       TEXT NOT NULL,
    origin      TEXT NOT NULL,
    target      TEXT NOT NULL,
    status      TEXT NOT NULL,
    error_code  TEXT NOT NULL,        -- '' for none
    consult     BIGINT NOT NULL,
    root        BIGINT NOT NULL,      -- 1 for a tree's top delegation
    calls       BIGINT NOT NULL,
    tokens      BIGINT NOT NULL,      -- the calls' own tokens (their subtrees' not counted again)
    duration_ms BIGINT NOT NULL,
    max_ms      BIGINT NOT NULL,
    h00         BIGINT NOT NULL,        -- calls per duration bucket (store/analytics.rs BOUNDS_MS; h15: over the last bound)
    h01         BIGINT NOT NULL,
    h02         BIGINT NOT NULL,
    h03         BIGINT NOT NULL,
    h04         BIGINT NOT NULL,
    h05         BIGINT NOT NULL,
    h06         BIGINT NOT NULL,
    h07         BIGINT NOT NULL,
    h08         BIGINT NOT NULL,
    h09         BIGINT NOT NULL,
    h10         BIGINT NOT NULL,
    h11         BIGINT NOT NULL,
    h12         BIGINT NOT NULL,
    h13         BIGINT NOT NULL,
    h14         BIGINT NOT NULL,
    h15         BIGINT NOT NULL,
    PRIMARY KEY (width, scope, bucket, origin, target, status, error_code, consult, root)
);
CREATE INDEX stats_calls_bucket ON stats_calls (width, bucket);
-- a tree's shape, counted in the hour of its top delegation: `depth` rows
-- count trees by their deepest delegation's depth, `fan_out` rows count
-- delegations by how many children they made (1 or more)
CREATE TABLE stats_shapes (
    width   BIGINT NOT NULL,
    bucket  BIGINT NOT NULL,
    scope   TEXT NOT NULL,
    kind    TEXT NOT NULL,
    n       BIGINT NOT NULL,
    total   BIGINT NOT NULL,
    PRIMARY KEY (width, scope, bucket, kind, n)
);
CREATE INDEX stats_shapes_bucket ON stats_shapes (width, bucket);
-- per user, for an admin's table of users
CREATE TABLE stats_users (
    width       BIGINT NOT NULL,
    bucket      BIGINT NOT NULL,
    user_id     TEXT NOT NULL,
    trees       BIGINT NOT NULL,
    calls       BIGINT NOT NULL,
    consults    BIGINT NOT NULL,
    tokens      BIGINT NOT NULL,
    PRIMARY KEY (width, bucket, user_id)
);
