-- An A2A task's texts are kept redacted (tokens, never the raw values a
-- person sent or got back), and the vault they were redacted with is kept
-- here, sealed (encrypted under `[pii] seal_key_file`): the task's owner
-- reads their values back; the database holds tokens and ciphertext only.
ALTER TABLE a2a_tasks ADD COLUMN pii TEXT;
