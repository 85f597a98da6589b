//! A delegation tree as people see it: the stored records nested by parent,
//! rendered as indented text (`switchboard trace`, `ask`) or JSON.

use serde::Serialize;

use crate::protocol::RequestId;
use crate::store::DelegationRecord;

/// One node of a delegation tree as shown to people.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TreeView {
    /// The delegation's id.
    pub request_id: RequestId,
    /// The agent that was asked (the target).
    pub agent: String,
    /// Who asked: an agent's slug, or `user` for a user's turn.
    pub origin: String,
    /// What the agent was asked to do, PII redacted.
    pub objective: String,
    /// `success`, `partial`, `failed` or `refused`.
    pub status: String,
    /// The error code when it did not succeed, e.g. `DEPTH_LIMIT`; None otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// Attempts made; 0 when refused before running.
    pub attempts: u32,
    /// Milliseconds the delegation took, retries included.
    pub duration_ms: u64,
    /// Tokens used by the delegation and its subtree.
    pub tokens: u32,
    /// The delegations this one made, in order of their records.
    pub children: Vec<TreeView>,
}

impl TreeView {
    /// Nests flat records by parent; the records' root (or the earliest node) is the top.
    pub fn from_records(records: &[DelegationRecord]) -> Option<TreeView> {
        fn build(r: &DelegationRecord, all: &[DelegationRecord], depth: usize) -> TreeView {
            let children = if depth > 64 {
                Vec::new()
            } else {
                all.iter().filter(|c| c.parent_id == Some(r.request_id)).map(|c| build(c, all, depth + 1)).collect()
            };
            TreeView {
                request_id: r.request_id,
                agent: r.target.clone(),
                origin: r.origin.clone(),
                objective: r.objective.clone(),
                status: r.status.clone(),
                error_code: r.error_code.clone(),
                attempts: r.attempts,
                duration_ms: r.duration_ms,
                tokens: r.tokens.total,
                children,
            }
        }
        let ids: std::collections::HashSet<RequestId> = records.iter().map(|r| r.request_id).collect();
        let top = records
            .iter()
            .find(|r| r.request_id == r.root_id)
            .or_else(|| records.iter().find(|r| r.parent_id.is_none_or(|p| !ids.contains(&p))))?;
        Some(build(top, records, 0))
    }

    /// Indented text: agent, objective, status, milliseconds.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.render_into(&mut out, "", true, true);
        out
    }

    fn render_into(&self, out: &mut String, prefix: &str, last: bool, top: bool) {
        let branch = if top {
            ""
        } else if last {
            "└─ "
        } else {
            "├─ "
        };
        let code = self.error_code.as_deref().map(|c| format!(" {c}")).unwrap_or_default();
        out.push_str(&format!(
            "{prefix}{branch}{} \"{}\" {}{code} {} ms\n",
            self.agent, self.objective, self.status, self.duration_ms
        ));
        let child_prefix = if top { String::new() } else { format!("{prefix}{}", if last { "   " } else { "│  " }) };
        for (i, c) in self.children.iter().enumerate() {
            c.render_into(out, &child_prefix, i + 1 == self.children.len(), false);
        }
    }

    /// Every node, depth first.
    pub fn nodes(&self) -> Vec<&TreeView> {
        let mut v = vec![self];
        for c in &self.children {
            v.extend(c.nodes());
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{TokenUsage, UserId};

    fn record(id: RequestId, root: RequestId, parent: Option<RequestId>, target: &str) -> DelegationRecord {
        DelegationRecord {
            request_id: id,
            root_id: root,
            parent_id: parent,
            user_id: UserId::parse("alice").unwrap(),
            origin: "prime-boss".into(),
            target: target.into(),
            objective: format!("work for {target}"),
            objective_hash: String::new(),
            status: "success".into(),
            error_code: None,
            signature: String::new(),
            attempts: 1,
            depth: 1,
            started_at: 0,
            duration_ms: 3,
            tokens: TokenUsage::default(),
            consult: false,
        }
    }

    #[test]
    fn records_nest_by_parent_and_render_as_a_tree() {
        let (root, a, b) = (RequestId::new(), RequestId::new(), RequestId::new());
        let records = [
            record(b, root, Some(root), "tag-ai"),
            record(root, root, None, "prime-boss"),
            record(a, root, Some(root), "byte-doc"),
        ];
        let tree = TreeView::from_records(&records).unwrap();
        assert_eq!(tree.agent, "prime-boss");
        assert_eq!(tree.nodes().len(), 3);
        let text = tree.render();
        assert!(text.starts_with("prime-boss \"work for prime-boss\" success 3 ms\n"), "{text}");
        assert!(text.contains("├─ tag-ai") && text.contains("└─ byte-doc"), "{text}");
        assert!(TreeView::from_records(&[]).is_none());
    }
}
