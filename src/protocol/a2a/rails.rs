//! The rails extension: a delegation's lineage and limits in an A2A
//! message's `metadata`, keyed by [`RAILS_EXTENSION`]. With it, depth,
//! cycle, fan-out, deadline and budget hold across an A2A hop exactly as
//! they do across a native `/v1/delegate` hop; without it, a call starts a
//! fresh tree at depth 0.
//!
//! ```json
//! "metadata": {"https://switchboard.dev/a2a/ext/rails/v1": {
//!   "requestId": "…", "rootId": "…", "parentId": "…", "origin": "prime-boss", "user": "alice",
//!   "depth": 0, "maxDepth": 2, "chain": [{"agent": "prime-boss", "objectiveHash": "1a2b3c4d"}],
//!   "deadlineMs": 14000, "maxTokens": 600, "tools": ["categorize"], "priority": "normal"}}
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::protocol::{AgentSlug, ChainLink, Constraints, DelegationRequest, HandoffData, Priority, RequestId, UserId};

/// The extension's URI, declared in every card's `capabilities.extensions`.
pub const RAILS_EXTENSION: &str = "https://switchboard.dev/a2a/ext/rails/v1";

/// The lineage extension's URI: a signed lineage token (docs/LINEAGE.md) in
/// `metadata[LINEAGE_EXTENSION] = {"token": "…"}`. A Switchboard that
/// receives it verifies it and takes the rails from it; a runtime that does
/// not know it may ignore it.
pub const LINEAGE_EXTENSION: &str = "https://switchboard.dev/a2a/ext/lineage/v1";

/// Longest lineage token text accepted in metadata.
const MAX_LINEAGE: usize = 8192;

/// Puts a lineage token into message metadata.
pub fn put_lineage(metadata: &mut Map<String, Value>, token: String) {
    metadata.insert(LINEAGE_EXTENSION.into(), serde_json::json!({ "token": token }));
}

/// The lineage token in `metadata`, if any; an error message when the
/// extension's entry is there but is not `{"token": "<text>"}`.
pub fn lineage_of(metadata: Option<&Map<String, Value>>) -> Result<Option<String>, String> {
    let Some(value) = metadata.and_then(|m| m.get(LINEAGE_EXTENSION)) else { return Ok(None) };
    match value.get("token").and_then(Value::as_str) {
        Some(t) if !t.is_empty() && t.len() <= MAX_LINEAGE && value.as_object().is_some_and(|o| o.len() == 1) => {
            Ok(Some(t.to_string()))
        }
        _ => Err(format!(
            "metadata[\"{LINEAGE_EXTENSION}\"] must be {{\"token\": \"<lineage token, 1-{MAX_LINEAGE} characters>\"}}"
        )),
    }
}

const MAX_CHAIN: usize = 64;
const MAX_TOOLS: usize = 64;
const MAX_HINTS: usize = 64;

/// One ancestor in the chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Link {
    /// `agent`: the ancestor agent's slug.
    pub agent: AgentSlug,
    /// `objectiveHash`: the first 8 hex digits of the SHA-256 of that agent's objective.
    pub objective_hash: String,
}

