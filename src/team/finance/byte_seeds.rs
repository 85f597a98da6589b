//! Byte's second approach, the reconciled total: a receipt whose printed
//! TOTAL its own lines contradict (an OCR misread such as `TOTAL 18.03` when
//! the items and tax add to 81.03) is booked at what its items, tax and tip
//! add up to, the printed figure kept as `printed_total`.

use serde_json::Value;

use super::money::{self, Cents};
use super::receipt::{Receipt, TotalSource};

/// The total `r`'s lines add up to, when its printed TOTAL disagrees with
/// them. Only a receipt that shows its arithmetic (a subtotal or a tax line,
/// besides the items) is reconciled: without them a total above the items
/// may include a tax that was not printed. Items that disagree with the
/// printed subtotal (a discount, a line not read) leave the printed total.
pub(super) fn reconciled_total(r: &Receipt) -> Option<Cents> {
    if r.total_source != TotalSource::Printed || r.items.is_empty() || (r.subtotal.is_none() && r.tax.is_none()) {
        return None;
    }
    let items: Cents = r.items.iter().map(|i| i.amount).sum();
    if r.subtotal.is_some_and(|s| s != items) {
        return None;
    }
    let (tax, tip) = (r.tax.unwrap_or(0), r.tip.unwrap_or(0));
    let computed = items + tax + tip;
    // a tip written in after the printed total is no disagreement
    (computed != r.total && items + tax != r.total && computed > 0).then_some(computed)
}

/// The receipts with their totals reconciled, and for each one changed its
/// index and printed total.
pub(super) fn reconcile(receipts: &[Receipt]) -> (Vec<Receipt>, Vec<(usize, Cents)>) {
    let mut changed = Vec::new();
    let out = receipts
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut r = r.clone();
            if let Some(total) = reconciled_total(&r) {
                changed.push((i, r.total));
                r.total = total;
            }
            r
        })
        .collect();
    (out, changed)
}

/// Marks the reconciled receipts in the `receipts` artifact's value.
pub(super) fn mark(receipts: &mut Value, changed: &[(usize, Cents)]) {
    for (i, printed) in changed {
        if let Some(obj) = receipts.get_mut(*i).and_then(Value::as_object_mut) {
            obj.insert("printed_total".into(), money::to_value(*printed));
            obj.insert("total_source".into(), Value::from("reconciled"));
        }
    }
}

/// A line for each reconciled receipt, for the result.
pub(super) fn notes(receipts: &[Receipt], changed: &[(usize, Cents)]) -> Vec<String> {
    changed
        .iter()
        .filter_map(|(i, printed)| {
            let r = receipts.get(*i)?;
            let fmt = |c: Cents| money::format(c, &r.currency);
            Some(format!(
                "Note: {}'s printed total {} disagrees with its items, tax and tip ({}); booked at {}, the printed \
                 figure kept as printed_total.",
                r.merchant,
                fmt(*printed),
                fmt(r.total),
                fmt(r.total)
            ))
        })
        .collect()
}
