//! What an agent read from the store during one delegation ([`StepReads`]):
//! the facts and recent messages it was given and every money call it made,
//! with the outcome. The runtime keeps it with the delegation's journal step
//! so that `switchboard replay` can give a built-in agent the same data
//! again: a replayed money answers each call as the recorded one did
//! ([`Tape`]), and nothing reaches the user's real money.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::HistoryMessage;
use crate::store::{MoneyEntry, MoneyPlan};
use crate::util::lock;

/// What one delegation's agent read (its final attempt's, when it made several).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepReads {
    /// The facts it was given, as it saw them (PII redacted).
    #[serde(default)]
    pub facts: Vec<String>,
    /// The recent messages of its session it was given.
    #[serde(default)]
    pub history: Vec<HistoryMessage>,
    /// Its money calls, in order, with what each answered.
    /// (Kept as `ledger` by records written before the rename: read either.)
    #[serde(default, alias = "ledger")]
    pub money: Vec<MoneyCall>,
}

/// One money call and its outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum MoneyCall {
    /// A read: what the money held.
    Read {
        /// The transactions.
        entries: Vec<MoneyEntry>,
        /// The goals and debts.
        plans: Vec<MoneyPlan>,
    },
    /// A write: the ids of the entries that were new.
    Write {
        /// Ids of entries added (the others were kept already).
        added: Vec<String>,
    },
    /// A correction: whether the entry was found.
    Update {
        /// The entry's id.
        id: String,
        /// Whether the user had it.
        found: bool,
    },
    /// A goal or debt kept.
    PutPlan {
        /// `goal` or `debt`.
        kind: String,
        /// Its name.
        name: String,
    },
}

impl MoneyCall {
    fn same_kind(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

/// The reads of a running delegation, filled as its agent runs.
#[derive(Debug, Default)]
pub struct Reads(Mutex<StepReads>);

impl Reads {
    /// The delegation's agent is given these facts and this history (what
    /// was read before is dropped).
    pub fn begin(&self, facts: &[String], history: &[HistoryMessage]) {
        *lock(&self.0) = StepReads { facts: facts.to_vec(), history: history.to_vec(), money: Vec::new() };
    }

    /// Another attempt starts: the money calls of the one before are dropped.
    pub fn attempt(&self) {
        lock(&self.0).money.clear();
    }

    pub(super) fn push(&self, call: MoneyCall) {
        lock(&self.0).money.push(call);
    }

    /// What was read, taken out (the delegation has ended), None when
    /// nothing was (as stored with the step).
    pub fn take(&self) -> Option<StepReads> {
        let reads = std::mem::take(&mut *lock(&self.0));
        (reads != StepReads::default()).then_some(reads)
    }
}

/// A replayed delegation's recorded money calls, answered in order.
#[derive(Debug, Default)]
pub struct Tape(Mutex<VecDeque<MoneyCall>>);

impl Tape {
    /// A tape of these calls.
    pub fn new(calls: Vec<MoneyCall>) -> Self {
        Self(Mutex::new(calls.into()))
    }

    /// The recorded answer to the next call, when the recorded next call is
    /// of the same kind as `like` (else the agent called differently from
    /// the record, and the call runs against the replay's own empty money).
    pub(super) fn next(&self, like: &MoneyCall) -> Option<MoneyCall> {
        let mut calls = lock(&self.0);
        if calls.front().is_some_and(|c| c.same_kind(like)) { calls.pop_front() } else { None }
    }
}
