//! Byte: reads receipts (and statements) out of text; the receipt parser is
//! `receipt.rs`, and `transactions.rs` finds statements and free lines.
//!
//! Seeds: the printed total (a receipt is booked at its TOTAL line), then the
//! reconciled total (`byte_seeds.rs`: a printed TOTAL the receipt's items, tax
//! and tip contradict gives way to what they add up to).

use async_trait::async_trait;
use serde_json::Value;

use super::book;
use super::byte_seeds;
use super::money::{self, Cents};
use super::receipt::{Receipt, TotalSource};
use super::reply::{list_lines, needs_input};
use super::seeding;
use super::tag_ai;
use super::transactions::{self, Source, Transaction};
use crate::agent::{Agent, AgentContext, AgentOutput, Task};
use crate::protocol::{Artifact, DelegationError, NewFact};

pub(crate) const TOOL: &str = "extract_receipt";
/// The printed total, then the reconciled total.
pub(crate) const SEEDS: [u64; 2] = [510_331, 846_027];

/// Byte (`byte-doc`): receipt text, a CSV statement or transaction lines in;
/// `receipts` and `transactions` artifacts out.
pub(crate) struct ByteDoc;

#[async_trait]
impl Agent for ByteDoc {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        ctx.use_tool(TOOL)?;
        let found = transactions::from_text(task.text());
        let (Some(source), false) = (found.source.clone(), found.transactions.is_empty()) else {
            return Err(needs_input(
                "I couldn't find a receipt or statement in what you sent: paste the receipt text with its \
                 merchant and TOTAL line (e.g. 'Starbucks ... TOTAL $45.99'), upload a bank statement (CSV, \
                 OFX/QFX, or a PDF with text: --file statement.csv), or send lines like \
                 '2025-10-09 Starbucks 45.99'.",
            ));
        };
        let (receipts, changed) = if seeding::second(&SEEDS, task.seed) {
            byte_seeds::reconcile(&found.receipts)
        } else {
            (found.receipts.clone(), Vec::new())
        };
        let reconciled: Vec<Transaction>;
        let ts = if changed.is_empty() {
            &found.transactions
        } else {
            reconciled = receipts.iter().map(Receipt::to_transaction).collect();
            &reconciled
        };
        let currency = transactions::main_currency(ts);
        let mut output = if receipts.is_empty() {
            statement_output(&source, ts, &currency, found.skipped_rows)
        } else {
            receipts_output(&receipts, &currency)
        };
        if !changed.is_empty() {
            if let Some(a) = output.artifacts.iter_mut().find(|a| a.label.as_deref() == Some("receipts")) {
                byte_seeds::mark(&mut a.value, &changed);
            }
            for note in byte_seeds::notes(&receipts, &changed) {
                output.result.push_str(&format!("\n{note}"));
            }
            output.confidence = Some(75);
        }
        output = output.with_artifact(Artifact::json("transactions", transactions::to_json_array(ts)));
        // kept with Tag's categories when Byte may categorize, so a later
        // question by category finds them
        let mut to_keep = ts.clone();
        if ctx.has_tool(tag_ai::TOOL) {
            tag_ai::ensure_categories(&mut to_keep);
        }
        if let Some(kept) = book::keep(ctx, &to_keep, &source.describe()).await? {
            output.summary = format!("{}. {}", output.summary.trim_end_matches('.'), kept.sentence());
            output = output.with_artifact(Artifact::json(
                "ledger",
                serde_json::json!({"added": kept.added, "already_kept": kept.already, "ids": kept.ids}),
            ));
        }
        Ok(output)
    }

    fn seeds(&self) -> &[u64] {
        &SEEDS
    }
}

fn receipts_output(receipts: &[Receipt], currency: &str) -> AgentOutput {
    let summary = match receipts {
        [one] => format!("Extracted receipt: {}", one.headline()),
        many => {
            let total: Cents = many.iter().filter(|r| r.currency == currency).map(|r| r.total).sum();
            let heads: Vec<String> = many.iter().take(5).map(Receipt::headline).collect();
            format!(
                "Extracted {} receipts totaling {}: {}",
                many.len(),
                money::format(total, currency),
                heads.join("; ")
            )
        }
    };
    let details: Vec<String> = receipts
        .iter()
        .map(|r| {
            let mut s = format!("{}:", r.headline());
            if r.total_source == TotalSource::Computed {
                s.push_str(" (no total line; computed from the items)");
            }
            for i in &r.items {
                let qty = if i.quantity > 1 { format!("{} x ", i.quantity) } else { String::new() };
                s.push_str(&format!("\n  - {qty}{} {}", i.description, money::format(i.amount, &r.currency)));
            }
            if let Some(tax) = r.tax {
                s.push_str(&format!("\n  tax {}", money::format(tax, &r.currency)));
            }
            if let Some(tip) = r.tip {
                s.push_str(&format!("\n  tip {}", money::format(tip, &r.currency)));
            }
            if r.date.is_none() {
                s.push_str("\n  (no date found)");
            }
            s
        })
        .collect();
    let certain = receipts.iter().all(|r| r.total_source == TotalSource::Printed && r.date.is_some());
    let mut output = AgentOutput::new(summary, details.join("\n"))
        .with_artifact(Artifact::json("receipts", Value::Array(receipts.iter().map(Receipt::to_json).collect())))
        .with_confidence(if certain { 95 } else { 75 });
    let mut merchants: Vec<&str> =
        receipts.iter().map(|r| r.merchant.as_str()).filter(|m| *m != "Unknown merchant").collect();
    merchants.dedup();
    for m in merchants.into_iter().take(3) {
        output = output.with_fact(NewFact::new(format!("User shops at {m}")));
    }
    output
}

