//! The pipeline of one delegation (docs/DESIGN.md#the-flow-of-one-delegation),
//! read top to bottom in `Runtime::flow` (`flow.rs`). Every delegation goes through it,
//! whether it comes from the CLI, HTTP, A2A, MCP or an agent's own
//! `Delegator`:
//!
//! ```text
//! admit ─► idempotency ─► attempts ───────────────────────────────► record ─► respond
//! validate   a repeat     [context (PII redacted) → breaker →        node, audit,   PII restored
//! lineage    answers      agent inside the deadline → budget →       conversation:  at the edge;
//! authn      from the     verify → retry]*                           durable first  kept for repeats
//! route      store
//! authz, depth, fan-out, cycle, deadline, budget, sessions
//! ```
//!
//! One file per stage: `admit` (with `route` and `sessions`),
//! `idempotency`, `attempts` (with `attempt`, `context`, `pii`,
//! `verify` and `seeds`), `record`, `respond`, with `journal` (the step
//! in the store); `node` is a running delegation, `dispatch` how its agent
//! delegates further. `clock` and `entry` are the small types they share.
//! Above the stages sit the ways a delegation starts: `door` (the one way
//! in), `ask` (a user's turn), `durable` (resume, approvals, cancel,
//! expiry) and `replay`. Below the whole pipeline is [`crate::runtime`]: the
//! `Runtime` and the services every stage runs on.
//!
//! This file only declares the stages and hands the public names on.

mod admit;
mod approval;
mod ask;
mod attempt;
mod attempts;
mod clock;
mod context;
mod dispatch;
mod door;
mod durable;
mod entry;
mod flow;
mod idempotency;
mod journal;
mod node;
mod pii;
mod record;
mod replay;
mod respond;
mod route;
mod seeds;
mod sessions;
mod verify;

#[cfg(test)]
mod testing;

pub use ask::{AskOptions, AskResponse, answer_of};
pub use door::{Door, Envelope, Turn, Work};
pub use durable::Resumed;
pub use replay::{Outcome, ReplayMode, ReplayReport, ReplayedNode};

#[cfg(test)]
mod tests {
    use crate::pipeline::testing::{Flaky, request, runtime, send};
    use crate::protocol::{ErrorCode, Status};
    use crate::telemetry::Event;

    #[tokio::test]
    async fn one_delegation_runs_the_whole_flow_in_order() {
        let rt = runtime(Flaky::new(0, ErrorCode::AgentFailed).0);
        let mut events = rt.subscribe();
        let r = send(&rt, request("boss", "worker", "Repeat for ann@example.com", "ann@example.com")).await;
        // respond: the caller gets its own values back
        assert_eq!(r.status, Status::Success, "{:?}", r.error);
        assert_eq!(r.result, "echo: ann@example.com");
        // record: the node and one audit entry, neither with the raw address
        let stored = rt.store().delegation_tree(r.request_id).await.unwrap();
        assert_eq!(stored.len(), 1);
        assert!(!stored[0].objective.contains("ann@example.com"), "{}", stored[0].objective);
        let audit = rt.store().audit_log().await.unwrap();
        assert_eq!(audit.len(), 1);
        assert_eq!(audit[0].record.request_id, r.request_id);
        // events: started, attempt, finished, in that order
        let mut kinds = Vec::new();
        while let Ok(e) = events.try_recv() {
            kinds.push(match e {
                Event::Started { .. } => "started",
                Event::Attempt { .. } => "attempt",
                Event::Retry { .. } => "retry",
                Event::Finished { .. } => "finished",
            });
        }
        assert_eq!(kinds, ["started", "attempt", "finished"]);
        assert_eq!(rt.live_trees(), 0);
    }

    #[tokio::test]
    async fn a_refused_delegation_is_recorded_and_never_reaches_the_agent() {
        let (worker, runs) = Flaky::new(0, ErrorCode::AgentFailed);
        let rt = runtime(worker);
        let r = send(&rt, request("stranger", "worker", "Say it", "hi")).await;
        assert_eq!(r.error_code(), Some(ErrorCode::DelegationNotAllowed));
        assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 0);
        let stored = rt.store().delegation_tree(r.request_id).await.unwrap();
        assert_eq!(stored[0].status, "refused");
        assert_eq!(rt.store().audit_log().await.unwrap().len(), 1);
    }
}
