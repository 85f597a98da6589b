//! Who should do the work: Prime's router, learned from each agent's
//! configured examples (`classifier`, reading requests with `text`, a
//! logistic regression in `softmax`),
//! discovery of a target by keywords and capabilities, domain routing with
//! load balancing, and what a user's history says works.

pub(crate) mod classifier;
pub(crate) mod discovery;
pub(crate) mod domains;
#[cfg(test)]
mod embedding_trial;
pub(crate) mod history;
pub(crate) mod softmax;
pub(crate) mod text;

pub(crate) use classifier::{Match, Routed, Router};
pub(crate) use discovery::discover;
pub(crate) use domains::DomainTable;
