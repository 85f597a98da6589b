//! Receipts read out of text: the [`Receipt`] shape (merchant, date, total,
//! subtotal, tax, tip, items) and the parser that splits a text into receipts.

use std::borrow::Cow;
use std::sync::LazyLock;

use chrono::NaiveDate;
use regex::Regex;
use serde_json::{Value, json};

use super::dates;
use super::money::{self, Cents};
use super::transaction::{self, Transaction};

const MAX_RECEIPTS: usize = 100;
const MAX_ITEMS: usize = 200;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LineItem {
    pub description: String,
    pub quantity: u32,
    /// The line's amount (quantity times unit price).
    pub amount: Cents,
}

/// Where a receipt's total came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TotalSource {
    /// A TOTAL / Amount due / Grand total line.
    Printed,
    /// No total line: subtotal or items, plus tax and tip.
    Computed,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Receipt {
    pub merchant: String,
    pub date: Option<NaiveDate>,
    pub currency: String,
    pub total: Cents,
    pub total_source: TotalSource,
    pub subtotal: Option<Cents>,
    pub tax: Option<Cents>,
    pub tip: Option<Cents>,
    pub items: Vec<LineItem>,
}

impl Receipt {
    pub(crate) fn to_json(&self) -> Value {
        let opt = |c: Option<Cents>| c.map_or(Value::Null, money::to_value);
        json!({
            "merchant": self.merchant,
            "date": self.date.map(|d| d.format("%Y-%m-%d").to_string()),
            "currency": self.currency,
            "total": money::to_value(self.total),
            "total_source": match self.total_source { TotalSource::Printed => "printed", TotalSource::Computed => "computed" },
            "subtotal": opt(self.subtotal),
            "tax": opt(self.tax),
            "tip": opt(self.tip),
            "items": self.items.iter().map(|i| json!({
                "description": i.description,
                "quantity": i.quantity,
                "amount": money::to_value(i.amount),
            })).collect::<Vec<_>>(),
        })
    }

    /// The receipt as one transaction; its description lists the items.
    pub(crate) fn to_transaction(&self) -> Transaction {
        let mut t = Transaction::new(self.merchant.clone(), self.total, self.currency.clone());
        t.date = self.date;
        let names: Vec<&str> = self.items.iter().take(6).map(|i| i.description.as_str()).collect();
        t.description = match self.items.len() {
            0 => format!("Receipt from {}", self.merchant),
            n if n > names.len() => format!("{} and {} more", names.join(", "), n - names.len()),
            _ => names.join(", "),
        };
        t
    }

    pub(super) fn headline(&self) -> String {
        let on = self.date.map(|d| format!(" on {}", d.format("%Y-%m-%d"))).unwrap_or_default();
        format!("{} at {}{on}", money::format(self.total, &self.currency), self.merchant)
    }
}

/// What an amount line of a receipt is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// 2 for grand total / amount due, 1 for a plain total.
    Total(u8),
    Subtotal,
    Tax,
    Tip,
    Discount,
    Payment,
    Info,
    Item,
}

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("valid regex")
}

/// A line ending in an amount: `Latte .... 4.50`, `TOTAL: $45.99 USD`, `Milk 3.49 F`.
static AMOUNT_LINE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?P<label>.*?)[\s:=.]*(?P<amount>\(?[-−]?\s*(?:CA\$|C\$|A\$|US\$|NZ\$|\$|€|£)?\s*[-−]?\d[\d,.]*[.,]\d{2}\)?|(?:CA\$|C\$|A\$|US\$|\$|€|£)\s*\d+)\s*(?:USD|CAD|EUR|GBP|AUD)?\s*(?:[A-Z]{1,2})?\s*$",
    )
});
static SUBTOTAL: LazyLock<Regex> = LazyLock::new(|| re(r"sub\s*-?\s*total"));
static TAX: LazyLock<Regex> = LazyLock::new(|| re(r"\b(tax|taxes|gst|hst|pst|qst|vat|tva|iva|mwst)\b"));
static GRAND_TOTAL: LazyLock<Regex> = LazyLock::new(|| {
    re(r"\b(grand\s+total|total\s+due|amount\s+due|balance\s+due|total\s+to\s+pay|amount\s+to\s+pay|invoice\s+total)\b")
});
static TOTAL: LazyLock<Regex> = LazyLock::new(|| re(r"\b(total|montant|summe|importe)\b"));
static NOT_TOTAL: LazyLock<Regex> =
    LazyLock::new(|| re(r"\b(items?|qty|quantity|count|savings?|saved|discounts?|points|units)\b"));
