//! The finance agents' side of the user's money records (the runtime's
//! `money.read` and `money.write` tools): transactions found in what the
//! user sends are kept ([`keep`]), and a question that brings no
//! transactions is answered from what was kept ([`transactions_for`]). An
//! agent without the tools works as before, from the task alone.

use chrono::NaiveDate;

use super::money;
use super::period::{self, Period};
use super::reply::{needs_input, no_transactions};
use super::transactions::{self, Extracted, Source, Transaction};
use crate::agent::{AgentContext, MoneyView, NewEntry, Task};
use crate::protocol::DelegationError;
use crate::store::MoneyEntry;

/// What keeping transactions did.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Kept {
    pub added: usize,
    /// The ones the money records already had, as `merchant amount on date`.
    pub already: Vec<String>,
    /// The ids of every row written or found, in input order.
    pub ids: Vec<String>,
}

impl Kept {
    /// One sentence for the user.
    pub(crate) fn sentence(&self) -> String {
        let noun = |n: usize| if n == 1 { "transaction" } else { "transactions" };
        let shown: Vec<&str> = self.already.iter().take(3).map(String::as_str).collect();
        let more = self.already.len().saturating_sub(shown.len());
        let list = if more > 0 { format!("{} and {more} more", shown.join("; ")) } else { shown.join("; ") };
        match (self.added, self.already.len()) {
            (n, 0) => format!("Kept {n} {} in your records.", noun(n)),
            (0, 1) => format!("This one is already in your records ({list}), so I didn't add it twice."),
            (0, d) => format!("All {d} are already in your records ({list}), so I didn't add them twice."),
            (n, d) => format!(
                "Kept {n} new {} in your records; {d} {} already there ({list}) and not added twice.",
                noun(n),
                if d == 1 { "was" } else { "were" }
            ),
        }
    }
}

/// A transaction as the money records keeps it.
pub(crate) fn to_entry(t: &Transaction) -> NewEntry {
    NewEntry {
        date: t.date.map(|d| d.format("%Y-%m-%d").to_string()),
        merchant: t.merchant.clone(),
        description: t.description.clone(),
        amount: t.amount,
        currency: t.currency.clone(),
        category: t.category.clone(),
        confidence: t.confidence,
    }
}

/// A kept transaction as the agents work with it; what the user said about
/// it (`business lunch`) is part of its description, so the rules read it.
pub(crate) fn to_transaction(e: &MoneyEntry) -> Transaction {
    let mut t = Transaction::new(e.merchant.clone(), e.amount, e.currency.clone());
    t.date = e.date.as_deref().and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok());
    t.description = match &e.note {
        Some(note) if !e.description.contains(note.as_str()) => {
            format!("{} ({note})", e.description).trim().to_string()
        }
        _ => e.description.clone(),
    };
    t.category = e.category.clone();
    t.confidence = e.confidence;
    t
}

/// Keeps `ts` in the user's money records when this agent may write it; None when
/// it may not (the answer then says nothing about keeping).
pub(crate) async fn keep(
    ctx: &AgentContext,
    ts: &[Transaction],
    source: &str,
) -> Result<Option<Kept>, DelegationError> {
    if !ctx.can_write_money() || ts.is_empty() {
        return Ok(None);
    }
    let entries: Vec<NewEntry> = ts.iter().map(to_entry).collect();
    let written = ctx.write_money(&entries, source).await?;
    let mut kept = Kept { added: written.added.len(), ..Kept::default() };
    for e in &written.already_kept {
        let date = e.date.as_deref().map(|d| format!(" on {d}")).unwrap_or_default();
        kept.already.push(format!("{} {}{date}", e.merchant, money::format(e.amount, &e.currency)));
    }
    let mut all: Vec<&MoneyEntry> = written.added.iter().chain(&written.already_kept).collect();
    all.sort_by_key(|e| entries.iter().position(|n| n.merchant == e.merchant && n.amount == e.amount));
    kept.ids = all.into_iter().map(|e| e.id.clone()).collect();
    Ok(Some(kept))
}

/// Sets the category of kept rows that have none yet, or whose category a
/// user did not set (a row with a note keeps what the user said).
pub(crate) async fn categorize_kept(ctx: &AgentContext, ts: &[Transaction]) -> Result<usize, DelegationError> {
    if !ctx.can_write_money() || !ctx.can_read_money() {
        return Ok(0);
    }
    let view = ctx.read_money().await?;
    let mut changed = 0;
    for t in ts {
        let Some(category) = &t.category else { continue };
        let entry = to_entry(t);
        let same = |e: &&MoneyEntry| {
            e.note.is_none()
                && e.amount == entry.amount
                && e.date == entry.date
                && e.merchant == entry.merchant
                && e.category.as_deref() != Some(category.as_str())
        };
        if let Some(row) = view.entries.iter().find(same)
            && ctx.correct_money(&row.id, Some(category), None).await?
        {
            changed += 1;
        }
    }
    Ok(changed)
}

