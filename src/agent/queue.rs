//! The `queue` backend: the agent's work is done by `switchboard worker`
//! processes that pull it from a durable queue (NATS JetStream), on this
//! host or others. The forwarded envelope (the `http` backend's, same ids,
//! remaining deadline and budget, effective tools) is published to the
//! agent's work subject with a lineage token signed for the workers (a
//! worker runs nothing unsigned); the answer comes back on the delegation's
//! reply subject, kept in a stream of its own, so a tree resumed on another
//! replica finds an answer that arrived while nobody waited. If no worker
//! is up the delegation waits in the stream, within its deadline.
//!
//! [`wire`] is the layout both sides share: streams, subjects, headers.

use async_trait::async_trait;
use tokio::sync::OnceCell;

use super::{Agent, AgentContext, AgentOutput, Task};
use crate::config::QueueConfig;
use crate::protocol::{AgentSlug, DelegationError, DelegationResponse, ErrorCode, RequestId, Status};

/// The streams, subjects and headers of the queue, shared by the backend and the worker.
pub mod wire {
    use std::time::Duration;

    use async_nats::jetstream::{self, stream};

    use crate::config::QueueConfig;
    use crate::protocol::{AgentSlug, RequestId};

    /// The stream of delegations waiting for (or taken by) workers: `sb.work.<agent>`.
    pub const WORK_STREAM: &str = "SWITCHBOARD_WORK";
    /// The stream of answers: `sb.reply.<request id>`.
    pub const REPLY_STREAM: &str = "SWITCHBOARD_REPLY";
    /// The stream of dead letters, with their reason: `sb.dead.<agent>`.
    pub const DEAD_STREAM: &str = "SWITCHBOARD_DEAD";
    /// The signed lineage token of a delegation (docs/LINEAGE.md).
    pub const LINEAGE: &str = "Switchboard-Lineage";
    /// When the caller stops waiting, in epoch milliseconds.
    pub const DEADLINE_AT: &str = "Switchboard-Deadline-At";
    /// Why a message was dead-lettered.
    pub const REASON: &str = "Switchboard-Reason";
    /// The worker's signature of an answer (`lineage::reply`).
    pub const SIGNATURE: &str = "Switchboard-Signature";
    /// JetStream's de-duplication id.
    pub const MSG_ID: &str = "Nats-Msg-Id";

    /// Where delegations to `agent` wait.
    pub fn work(agent: &AgentSlug) -> String {
        format!("sb.work.{agent}")
    }

    /// Where the answer to delegation `id` is published.
    pub fn reply(id: RequestId) -> String {
        format!("sb.reply.{id}")
    }

    /// Where messages for `agent` that were not run go, with their reason.
    pub fn dead(agent: &str) -> String {
        format!("sb.dead.{agent}")
    }

    /// The durable consumer the workers serving `agent` share (each
    /// delegation goes to one of them).
    pub fn consumer(agent: &AgentSlug) -> String {
        format!("sb-worker-{agent}")
    }

    /// Connects to the NATS server of `cfg`: a clear error naming it when it does not answer.
    pub async fn connect(cfg: &QueueConfig) -> Result<async_nats::Client, String> {
        let options = async_nats::ConnectOptions::new().name("switchboard").connection_timeout(Duration::from_secs(5));
        match tokio::time::timeout(Duration::from_secs(5), options.connect(cfg.url.as_str())).await {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(e)) => Err(format!("the NATS server at {} cannot be reached: {e}", cfg.url)),
            Err(_) => Err(format!("the NATS server at {} cannot be reached: no answer within 5 s", cfg.url)),
        }
    }

    /// The three streams, made if missing, with their retention from `cfg`
    /// (changed when `cfg` changed it).
    pub async fn streams(js: &jetstream::Context, cfg: &QueueConfig) -> Result<(), String> {
        let hours = |h: u64| Duration::from_secs(h.saturating_mul(3600));
        for (name, subjects, keep) in [
            (WORK_STREAM, "sb.work.*", hours(cfg.work_retention_hours)),
            (REPLY_STREAM, "sb.reply.*", hours(cfg.reply_retention_hours)),
            (DEAD_STREAM, "sb.dead.*", hours(cfg.dead_retention_hours)),
        ] {
            let config = stream::Config {
                name: name.into(),
                subjects: vec![subjects.into()],
                retention: stream::RetentionPolicy::Limits,
                storage: stream::StorageType::File,
                max_age: keep,
                // a delegation published twice (a retried publish, a resumed tree) is kept once
                duplicate_window: Duration::from_secs(120),
                ..Default::default()
            };
            js.create_or_update_stream(config)
                .await
                .map_err(|e| format!("the JetStream stream {name} cannot be made or updated: {e}"))?;
        }
        Ok(())
    }
}

