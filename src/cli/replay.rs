//! `switchboard replay REQUEST_ID [--live]`: runs a recorded tree again from
//! its journal and compares every node with its record (see
//! `pipeline::replay`). Exit 0 when identical, 4 when a node differs, and the
//! code of the error class otherwise (`NOT_FOUND`, `RECORD_INCOMPLETE`).

use clap::Args;
use serde_json::json;

use super::output::{EXIT_FAILED, EXIT_OK, exit_code, usage_error};
use crate::pipeline::ReplayMode;
use crate::runtime::Runtime;

#[derive(Debug, Args)]
pub(super) struct ReplayArgs {
    /// The root request id of a recorded tree (`switchboard ask` prints it).
    request_id: String,
    /// Run every agent as configured today (models and network included) and
    /// print what differs per node, instead of answering from the record.
    #[arg(long)]
    live: bool,
}

pub(super) async fn run(runtime: &Runtime, args: ReplayArgs, json: bool) -> u8 {
    let id = match args.request_id.parse() {
        Ok(id) => id,
        Err(e) => return usage_error(format!("REQUEST_ID: {e}")),
    };
    let mode = if args.live { ReplayMode::Live } else { ReplayMode::Recorded };
    match runtime.replay_for(&crate::auth::Principal::Admin, id, mode).await {
        Ok(report) => {
            if json {
                outln!("{}", json!(report));
            } else {
                out!("{}", report.render());
            }
            if report.identical { EXIT_OK } else { EXIT_FAILED }
        }
        Err(e) => {
            if json {
                outln!("{}", json!({"error": e}));
            } else {
                eprintln!("error: {}: {}", e.code, e.message);
            }
            exit_code(e.code)
        }
    }
}
