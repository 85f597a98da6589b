//! How the agent of a running [`Node`] delegates further: [`NodeDispatch`]
//! implements the agent layer's `Dispatch` by sending each nested call back
//! into the pipeline as the node's child, and records what it refused.

use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::approval::approval;
use super::entry::{Entry, Step};
use super::node::Node;
use super::{journal, record};
use crate::agent::{AgentContext, Delegator, Dispatch, Money};
use crate::auth::Principal;
use crate::lineage::{Claims, Relay};
use crate::protocol::{
    AgentSlug, DelegationError, DelegationRequest, DelegationResponse, ErrorCode, Mode, RequestId, Status,
};
use crate::runtime::Runtime;
use crate::store::Durability;

/// The context one attempt of this node's agent runs with: its delegator,
/// its effective tools, a cancellation that ends with the attempt, its deadline.
pub(super) fn agent_context(node: &Arc<Node>, runtime: &Runtime, cancel: CancellationToken) -> AgentContext {
    let dispatch = Arc::new(NodeDispatch { runtime: runtime.clone(), node: node.clone() });
    let context = AgentContext::new(
        Some(Delegator::new(node.scope.clone(), dispatch)),
        node.tools.clone(),
        cancel,
        node.deadline,
        node.depth,
    )
    .with_clock(node.tree.clock_ms())
    .with_vault(node.tree.shared_vault().clone());
    // a consult keeps nothing, the user's money included
    if node.scope.mode == Mode::Ephemeral {
        return context;
    }
    // what this attempt reads is kept with the step (a replay gives it back)
    node.reads.attempt();
    let store = runtime.inner.store.clone();
    let money = Money::new(store, node.scope.user.clone(), Some(node.scope.request_id));
    context.with_money(money.recording(node.reads.clone()))
}

/// The pipeline, as the agent of one node sees it.
struct NodeDispatch {
    runtime: Runtime,
    node: Arc<Node>,
}

#[async_trait]
impl Dispatch for NodeDispatch {
    async fn dispatch(&self, mut request: DelegationRequest) -> DelegationResponse {
        // the child's id is its place in this node: a resumed node finds it again
        request.request_id = self.node.next_child_id(&request.target_employee);
        let mut resumed = false;
        if self.node.is_resumed() {
            match self.runtime.inner.store.step(request.request_id).await {
                Ok(Some(step)) if step.state.is_terminal() => {
                    // finished before: its answer, without running it again
                    let answer = journal::answer(&step).unwrap_or_else(|| {
                        let why = DelegationError::new(ErrorCode::Cancelled, "this step was cancelled");
                        DelegationResponse::failed(request.request_id, request.target_employee.clone(), why)
                    });
                    self.node.child_started();
                    self.node.add_child_usage(answer.token_usage);
                    return answer;
                }
                Ok(Some(_)) => resumed = true,
                Ok(None) => {}
                Err(e) => {
                    let why = DelegationError::from(e);
                    return DelegationResponse::failed(request.request_id, request.target_employee.clone(), why);
                }
            }
        }
        let caller = Principal::Agent(self.node.agent.clone());
        let step = Step {
            parent: Some(&self.node),
            caller: &caller,
            req: request,
            entry: Entry::Delegation,
            resumed,
            end: Durability::Now,
        };
        let response = self.runtime.dispatch_step(step).await;
        if let Some(why) = response.error.as_ref().filter(|_| response.status == Status::NeedsApproval) {
            self.node.child_waits(why.clone());
        }
        response
    }

    async fn approval(&self, action: &str, summary: &str) -> Result<(), DelegationError> {
        approval(&self.runtime, &self.node, action, summary).await
    }

    async fn record_denied(&self, what: &str, error: &DelegationError) {
        record::denied(&self.runtime, &self.node.scope, what, error).await;
    }

    async fn record_tool(&self, what: &str, outcome: Result<(), &DelegationError>, duration_ms: u64) {
        record::tool_used(&self.runtime, &self.node.scope, what, outcome, duration_ms).await;
    }

