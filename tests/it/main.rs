//! Switchboard's one integration-test binary.

mod budget;
mod cli;
mod modes;
mod pii;
mod protocol;
mod rails;
mod resilience;
mod support;
