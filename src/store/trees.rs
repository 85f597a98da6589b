//! How SQL finds the rows of one tree (`delegations`, `tree_steps`) without
//! an index that every top-level delegation would write.
//!
//! A row's `root_id` is its tree's root. A top-level delegation is its own
//! root (`root_id = request_id`), and its id is the caller's, as random as a
//! UUID. An index of every row's `root_id` would take its id a second time,
//! into a leaf of its own: one more page of the log per delegation, however
//! many share a commit (docs/PERFORMANCE.md counts them). So the index of
//! roots (`delegations_below`, `tree_steps_below`, migration 16) holds only
//! the rows that are not a root, and a root is found by its own id, the key
//! every write needs anyway. The tree whose root is `R` is then
//!
//! ```text
//! (request_id = R AND root_id = R) OR (root_id = R AND root_id <> request_id)
//! ```
//!
//! which is `root_id = R` split in two, whatever the rows hold (a row whose
//! `root_id` is its own id is in the first half, any other in the second):
//! nothing here trusts that a caller's root is what it claims. Each half is
//! one index's search (SQLite: a multi-index OR; PostgreSQL: a bitmap OR),
//! and `below_root`'s condition is the partial index's own, word for word,
//! as both planners need to use it.

/// The rows of the tree whose root's id is `root` (a bound parameter or a
/// column), as a condition on the table `alias`: exactly `alias.root_id = root`.
pub(super) fn of_tree(alias: &str, root: &str) -> String {
    format!("(({alias}.request_id = {root} AND {alias}.root_id = {root}) OR {})", below_root(alias, root))
}

/// The rows of the tree whose root's id is `root`, but for the root:
/// exactly `alias.root_id = root AND alias.request_id <> root`.
pub(super) fn below_root(alias: &str, root: &str) -> String {
    format!("({alias}.root_id = {root} AND {alias}.root_id <> {alias}.request_id)")
}
