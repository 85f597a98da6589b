-- Bearer tokens, stored as sha256 hex only: service tokens (one agent each),
-- user tokens (one user each) and admin tokens (operators, the web page).
CREATE TABLE tokens (
    token_hash  TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,      -- service | user | admin
    subject     TEXT NOT NULL,      -- agent slug, user id, or 'admin'
    created_at  BIGINT NOT NULL
);
CREATE INDEX tokens_subject ON tokens (kind, subject);
