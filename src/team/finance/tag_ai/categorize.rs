//! Categorizing transactions by the rules: a category and a confidence for
//! each purchase, given categories kept unless the rules are sure, and totals per category.

use super::rules::{UNCATEGORIZED, best_rule, rule_other_than};
use crate::team::finance::money::Cents;
use crate::team::finance::transactions::Transaction;

/// The category of a purchase and a confidence: a brand in the merchant name
/// 95, a generic word in it 85, a match in the description only 80 (brand) or
/// 70 (word). A general store (Shopping) yields to what its description says
/// was bought (printer paper from Amazon is Office Supplies, 75). No match is
/// `Uncategorized` at 30.
pub(crate) fn categorize(merchant: &str, description: &str) -> (&'static str, u8) {
    let by_merchant = best_rule(&merchant.to_lowercase());
    let by_description = best_rule(&description.to_lowercase());
    let bought = || rule_other_than(&format!("{merchant} {description}").to_lowercase(), "Shopping");
    match (by_merchant, by_description) {
        (Some(("Shopping", _)), Some((cat, _))) if cat != "Shopping" => (cat, 75),
        (Some(("Shopping", _)), _) if let Some(cat) = bought() => (cat, 75),
        (Some((cat, true)), _) => (cat, 95),
        (Some((cat, false)), _) => (cat, 85),
        (None, Some((cat, true))) => (cat, 80),
        (None, Some((cat, false))) => (cat, 70),
        (None, None) => (UNCATEGORIZED, 30),
    }
}

/// Tag's second approach, what was bought decides: when the description
/// names what was bought and its rule disagrees with the merchant's (printer
/// paper and toner from Costco), the description's category wins, 80 for a
/// brand in it, else 75. Otherwise as [`categorize`].
pub(crate) fn categorize_by_items(merchant: &str, description: &str) -> (&'static str, u8) {
    let by_merchant = best_rule(&merchant.to_lowercase());
    match best_rule(&description.to_lowercase()) {
        Some((cat, brand)) if !matches!(cat, "Shopping" | "Income") && by_merchant.is_some_and(|(m, _)| m != cat) => {
            (cat, if brand { 80 } else { 75 })
        }
        _ => categorize(merchant, description),
    }
}

/// The category a transaction gets from the rules; money received that no rule
/// places is `Income` (60).
pub(crate) fn categorize_transaction(t: &Transaction) -> (&'static str, u8) {
    categorize_transaction_by(t, false)
}

/// As [`categorize_transaction`], by what was bought first when `by_items`.
fn categorize_transaction_by(t: &Transaction, by_items: bool) -> (&'static str, u8) {
    let found = if by_items {
        categorize_by_items(&t.merchant, &t.description)
    } else {
        categorize(&t.merchant, &t.description)
    };
    match found {
        (UNCATEGORIZED, _) if t.amount < 0 => ("Income", 60),
        found => found,
    }
}

/// Fills in the missing categories (what Crystal and Ledger need).
pub(crate) fn ensure_categories(ts: &mut [Transaction]) {
    for t in ts.iter_mut().filter(|t| t.category.as_deref().is_none_or(str::is_empty)) {
        let (cat, conf) = categorize_transaction(t);
        t.category = Some(cat.to_string());
        t.confidence = Some(conf);
    }
}

/// A category whose given name the rules would change.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Recategorized {
    pub merchant: String,
    pub from: String,
    pub to: &'static str,
}

/// As [`categorize_all`]; by what was bought first when `by_items`.
pub(crate) fn categorize_all_by(ts: &mut [Transaction], by_items: bool) -> Vec<Recategorized> {
    let mut changes = Vec::new();
    for t in ts.iter_mut() {
        let (cat, conf) = categorize_transaction_by(t, by_items);
        match t.category.as_deref().map(str::trim).filter(|c| !c.is_empty()) {
            Some(given) if given.eq_ignore_ascii_case(cat) => {
                t.category = Some(cat.to_string());
                t.confidence = Some(conf.max(90));
            }
            Some(given) if conf < 85 => {
                t.category = Some(given.to_string());
                t.confidence = Some(t.confidence.unwrap_or(60));
            }
            given => {
                if let Some(given) = given {
                    changes.push(Recategorized { merchant: t.merchant.clone(), from: given.to_string(), to: cat });
                }
                t.category = Some(cat.to_string());
                t.confidence = Some(conf);
            }
        }
    }
    changes
}

/// Spending per category: (category, total, count), largest first. Money
/// received (negative amounts) is left out.
pub(crate) fn totals_by_category(ts: &[Transaction]) -> Vec<(String, Cents, usize)> {
    let mut totals: Vec<(String, Cents, usize)> = Vec::new();
    for t in ts.iter().filter(|t| t.amount > 0) {
        let cat = t.category.as_deref().unwrap_or(UNCATEGORIZED);
        match totals.iter_mut().find(|(c, _, _)| c == cat) {
            Some((_, sum, n)) => {
                *sum += t.amount;
                *n += 1;
            }
            None => totals.push((cat.to_string(), t.amount, 1)),
        }
    }
    totals.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    totals
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_ai_rules_pick_specific_categories() {
        let cases = [
            ("Starbucks", "", "Dining - Coffee", 95),
            ("Uber Eats", "", "Dining - Restaurants", 95),
            ("Uber Trip", "", "Transport", 95),
            ("Joe's Coffee House", "", "Dining - Coffee", 85),
            ("Staples", "Stapler", "Office Supplies", 95),
            ("Amazon", "printer paper", "Office Supplies", 75),
            ("Amazon", "headphones", "Shopping", 95),
            ("Amazon Printer Paper", "amazon $23.99 printer paper", "Office Supplies", 75),
            ("Adobe Inc", "", "Software", 95),
            ("Rent Payment", "", "Rent", 85),
            ("Parent Teacher Assoc", "", UNCATEGORIZED, 30),
            ("Red Cross Donation", "", "Charity", 95),
            ("Con Edison Electric", "", "Utilities", 95),
            ("Mystery Co", "", UNCATEGORIZED, 30),
            ("Square", "Caesar Salad, Sirloin", "Dining - Restaurants", 70),
        ];
        for (merchant, description, category, confidence) in cases {
            assert_eq!(categorize(merchant, description), (category, confidence), "{merchant}");
        }
    }
}
