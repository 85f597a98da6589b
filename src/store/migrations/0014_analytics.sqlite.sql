-- Migration 14, SQLite's trigger (after 0014_analytics.sql): row by row,
-- writing only when the hour is not marked yet (an outer upsert overrides a
-- trigger's OR IGNORE, so that does not do). One writer at a time: a rollup
-- taking the mark away cannot slip in between the check and the insert.
-- What it costs a write is measured in docs/ANALYTICS.md.
CREATE TRIGGER delegations_added_stats AFTER INSERT ON delegations
    WHEN NOT EXISTS (SELECT 1 FROM stats_dirty WHERE width = 3600000 AND bucket = NEW.started_at / 3600000 * 3600000)
BEGIN
    INSERT INTO stats_dirty (width, bucket) VALUES (3600000, NEW.started_at / 3600000 * 3600000);
END;
CREATE TRIGGER delegations_updated_stats AFTER UPDATE ON delegations
    WHEN NOT EXISTS (SELECT 1 FROM stats_dirty WHERE width = 3600000 AND bucket = NEW.started_at / 3600000 * 3600000)
BEGIN
    INSERT INTO stats_dirty (width, bucket) VALUES (3600000, NEW.started_at / 3600000 * 3600000);
END;