static TIP: LazyLock<Regex> = LazyLock::new(|| re(r"\b(tip|tips|gratuity|service charge)\b"));
static DISCOUNT: LazyLock<Regex> = LazyLock::new(|| re(r"\b(discount|coupon|savings|you saved|promo|rebate)\b"));
static PAYMENT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\b(visa|mastercard|master card|amex|american express|debit|credit|cash|change|tender|tendered|card|paid|payment|interac|apple pay|google pay|auth|approval|balance|contactless|karte|girocard|geg)\b",
    )
});
static INFO: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\b(tel|phone|fax|store\s*#|store no|receipt\s*#|order\s*#|invoice\s*#|trans(action)?\s*#|terminal|register|cashier|server|table|guests?)\b",
    )
});
static FOOTER: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\b(thank|thanks|visit|survey|returns?|refunds?|www|http|customer copy|signature|approved|come again|have a (nice|great) day|see you|feedback|rewards?|member)\b",
    )
});
static INSTRUCTION: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\b(receipts?|invoice|please|pls|plz|extract|categori[sz]e|here is|here's|here’s|here are|attached|below|following|analy[sz]e|deduct\w*|upload(ed)?|scan(ned)?|hey|hi|hello|can you|could you|log|record|track|my|me|thx)\b",
    )
});
static LABELLED_MERCHANT: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^\s*(merchant|store|vendor|seller|payee|business|sold by|from)\s*:\s*(?P<name>.+)$"));
static PHONE: LazyLock<Regex> = LazyLock::new(|| re(r"\d{3}[-.\s)]+\d{3}[-.\s]\d{4}"));
static ADDRESS: LazyLock<Regex> = LazyLock::new(|| re(r"^\d+\s+\w+"));
static QTY_PREFIX: LazyLock<Regex> = LazyLock::new(|| re(r"^(\d{1,3})\s*(?:[xX×@]\s*|\s)(.*)$"));
static QTY_SUFFIX: LazyLock<Regex> = LazyLock::new(|| re(r"^(.*?)\s+(?:[xX×]\s*(\d{1,3})|(\d{1,3})\s*@.*)$"));
static QTY_LABEL: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\bqty\s*:?\s*(\d{1,3})\b"));
/// `1 x 10 Timbits`: an explicit `x` lets the description start with a number.
static QTY_TIMES: LazyLock<Regex> = LazyLock::new(|| re(r"^(\d{1,3})\s*[xX×]\s+(.*\pL.*)$"));
/// `2 @` (before `3.99`): a quantity line for the item next to it.
static QTY_ONLY: LazyLock<Regex> = LazyLock::new(|| re(r"^(\d{1,3})\s*[@xX×]$"));
/// `Your order from Chipotle`, `Trip with Uber`.
static ORDER_FROM: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^(?:your\s+)?(?:order|purchase|trip|ride|booking|delivery)\s+(?:from|at|with)\s+(?P<name>[^:]+?)[.!]?$")
});
static PERCENT: LazyLock<Regex> = LazyLock::new(|| re(r"\d+(?:[.,]\d+)?\s*%"));
static PRICE: LazyLock<Regex> = LazyLock::new(|| re(r"\d[.,]\d{2}\b"));
/// What is not chat preamble before a colon (`Invoice date:`, `Store #:`).
static NOT_PREAMBLE: LazyLock<Regex> = LazyLock::new(|| re(r"\b(date|time|total|no|number|tel|phone)\b"));

fn classify(label: &str) -> Kind {
    let l = label.to_lowercase();
    if SUBTOTAL.is_match(&l) {
        Kind::Subtotal
    } else if TAX.is_match(&l) && !l.contains("incl") && !GRAND_TOTAL.is_match(&l) {
        Kind::Tax
    } else if GRAND_TOTAL.is_match(&l) {
        Kind::Total(2)
    } else if TOTAL.is_match(&l) && !NOT_TOTAL.is_match(&l) {
        Kind::Total(1)
    } else if TIP.is_match(&l) {
        Kind::Tip
    } else if DISCOUNT.is_match(&l) {
        Kind::Discount
    } else if PAYMENT.is_match(&l) {
        Kind::Payment
    } else if INFO.is_match(&l) || dates::find_date(label).is_some() || TAX.is_match(&l) || is_tax_table_row(&l) {
        // What is left with a tax word says it is included (`VAT incl.`).
        Kind::Info
    } else {
        Kind::Item
    }
}

