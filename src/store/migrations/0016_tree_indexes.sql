-- Migration 16: indexes a top-level delegation does not write.
--
-- Each index a row goes into costs its commit the leaf page the row lands
-- in, written whole to the log (and by the checkpoint again to the
-- database). Under a key as random as a caller's request id that is a page
-- per delegation, however many delegations share a commit.
--
-- No statement looks for an audit record by its request: the log is read
-- in order, by `seq`.
DROP INDEX audit_log_request;
-- A tree's root is found by its own id (its primary key); the index of
-- roots holds only the rows below a root (src/store/trees.rs).
DROP INDEX delegations_root;
CREATE INDEX delegations_below ON delegations (root_id) WHERE root_id <> request_id;
DROP INDEX tree_steps_root;
CREATE INDEX tree_steps_below ON tree_steps (root_id) WHERE root_id <> request_id;
