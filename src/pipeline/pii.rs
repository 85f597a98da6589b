//! PII, in one place: what reaches an agent is redacted (typed tokens such
//! as `<EMAIL_1>`, the same value the same token in every hop of a tree);
//! what an agent returns is redacted before it flows up the tree or into a
//! record; what goes back to the caller at the edge is restored. An agent
//! trusted with PII (`pii_access`) sees the real values of its own task.

use crate::agent::{AgentOutput, Task};
use crate::protocol::{DelegationRequest, DelegationResponse, HandoffData};
use crate::rails::Tree;
use crate::redact::{Redactor, Vault};

/// The redactor with the vault of one tree (or, outside any tree, a
/// throwaway vault: the text is tokenized and nothing can restore it).
pub(super) struct Pii<'a> {
    redactor: &'a Redactor,
    tree: Option<&'a Tree>,
}

/// Every part of a hand-off, redacted.
fn redact_handoff(r: &Redactor, vault: &mut Vault, handoff: &mut HandoffData) {
    handoff.facts = handoff.facts.iter().map(|f| r.redact(f, vault)).collect();
    for reference in &mut handoff.references {
        reference.source_id = r.redact(&reference.source_id, vault);
    }
    if let Some(v) = handoff.intermediate_results.as_mut() {
        r.redact_json(v, vault);
    }
    for v in handoff.extra.values_mut() {
        r.redact_json(v, vault);
    }
}

/// An envelope as the journal keeps it: every readable field redacted on `vault`.
pub(super) fn redact_request(r: &Redactor, vault: &mut Vault, req: &mut DelegationRequest) {
    req.objective = r.redact(&req.objective, vault);
    req.input = r.redact(&req.input, vault);
    req.task_note = req.task_note.as_ref().map(|n| r.redact(n, vault));
    req.context_hints = req.context_hints.iter().map(|h| r.redact(h, vault)).collect();
    redact_handoff(r, vault, &mut req.handoff_data);
}

impl<'a> Pii<'a> {
    pub(super) fn new(redactor: &'a Redactor, tree: Option<&'a Tree>) -> Self {
        Self { redactor, tree }
    }

    fn with_vault<T>(&self, f: impl FnOnce(&Redactor, &mut Vault) -> T) -> T {
        match self.tree {
            Some(tree) => f(self.redactor, &mut tree.vault()),
            None => f(self.redactor, &mut Vault::default()),
        }
    }

    /// `text` with every PII value replaced by its token.
    pub(super) fn text(&self, text: &str) -> String {
        self.with_vault(|r, v| r.redact(text, v))
    }

    /// The task an agent sees: every field it can read (objective, input,
    /// note, hints, facts, history, every part of the hand-off) redacted; a
    /// trusted agent gets the real values of its objective, input and note
    /// back. Tokens already in that text (an earlier turn's, in the history)
    /// are reserved first, so a new value never gets a token that stands for
    /// another one there.
    pub(super) fn task(&self, task: &mut Task, trusted: bool) {
        self.with_vault(|r, vault| {
            for_each_readable(task, |text| vault.reserve_literals(text));
            task.objective = r.redact(&task.objective, vault);
            task.input = r.redact(&task.input, vault);
            task.task_note = task.task_note.as_ref().map(|n| r.redact(n, vault));
            task.context_hints = task.context_hints.iter().map(|h| r.redact(h, vault)).collect();
            task.facts = task.facts.iter().map(|f| r.redact(f, vault)).collect();
            for m in &mut task.history {
                m.content = r.redact(&m.content, vault);
            }
            redact_handoff(r, vault, &mut task.handoff);
            if trusted {
                task.objective = vault.restore(&task.objective);
                task.input = vault.restore(&task.input);
                task.task_note = task.task_note.as_ref().map(|n| vault.restore(n));
            }
        });
    }

    /// What flows back up the tree carries tokens, not raw PII.
    pub(super) fn output(&self, out: &mut AgentOutput) {
        self.with_vault(|r, vault| {
            out.summary = r.redact(&out.summary, vault);
            out.result = r.redact(&out.result, vault);
            for a in &mut out.artifacts {
                r.redact_json(&mut a.value, vault);
            }
            for f in &mut out.new_facts {
                f.fact = r.redact(&f.fact, vault);
            }
        });
    }

    /// Back at the edge: the caller gave us these values; give them back.
    pub(super) fn restore(&self, response: &mut DelegationResponse) {
        if !has_tokens(response) {
            return; // nothing to restore: the vault is not even locked
        }
        if let Some(tree) = self.tree {
            restore_with(&tree.vault(), response);
        }
    }
}

