//! `switchboard approvals`, `approve` and `cancel`: a person's part in a
//! durable tree. The CLI runs as the local operator; `--user` answers as
//! that user (another user's approval is then `USER_MISMATCH`). An answer
//! resumes its tree here, in this process, and prints how it ended. An
//! error prints its code and message and changes nothing.

use clap::Args;
use serde_json::json;

use super::output::{EXIT_OK, exit_code, failed, usage_error};
use crate::auth::Principal;
use crate::pipeline::AskResponse;
use crate::protocol::{DelegationResponse, ErrorCode, RequestId, Status, UserId};
use crate::runtime::Runtime;
use crate::store::Approval;

#[derive(Debug, Args)]
pub(super) struct ApprovalsArgs {
    /// Only this user's approvals.
    #[arg(long)]
    user: Option<String>,
    /// Decided ones too, not only those still pending.
    #[arg(long)]
    all: bool,
}

#[derive(Debug, Args)]
pub(super) struct ApproveArgs {
    /// The approval's id (`apr-…`, from `switchboard approvals`).
    id: String,
    /// Say no: the action is not taken and the tree ends without it.
    #[arg(long)]
    reject: bool,
    /// Why, kept with the decision.
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    /// Answer as this user (default: as the local operator, who may answer any).
    #[arg(long)]
    user: Option<String>,
}

#[derive(Debug, Args)]
pub(super) struct CancelArgs {
    /// The request id of the tree's root (`switchboard ask` prints it).
    root_id: String,
}

fn parse_user(user: Option<&str>) -> Result<Option<UserId>, String> {
    user.map(|u| UserId::parse(u).map_err(|e| format!("--user: {e}"))).transpose()
}

/// `5s`, `3m`, `2h`, `4d`.
fn age(created_at: i64, now: i64) -> String {
    let s = (now - created_at).max(0) / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}

/// `switchboard approvals`.
pub(super) async fn list(runtime: &Runtime, args: ApprovalsArgs, json: bool) -> u8 {
    let user = match parse_user(args.user.as_deref()) {
        Ok(u) => u,
        Err(e) => return usage_error(e),
    };
    let caller = user.map_or(Principal::Admin, Principal::User);
    let approvals = match runtime.approvals(&caller, !args.all).await {
        Ok(a) => a,
        Err(e) => return failed(&e, json),
    };
    if json {
        outln!("{}", json!(approvals));
        return EXIT_OK;
    }
    if approvals.is_empty() {
        outln!("no {}approvals", if args.all { "" } else { "pending " });
        return EXIT_OK;
    }
    let now = crate::store::now_ms();
    outln!("{:<22} {:<9} {:<16} {:<12} {:<12} {:>5}  SUMMARY", "ID", "STATE", "USER", "AGENT", "ACTION", "AGE");
    for a in &approvals {
        outln!(
            "{:<22} {:<9} {:<16} {:<12} {:<12} {:>5}  {}",
            a.id,
            a.state.as_str(),
            a.user_id.as_str(),
            a.agent,
            a.action,
            age(a.created_at, now),
            a.summary
        );
    }
    EXIT_OK
}

/// `switchboard approve`.
pub(super) async fn approve(runtime: &Runtime, args: ApproveArgs, json: bool) -> u8 {
    let user = match parse_user(args.user.as_deref()) {
        Ok(u) => u,
        Err(e) => return usage_error(e),
    };
    let caller = user.map_or(Principal::Admin, Principal::User);
    let decided = match runtime.decide(&caller, &args.id, !args.reject, args.reason.as_deref()).await {
        Ok(a) => a,
        Err(e) => return failed(&e, json),
    };
    // the decision is kept; the tree goes on from where it waited, here
    runtime.learn_routers().await;
    let response = match runtime.resume_tree(decided.root_id).await {
        Ok(r) => r,
        Err(e) => {
            if !json {
                outln!("approval {} {}", decided.id, decided.state.as_str());
            }
            return failed(&e, json);
        }
    };
    let tree = runtime.tree(decided.root_id).await.ok().flatten();
    if json {
        outln!("{}", json!({"approval": decided, "response": response, "tree": tree}));
    } else {
        outln!(
            "approval {} {} by {}",
            decided.id,
            decided.state.as_str(),
            decided.decided_by.as_deref().unwrap_or("?")
        );
        outln!("tree {} ended {}\n", decided.root_id, response.status.as_str());
        print_answer(&response);
        if let Some(tree) = tree {
            outln!("\nDelegation tree (request {}):", decided.root_id);
            out!("{}", tree.render());
        }
    }
    finished(runtime, &response, args.reject, json).await
}

