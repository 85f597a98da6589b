-- SQLite has no notifications, and its store reads users' facts from the
-- file every time (a read on a local connection, no round trip): nothing to
-- do. PostgreSQL's migration 11 is 0011_facts_notify.sql.
SELECT 1;