/// A row of a VAT table (`A= 19,0%  4,19  0,80`): a rate and other amounts.
fn is_tax_table_row(label: &str) -> bool {
    PERCENT.is_match(label) && PRICE.is_match(&PERCENT.replace_all(label, ""))
}

/// A line without the chat that came before it on the same line:
/// `Here's my receipt: OFFICE DEPOT #123` is `OFFICE DEPOT #123`.
fn without_preamble(line: &str) -> &str {
    match line.split_once(':') {
        Some((head, tail))
            if tail.chars().any(char::is_alphabetic)
                && head.split_whitespace().count() <= 8
                && !head.contains(|c: char| c.is_ascii_digit() || c == '#')
                && INSTRUCTION.is_match(&head.to_lowercase())
                && !NOT_PREAMBLE.is_match(&head.to_lowercase()) =>
        {
            tail.trim()
        }
        _ => line,
    }
}

/// The label and amount of a line that ends in an amount.
fn amount_line(line: &str) -> Option<(&str, Cents)> {
    let caps = AMOUNT_LINE.captures(line)?;
    let amount = money::parse_amount(caps.name("amount")?.as_str())?;
    let label = caps.name("label").map_or("", |m| m.as_str()).trim();
    Some((label, amount))
}

fn is_separator(line: &str) -> bool {
    let t = line.trim();
    t.len() >= 3 && t.chars().all(|c| matches!(c, '-' | '=' | '*' | '_' | '~' | '#'))
}

/// A block of lines; `hard` when a line of exactly `---` came before it.
struct Chunk<'a> {
    lines: Vec<&'a str>,
    hard: bool,
}

fn chunks(text: &str) -> Vec<Chunk<'_>> {
    let lines: Vec<&str> = text.lines().take(transaction::MAX_LINES).map(|l| without_preamble(l.trim())).collect();
    let mut out = Vec::new();
    let mut current = Chunk { lines: Vec::new(), hard: false };
    let mut hard_next = false;
    let mut has_total = false;
    for (i, line) in lines.iter().copied().enumerate() {
        let blank = line.is_empty();
        if blank || is_separator(line) {
            hard_next |= line == "---";
            if !current.lines.is_empty() {
                out.push(std::mem::replace(&mut current, Chunk { lines: Vec::new(), hard: false }));
            }
            has_total = false;
            continue;
        }
        // A new merchant's header right after a total, with no blank line between.
        if has_total && starts_receipt(&lines[i..]) {
            out.push(std::mem::replace(&mut current, Chunk { lines: Vec::new(), hard: false }));
            has_total = false;
        }
        if current.lines.is_empty() {
            current.hard = std::mem::take(&mut hard_next);
        }
        has_total |= matches!(line_kind(line), Some(Kind::Total(_)));
        current.lines.push(line);
    }
    if !current.lines.is_empty() {
        out.push(current);
    }
    out
}

/// Whether lines start a receipt: a merchant-like line, then priced lines
/// before any blank line.
fn starts_receipt(lines: &[&str]) -> bool {
    let Some((first, rest)) = lines.split_first() else {
        return false;
    };
    is_merchant_candidate(first)
        && rest.iter().take(6).take_while(|l| !l.is_empty()).any(|l| matches!(line_kind(l), Some(Kind::Item)))
}

fn line_kind(line: &str) -> Option<Kind> {
    amount_line(line).map(|(label, _)| classify(label))
}

/// A block that belongs after a total: payment, tip, a later total, footer text.
fn is_trailer(chunk: &Chunk) -> bool {
    let Some(first) = chunk.lines.first() else {
        return true;
    };
    match line_kind(first) {
        Some(Kind::Item) => false,
        Some(_) => true,
        None => FOOTER.is_match(&first.to_lowercase()) || !first.chars().any(char::is_alphabetic),
    }
}

/// Groups the text's blocks into receipts: a new receipt starts after a `---`
/// line, or after a total when the next block is not payment or footer text.
fn groups(text: &str) -> Vec<Vec<&str>> {
    let mut groups = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let (mut has_total, mut has_amount) = (false, false);
    for chunk in chunks(text) {
        if (chunk.hard && has_amount) || (has_total && !is_trailer(&chunk)) {
            groups.push(std::mem::take(&mut current));
            (has_total, has_amount) = (false, false);
        }
        let kinds: Vec<Option<Kind>> = chunk.lines.iter().map(|l| line_kind(l)).collect();
        has_total |= kinds.iter().any(|k| matches!(k, Some(Kind::Total(_))));
        has_amount |= kinds.iter().any(Option::is_some);
        current.extend(chunk.lines);
        if groups.len() >= MAX_RECEIPTS {
            break;
        }
    }
    if !current.is_empty() {
        groups.push(current);
    }
    groups
}

