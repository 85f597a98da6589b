//! [`Entry`] and [`Step`]: how a delegation came in and what the flow takes,
//! as the stages, the doors and an agent's own dispatch read them; small
//! types of their own, below all of them.

use std::sync::Arc;

use super::node::Node;
use crate::auth::Principal;
use crate::protocol::DelegationRequest;
use crate::store::Durability;

/// The origin recorded for a user's own message to Prime.
pub(super) const USER_ORIGIN: &str = "user";

/// How a delegation enters: a user's own turn (the root of a new tree, at
/// depth 0, no origin agent), a delegation from an operator, or an agent's
/// envelope from outside the runtime (`remote`, through any door), with the
/// lineage its token verified to, if it carried one. An agent's delegation
/// from a node running here is a `Delegation` with a parent node.
#[derive(Debug, Clone)]
pub(crate) enum Entry {
    UserTurn,
    Delegation,
    Remote(Option<Arc<crate::lineage::Hop>>),
}

impl Entry {
    /// Whether the target runs one deeper than the envelope's depth (every entry but a user's turn).
    pub(crate) fn is_delegation(&self) -> bool {
        !matches!(self, Self::UserTurn)
    }
}

/// One delegation as the flow takes it (`Runtime::dispatch_step`): the
/// envelope, who sent it, how it came in, and how its end is written.
pub(crate) struct Step<'a> {
    /// The calling node, when the call comes from an agent running in this runtime.
    pub parent: Option<&'a Arc<Node>>,
    /// Who sent it.
    pub caller: &'a Principal,
    /// The envelope.
    pub req: DelegationRequest,
    /// How it came in.
    pub entry: Entry,
    /// A step that ran before (after a restart or an approval), under its
    /// old request id: it is not claimed again, and its children's answers
    /// come from the journal.
    pub resumed: bool,
    /// How durable its end (record, audit record, conversation) is before it answers.
    pub end: Durability,
}
