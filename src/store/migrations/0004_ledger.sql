-- Each user's money: transactions the finance agents found in what the user
-- gave them, and the goals and debts the user told them about. Written only
-- through the runtime's ledger tool (agent::Ledger), never by an agent
-- directly. Amounts are integer cents; a positive amount is money spent.
CREATE TABLE ledger_entries (
    user_id      TEXT NOT NULL,
    id           TEXT NOT NULL,     -- from the user and the transaction's key: the same receipt twice is one row
    txn_date     TEXT,              -- YYYY-MM-DD
    merchant     TEXT NOT NULL,
    description  TEXT NOT NULL,
    amount       BIGINT NOT NULL,
    currency     TEXT NOT NULL,
    category     TEXT,
    confidence   BIGINT,
    source       TEXT NOT NULL,     -- the document it came from
    note         TEXT,              -- what the user said about it ("business lunch")
    request_id   TEXT,              -- the delegation that wrote it
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (user_id, id)
);
CREATE INDEX ledger_entries_date ON ledger_entries (user_id, txn_date);

CREATE TABLE money_plans (
    user_id      TEXT NOT NULL,
    kind         TEXT NOT NULL,     -- goal | debt
    name         TEXT NOT NULL,
    body         TEXT NOT NULL,     -- JSON, the agent's own shape
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (user_id, kind, name)
);