    fn remaining_tokens(&self) -> u32 {
        self.node.remaining_tokens()
    }

    fn relay_token(&self, request: &DelegationRequest, audience: &str) -> Result<Option<String>, DelegationError> {
        let Some(hop) = &self.node.hop else { return Ok(None) };
        let now = crate::lineage::now_ms();
        let tools = Claims::tool_set(request.tools.iter().flatten().cloned());
        let next = Relay {
            request: request.request_id,
            target: &request.target_employee,
            objective: &request.objective,
            audience,
            deadline_ms: now.saturating_add(request.constraints.deadline_ms),
            budget: request.constraints.max_tokens,
            max_depth: request.constraints.max_depth,
            tools: &tools,
        };
        self.runtime.lineage().relay(hop, next).map(Some).map_err(DelegationError::from)
    }

    fn check_reply(
        &self,
        peer: &str,
        id: RequestId,
        body: &[u8],
        signature: Option<&str>,
    ) -> Result<(), DelegationError> {
        let checked = self.runtime.lineage().check_reply(peer, id, body, signature);
        checked.map(drop).map_err(DelegationError::from)
    }

    fn may_delegate_to(&self, target: &AgentSlug) -> bool {
        let reg = self.runtime.registry();
        reg.get(&self.node.agent).is_some_and(|m| m.spec.may_delegate_to(target)) && reg.get(target).is_some()
    }
}

#[cfg(test)]
mod tests {
    use crate::pipeline::AskOptions;
    use crate::pipeline::testing::{Flaky, runtime};
    use crate::protocol::{AgentSlug, ErrorCode, Status, UserId};
    use crate::runtime::Runtime;

    async fn ask(rt: &Runtime, agent: &str) -> crate::pipeline::AskResponse {
        let to = AskOptions { agent: Some(AgentSlug::parse(agent).unwrap()), ..Default::default() };
        rt.ask(&UserId::parse("alice").unwrap(), "hello", to).await.unwrap()
    }

    #[tokio::test]
    async fn an_agents_own_delegation_inherits_the_nodes_lineage_and_reports_its_usage() {
        let rt = runtime(Flaky::new(0, ErrorCode::AgentFailed).0);
        let r = ask(&rt, "boss").await;
        assert_eq!(r.answer, "echo: hello");
        let tree = rt.store().delegation_tree(r.request_id).await.unwrap();
        let (root, child) = (&tree[0], &tree[1]);
        assert_eq!(child.parent_id, Some(root.request_id));
        assert_eq!(child.root_id, root.root_id);
        assert_eq!(child.depth, root.depth + 1);
        assert_eq!(child.user_id, root.user_id);
        assert_eq!((child.origin.as_str(), child.target.as_str()), ("boss", "worker"));
        assert_eq!(child.status, Status::Success.as_str());
        assert!(root.tokens.total >= child.tokens.total, "the parent's usage includes its child's");
    }

    #[tokio::test]
    async fn a_delegation_outside_the_agents_allowed_targets_is_refused_and_on_file() {
        let rt = runtime(Flaky::new(0, ErrorCode::AgentFailed).0);
        let to = AskOptions { agent: Some(AgentSlug::parse("stranger").unwrap()), ..Default::default() };
        let err = rt.ask(&UserId::parse("alice").unwrap(), "hello", to).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::DelegationNotAllowed);
        assert!(err.message.contains("stranger may not delegate to worker"), "{}", err.message);
        // the refused hop is on file under the turn that tried it
        let audit = rt.store().audit_log().await.unwrap();
        let turn = audit.iter().find(|a| a.record.target == "stranger").unwrap();
        let tree = rt.store().delegation_tree(turn.record.request_id).await.unwrap();
        let refused: Vec<_> = tree.iter().filter(|d| d.status == "refused").collect();
        assert_eq!(refused.len(), 1, "{tree:?}");
        assert_eq!(refused[0].error_code.as_deref(), Some("DELEGATION_NOT_ALLOWED"));
        assert_eq!(refused[0].parent_id, Some(turn.record.request_id));
    }
}