/// The question of an agent that found nothing to work on, in the task or,
/// for the period asked about, in the money records.
pub(crate) fn nothing_in(period: Option<&Period>) -> DelegationError {
    match period {
        None => no_transactions(),
        Some(p) => needs_input(format!(
            "Your records has no transactions for {}: upload that period's statement or receipts (--file \
             statement.csv), or paste them, and ask again.",
            p.label
        )),
    }
}

/// The user's money records when this agent may read it.
pub(crate) async fn recorded(ctx: &AgentContext) -> Result<Option<MoneyView>, DelegationError> {
    if !ctx.can_read_money() {
        return Ok(None);
    }
    ctx.read_money().await.map(Some)
}

/// The day questions are asked on (`last month` counts from it): the
/// tree's, so a resumed or replayed tree counts from the day it started.
pub(crate) fn today(ctx: &AgentContext) -> NaiveDate {
    ctx.today()
}

/// What a task is about: the transactions in it (its input or an earlier
/// step's), else, when the agent may read it, the user's money records, narrowed to
/// the period the request names (`last month`). The period is returned too.
pub(crate) async fn transactions_for(
    ctx: &AgentContext,
    task: &Task,
) -> Result<(Extracted, Option<Period>), DelegationError> {
    let found = transactions::from_task(task);
    if !found.transactions.is_empty() {
        return Ok((found, None));
    }
    let Some(view) = recorded(ctx).await? else { return Ok((found, None)) };
    let all: Vec<Transaction> = view.entries.iter().map(to_transaction).collect();
    let within = |p: &Period| all.iter().filter(|t| t.date.is_some_and(|d| p.contains(d))).cloned().collect::<Vec<_>>();
    // the latest line that names a time: a follow-up ("and in September?") after the question it follows
    let request = task.request_text();
    let Some(mut p) = request.lines().rev().find_map(|l| period::find(l, today(ctx))) else {
        return Ok((Extracted { source: Some(Source::Kept), transactions: all, ..Extracted::default() }, None));
    };
    let mut ts = within(&p);
    // "in October" with nothing this October: the latest October the money records has
    if ts.is_empty()
        && p.flexible
        && let Some(earlier) = (1..=5).filter_map(|y| p.years_back(y)).find(|q| !within(q).is_empty())
    {
        ts = within(&earlier);
        p = earlier;
    }
    if ts.is_empty()
        && let Some(near) = nearest_month(&all, &p)
    {
        return Err(nothing_for(&p, &near));
    }
    Ok((Extracted { source: Some(Source::Kept), transactions: ts, ..Extracted::default() }, Some(p)))
}

/// The month with transactions closest to `p`: its label, count and spending.
fn nearest_month(all: &[Transaction], p: &Period) -> Option<(String, usize, money::Cents, String)> {
    use chrono::Datelike;
    let distance = |d: NaiveDate| if d < p.from { (p.from - d).num_days() } else { (d - p.to).num_days() };
    let day = all.iter().filter_map(|t| t.date).min_by_key(|d| distance(*d))?;
    let same = |t: &&Transaction| t.date.is_some_and(|d| d.year() == day.year() && d.month() == day.month());
    let month: Vec<&Transaction> = all.iter().filter(same).collect();
    let spent = month.iter().filter(|t| t.amount > 0).map(|t| t.amount).sum();
    let currency = month.first().map_or_else(|| "USD".to_string(), |t| t.currency.clone());
    Some((day.format("%B %Y").to_string(), month.len(), spent, currency))
}

/// The question of an agent asked about a period the money records has nothing
/// for: what the nearest month with data is, offered instead.
fn nothing_for(p: &Period, (label, count, spent, currency): &(String, usize, money::Cents, String)) -> DelegationError {
    needs_input(format!(
        "Your records has no transactions for {}. The nearest month with data is {label} ({count} transaction{}, {} \
         spent): ask about {label}, or upload {}'s statement (--file statement.csv).",
        p.label,
        if *count == 1 { "" } else { "s" },
        money::format(*spent, currency),
        p.label
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sentence_says_what_was_added_and_what_was_already_there() {
        let mut k = Kept { added: 3, ..Kept::default() };
        assert_eq!(k.sentence(), "Kept 3 transactions in your records.");
        k.already = vec!["Office Depot $81.03 on 2026-10-03".into()];
        assert_eq!(
            k.sentence(),
            "Kept 3 new transactions in your records; 1 was already there (Office Depot $81.03 on 2026-10-03) and not added twice."
        );
        k.added = 0;
        assert_eq!(
            k.sentence(),
            "This one is already in your records (Office Depot $81.03 on 2026-10-03), so I didn't add it twice."
        );
    }
}
