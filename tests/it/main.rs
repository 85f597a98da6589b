//! Switchboard's one integration-test binary.

mod a2a;
mod budget;
mod cli;
mod crash;
mod db;
mod durable_state;
mod faults;
mod fuzz;
mod hostile;
mod http;
mod lineage;
mod llm;
mod modes;
mod money;
mod money_ui;
mod pii;
mod protocol;
mod rails;
mod real_model;
mod resilience;
mod seeds;
mod service;
mod state;
mod store;
mod support;
mod ui;