fn print_answer(r: &DelegationResponse) {
    match &r.error {
        Some(e) if r.result.is_empty() => outln!("{}: {}", e.code, e.message),
        _ => outln!("{}", if r.result.is_empty() { &r.summary } else { &r.result }),
    }
}

/// The exit code of a resumed tree's end, as `ask` would give it; a tree
/// that ended because the person said no (`--reject`) did what was asked:
/// 0. A tree that paused again names its next approval.
async fn finished(runtime: &Runtime, r: &DelegationResponse, rejected: bool, json: bool) -> u8 {
    if r.status == Status::NeedsApproval && !json {
        print_next_steps(&pending_of(runtime, r.request_id).await);
    }
    match (&r.error, r.status) {
        (_, Status::Success | Status::Partial | Status::NeedsApproval | Status::NeedsInput) => EXIT_OK,
        (Some(e), _) if rejected && e.code == ErrorCode::ApprovalRejected => EXIT_OK,
        (Some(e), _) => exit_code(e.code),
        (None, _) => super::output::EXIT_FAILED,
    }
}

/// `switchboard cancel`.
pub(super) async fn cancel(runtime: &Runtime, args: CancelArgs, json: bool) -> u8 {
    let root: RequestId = match args.root_id.parse() {
        Ok(id) => id,
        Err(e) => return usage_error(format!("ROOT_ID: {e}")),
    };
    match runtime.cancel_tree(&Principal::Admin, root).await {
        Ok(n) => {
            if json {
                outln!("{}", json!({"root_id": root, "cancelled": n}));
            } else {
                outln!("tree {root} cancelled ({n} step{} stopped)", if n == 1 { "" } else { "s" });
            }
            EXIT_OK
        }
        Err(e) => failed(&e, json),
    }
}

/// The pending approvals that hold the tree `root`.
async fn pending_of(runtime: &Runtime, root: RequestId) -> Vec<Approval> {
    let all = runtime.approvals(&Principal::Admin, true).await.unwrap_or_default();
    all.into_iter().filter(|a| a.root_id == root).collect()
}

fn print_next_steps(pending: &[Approval]) {
    for a in pending {
        outln!("\nneeds_approval: {} asks to {}: {}", a.agent, a.action, a.summary);
        outln!("  approval id: {}", a.id);
        outln!("  approve:     switchboard approve {}", a.id);
        outln!("  reject:      switchboard approve {} --reject --reason \"…\"", a.id);
    }
}

/// `ask` with a tree that paused for a person: the answer and tree as
/// usual, then which approval it waits for and the command that gives it
/// (with `--json`, the approvals under `"approvals"`).
pub(super) async fn print_paused_ask(runtime: &Runtime, r: &AskResponse, json: bool) {
    let pending = pending_of(runtime, r.request_id).await;
    if json {
        outln!(
            "{}",
            json!({"answer": r.answer, "session_id": r.session_id, "request_id": r.request_id, "status": r.status,
                "tree": r.tree, "approvals": pending})
        );
    } else {
        super::output::print_ask(r, false);
        print_next_steps(&pending);
    }
}

/// `delegate` with a response that waits for a person: which approval, and the command.
pub(super) async fn print_paused_delegation(runtime: &Runtime, r: &DelegationResponse, json: bool) {
    if !json {
        print_next_steps(&pending_of(runtime, r.request_id).await);
    }
}

#[cfg(test)]
mod tests {
    use super::age;

    #[test]
    fn ages_read_in_the_largest_whole_unit() {
        assert_eq!(age(0, 59_999), "59s");
        assert_eq!(age(0, 60_000), "1m");
        assert_eq!(age(0, 3_600_000), "1h");
        assert_eq!(age(0, 2 * 86_400_000 + 5), "2d");
        assert_eq!(age(10, 0), "0s", "a clock that went back is not a negative age");
    }
}
