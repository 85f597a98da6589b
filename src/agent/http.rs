//! The `http` backend: the agent's work is done by another Switchboard (or
//! anything that speaks `POST /v1/delegate`). The envelope is forwarded with
//! the same ids, lineage, remaining deadline and budget, and effective tools,
//! so the rails hold across the hop; an idempotency key makes our retries
//! safe; the remote's answer, refusal codes included, comes back as ours.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::StatusCode;

use super::{Agent, AgentContext, AgentOutput, Task};
use crate::protocol::{AgentSlug, DelegationError, DelegationResponse, ErrorCode, Status};
use crate::telemetry;

/// The header a lineage token travels in (docs/LINEAGE.md).
pub const LINEAGE_HEADER: &str = "X-Switchboard-Lineage";

/// Largest answer read from a remote.
const MAX_REPLY: usize = 8 * 1024 * 1024;

/// An agent whose work is done by a remote runtime, through its `POST /v1/delegate`.
pub struct RemoteAgent {
    client: reqwest::Client,
    endpoint: String,
    remote_slug: Option<AgentSlug>,
    default_token: Option<String>,
    origin_tokens: BTreeMap<String, String>,
    peer: Option<String>,
}

impl std::fmt::Debug for RemoteAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteAgent").finish_non_exhaustive()
    }
}

fn env_token(var: &str) -> Result<String, DelegationError> {
    std::env::var(var).map_err(|_| {
        DelegationError::invalid(format!("the environment variable {var} (a remote service token) is not set"))
    })
}

impl RemoteAgent {
    /// A backend for the runtime at `url`, optionally naming the remote `agent`, with service tokens read from the named environment variables (per origin, else `token_env`).
    pub fn new(
        url: &str,
        agent: Option<&str>,
        token_env: Option<&str>,
        origin_tokens: &BTreeMap<String, String>,
    ) -> Result<Self, DelegationError> {
        let base = url.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(DelegationError::invalid(format!(
                "http backend url '{url}' must start with http:// or https://"
            )));
        }
        let remote_slug = agent.map(AgentSlug::parse).transpose().map_err(|e| DelegationError::invalid(e.0))?;
        let client = crate::util::http_client().map_err(DelegationError::invalid)?;
        Ok(Self {
            client,
            endpoint: format!("{base}/v1/delegate"),
            remote_slug,
            default_token: token_env.map(env_token).transpose()?,
            origin_tokens: origin_tokens
                .iter()
                .map(|(origin, var)| Ok((origin.clone(), env_token(var)?)))
                .collect::<Result<_, DelegationError>>()?,
            peer: None,
        })
    }

    /// Calls carry a lineage token addressed to the remote runtime named `peer`.
    pub fn with_peer(mut self, peer: Option<String>) -> Self {
        self.peer = peer;
        self
    }

    fn token_for(&self, origin: &AgentSlug) -> Result<&str, DelegationError> {
        self.origin_tokens.get(origin.as_str()).or(self.default_token.as_ref()).map(String::as_str).ok_or_else(|| {
            DelegationError::new(
                ErrorCode::AgentFailed,
                format!("no service token is configured for calls from '{origin}' to {}", self.endpoint),
            )
        })
    }
}

/// A remote's reply as an agent output, or its error as ours.
pub fn reply_to_output(status: u16, body: &[u8], endpoint: &str) -> Result<AgentOutput, DelegationError> {
    #[derive(serde::Deserialize)]
    struct ErrorOnly {
        error: DelegationError,
    }
    if let Ok(r) = serde_json::from_slice::<DelegationResponse>(body) {
        if let Some(e) = r.error {
            return Err(e);
        }
        return Ok(AgentOutput {
            summary: r.summary,
            result: r.result,
            artifacts: r.artifacts,
            new_facts: r.new_facts,
            used_sources: r.used_sources,
            token_usage: Some(r.token_usage),
            confidence: r.confidence,
            requires_followup: r.requires_followup,
            status: Some(if r.status == Status::Partial { Status::Partial } else { Status::Success }),
        });
    }
    if let Ok(e) = serde_json::from_slice::<ErrorOnly>(body) {
        return Err(e.error);
    }
    let snippet: String = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
    let code = if status >= 500 { ErrorCode::AgentUnavailable } else { ErrorCode::AgentFailed };
    Err(DelegationError::new(
        code,
        format!("{endpoint} answered HTTP {status} without a Switchboard response: {snippet:?}"),
    ))
}

