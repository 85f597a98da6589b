//! The rails, one module each (docs/DESIGN.md#the-rails). Each is a small
//! function or a permit that releases on drop; the pipeline composes them in
//! order.

pub(crate) mod auth;
pub(crate) mod budget;
pub(crate) mod cycle;
pub(crate) mod deadline;
pub(crate) mod depth;
pub(crate) mod fanout;
pub(crate) mod tokens;
pub(crate) mod tree;
pub(crate) mod validate;
pub(crate) mod vaults;

pub(crate) use tree::{Entering, Tree, Trees};
pub(crate) use vaults::{SessionVaults, SharedVault};
