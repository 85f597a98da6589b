//! Crystal's second approach, spending without transfers: money moved to
//! savings, a credit-card payment (the purchases on the card are the spending)
//! and moves between the user's own accounts leave the account but are not
//! spent, so they are left out of the analysis and listed apart.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Value, json};

use super::money::{self, Cents};
use super::transactions::Transaction;

static TRANSFER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)
        \b(?:transfer|xfer|trf|move|moved)\b[^\n]{0,20}?\b(?:to|into)\b[^\n]{0,12}?
            \b(?:savings?|checking|chequing|tfsa|rrsp|roth|ira|brokerage|investments?|my\ account|own\ account)\b
        | \b(?:savings?|internal|inter-account|own[\ -]account|account[\ -]to[\ -]account)\s+(?:transfer|xfer|trf)\b
        | \btransfer\s+between\s+(?:my\s+|own\s+)?accounts\b
        | \b(?:credit\ card|card|visa|mastercard|amex|american\ express|discover|capital\ one)\b[^\n]{0,15}?
            \b(?:payment|e-?payment|autopay|auto\ pay|pymt|pmt)\b
        | \bpayment\W{1,3}thank\ you\b",
    )
    .expect("valid regex")
});

/// Whether `t` moves money between the user's own accounts or pays a card
/// off rather than buying something.
pub(super) fn is_transfer(t: &Transaction) -> bool {
    TRANSFER.is_match(&t.search_text())
}

/// The transactions that are not transfers, and the transfers that went out.
pub(super) fn split(ts: &[Transaction]) -> (Vec<Transaction>, Vec<Transaction>) {
    let (transfers, kept): (Vec<Transaction>, Vec<Transaction>) = ts.iter().cloned().partition(is_transfer);
    (kept, transfers.into_iter().filter(|t| t.amount > 0).collect())
}

/// [`split`] when `leave_out`, else every transaction and no transfers.
pub(super) fn split_if(leave_out: bool, ts: &[Transaction]) -> (Vec<Transaction>, Option<Vec<Transaction>>) {
    if leave_out {
        let (kept, transfers) = split(ts);
        (kept, Some(transfers))
    } else {
        (ts.to_vec(), None)
    }
}

/// The transfers left out in `currency`: a clause for the summary, lines for
/// the result and the `transfers_excluded` value of the analysis.
pub(super) fn described(transfers: &[Transaction], currency: &str) -> (String, String, Value) {
    let ts: Vec<&Transaction> = transfers.iter().filter(|t| t.currency == currency).collect();
    let total: Cents = ts.iter().map(|t| t.amount).sum();
    let fmt = |c: Cents| money::format(c, currency);
    let noun = if ts.len() == 1 { "transfer" } else { "transfers" };
    let clause = format!("; left out {} {noun} ({}) that are not spending", ts.len(), fmt(total));
    let mut lines = String::from("\nLeft out as transfers between your accounts or card payments (not spending):");
    for t in &ts {
        let date = t.date.map(|d| format!("{} ", d.format("%Y-%m-%d"))).unwrap_or_default();
        lines.push_str(&format!("\n- {date}{} {}", t.merchant, fmt(t.amount)));
    }
    let value = json!({
        "count": ts.len(),
        "total": money::to_value(total),
        "items": ts.iter().map(|t| json!({"merchant": t.merchant, "amount": money::to_value(t.amount),
            "date": t.date.map(|d| d.format("%Y-%m-%d").to_string())})).collect::<Vec<_>>(),
    });
    (clause, lines, value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfers_and_card_payments_are_not_spending() {
        let t = |m: &str| Transaction::new(m.to_string(), 100, "USD".to_string());
        for m in [
            "ONLINE TRANSFER TO SAVINGS 4411",
            "Savings transfer",
            "Transfer to my TFSA",
            "CHASE CREDIT CARD AUTOPAY",
            "AMEX EPAYMENT ACH PMT",
            "PAYMENT - THANK YOU",
            "Transfer between accounts",
        ] {
            assert!(is_transfer(&t(m)), "{m}");
        }
        for m in [
            "RENT PAYMENT - OAK STREET APTS",
            "Interac e-Transfer to John (dinner)",
            "CON EDISON AUTOPAY",
            "Visa Office Supplies",
        ] {
            assert!(!is_transfer(&t(m)), "{m}");
        }
    }
}