/// Whether `response` holds anything a vault could restore.
fn has_tokens(response: &DelegationResponse) -> bool {
    let tokens = |t: &str| t.contains('<');
    let question = response.error.as_ref().is_some_and(|e| tokens(&e.message));
    tokens(&response.summary) || tokens(&response.result) || !response.artifacts.is_empty() || question
}

/// `response`'s texts with `vault`'s values back.
pub(super) fn restore_with(vault: &Vault, response: &mut DelegationResponse) {
    response.summary = vault.restore(&response.summary);
    response.result = vault.restore(&response.result);
    if let Some(e) = response.error.as_mut().filter(|e| e.message.contains('<')) {
        e.message = vault.restore(&e.message); // a NEEDS_INPUT question names what the user gave
    }
    for a in &mut response.artifacts {
        vault.restore_json(&mut a.value);
    }
}

/// A top-level answer kept under an idempotency key (kept with tokens, as
/// everything the store holds): its caller's values back, from the vault
/// its tree sealed in the journal. A vault that does not open here (another
/// key) leaves the tokens.
pub(super) async fn restore_kept(rt: &crate::runtime::Runtime, response: &mut DelegationResponse) {
    if !has_tokens(response) {
        return;
    }
    let sealed = rt.inner.store.step(response.request_id).await.ok().flatten().and_then(|s| s.pii);
    if let Some(vault) = sealed.and_then(|p| rt.inner.seal.open(&p)) {
        restore_with(&vault, response);
    }
}

