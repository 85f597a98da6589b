-- "ledger" named three things (the tree's token accounts, the user's money
-- and the tax agent); the user's transactions are now `money_entries`,
-- beside `money_plans`. The rows and their keys are unchanged.
ALTER TABLE ledger_entries RENAME TO money_entries;
DROP INDEX ledger_entries_date;
CREATE INDEX money_entries_date ON money_entries (user_id, txn_date);