/// An agent whose work is done by `switchboard worker` processes behind NATS JetStream.
pub struct QueueAgent {
    cfg: QueueConfig,
    peer: String,
    remote_slug: Option<AgentSlug>,
    js: OnceCell<async_nats::jetstream::Context>,
}

impl std::fmt::Debug for QueueAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueAgent").finish_non_exhaustive()
    }
}

impl QueueAgent {
    /// A backend sending to the workers named `peer` (their `[lineage] name`) over `cfg`'s server.
    pub fn new(cfg: &QueueConfig, peer: &str, agent: Option<AgentSlug>) -> Self {
        Self { cfg: cfg.clone(), peer: peer.to_string(), remote_slug: agent, js: OnceCell::new() }
    }

    /// The JetStream context, connected (and the streams made) at the first call.
    async fn jetstream(&self) -> Result<&async_nats::jetstream::Context, DelegationError> {
        self.js
            .get_or_try_init(|| async {
                let client = wire::connect(&self.cfg).await?;
                let js = async_nats::jetstream::new(client);
                wire::streams(&js, &self.cfg).await?;
                Ok::<_, String>(js)
            })
            .await
            .map_err(|e| DelegationError::new(ErrorCode::AgentUnavailable, e))
    }
}

fn unavailable(what: &str, e: impl std::fmt::Display) -> DelegationError {
    DelegationError::new(ErrorCode::AgentUnavailable, format!("{what}: {e}"))
}

/// The id of node `node`'s delegation to the workers: derived from it, so
/// that every run of the node sends under one id (and never the node's own:
/// the workers may share its database).
fn hop_id(node: RequestId) -> RequestId {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("queue-hop\n{node}").as_bytes());
    let mut bytes = [0u8; 16];
    // the node's time prefix first, so ids still sort by time
    bytes[..6].copy_from_slice(&node.0.as_bytes()[..6]);
    bytes[6..].copy_from_slice(&digest[..10]);
    RequestId(uuid::Builder::from_custom_bytes(bytes).into_uuid())
}

/// An answer kept in the reply stream that a resumed delegation may take
/// as its own: a whole response that succeeded. Anything else is asked again.
fn kept_answer(payload: &[u8]) -> Option<DelegationResponse> {
    serde_json::from_slice::<DelegationResponse>(payload)
        .ok()
        .filter(|r| r.error.is_none() && matches!(r.status, Status::Success | Status::Partial))
}

#[async_trait]
impl Agent for QueueAgent {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        use futures::StreamExt;

        let delegator = ctx.delegator()?;
        let lineage = delegator.lineage();
        let target = self.remote_slug.clone().unwrap_or_else(|| lineage.agent.clone());
        let mut req = lineage.forward(target.clone(), task);
        // the same id on every run of this node (a retry, a resumed tree): one
        // reply subject, and a resumed node finds the answer that came meanwhile
        req.request_id = hop_id(lineage.request_id);
        // a worker handed it twice (a redelivery, our retry) runs it once
        req.idempotency_key.get_or_insert_with(|| format!("hop-{}", lineage.request_id));
        let token = delegator.relay_token(&req, &self.peer)?.ok_or_else(|| {
            DelegationError::new(
                ErrorCode::AgentFailed,
                format!("no lineage token could be made for '{}': a worker runs nothing unsigned", self.peer),
            )
        })?;
        let js = self.jetstream().await?;
        let id = req.request_id;
        let deadline = tokio::time::Instant::now() + lineage.remaining;
        let deadline_at =
            crate::store::now_ms().saturating_add(i64::try_from(lineage.remaining.as_millis()).unwrap_or(i64::MAX));

