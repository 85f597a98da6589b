-- Who holds an idempotency key while its request runs: the request and the
-- replica running it (`replicas.id`). A process that dies after claiming a
-- key and before its tree's first step is written leaves no tree to take
-- over; a waiter that finds the holder's replica dead (its lease ran out)
-- and no open step for it takes the key over (compare and set on holder,
-- owner and created_at, so that exactly one does) instead of waiting on it
-- for ever. Keys claimed before this migration name neither.
ALTER TABLE idempotency_keys ADD COLUMN holder TEXT;
ALTER TABLE idempotency_keys ADD COLUMN owner TEXT;
