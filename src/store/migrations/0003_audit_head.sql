-- The audit chain's head, written in the same transaction as every append
-- and read by the next one: records deleted from the end of audit_log leave
-- the head pointing past them, so `audit --verify` names the first missing.
CREATE TABLE audit_head (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    seq         BIGINT NOT NULL,
    hash        TEXT NOT NULL,
    updated_at  BIGINT NOT NULL
);
INSERT INTO audit_head (id, seq, hash, updated_at)
    SELECT 1, seq, hash, created_at FROM audit_log ORDER BY seq DESC LIMIT 1;
