//! The runtime: what every delegation runs on. The [`Runtime`] itself (its
//! configuration, team, store, live trees, breakers, redactor, events and
//! metrics), how it is built, and the services it keeps beside the
//! delegations: the team's registry, admission (how many run at once, and
//! where), this replica's lease and fence among the others on its store,
//! the stored trees as people see them, and what the runtime shows and
//! learns about its own use.
//!
//! The pipeline ([`crate::pipeline`]) sits above: its stages take the
//! `Runtime` and the services from here, and add the ways in
//! (`Runtime::enter`, `ask`, resume, replay); nothing here calls a stage.
//!
//! This file only declares the services and hands the public names on.

mod builder;
mod in_flight;
mod insights;
mod lease;
mod registry;
mod replica;
// the `Runtime` itself, one service among the others here
#[allow(clippy::module_inception)]
mod runtime;
mod tree_view;

pub use builder::RuntimeBuilder;
pub use in_flight::Admission;
pub use insights::whose;
pub(crate) use registry::learn_routers;
pub use registry::{Member, Registry};
pub(crate) use replica::{Census, Top, hold};
pub(crate) use runtime::Cancellable;
pub use runtime::Runtime;
pub use tree_view::TreeView;