#[async_trait]
impl Agent for RemoteAgent {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        let lineage = ctx.delegator()?.lineage();
        let target = self.remote_slug.clone().unwrap_or_else(|| lineage.agent.clone());
        let mut req = lineage.forward(target, task);
        // our retries of this hop must not make the remote do the work twice
        req.idempotency_key.get_or_insert_with(|| format!("hop-{}", lineage.request_id));
        let token = self.token_for(&lineage.origin)?;
        let mut http = self
            .client
            .post(&self.endpoint)
            .bearer_auth(token)
            .header("X-Agent-Request-ID", req.request_id.to_string())
            .header("X-Agent-Origin", req.origin_employee.as_str())
            .header("X-Agent-Depth", req.current_depth.to_string())
            .header("X-Agent-Deadline-Ms", req.constraints.deadline_ms.to_string())
            .timeout(lineage.remaining.max(Duration::from_millis(1)))
            .json(&req);
        if let Some(s) = req.parent_session_id {
            http = http.header("X-Agent-Parent-Session", s.to_string());
        }
        if let Some(peer) = &self.peer
            && let Some(token) = ctx.delegator()?.relay_token(&req, peer)?
        {
            http = http.header(LINEAGE_HEADER, token);
        }
        for (k, v) in telemetry::trace_headers() {
            http = http.header(k, v);
        }
        let response = http.send().await.map_err(|e| {
            if e.is_timeout() {
                DelegationError::new(ErrorCode::DeadlineExceeded, format!("{} did not answer in time", self.endpoint))
            } else {
                DelegationError::new(ErrorCode::AgentUnavailable, format!("{} is unreachable: {e}", self.endpoint))
            }
        })?;
        let status = response.status();
        let body = read_limited(response).await.map_err(|e| {
            DelegationError::new(ErrorCode::AgentUnavailable, format!("{}: the answer broke off: {e}", self.endpoint))
        })?;
        if status == StatusCode::PAYLOAD_TOO_LARGE && body.is_empty() {
            return Err(DelegationError::new(
                ErrorCode::AgentFailed,
                format!("{} refused the request as too large", self.endpoint),
            ));
        }
        reply_to_output(status.as_u16(), &body, &self.endpoint)
    }
}

async fn read_limited(mut response: reqwest::Response) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
        if body.len() + chunk.len() > MAX_REPLY {
            return Err(format!("more than {MAX_REPLY} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_refusals_keep_their_code_and_garbage_is_a_clear_failure() {
        let refusal = br#"{"error":{"code":"DEPTH_LIMIT","message":"Delegation depth limit reached (2/2)."}}"#;
        assert_eq!(reply_to_output(422, refusal, "x").unwrap_err().code, ErrorCode::DepthLimit);
        let err = reply_to_output(200, b"<html>hi</html>", "http://r/v1/delegate").unwrap_err();
        assert_eq!(err.code, ErrorCode::AgentFailed);
        assert!(err.message.contains("without a Switchboard response"));
        assert_eq!(reply_to_output(502, b"Bad Gateway", "x").unwrap_err().code, ErrorCode::AgentUnavailable);
    }

    #[test]
    fn a_backend_without_its_token_variable_is_a_configuration_error() {
        let err = RemoteAgent::new("http://127.0.0.1:1", None, Some("SWITCHBOARD_SURELY_UNSET_VAR"), &BTreeMap::new())
            .err()
            .unwrap();
        assert!(err.message.contains("SWITCHBOARD_SURELY_UNSET_VAR"));
        assert!(RemoteAgent::new("ftp://x", None, None, &BTreeMap::new()).is_err());
    }
}
