-- Migration 14, PostgreSQL's trigger (after 0014_analytics.sql): one statement
-- trigger per write of delegations marks the hours of the rows it wrote.
CREATE FUNCTION switchboard_stats_dirty() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- an update, not DO NOTHING: it waits for a rollup that is taking the mark
    -- away, so a change is never left unmarked behind a rollup that missed it
    INSERT INTO stats_dirty (width, bucket) SELECT DISTINCT 3600000, started_at / 3600000 * 3600000 FROM added
        ON CONFLICT (width, bucket) DO UPDATE SET bucket = excluded.bucket;
    RETURN NULL;
END $$;
CREATE TRIGGER delegations_added_stats AFTER INSERT ON delegations
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION switchboard_stats_dirty();
CREATE TRIGGER delegations_updated_stats AFTER UPDATE ON delegations
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION switchboard_stats_dirty();
