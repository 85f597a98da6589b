-- Replicas: every process running trees on this database holds a lease,
-- renewed a few times per lease period. A tree's top step names the
-- replica running it (`owner`); a replica whose lease ran out is dead, and
-- another one takes its running trees over (compare-and-set on `owner`, so
-- exactly one does). No replica is special.
ALTER TABLE tree_steps ADD COLUMN owner TEXT;

CREATE TABLE replicas (
    id          TEXT PRIMARY KEY,  -- host/pid/random: new for every process
    host        TEXT NOT NULL,
    pid         BIGINT NOT NULL,
    started_at  BIGINT NOT NULL,   -- epoch ms
    alive_until BIGINT NOT NULL    -- epoch ms: its lease; past it, its trees are taken over
);
