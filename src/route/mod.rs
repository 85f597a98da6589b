//! Who does the work: the registry of team members, and discovery of a target
//! by keywords and capabilities (seeds/001 "Tool Agent Discovery").

pub mod discovery;
pub mod domains;
pub mod history;
pub mod registry;

pub use discovery::{Candidate, discover};
pub use domains::DomainTable;
pub use registry::{Member, Registry};
