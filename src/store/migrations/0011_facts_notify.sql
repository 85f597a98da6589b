-- PostgreSQL only (SQLite runs 0011_facts_notify.sqlite.sql, which does
-- nothing): every change to memory_facts names its users on the channel
-- switchboard_facts at commit, whoever made it, so every replica can keep
-- users' facts in memory between delegations (src/store/facts_cache.rs).
-- A TRUNCATE names nobody in particular: an empty id, everyone.
CREATE FUNCTION switchboard_facts_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM pg_notify('switchboard_facts', u) FROM (SELECT DISTINCT user_id AS u FROM added) AS t;
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('switchboard_facts', u) FROM (SELECT DISTINCT user_id AS u FROM gone) AS t;
    ELSIF TG_OP = 'UPDATE' THEN
        PERFORM pg_notify('switchboard_facts', u)
            FROM (SELECT user_id AS u FROM added UNION SELECT user_id FROM gone) AS t;
    ELSE
        PERFORM pg_notify('switchboard_facts', '');
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER memory_facts_added AFTER INSERT ON memory_facts
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION switchboard_facts_changed();
CREATE TRIGGER memory_facts_updated AFTER UPDATE ON memory_facts
    REFERENCING OLD TABLE AS gone NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION switchboard_facts_changed();
CREATE TRIGGER memory_facts_removed AFTER DELETE ON memory_facts
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION switchboard_facts_changed();
CREATE TRIGGER memory_facts_truncated AFTER TRUNCATE ON memory_facts
    FOR EACH STATEMENT EXECUTE FUNCTION switchboard_facts_changed();
