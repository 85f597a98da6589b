//! Ledger's second approach, strict: only what is deductible in full and
//! certain from the data counts (work expenses, travel or transport the
//! request or the purchase calls business). A share (a business meal's 50%,
//! a home office's part of the rent, medical costs above the floor), a
//! donation (it counts only for those who itemize) and every possible item
//! are left out of the total and asked about instead.

use serde_json::{Value, json};

use super::super::money::{self, Cents};
use super::{Deduction, Deductions};

/// The categories whose full amount the rules deduct without a condition
/// the data cannot show.
const CERTAIN: &[&str] = &["Office Supplies", "Software", "Education", "Professional Dues", "Travel", "Transport"];

/// One item left out of a strict total, with what to ask about it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Question {
    pub item: Deduction,
    pub question: String,
}

impl Question {
    pub(super) fn to_json(&self) -> Value {
        json!({
            "merchant": self.item.merchant,
            "category": self.item.category,
            "amount": money::to_value(self.item.amount),
            "question": self.question,
        })
    }
}

fn is_certain(d: &Deduction) -> bool {
    d.share_pct == 100 && CERTAIN.contains(&d.category.as_str())
}

fn question(d: &Deduction, currency: &str) -> String {
    let amount = money::format(d.amount, currency);
    let m = &d.merchant;
    match d.category.as_str() {
        "Charity" => format!("Do you itemize deductions? The {m} donation ({amount}) counts only if you do."),
        "Dining - Restaurants" => {
            format!("Can you document {m} ({amount}) as a business meal (who, what for)? At most 50% counts.")
        }
        "Utilities" | "Rent" if d.share_pct > 0 => format!(
            "Is the home office used only and regularly for work? Then {}% of {m} ({amount}) counts.",
            d.share_pct
        ),
        "Utilities" | "Rent" => format!("Do you work from a home office? Then part of {m} ({amount}) may count."),
        "Health" => format!("Do you itemize deductions? {m} ({amount}) counts above 7.5% of income only if you do."),
        "Travel" => format!("Was {m} ({amount}) a business trip?"),
        _ => format!("Does {m} ({amount}) qualify? {}", d.reason),
    }
}

/// The strict reading of `d`: the certain items stay; the rest, and the
/// possible ones, become questions.
pub(super) fn strict(mut d: Deductions) -> (Deductions, Vec<Question>) {
    let (certain, unsure): (Vec<Deduction>, Vec<Deduction>) = d.items.drain(..).partition(is_certain);
    d.items = certain;
    let questions = unsure
        .into_iter()
        .chain(d.possible.drain(..))
        .map(|item| Question { question: question(&item, &d.currency), item })
        .collect();
    (d, questions)
}

/// The summary, the result and the `deductions` value of a strict reading.
pub(super) fn answer(d: &Deductions, questions: &[Question], period: Option<&str>) -> (String, String, Value) {
    let fmt = |c: Cents| money::format(c, &d.currency);
    let noun = if d.items.len() == 1 { "item" } else { "items" };
    let mut summary = format!("Found {} in certain deductions ({} {noun})", fmt(d.total()), d.items.len());
    if let Some(p) = period {
        summary.push_str(&format!(" in {p}"));
    }
    let asked: Cents = questions.iter().map(|q| q.item.amount).sum();
    if !questions.is_empty() {
        summary.push_str(&format!("; {} more ({}) left out until you answer", questions.len(), fmt(asked)));
    }
    let mut result = format!("Deductible for certain ({}):", fmt(d.total()));
    for x in &d.items {
        let date = x.date.map(|d| format!("{} ", d.format("%Y-%m-%d"))).unwrap_or_default();
        result.push_str(&format!("\n- {date}{} {}: {}", x.merchant, fmt(x.deductible), x.reason));
    }
    if d.items.is_empty() {
        result.push_str("\n(none)");
    }
    if !questions.is_empty() {
        result.push_str("\nLeft out of the total until you answer:");
        for q in questions {
            result.push_str(&format!("\n- {}", q.question));
        }
    }
    result.push_str(&format!("\n{} personal expenses are not deductible.", d.personal_count));
    let value = json!({
        "currency": d.currency,
        "approach": "strict",
        "total_deductible": money::to_value(d.total()),
        "items": d.items.iter().map(Deduction::to_json).collect::<Vec<_>>(),
        "possible": [],
        "questions": questions.iter().map(Question::to_json).collect::<Vec<_>>(),
        "personal_count": d.personal_count,
        "assumptions": d.assumptions,
    });
    (summary, result, value)
}
