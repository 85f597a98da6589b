//! What the command line answers with: its exit codes (0 ok, 2 usage, 3
//! refused by a rail, 4 failed), a usage error, and a user's turn or an
//! error printed as text or JSON. Every subcommand's file takes them from
//! here.

use serde_json::json;

use crate::pipeline::AskResponse;
use crate::protocol::{DelegationError, ErrorCode};

/// The command did what was asked (an answer, or a question back for the user).
pub(crate) const EXIT_OK: u8 = 0;
/// A usage or configuration error.
pub(crate) const EXIT_USAGE: u8 = 2;
/// A rail refused the delegation.
pub(crate) const EXIT_REFUSED: u8 = 3;
/// The agent failed or timed out.
pub(crate) const EXIT_FAILED: u8 = 4;

/// The exit code for an error code.
pub(crate) fn exit_code(code: ErrorCode) -> u8 {
    match code {
        ErrorCode::InvalidRequest | ErrorCode::UnsupportedVersion | ErrorCode::AgentNotFound => EXIT_USAGE,
        // an id given on the command line that names nothing
        ErrorCode::NotFound => EXIT_USAGE,
        // a question for the user (or a pause for their approval) is an answer, not a failure
        ErrorCode::NeedsInput | ErrorCode::NeedsApproval => EXIT_OK,
        c if c.is_refusal() => EXIT_REFUSED,
        _ => EXIT_FAILED,
    }
}

/// Prints `msg` as a usage error and returns its exit code.
pub(crate) fn usage_error(msg: impl std::fmt::Display) -> u8 {
    eprintln!("error: {msg}");
    EXIT_USAGE
}

/// A user's turn as the command line prints it: the answer and the tree, or JSON.
pub(crate) fn print_ask(r: &AskResponse, json: bool) {
    if json {
        outln!(
            "{}",
            json!({"answer": r.answer, "session_id": r.session_id, "request_id": r.request_id, "status": r.status, "tree": r.tree})
        );
    } else {
        outln!("{}\n", r.answer);
        outln!("Delegation tree (request {}, session {}):", r.request_id, r.session_id);
        out!("{}", r.tree.render());
    }
}

/// Prints a refusal or failure of a delegation and returns its exit code.
pub(crate) fn print_error(e: &DelegationError, json: bool) -> u8 {
    report(e, json, "refused")
}

/// Prints an error of a command around the trees (approvals, stats) as
/// `ask` does, and gives the exit code of its class.
pub(crate) fn failed(e: &DelegationError, json: bool) -> u8 {
    report(e, json, "error")
}

/// `e` as JSON on standard output, or as `label: CODE: message` on standard
/// error; its exit code.
fn report(e: &DelegationError, json: bool, label: &str) -> u8 {
    if json {
        outln!("{}", json!({"error": e}));
    } else {
        eprintln!("{label}: {}: {}", e.code, e.message);
    }
    exit_code(e.code)
}