/// The receipts in a text: blocks separated by `---` lines, or by blank lines
/// when each has its own total. A block is a receipt when it has a total line,
/// or a merchant name and priced items; free lines such as
/// `2025-10-01 Starbucks 4.50` are not receipts.
pub(crate) fn parse_receipts(text: &str) -> Vec<Receipt> {
    let text = unfold(text);
    let text = text.as_ref();
    let fallback_currency = money::detect_currency(text).unwrap_or("USD");
    groups(text).iter().filter_map(|g| parse_one(g, fallback_currency)).take(MAX_RECEIPTS).collect()
}

/// An amount inside a flattened receipt, with a one-letter tax code after it.
static FLAT_AMOUNT: LazyLock<Regex> = LazyLock::new(|| re(r"(?:CA\$|C\$|\$|€|£)?-?\d[\d,]*[.,]\d{2}\b(?:\s+[A-Z]\b)?"));
/// A store number or a date (and time) that ends a flattened header.
static FLAT_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    re(r"#\s?\d+\b|\b\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}\b(?:\s+\d{1,2}:\d{2}(?::\d{2})?(?:\s?[AaPp][Mm])?)?")
});

/// A receipt a chat box put on one line (`OFFICE DEPOT #123 PAPER 42.99 PENS
/// 15.49 TOTAL 58.48`) back on lines: a break after each amount and after the
/// store number or date of its header.
fn unfold(text: &str) -> Cow<'_, str> {
    let flat = |line: &str| FLAT_AMOUNT.find_iter(line).take(3).count() >= 3 && TOTAL.is_match(&line.to_lowercase());
    if !text.lines().take(transaction::MAX_LINES).any(flat) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.lines().take(transaction::MAX_LINES) {
        if flat(line) {
            let first_amount = FLAT_AMOUNT.find(line).map_or(line.len(), |m| m.start());
            let (head, rest) = line.split_at(first_amount);
            out.push_str(&FLAT_HEADER.replace_all(head, "$0\n"));
            out.push_str(&FLAT_AMOUNT.replace_all(rest, "$0\n"));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    Cow::Owned(out)
}

fn is_merchant_candidate(line: &str) -> bool {
    let lower = line.to_lowercase();
    let letters = line.chars().filter(|c| c.is_alphabetic()).count();
    letters >= 2
        && amount_line(line).is_none()
        && !line.trim_end().ends_with(':')
        && !INSTRUCTION.is_match(&lower)
        && !INFO.is_match(&lower)
        && !FOOTER.is_match(&lower)
        && !PHONE.is_match(line)
        && !ADDRESS.is_match(line)
        && dates::find_date(line).is_none()
}

fn merchant_of(lines: &[&str]) -> Option<String> {
    if let Some(name) = lines.iter().find_map(|l| LABELLED_MERCHANT.captures(l).map(|c| c["name"].trim().to_string())) {
        return Some(transaction::clean_merchant(&name));
    }
    let line = lines.iter().take(8).find(|l| is_merchant_candidate(l))?;
    if let Some(c) = ORDER_FROM.captures(line) {
        return Some(transaction::clean_merchant(&c["name"]));
    }
    let line = line.trim_matches(|c: char| !c.is_alphanumeric() && c != '&' && c != '\'' && c != ')');
    let lower = line.to_lowercase();
    let name = lower.strip_prefix("welcome to ").map_or(line, |_| line.get(11..).unwrap_or(line));
    Some(transaction::clean_merchant(name))
}

/// Quantity and description of an item label: `2 x Latte`, `Latte x2`,
/// `Latte 2 @ 4.50`, `Qty: 2 Latte`.
fn item_parts(label: &str) -> (u32, String) {
    let mut qty = 1;
    let mut desc = label.to_string();
    if let Some(c) = QTY_LABEL.captures(label) {
        qty = c[1].parse().unwrap_or(1);
        desc = QTY_LABEL.replace(label, "").to_string();
    } else if let Some(c) = QTY_TIMES.captures(label) {
        qty = c[1].parse().unwrap_or(1);
        desc = c[2].to_string();
    } else if let Some(c) =
        QTY_PREFIX.captures(label).filter(|c| c[2].starts_with(char::is_alphabetic) || c[2].is_empty())
    {
        qty = c[1].parse().unwrap_or(1);
        desc = c[2].to_string();
    } else if let Some(c) = QTY_SUFFIX.captures(label) {
        qty = c.get(2).or(c.get(3)).and_then(|m| m.as_str().parse().ok()).unwrap_or(1);
        desc = c[1].to_string();
    }
    let desc = desc.split('@').next().unwrap_or_default();
    let desc = desc.trim_matches(|c: char| !c.is_alphanumeric() && c != ')' && c != '%').trim().to_string();
    (qty.clamp(1, 999), desc)
}

fn parse_one(lines: &[&str], fallback_currency: &str) -> Option<Receipt> {
    let merchant = merchant_of(lines);
    let mut totals: Vec<(u8, Cents)> = Vec::new();
    let (mut subtotal, mut tax, mut tip, mut discounts) = (None, None::<Cents>, None::<Cents>, 0);
    let mut items: Vec<LineItem> = Vec::new();
    let mut pending_desc: Option<&str> = None;
    // `2 @ 3.99` before its item: (quantity, unit price).
    let mut pending_qty: Option<(u32, Cents)> = None;
    for line in lines {
        let Some((label, amount)) = amount_line(line) else {
            // A text line may name the item priced on the next line.
            let is_merchant = merchant.as_deref().is_some_and(|m| line.to_lowercase().contains(&m.to_lowercase()));
            pending_desc = (!is_merchant && is_merchant_candidate(line)).then_some(*line);
            continue;
        };
        match classify(label) {
            Kind::Total(p) => totals.push((p, amount)),
            Kind::Subtotal => subtotal = Some(amount),
            Kind::Tax => tax = Some(tax.unwrap_or(0) + amount),
            Kind::Tip => tip = Some(tip.unwrap_or(0) + amount),
            Kind::Discount => discounts -= amount.abs(),
            Kind::Payment | Kind::Info => {}
            Kind::Item if QTY_ONLY.is_match(label) => {
                let n: u32 = label.chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap_or(1);
                match items.last_mut() {
                    Some(last) if last.amount == Cents::from(n) * amount && last.quantity == 1 => last.quantity = n,
                    _ => pending_qty = Some((n, amount)),
                }
                continue;
            }
            Kind::Item if items.len() < MAX_ITEMS => {
                let (mut quantity, mut description) = item_parts(label);
                if let Some((n, _)) = pending_qty.take().filter(|(n, unit)| Cents::from(*n) * unit == amount) {
                    quantity = n.max(quantity);
                }
                if !description.chars().any(char::is_alphabetic) {
                    description = pending_desc.map_or_else(|| "Item".to_string(), str::to_string);
                }
                items.push(LineItem { description, quantity, amount });
            }
            Kind::Item => {}
        }
        pending_desc = None;
    }
    // The highest-ranked total wins; among equals the last (a total after the tip).
    let printed = totals.iter().copied().fold(None, |best: Option<(u8, Cents)>, t| match best {
        Some(b) if b.0 > t.0 => Some(b),
        _ => Some(t),
    });
    let is_receipt = printed.is_some() || (merchant.is_some() && !items.is_empty());
    if !is_receipt {
        return None;
    }
    let (total, total_source) = match printed {
        Some((_, t)) => (t, TotalSource::Printed),
        None => {
            let base = subtotal.unwrap_or_else(|| items.iter().map(|i: &LineItem| i.amount).sum::<Cents>() + discounts);
            (base + tax.unwrap_or(0) + tip.unwrap_or(0), TotalSource::Computed)
        }
    };
    let text = lines.join("\n");
    let currency = money::detect_currency(&text).unwrap_or(fallback_currency).to_string();
    let day_first = dates::day_first_for(&text, &currency);
    let date = lines
        .iter()
        .find(|l| l.to_lowercase().contains("date"))
        .and_then(|l| dates::parse_date_ordered(l, day_first))
        .or_else(|| dates::parse_date_ordered(&text, day_first));
    Some(Receipt {
        merchant: merchant.unwrap_or_else(|| "Unknown merchant".into()),
        date,
        currency,
        total,
        total_source,
        subtotal,
        tax,
        tip,
        items,
    })
}
