//! Who should do the work: Prime's router, learned from each agent's
//! configured examples (`classifier`, reading requests with `text`, a
//! logistic regression in `softmax`),
//! discovery of a target by keywords and capabilities, domain routing with
//! load balancing, and what a user's history says works.

pub mod classifier;
pub mod discovery;
pub mod domains;
pub mod history;
pub mod softmax;
pub mod text;

pub use classifier::{Match, Routed, Router};
pub use discovery::{Candidate, discover};
pub use domains::DomainTable;