        // listening before asking: an answer cannot slip past
        let mut answers = js.client().subscribe(wire::reply(id)).await.map_err(|e| unavailable("queue", e))?;
        let from = format!("the worker of {target}");
        // an answer is the workers' only when they signed it (when their key is trusted)
        let theirs = |payload: &[u8], signature: Option<&str>| match delegator
            .check_reply(&self.peer, id, payload, signature)
        {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(request_id = %id, peer = %self.peer, "an answer on the reply subject was ignored: {e}");
                false
            }
        };
        // a resumed delegation whose answer came while nobody waited takes it
        if let Some((payload, signature)) = stored_reply(js, id, None).await
            && theirs(&payload, signature.as_deref())
        {
            return super::http::reply_to_output(200, &payload, &from);
        }
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(wire::MSG_ID, format!("{id}-{}", task.attempt).as_str());
        headers.insert(wire::LINEAGE, token.as_str());
        headers.insert(wire::DEADLINE_AT, deadline_at.to_string().as_str());
        let body = serde_json::to_vec(&req).map_err(|e| DelegationError::new(ErrorCode::AgentFailed, e.to_string()))?;
        let stored = js
            .publish_with_headers(wire::work(&target), headers, body.into())
            .await
            .map_err(|e| unavailable(&format!("{} cannot be queued", wire::work(&target)), e))?;
        tokio::time::timeout_at(deadline, stored)
            .await
            .map_err(|_| {
                DelegationError::new(ErrorCode::DeadlineExceeded, "the queue did not store the delegation in time")
            })?
            .map_err(|e| unavailable(&format!("{} was not stored", wire::work(&target)), e))?;
        // the subscription misses what was published while the connection was
        // down (a NATS restart): the reply stream is looked at every second too
        let mine = format!("reply-{id}-{}", task.attempt);
        let mut look = tokio::time::interval_at(tokio::time::Instant::now() + LOOK_EVERY, LOOK_EVERY);
        loop {
            tokio::select! {
                answer = answers.next() => match answer {
                    Some(answer) => {
                        let signature = answer.headers.as_ref().and_then(|h| h.get(wire::SIGNATURE));
                        if theirs(&answer.payload, signature.map(|v| v.as_str())) {
                            return super::http::reply_to_output(200, &answer.payload, &from);
                        }
                    }
                    None => return Err(unavailable("queue", "the connection to the NATS server closed")),
                },
                _ = look.tick() => {
                    if let Some((payload, signature)) = stored_reply(js, id, Some(&mine)).await
                        && theirs(&payload, signature.as_deref())
                    {
                        return super::http::reply_to_output(200, &payload, &from);
                    }
                }
                () = tokio::time::sleep_until(deadline) => return Err(DelegationError::new(
                    ErrorCode::DeadlineExceeded,
                    format!(
                        "no worker of {target} answered within the deadline ({} ms); a late answer is discarded",
                        lineage.remaining.as_millis()
                    ),
                )),
            }
        }
    }
}

/// How often a waiting delegation looks in the reply stream besides listening.
const LOOK_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// The answer the reply stream holds for delegation `id`, with its
/// signature: a whole successful one of any attempt, or any answer to this
/// attempt (its message id is `mine`; None before this attempt was sent).
async fn stored_reply(
    js: &async_nats::jetstream::Context,
    id: RequestId,
    mine: Option<&str>,
) -> Option<(Vec<u8>, Option<String>)> {
    let replies = js.get_stream_no_info(wire::REPLY_STREAM).await.ok()?;
    let kept = replies.get_last_raw_message_by_subject(&wire::reply(id)).await.ok()?;
    let ours = mine.is_some_and(|mine| kept.headers.get(wire::MSG_ID).is_some_and(|v| v.as_str() == mine));
    let signature = kept.headers.get(wire::SIGNATURE).map(|v| v.as_str().to_string());
    (ours || kept_answer(&kept.payload).is_some()).then(|| (kept.payload.to_vec(), signature))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nodes_hop_id_is_stable_and_never_its_own() {
        let node = RequestId::new();
        assert_eq!(hop_id(node), hop_id(node));
        assert_ne!(hop_id(node), node);
        assert_ne!(hop_id(node), hop_id(RequestId::new()));
    }

    #[test]
    fn only_a_whole_successful_answer_is_taken_from_the_stream() {
        let failed = DelegationResponse::failed(
            RequestId::new(),
            AgentSlug::parse("tag-ai").unwrap(),
            DelegationError::new(ErrorCode::AgentFailed, "no"),
        );
        let mut ok = serde_json::to_value(&failed).unwrap();
        ok["status"] = "success".into();
        ok.as_object_mut().unwrap().remove("error");
        assert!(kept_answer(&serde_json::to_vec(&ok).unwrap()).is_some());
        assert!(kept_answer(&serde_json::to_vec(&failed).unwrap()).is_none());
        assert!(kept_answer(b"garbage").is_none());
    }
}