/// The rails of one forwarded delegation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rails {
    /// `requestId`: this hop's own request id (the A2A task runs as this delegation).
    pub request_id: RequestId,
    /// `rootId`: the id of the tree's first request (this hop's own id when it is the root).
    pub root_id: RequestId,
    /// `parentId`: the id of the request whose agent sends this one; absent at the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<RequestId>,
    /// `origin`: the agent that delegates (the caller's service token must name it).
    pub origin: AgentSlug,
    /// `user`: the user on whose behalf the tree runs.
    pub user: UserId,
    /// `depth`: the origin's depth (`current_depth`, 0 at the root): the target runs one deeper.
    pub depth: u32,
    /// `maxDepth`: the tree's depth limit (at least 1): the target's depth, `depth + 1`, must stay below it.
    pub max_depth: u32,
    /// `chain`: the ancestors, oldest first, for cycle detection (at most 64); left out when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<Link>,
    /// `deadlineMs`: the time left for this hop, in milliseconds (at least 1).
    pub deadline_ms: u64,
    /// `maxTokens`: the token budget left for this hop's subtree (at least 1).
    pub max_tokens: u32,
    /// `tools`: the tools this hop may use (at most 64 names); absent for no extra cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// `priority`: how urgent the delegation is (`low`, `normal`, `high`, `urgent`); `normal` when absent.
    #[serde(default)]
    pub priority: Priority,
    /// `idempotencyKey`: the caller's key for safe retries (1 to 256 characters); absent for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// `taskNote`: the natural-language Task Note the target's checks come from; absent for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_note: Option<String>,
    /// `contextHints`: free-form hints for the target (at most 64); left out when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_hints: Vec<String>,
    /// `handoffData`: facts, references and earlier results the origin hands the target; absent when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff_data: Option<HandoffData>,
}

impl Rails {
    /// The rails of a forwarded envelope (see `Lineage::forward` in the agent module).
    pub fn from_request(req: &DelegationRequest) -> Self {
        Self {
            request_id: req.request_id,
            root_id: req.root_id(),
            parent_id: req.parent_request_id,
            origin: req.origin_employee.clone(),
            user: req.user_id.clone(),
            depth: req.current_depth,
            max_depth: req.constraints.max_depth,
            chain: req
                .chain
                .iter()
                .map(|l| Link { agent: l.agent.clone(), objective_hash: l.objective_hash.clone() })
                .collect(),
            deadline_ms: req.constraints.deadline_ms,
            max_tokens: req.constraints.max_tokens,
            tools: req.tools.clone(),
            priority: req.priority,
            idempotency_key: req.idempotency_key.clone(),
            task_note: req.task_note.clone(),
            context_hints: req.context_hints.clone(),
            handoff_data: (!req.handoff_data.is_empty()).then(|| req.handoff_data.clone()),
        }
    }

    /// The rails as message metadata.
    pub fn to_metadata(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(RAILS_EXTENSION.into(), serde_json::to_value(self).unwrap_or(Value::Null));
        m
    }

    /// The rails in `metadata`, if any: `Ok(None)` when absent, an error
    /// message (for an invalid-params answer) when present but malformed.
    pub fn from_metadata(metadata: Option<&Map<String, Value>>) -> Result<Option<Self>, String> {
        let Some(value) = metadata.and_then(|m| m.get(RAILS_EXTENSION)) else { return Ok(None) };
        let rails: Rails = serde_json::from_value(value.clone())
            .map_err(|e| format!("metadata[\"{RAILS_EXTENSION}\"] is not valid rails metadata: {e}"))?;
        rails.validate()?;
        Ok(Some(rails))
    }

    fn validate(&self) -> Result<(), String> {
        let bad = |m: &str| Err(format!("metadata[\"{RAILS_EXTENSION}\"]: {m}"));
        if self.deadline_ms == 0 {
            return bad("deadlineMs must be at least 1");
        }
        if self.max_tokens == 0 {
            return bad("maxTokens must be at least 1");
        }
        if self.max_depth == 0 {
            return bad("maxDepth must be at least 1");
        }
        if self.chain.len() > MAX_CHAIN {
            return bad("chain has more than 64 links");
        }
        if self
            .chain
            .iter()
            .any(|l| l.objective_hash.len() != 8 || !l.objective_hash.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            return bad("chain[].objectiveHash must be 8 hex digits");
        }
        if self.tools.as_ref().is_some_and(|t| t.len() > MAX_TOOLS || t.iter().any(|x| x.is_empty() || x.len() > 64)) {
            return bad("tools must be at most 64 names of 1 to 64 characters");
        }
        if self.context_hints.len() > MAX_HINTS {
            return bad("contextHints has more than 64 entries");
        }
        if self.idempotency_key.as_ref().is_some_and(|k| k.is_empty() || k.len() > 256) {
            return bad("idempotencyKey must be 1 to 256 characters");
        }
        if self.parent_id.is_some_and(|p| p == self.request_id) {
            return bad("parentId equals requestId");
        }
        Ok(())
    }