fn statement_output(source: &Source, ts: &[Transaction], currency: &str, skipped: usize) -> AgentOutput {
    let spent: Cents = ts.iter().filter(|t| t.amount > 0 && t.currency == currency).map(|t| t.amount).sum();
    let received: Cents = ts.iter().filter(|t| t.amount < 0 && t.currency == currency).map(|t| -t.amount).sum();
    let first = ts.iter().filter_map(|t| t.date).min();
    let last = ts.iter().filter_map(|t| t.date).max();
    let span = match (first, last) {
        (Some(a), Some(b)) => format!(" ({} to {})", a.format("%Y-%m-%d"), b.format("%Y-%m-%d")),
        _ => String::new(),
    };
    let noun = if ts.len() == 1 { "transaction" } else { "transactions" };
    let mut summary = format!(
        "Extracted {} {noun} from {}{span}: {} spent",
        ts.len(),
        source.describe(),
        money::format(spent, currency)
    );
    if received > 0 {
        summary.push_str(&format!(", {} received", money::format(received, currency)));
    }
    let mut result = list_lines(ts.iter().map(|t| {
        let date = t.date.map(|d| d.format("%Y-%m-%d").to_string()).unwrap_or_else(|| "(no date)".into());
        format!("- {date} {} {}", t.merchant, money::format(t.amount, &t.currency))
    }));
    if skipped > 0 {
        result.push_str(&format!("\nSkipped {skipped} row(s) without a readable amount."));
    }
    let mut output = AgentOutput::new(summary, result).with_confidence(if skipped == 0 { 90 } else { 75 });
    // A merchant seen three times or more is a habit worth remembering.
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for t in ts.iter().filter(|t| t.amount > 0) {
        match counts.iter_mut().find(|(m, _)| *m == t.merchant) {
            Some((_, n)) => *n += 1,
            None => counts.push((&t.merchant, 1)),
        }
    }
    if let Some((m, n)) = counts.iter().copied().filter(|(_, n)| *n >= 3).max_by_key(|(_, n)| *n) {
        output = output.with_fact(NewFact::new(format!("User frequently shops at {m} ({n} times in one statement)")));
    }
    output
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::ErrorCode;
    use crate::team::finance::phrasing;

    const RECEIPT: &str = include_str!("../../../examples/receipt.txt");
    const RECEIPTS: &str = include_str!("../../../examples/receipts.txt");
    const STATEMENT: &str = include_str!("../../../examples/statement.csv");

    async fn run(input: &str) -> Result<AgentOutput, DelegationError> {
        ByteDoc.run(&AgentContext::detached([TOOL]), &Task::new("Extract receipt data", input)).await
    }

    fn artifact<'a>(out: &'a AgentOutput, label: &str) -> &'a Value {
        &out.artifacts.iter().find(|a| a.label.as_deref() == Some(label)).expect("artifact").value
    }

    #[tokio::test]
    async fn byte_doc_extracts_the_example_receipt() {
        let out = run(RECEIPT).await.expect("receipt");
        assert_eq!(out.summary, "Extracted receipt: $45.99 at Starbucks on 2025-10-09");
        let receipt = &artifact(&out, "receipts")[0];
        assert_eq!(receipt["total"], json!(45.99));
        assert_eq!(receipt["currency"], json!("USD"));
        assert!(receipt["items"].as_array().is_some_and(|i| i.len() >= 3));
        let t = &artifact(&out, "transactions")[0];
        assert_eq!((t["merchant"].as_str(), t["amount"].as_f64()), (Some("Starbucks"), Some(45.99)));
        assert!(out.new_facts.iter().any(|f| f.fact == "User shops at Starbucks"));
    }

    #[tokio::test]
    async fn byte_doc_splits_the_example_receipts() {
        let out = run(RECEIPTS).await.expect("receipts");
        let receipts = artifact(&out, "receipts").as_array().expect("array").clone();
        assert_eq!(receipts.len(), 4, "{}", out.result);
        let merchants: Vec<&str> = receipts.iter().filter_map(|r| r["merchant"].as_str()).collect();
        assert_eq!(merchants, vec!["Staples", "Adobe Inc", "The Keg Steakhouse + Bar", "Shell"]);
        assert!(receipts.iter().all(|r| r["total_source"] == "printed" && r["date"].is_string()));
        assert_eq!(artifact(&out, "transactions").as_array().map(Vec::len), Some(4));
    }

    #[tokio::test]
    async fn byte_doc_takes_total_not_subtotal() {
        let text = "Corner Bistro\n2025-09-30\nPasta 18.00\nSalad 12.00\nSUBTOTAL 30.00\nTax 3.90\nTOTAL 33.90\nVISA 33.90\nChange 0.00";
        let out = run(text).await.expect("receipt");
        let r = &artifact(&out, "receipts")[0];
        assert_eq!(
            (r["total"].as_f64(), r["subtotal"].as_f64(), r["tax"].as_f64()),
            (Some(33.9), Some(30.0), Some(3.9))
        );
        assert_eq!(r["items"].as_array().map(Vec::len), Some(2));
    }

    #[tokio::test]
    async fn byte_doc_reads_other_formats_and_currencies() {
        let text = "Please extract this receipt:\n\nMerchant: Café Lumière\nDate: 9 Oct 2025\n2 x Croissant €6,40\nEspresso x2 €5,00\nAmount due: €11,40";
        let out = run(text).await.expect("receipt");
        assert_eq!(out.summary, "Extracted receipt: €11.40 at Café Lumière on 2025-10-09");
        let items = artifact(&out, "receipts")[0]["items"].clone();
        assert_eq!(items[0], json!({"description": "Croissant", "quantity": 2, "amount": 6.4}));
        assert_eq!(items[1]["quantity"], json!(2));

        let canadian = "TIM HORTONS #2231\nOct 3, 2025\nDouble Double 2.19\nBagel 2.49\nHST 0.61\nTotal C$5.29";
        let out = run(canadian).await.expect("receipt");
        assert_eq!(out.summary, "Extracted receipt: C$5.29 at Tim Hortons on 2025-10-03");
    }

    #[tokio::test]
    async fn byte_doc_computes_a_missing_total_from_items() {
        let out = run("Bob's Hardware\n10/09/2025\nHammer 15.00\n3 Nails 4.50\nTax 1.95").await.expect("receipt");
        let r = &artifact(&out, "receipts")[0];
        assert_eq!((r["total"].as_f64(), r["total_source"].as_str()), (Some(21.45), Some("computed")));
        assert_eq!(r["items"][1], json!({"description": "Nails", "quantity": 3, "amount": 4.5}));
        assert_eq!(out.confidence, Some(75));
    }

    #[tokio::test]
    async fn byte_doc_keeps_the_total_after_the_tip() {
        let text = "Luigi's Trattoria\nOct 1, 2025\nPizza 20.00\nTotal 22.60\n\nTip 4.00\nTotal 26.60\n\nThank you!";
        let out = run(text).await.expect("receipt");
        let r = artifact(&out, "receipts").as_array().expect("array").clone();
        assert_eq!(r.len(), 1);
        assert_eq!((r[0]["total"].as_f64(), r[0]["tip"].as_f64()), (Some(26.6), Some(4.0)));
    }

    #[tokio::test]
    async fn byte_doc_splits_blank_line_receipts_with_their_own_totals() {
        let text = "Starbucks\nLatte 5.25\nTotal 5.25\n\nSubway\nSandwich 9.50\nTotal 9.50";
        let out = run(text).await.expect("receipts");
        assert!(out.summary.starts_with("Extracted 2 receipts totaling $14.75"), "{}", out.summary);
    }

    #[tokio::test]
    async fn byte_doc_extracts_a_statement() {
        let out = run(STATEMENT).await.expect("statement");
        assert!(out.summary.starts_with("Extracted "), "{}", out.summary);
        assert!(out.summary.contains("from the CSV statement"), "{}", out.summary);
        assert!(out.artifacts.iter().all(|a| a.label.as_deref() != Some("receipts")));
        assert!(artifact(&out, "transactions").as_array().is_some_and(|t| t.len() >= 20));
    }

    #[tokio::test]
    async fn byte_doc_asks_for_a_receipt_when_there_is_none() {
        for text in ["", "Hello, how are you?", "!!!\n---\n???", "\u{0}💥\u{fffd}"] {
            let err = run(text).await.expect_err("no receipt");
            assert_eq!(err.code, ErrorCode::NeedsInput);
            assert!(err.message.contains("paste the receipt text"), "{}", err.message);
        }
    }

    /// What byte-doc should make of a phrasing: the transactions
    /// (merchant, cents, date) or a question naming what is missing.
    type Want = phrasing::Want<&'static [(&'static str, Cents, &'static str)]>;

    #[tokio::test]
    async fn byte_doc_reads_phrasings_people_type() {
        use phrasing::Want::{Asks, Reads as Got};
        let rows: &[(&str, Want)] = &[
            ("2025-10-09 Starbucks 45.99", Got(&[("Starbucks", 4599, "2025-10-09")])),
            ("spent $12.50 at chipotle yesterday", Got(&[("Chipotle", 1250, "")])),
            ("uber 23.40 on 03/14/2025", Got(&[("Uber", 2340, "2025-03-14")])),
            ("14/03/2025 tesco 23,40", Got(&[("Tesco", 2340, "2025-03-14")])),
            (
                "14/03/2025 Tesco 5.00\n03/04/2025 Boots 2.00",
                Got(&[("Tesco", 500, "2025-03-14"), ("Boots", 200, "2025-04-03")]),
            ),
            ("paid 1,200 bucks for rent on 10/01/2025", Got(&[("Rent", 120_000, "2025-10-01")])),
            ("paid 1,200 bucks rent", Got(&[("Rent", 120_000, "")])),
            ("got a macbook from apple for $1.2k", Got(&[("Apple", 120_000, "")])),
            (
                "i spent 45 at starbucks and 12 at subway on 2025-03-14",
                Got(&[("Starbucks", 4500, "2025-03-14"), ("Subway", 1200, "2025-03-14")]),
            ),
            ("Coffee at Blue Bottle — $6.50", Got(&[("Blue Bottle", 650, "")])),
            ("€4,50 croissant at Paul, 2025-03-14", Got(&[("Paul", 450, "2025-03-14")])),
            ("- netflix $15.49\n- spotify $9.99", Got(&[("Netflix", 1549, ""), ("Spotify", 999, "")])),
            (
                "hey can you log this one\nWHOLE FOODS MARKET\n123 Main St\nTel 555-123-4567\nORGANIC BANANAS 2.49\n\
                 ALMOND MILK 4.99\nSUBTOTAL 7.48\nTAX 0.00\nTOTAL 7.48\nVISA ************1234 7.48\nTHANK YOU\n03/14/2025 10:32",
                Got(&[("Whole Foods Market", 748, "2025-03-14")]),
            ),
            (
                "\"Date\",\"Description\",\"Amount\",\"Balance\"\n\"03/14/2025\",\"POS PURCHASE STARBUCKS #1234\",\"-5.75\",\"1,234.56\"\n\
                 \"03/15/2025\",\"PAYROLL ACME\",\"2,000.00\",\"3,234.56\"\n\"03/16/2025\",\"AMAZON.COM*AB12\",\"-23.99\",\"3,210.57\"",
                Got(&[
                    ("Starbucks", 575, "2025-03-14"),
                    ("Payroll Acme", -200_000, "2025-03-15"),
                    ("Amazon", 2399, "2025-03-16"),
                ]),
            ),
            (
                "Date;Payee;Debit;Credit\n14/03/2025;Lidl;12,30;\n02/04/2025;Salary;;1.500,00",
                Got(&[("Lidl", 1230, "2025-03-14"), ("Salary", -150_000, "2025-04-02")]),
            ),
            (
                "Corner Bistro\n10/02/2025\nPasta 18.00\nTip 3.00\nTotal 21.00",
                Got(&[("Corner Bistro", 2100, "2025-10-02")]),
            ),
            ("Joe's Diner\nBurger 12.00\nFries 4.00", Got(&[("Joe's Diner", 1600, "")])),
            ("hi byte! how are you?", Asks("paste the receipt text")),
            ("starbucks this morning", Asks("paste the receipt text")),
            ("I spend about 300 a month on groceries", Asks("paste the receipt text")),
            ("how much did I spend on coffee?", Asks("paste the receipt text")),
            ("I'm 32 and have 3 kids", Asks("paste the receipt text")),
        ];
        let mut wrong = phrasing::Wrong::default();
        for (input, want) in rows {
            let got = run(input).await;
            wrong.judge(input, want, &got, |expected, out| {
                phrasing::same_transactions(artifact(out, "transactions"), "date", expected)
            });
        }
        wrong.assert_none(rows.len());
    }

    #[tokio::test]
    async fn byte_doc_needs_its_tool() {
        let err =
            ByteDoc.run(&AgentContext::detached(["categorize"]), &Task::new("x", RECEIPT)).await.expect_err("refused");
        assert_eq!(err.code, ErrorCode::ToolNotAllowed);
    }
}
