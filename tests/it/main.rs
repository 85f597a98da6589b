//! Switchboard's one integration-test binary.

mod budget;
mod modes;
mod protocol;
mod rails;
mod support;