    /// The envelope this hop runs as: from `origin` to `target`, with the
    /// rails' lineage and limits, and the message's objective and input.
    pub fn request(&self, target: AgentSlug, objective: String, input: String) -> DelegationRequest {
        let mut req = DelegationRequest::new(self.origin.clone(), target, self.user.clone(), objective, input);
        req.request_id = self.request_id;
        req.root_request_id = Some(self.root_id);
        req.parent_request_id = self.parent_id;
        req.current_depth = self.depth;
        req.chain = self
            .chain
            .iter()
            .map(|l| ChainLink { agent: l.agent.clone(), objective_hash: l.objective_hash.clone() })
            .collect();
        req.constraints =
            Constraints { max_tokens: self.max_tokens, max_depth: self.max_depth, deadline_ms: self.deadline_ms };
        req.tools = self.tools.clone();
        req.priority = self.priority;
        req.idempotency_key = self.idempotency_key.clone();
        req.task_note = self.task_note.clone();
        req.context_hints = self.context_hints.clone();
        req.handoff_data = self.handoff_data.clone().unwrap_or_default();
        req
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> DelegationRequest {
        let mut req = DelegationRequest::new(
            AgentSlug::parse("prime-boss").unwrap(),
            AgentSlug::parse("tag-ai").unwrap(),
            UserId::parse("alice").unwrap(),
            "Categorize",
            "2025-10-01 Starbucks 4.50",
        );
        req.root_request_id = Some(RequestId::new());
        req.parent_request_id = Some(RequestId::new());
        req.current_depth = 1;
        req.chain =
            vec![ChainLink { agent: AgentSlug::parse("prime-boss").unwrap(), objective_hash: "0123abcd".into() }];
        req.tools = Some(vec!["categorize".into()]);
        req
    }

    #[test]
    fn rails_round_trip_through_metadata() {
        let req = sample();
        let rails = Rails::from_request(&req);
        let meta = rails.to_metadata();
        let back = Rails::from_metadata(Some(&meta)).unwrap().unwrap();
        assert_eq!(back, rails);
        let again = back.request(req.target_employee.clone(), req.objective.clone(), req.input.clone());
        assert_eq!(again.request_id, req.request_id);
        assert_eq!(again.root_id(), req.root_id());
        assert_eq!(again.current_depth, 1);
        assert_eq!(again.chain, req.chain);
        assert_eq!(again.constraints, req.constraints);
        assert_eq!(again.tools, req.tools);
        assert_eq!(meta[RAILS_EXTENSION]["maxDepth"], 2);
    }

    #[test]
    fn absent_rails_are_none_and_garbage_is_an_error() {
        assert_eq!(Rails::from_metadata(None).unwrap(), None);
        assert_eq!(Rails::from_metadata(Some(&Map::new())).unwrap(), None);
        for garbage in [json!("x"), json!({"requestId": "nope"}), json!(null), json!([1, 2])] {
            let mut m = Map::new();
            m.insert(RAILS_EXTENSION.into(), garbage);
            assert!(Rails::from_metadata(Some(&m)).is_err());
        }
        let mut m = Rails::from_request(&sample()).to_metadata();
        m[RAILS_EXTENSION]["deadlineMs"] = json!(0);
        assert!(Rails::from_metadata(Some(&m)).unwrap_err().contains("deadlineMs"));
        let mut m = Rails::from_request(&sample()).to_metadata();
        m[RAILS_EXTENSION]["chain"] = json!([{"agent": "prime-boss", "objectiveHash": "zz"}]);
        assert!(Rails::from_metadata(Some(&m)).unwrap_err().contains("objectiveHash"));
        let mut m = Rails::from_request(&sample()).to_metadata();
        m[RAILS_EXTENSION]["depth"] = json!(-1);
        assert!(Rails::from_metadata(Some(&m)).is_err());
    }
}
