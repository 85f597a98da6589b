//! Who should do the work: discovery of a target by keywords and
//! capabilities, domain routing with load
//! balancing, and what a user's history says works.

pub mod discovery;
pub mod domains;
pub mod history;

pub use discovery::{Candidate, discover};
pub use domains::DomainTable;