/// Calls `f` on every text of a task an agent can read (JSON parts as their
/// text), without copying the plain ones.
fn for_each_readable(task: &Task, mut f: impl FnMut(&str)) {
    let h = &task.handoff;
    [task.objective.as_str(), &task.input, task.task_note.as_deref().unwrap_or_default()].into_iter().for_each(&mut f);
    task.context_hints.iter().chain(&task.facts).chain(&h.facts).for_each(|t| f(t));
    task.history.iter().for_each(|m| f(&m.content));
    h.references.iter().for_each(|r| f(&r.source_id));
    h.intermediate_results.iter().chain(h.extra.values()).for_each(|v| f(&v.to_string()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Artifact, RequestId, UserId};
    use crate::rails::Trees;

    const EMAIL: &str = "alex.chan@company.com";

    #[test]
    fn an_agent_sees_tokens_and_a_trusted_one_sees_its_own_task_in_clear() {
        let trees = Trees::new();
        let tree = trees.enter(&UserId::parse("alice").unwrap(), RequestId::new());
        let redactor = Redactor::new();
        let pii = Pii::new(&redactor, Some(&tree));
        let mut task = Task::new(format!("Email {EMAIL}"), format!("cc {EMAIL}"));
        task.facts = vec![format!("works with {EMAIL}")];
        let mut trusted = task.clone();
        pii.task(&mut task, false);
        assert_eq!(task.objective, "Email <EMAIL_1>");
        assert_eq!(task.input, "cc <EMAIL_1>", "the same value is the same token");
        assert_eq!(task.facts, ["works with <EMAIL_1>"]);
        pii.task(&mut trusted, true);
        assert_eq!(trusted.objective, format!("Email {EMAIL}"));
        assert_eq!(trusted.facts, ["works with <EMAIL_1>"], "facts stay tokenized even for a trusted agent");
    }

    #[test]
    fn outputs_are_redacted_and_restored_only_at_the_edge_of_their_own_tree() {
        let trees = Trees::new();
        let tree = trees.enter(&UserId::parse("alice").unwrap(), RequestId::new());
        let redactor = Redactor::new();
        let pii = Pii::new(&redactor, Some(&tree));
        let mut out = AgentOutput::new(format!("wrote {EMAIL}"), format!("Dear {EMAIL}"))
            .with_artifact(Artifact::json("draft", serde_json::json!({"to": EMAIL})));
        pii.output(&mut out);
        assert_eq!(out.result, "Dear <EMAIL_1>");
        assert_eq!(out.artifacts[0].value["to"], "<EMAIL_1>");

        let mut response = DelegationResponse::failed(
            RequestId::new(),
            crate::protocol::AgentSlug::parse("email").unwrap(),
            crate::protocol::ErrorCode::AgentFailed.into(),
        );
        response.result = out.result.clone();
        response.artifacts = out.artifacts.clone();
        pii.restore(&mut response);
        assert_eq!(response.result, format!("Dear {EMAIL}"));
        assert_eq!(response.artifacts[0].value["to"], EMAIL);

        // another tree's vault cannot restore this tree's tokens
        let other = trees.enter(&UserId::parse("bob").unwrap(), RequestId::new());
        let mut leaked = response.clone();
        leaked.result = "Dear <EMAIL_1>".into();
        Pii::new(&redactor, Some(&other)).restore(&mut leaked);
        assert_eq!(leaked.result, "Dear <EMAIL_1>");
    }

    #[test]
    fn outside_a_tree_text_is_tokenized_and_nothing_restores_it() {
        let redactor = Redactor::new();
        let pii = Pii::new(&redactor, None);
        assert_eq!(pii.text(&format!("mail {EMAIL}")), "mail <EMAIL_1>");
    }

    /// Issue 15, reproduced on main: context hints, hand-off references and
    /// hand-off keys other than the known ones reached agents raw.
    #[test]
    fn every_field_an_agent_reads_is_redacted_and_earlier_tokens_are_kept() {
        let trees = Trees::new();
        let tree = trees.enter(&UserId::parse("alice").unwrap(), RequestId::new());
        let redactor = Redactor::new();
        let mut task = Task::new("Write to bob@example.org", "");
        task.context_hints = vec![format!("reply-to {EMAIL}")];
        task.handoff.references =
            vec![crate::protocol::Reference { owner_scope: "mail".into(), source_id: EMAIL.into() }];
        task.handoff.extra.insert("contact".into(), serde_json::json!({"email": EMAIL}));
        task.history =
            vec![crate::agent::HistoryMessage { role: "user".into(), content: "Email <EMAIL_1>".into(), asked: false }];
        Pii::new(&redactor, Some(&tree)).task(&mut task, false);
        let seen =
            serde_json::json!([task.objective, task.context_hints, task.handoff, task.history[0].content]).to_string();
        assert!(!seen.contains(EMAIL) && !seen.contains("bob@example.org"), "{seen}");
        // the earlier turn's <EMAIL_1> is not reissued to a new address
        assert!(!task.objective.contains("<EMAIL_1>"), "{}", task.objective);
        assert_eq!(task.history[0].content, "Email <EMAIL_1>");
    }

    /// What the worker saw, history first: an agent that repeats the
    /// conversation back, tokens and all.
    struct Recall;

    #[async_trait::async_trait]
    impl crate::agent::Agent for Recall {
        async fn run(
            &self,
            _ctx: &crate::agent::AgentContext,
            task: &Task,
        ) -> Result<AgentOutput, crate::protocol::DelegationError> {
            let before: Vec<&str> = task.history.iter().map(|m| m.content.as_str()).collect();
            Ok(AgentOutput::new("recalled", format!("before [{}] now [{}]", before.join(" | "), task.input)))
        }
    }

    const ANNA: &str = "416-555-0142";
    const BEN: &str = "647-555-0199";

    /// Issue 15, reproduced on main: the vault lived per tree, so turn 2 of
    /// a session could not restore turn 1's tokens (or, before tokens were
    /// reserved, restored them with turn 2's values: another person's).
    #[tokio::test]
    async fn two_persons_numbers_in_two_turns_are_each_restored_to_their_own() {
        use crate::pipeline::testing::{request, runtime, send};
        let rt = runtime(Recall);
        let turn1 = send(&rt, request("boss", "worker", "Remember Anna", &format!("Anna is {ANNA}"))).await;
        assert_eq!(turn1.result, format!("before [] now [Anna is {ANNA}]"), "{:?}", turn1.error);
        let session = turn1.child_session_id.expect("a session");

        let mut req = request("boss", "worker", "Remember Ben", &format!("Ben is {BEN}"));
        req.child_session_id = Some(session);
        let turn2 = send(&rt, req).await;
        assert!(turn2.result.contains(&format!("now [Ben is {BEN}]")), "{}", turn2.result);
        assert!(
            turn2.result.contains(&format!("Anna is {ANNA}")),
            "turn 1's number, from the history, is Anna's again: {}",
            turn2.result
        );
        assert!(!turn2.result.contains("<PHONE_"), "{}", turn2.result);
        // what was kept is tokens, never the numbers, and never the same token twice
        let kept = rt.store().recent_messages(session, 10).await.unwrap();
        let kept: Vec<&str> = kept.iter().map(|m| m.content.as_str()).collect();
        let all = kept.join("\n");
        assert!(!all.contains(ANNA) && !all.contains(BEN), "{all}");
        assert!(all.contains("Anna is <PHONE_1>") && all.contains("Ben is <PHONE_2>"), "{all}");

        // another session of the same user has its own vault: turn 1's token means nothing there
        let mut other = request("boss", "worker", "What was <PHONE_1>?", "<PHONE_1>");
        other.child_session_id = None;
        let fresh = send(&rt, other).await;
        assert_eq!(fresh.result, "before [] now [<PHONE_1>]", "{:?}", fresh.error);
    }
}
