//! The texts of every kind of row the store writes (what the redactor
//! redacts before a write: `redact::Redacted`), in one place. A field a
//! person's data may reach is a text; ids, states, codes, counts and times
//! are not. A new kind of row gets its `Texts` here, or the store cannot
//! write it.

use crate::redact::{Text, Texts};

use super::{
    A2aEventRecord, A2aPushConfigRecord, A2aTaskRecord, Approval, AuditRecord, Conversation, DelegationRecord, Fact,
    KeyAnswer, Message, MoneyEntry, MoneyPlan, ReplayRecord, TreeStep,
};

impl Texts for Message {
    fn texts(&mut self, visit: &mut dyn FnMut(Text<'_>)) {
        visit(Text::Plain(&mut self.content));
    }
}

impl Texts for Fact {
    fn texts(&mut self, visit: &mut dyn FnMut(Text<'_>)) {
        visit(Text::Plain(&mut self.fact));
    }
}

impl Texts for DelegationRecord {
    fn texts(&mut self, visit: &mut dyn FnMut(Text<'_>)) {
        visit(Text::Plain(&mut self.objective));
        visit(Text::Plain(&mut self.signature));
    }
}

impl Texts for AuditRecord {
    fn texts(&mut self, visit: &mut dyn FnMut(Text<'_>)) {
        visit(Text::Plain(&mut self.objective));
    }
}

impl Texts for TreeStep {
    fn texts(&mut self, visit: &mut dyn FnMut(Text<'_>)) {
        // `pii` is the tree's vault, sealed: ciphertext, not text
        visit(Text::Json(&mut self.request));
        if let Some(r) = &mut self.response {
            visit(Text::Json(r));
        }
        if let Some(r) = &mut self.reads {
            visit(Text::Json(r));
        }
    }
}

impl Texts for KeyAnswer {
    fn texts(&mut self, visit: &mut dyn FnMut(Text<'_>)) {
        if let Some(r) = &mut self.response {
            visit(Text::Json(r));
        }
    }
}

impl Texts for Conversation {
    fn texts(&mut self, visit: &mut dyn FnMut(Text<'_>)) {
        self.messages.texts(visit);
        self.facts.texts(visit);
        self.step.texts(visit);
        self.key.texts(visit);
    }
}

impl Texts for Approval {
    fn texts(&mut self, visit: &mut dyn FnMut(Text<'_>)) {
        visit(Text::Plain(&mut self.summary));
        self.reason.texts(visit);
    }
}

impl Texts for ReplayRecord {
    fn texts(&mut self, visit: &mut dyn FnMut(Text<'_>)) {
        visit(Text::Json(&mut self.report));
    }
}

impl Texts for MoneyEntry {
    fn texts(&mut self, visit: &mut dyn FnMut(Text<'_>)) {
        visit(Text::Plain(&mut self.merchant));
        visit(Text::Plain(&mut self.description));
        self.category.texts(visit);
        self.note.texts(visit);
    }
}

impl Texts for MoneyPlan {
    fn texts(&mut self, visit: &mut dyn FnMut(Text<'_>)) {
        visit(Text::Plain(&mut self.name));
        visit(Text::Value(&mut self.body));
    }
}

impl Texts for A2aTaskRecord {
    fn texts(&mut self, visit: &mut dyn FnMut(Text<'_>)) {
        visit(Text::Json(&mut self.task));
    }

    fn keep_vault(&mut self, sealed: String) {
        self.pii = Some(sealed);
    }
}

impl Texts for A2aEventRecord {
    fn texts(&mut self, visit: &mut dyn FnMut(Text<'_>)) {
        visit(Text::Json(&mut self.event));
    }
}

impl Texts for A2aPushConfigRecord {
    // its delivery error is written on its own, redacted (`Store::a2a_push_failed`)
    fn texts(&mut self, visit: &mut dyn FnMut(Text<'_>)) {
        // the config (a webhook's address and credentials) is sealed, not redacted: a token in
        // place of the address would deliver nowhere (`SealKey::sealed`)
        visit(Text::Plain(&mut self.config));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{RequestId, UserId};
    use crate::redact::{Redactor, Vault};
    use crate::store::StepState;

    /// Every text field of a row, filled with a card number: none survives the redactor.
    #[test]
    fn no_text_of_any_row_keeps_a_card_number() {
        let card = "4111 1111 1111 1111";
        let r = Redactor::new();
        let mut vault = Vault::new();
        let user = UserId::parse("alice").unwrap();
        let id = RequestId::new();
        let step = TreeStep {
            request_id: id,
            root_id: id,
            parent_id: None,
            user_id: user.clone(),
            target: "boss".into(),
            state: StepState::Running,
            entry: "user".into(),
            caller: "user:alice".into(),
            request: serde_json::json!({ "input": card }).to_string(),
            response: Some(serde_json::json!({ "result": card }).to_string()),
            deadline_at: 1,
            budget: 1,
            attempts: 0,
            reads: Some(serde_json::json!({ "facts": [card] }).to_string()),
            resumes: 0,
            pii: None,
            created_at: 1,
            updated_at: 1,
            owner: None,
        };
        let clean = r.redacted(step, &mut vault);
        let written = format!("{:?}", *clean);
        assert!(!written.contains(card) && !written.contains("4111111111111111"), "{written}");
        let entry = MoneyEntry {
            user_id: user,
            id: "e1".into(),
            date: None,
            merchant: format!("Shop {card}"),
            description: card.into(),
            amount: 1,
            currency: "USD".into(),
            category: Some(card.into()),
            confidence: None,
            source: "receipt".into(),
            note: Some(card.into()),
            request_id: None,
            created_at: 1,
            updated_at: 1,
        };
        let clean = r.redacted(vec![entry], &mut vault);
        assert!(!format!("{:?}", *clean).contains(card));
    }
}
