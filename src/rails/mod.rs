//! The rails, one module each (docs/DESIGN.md#the-rails). Each is a small
//! function or a permit that releases on drop; the pipeline composes them in
//! order.

pub mod auth;
pub mod budget;
pub mod cycle;
pub mod deadline;
pub mod depth;
pub mod fanout;
pub mod tokens;
pub mod tree;
pub mod validate;
pub mod vaults;

pub use tree::{Entering, Tree, Trees};
pub use vaults::{SessionVaults, SharedVault};
