//! A2A 1.0 on the wire (a2aproject/A2A): the JSON types, the error kinds of
//! both bindings, and the rails extension that carries Switchboard's lineage
//! in message metadata. Serde types only; the A2A service and client use them.

pub mod error;
#[cfg(feature = "grpc")]
pub mod grpc;
pub mod rails;
pub mod types;

pub use error::{A2aError, Kind};
pub use rails::{LINEAGE_EXTENSION, RAILS_EXTENSION, Rails};

/// The label prefix of an artifact that is already an A2A artifact (or, with
/// [`MESSAGE_LABEL`], a direct reply message): the A2A service passes its value through.
pub const NATIVE_LABEL: &str = "a2a:";
/// An artifact with this label asks for a direct Message reply.
pub const MESSAGE_LABEL: &str = "a2a:message";
/// The context hint that names the A2A message behind a delegation
/// (`a2a-message-id:<messageId>`), for agents that look at A2A details the
/// envelope does not carry (the conformance agent's message-id prefixes).
pub const MESSAGE_ID_HINT: &str = "a2a-message-id:";
