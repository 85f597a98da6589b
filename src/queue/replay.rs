//! `switchboard queue replay`: sends the delegations a `queue` agent
//! received since a time again, from the work stream, to today's workers
//! (a fixed or redeployed agent), and compares each answer with the one the
//! reply stream kept. Each is sent as a new delegation of this runtime
//! (rails, a fresh signed lineage, a new idempotency key, its own record),
//! so the workers run it again rather than answer from their store.

use std::collections::HashSet;
use std::time::Duration;

use async_nats::jetstream::{self, consumer};
use futures::StreamExt;
use serde::Serialize;

use crate::agent::queue::wire;
use crate::auth::Principal;
use crate::config::Backend;
use crate::pipeline::{Door, Envelope};
use crate::protocol::{AgentSlug, DelegationRequest, DelegationResponse, RequestId};
use crate::runtime::Runtime;

/// How long the stream may stay quiet before the recorded delegations count as read.
const QUIET: Duration = Duration::from_secs(1);

/// One delegation sent again.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Replayed {
    /// The recorded delegation's id.
    pub request_id: RequestId,
    /// Its objective.
    pub objective: String,
    /// When it was recorded (the stream's time), RFC 3339.
    pub recorded_at: String,
    /// What it answered then (None: the reply stream kept no answer).
    pub original: Option<Answer>,
    /// What it answers now.
    pub now: Answer,
    /// Whether both answers agree (status, error code, result, artifacts).
    pub same: bool,
}

/// An answer as a replay compares it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Answer {
    /// `success`, `failed` …
    pub status: String,
    /// The error code of a failure.
    pub code: Option<String>,
    /// The result text.
    pub result: String,
    /// How many artifacts it carried.
    pub artifacts: usize,
}

impl From<&DelegationResponse> for Answer {
    fn from(r: &DelegationResponse) -> Self {
        Self {
            status: serde_json::to_value(r.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            code: r.error.as_ref().map(|e| e.code.to_string()),
            result: r.result.clone(),
            artifacts: r.artifacts.len(),
        }
    }
}

/// Sends the delegations the workers of the local `queue` agent `agent`
/// received since `since` again (at most `limit`, oldest first) and compares.
pub(crate) async fn replay(
    runtime: &Runtime,
    agent: &AgentSlug,
    since: chrono::DateTime<chrono::Utc>,
    limit: usize,
) -> Result<Vec<Replayed>, String> {
    let member = runtime.registry().get(agent).ok_or_else(|| format!("--agent: no agent '{agent}' in this team"))?;
    let Backend::Queue { agent: remote, .. } = &member.spec.backend else {
        return Err(format!("--agent: '{agent}' is not a queue agent here (backend kind = \"queue\")"));
    };
    let remote = remote.clone().unwrap_or_else(|| agent.clone());
    let js = jetstream::new(wire::connect(&runtime.config().queue).await?);
    wire::streams(&js, &runtime.config().queue).await?;
    let recorded = recorded(&js, &remote, since, limit).await?;
    let replies = js.get_stream(wire::REPLY_STREAM).await.map_err(|e| format!("{}: {e}", wire::REPLY_STREAM))?;
    let mut out = Vec::new();
    for (envelope, recorded_at) in recorded {
        let original = match replies.get_last_raw_message_by_subject(&wire::reply(envelope.request_id)).await {
            Ok(m) => serde_json::from_slice::<DelegationResponse>(&m.payload).ok().map(|r| Answer::from(&r)),
            Err(_) => None,
        };
        let mut again = DelegationRequest::new(
            envelope.origin_employee.clone(),
            agent.clone(),
            envelope.user_id.clone(),
            envelope.objective.clone(),
            envelope.input.clone(),
        );
        again.context_hints = envelope.context_hints.clone();
        again.handoff_data = envelope.handoff_data.clone();
        again.task_note = envelope.task_note.clone();
        again.constraints.max_tokens = envelope.constraints.max_tokens;
        let now = Answer::from(&runtime.enter(Door::Cli, &Principal::Admin, Envelope::new(again)).await);
        let same = original.as_ref() == Some(&now);
        out.push(Replayed {
            request_id: envelope.request_id,
            objective: envelope.objective,
            recorded_at: recorded_at.to_rfc3339(),
            original,
            now,
            same,
        });
    }
    Ok(out)
}

/// The delegations recorded on `remote`'s work subject since `since`, each
/// once (a retry is published again under the same id), oldest first.
async fn recorded(
    js: &jetstream::Context,
    remote: &AgentSlug,
    since: chrono::DateTime<chrono::Utc>,
    limit: usize,
) -> Result<Vec<(DelegationRequest, chrono::DateTime<chrono::Utc>)>, String> {
    let work = js.get_stream(wire::WORK_STREAM).await.map_err(|e| format!("{}: {e}", wire::WORK_STREAM))?;
    let reader = work
        .create_consumer(consumer::pull::OrderedConfig {
            filter_subject: wire::work(remote),
            deliver_policy: consumer::DeliverPolicy::ByStartTime { start_time: since },
            ..Default::default()
        })
        .await
        .map_err(|e| format!("the work stream cannot be read: {e}"))?;
    let mut messages = reader.messages().await.map_err(|e| format!("the work stream cannot be read: {e}"))?;
    let (mut seen, mut out) = (HashSet::new(), Vec::new());
    while out.len() < limit {
        let Ok(Some(next)) = tokio::time::timeout(QUIET, messages.next()).await else { break };
        let message = next.map_err(|e| format!("the work stream broke off: {e}"))?;
        let at = message.info().map(|i| i.published).unwrap_or(since);
        // an envelope that never parsed never ran: nothing to compare
        if let Ok(envelope) = crate::protocol::parse_request(&message.payload)
            && seen.insert(envelope.request_id)
        {
            out.push((envelope, at));
        }
    }
    Ok(out)
}
