//! The one place that finds transactions in a task: an earlier step's
//! `transactions` artifact, JSON, a CSV statement, receipts or free lines.
//! The transaction shape itself is in `transaction.rs`, re-exported here.

pub use super::transaction::{MAX_LINES, MAX_TRANSACTIONS, Transaction, clean_merchant, main_currency, to_json_array};

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::dates;
use super::money::{self, Cents};
use super::ofx;
use super::receipt::{self, Receipt};
use crate::agent::Task;

/// Where `from_task` found the transactions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The user's ledger: what earlier turns kept.
    Ledger,
    /// An earlier step's `transactions` artifact; the step's agent.
    Handoff(String),
    Json,
    Ofx,
    Csv,
    Receipts,
    Lines,
}

impl Source {
    pub fn describe(&self) -> String {
        match self {
            Self::Ledger => "your ledger".into(),
            Self::Handoff(agent) => format!("{agent}'s results"),
            Self::Json => "the JSON input".into(),
            Self::Ofx => "the OFX statement".into(),
            Self::Csv => "the CSV statement".into(),
            Self::Receipts => "the receipt text".into(),
            Self::Lines => "the listed transactions".into(),
        }
    }
}

/// What a task holds, with where it came from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extracted {
    pub source: Option<Source>,
    pub transactions: Vec<Transaction>,
    /// The receipts, when the transactions came from receipt text.
    pub receipts: Vec<Receipt>,
    /// CSV rows that had no readable amount.
    pub skipped_rows: usize,
}

/// The transactions of a task, first found of: (1) the latest intermediate
/// result with a `transactions` artifact; (2)-(5) as [`from_text`] on the
/// task's text.
pub fn from_task(task: &Task) -> Extracted {
    if let Some((agent, transactions)) = task.intermediate_results().and_then(from_handoff) {
        return Extracted { source: Some(Source::Handoff(agent)), transactions, ..Extracted::default() };
    }
    from_text(task.text())
}

/// The transactions in a text, first found of: (2) JSON (a transaction array,
/// an artifact list or an object holding them); (3) an OFX/QFX statement;
/// (4) a CSV statement, with a header or without; (5) receipts; (6) free
/// lines like `2025-10-01 Starbucks 4.50`.
pub fn from_text(text: &str) -> Extracted {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if let Some(transactions) = serde_json::from_str::<Value>(text.trim()).ok().and_then(|v| in_json(&v, 0)) {
        return Extracted { source: Some(Source::Json), transactions, ..Extracted::default() };
    }
    let transactions = ofx::parse(text);
    if !transactions.is_empty() {
        return Extracted { source: Some(Source::Ofx), transactions, ..Extracted::default() };
    }
    if let Some((transactions, skipped_rows)) = from_csv(text) {
        return Extracted { source: Some(Source::Csv), transactions, skipped_rows, ..Extracted::default() };
    }
    let receipts = receipt::parse_receipts(text);
    if !receipts.is_empty() {
        let transactions = receipts.iter().map(Receipt::to_transaction).collect();
        return Extracted { source: Some(Source::Receipts), transactions, receipts, ..Extracted::default() };
    }
    let transactions = from_lines(text);
    let source = (!transactions.is_empty()).then_some(Source::Lines);
    Extracted { source, transactions, ..Extracted::default() }
}

/// The newest step of a chain (an array, oldest first, or one result) whose
/// `transactions` artifact holds at least one transaction, with its agent.
pub fn from_handoff(results: &Value) -> Option<(String, Vec<Transaction>)> {
    let steps: Vec<&Value> = match results {
        Value::Array(items) => items.iter().rev().collect(),
        other => vec![other],
    };
    steps.into_iter().find_map(|step| {
        let artifacts = step.get("artifacts")?.as_array()?;
        let transactions = artifacts
            .iter()
            .rev()
            .filter(|a| a.get("label").and_then(Value::as_str) == Some("transactions"))
            .find_map(|a| in_json(a.get("value")?, 0))?;
        let agent = step.get("agent").and_then(Value::as_str).unwrap_or("an earlier step").to_string();
        Some((agent, transactions))
    })
}

/// Transactions inside a JSON value: an array of them, an artifact list, or an
/// object with `artifacts`, `transactions` or `value`.
fn in_json(value: &Value, depth: u8) -> Option<Vec<Transaction>> {
    if depth > 4 {
        return None;
    }
    match value {
        Value::Array(items) => {
            let labelled = items.iter().find(|i| i.get("label").and_then(Value::as_str) == Some("transactions"));
            if let Some(artifact) = labelled {
                return in_json(artifact.get("value")?, depth + 1);
            }
            let found: Vec<Transaction> =
                items.iter().take(MAX_TRANSACTIONS).filter_map(Transaction::from_json).collect();
            (!found.is_empty()).then_some(found)
        }
        Value::Object(obj) => ["transactions", "artifacts", "value"]
            .iter()
            .find_map(|k| in_json(obj.get(*k)?, depth + 1))
            .or_else(|| Transaction::from_json(value).map(|t| vec![t])),
        _ => None,
    }
}

/// Splits a CSV line on `delim`, honouring double quotes (`""` is a quote).
pub fn split_csv(line: &str, delim: char) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            c if c == delim && !quoted => fields.push(std::mem::take(&mut field).trim().to_string()),
            c => field.push(c),
        }
    }
    fields.push(field.trim().to_string());
    fields
}

/// How a statement's lines split into fields: a delimiter, or (text copied
/// from a PDF or a web page) runs of two or more spaces and tabs.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Split {
    Char(char),
    Gaps,
}

impl Split {
    const ALL: [Split; 5] = [Split::Char(','), Split::Char(';'), Split::Char('\t'), Split::Char('|'), Split::Gaps];

    fn fields(self, line: &str) -> Vec<String> {
        match self {
            Split::Char(d) => split_csv(line, d),
            Split::Gaps => spans(line).into_iter().filter_map(|(s, e)| line.get(s..e)).map(str::to_string).collect(),
        }
    }
}

/// `-1,845.20` in a comma-separated row without quotes comes apart at its
/// thousands separator; while the row has more fields than the header,
/// such halves (`-1` then `845.20`) are joined back.
fn rejoin_thousands(mut fields: Vec<String>, columns: usize) -> Vec<String> {
    let mut i = 0;
    while fields.len() > columns && i + 1 < fields.len() {
        let head = fields[i].trim_start_matches(['-', '+', '(', '$', '€', '£']);
        let tail = fields[i + 1].as_bytes();
        let joins = (1..=3).contains(&head.len())
            && head.bytes().all(|b| b.is_ascii_digit())
            && tail.len() >= 3
            && tail[..3].iter().all(u8::is_ascii_digit)
            && (tail.len() == 3 || matches!(tail[3], b'.' | b','));
        if joins {
            let tail = fields.remove(i + 1);
            fields[i] = format!("{},{tail}", fields[i]);
        } else {
            i += 1;
        }
    }
    fields
}

/// Where the fields of a line split on runs of spaces start and end.
fn spans(line: &str) -> Vec<(usize, usize)> {
    static GAP: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\t|\s{2,}").expect("valid regex"));
    let mut out = Vec::new();
    let mut from = 0;
    for gap in GAP.find_iter(line) {
        out.push((from, gap.start()));
        from = gap.end();
    }
    out.push((from, line.len()));
    out.into_iter()
        .filter_map(|(s, e)| {
            let field = line.get(s..e)?;
            let start = s + (field.len() - field.trim_start().len());
            let end = s + field.trim_end().len();
            (end > start).then_some((start, end))
        })
        .collect()
}

/// A text-table row's fields under the header's columns, by the nearest
/// centre: empty cells (a debit row has no credit) leave no field to count.
fn aligned(line: &str, header: &[(usize, usize)]) -> Vec<String> {
    let mut fields = vec![String::new(); header.len()];
    for (s, e) in spans(line) {
        let nearest = header.iter().enumerate().min_by_key(|(_, (hs, he))| (hs + he).abs_diff(s + e)).map(|(i, _)| i);
        if let (Some(field), Some(text)) = (nearest.and_then(|i| fields.get_mut(i)), line.get(s..e)) {
            if !field.is_empty() {
                field.push(' ');
            }
            field.push_str(text);
        }
    }
    fields
}

/// The columns of a statement.
#[derive(Debug, Default)]
struct Columns {
    date: Option<usize>,
    merchant: Option<usize>,
    description: Option<usize>,
    amount: Option<usize>,
    debit: Option<usize>,
    credit: Option<usize>,
    category: Option<usize>,
    currency: Option<usize>,
    kind: Option<usize>,
}

impl Columns {
    /// Columns named by a header, in English, German or French. Identifiers,
    /// account numbers and balances are not read.
    fn from_header(fields: &[String]) -> Option<Self> {
        let mut c = Columns::default();
        for (i, raw) in fields.iter().enumerate() {
            let name = raw.to_lowercase();
            let has = |words: &[&str]| words.iter().any(|w| name.contains(w));
            let slot = if name == "id"
                || has(&[
                    " id", "#", "number", "no.", "balance", "bal.", "saldo", "solde", "account", "foreign", "original",
                ]) {
                continue;
            } else if has(&["date", "datum", "buchungstag", "valuta"]) {
                &mut c.date
            } else if name == "type"
                || has(&[
                    "transaction type",
                    "txn type",
                    "entry type",
                    "debit/credit",
                    "credit/debit",
                    "dr/cr",
                    "cr/dr",
                ])
                || has(&["buchungstext"])
            {
                &mut c.kind
            } else if has(&[
                "merchant",
                "payee",
                "vendor",
                "name",
                "counter party",
                "counterparty",
                "empfänger",
                "auftraggeber",
                "begünstigter",
                "zahlungspflichtiger",
            ]) {
                &mut c.merchant
            } else if has(&[
                "description",
                "details",
                "memo",
                "narrative",
                "transaction",
                "reference",
                "verwendungszweck",
                "buchungstext",
                "libellé",
                "libelle",
            ]) {
                &mut c.description
            } else if has(&["debit", "débit", "withdrawal", "money out", "paid out", "spent", "soll"]) {
                &mut c.debit
            } else if has(&["credit", "crédit", "deposit", "money in", "paid in", "haben"]) {
                &mut c.credit
            } else if has(&["amount", "value", "total", "betrag", "umsatz", "montant"]) {
                &mut c.amount
            } else if has(&["category", "kategorie"]) {
                &mut c.category
            } else if has(&["currency", "währung", "waehrung", "devise"]) {
                &mut c.currency
            } else {
                continue;
            };
            slot.get_or_insert(i);
        }
        // A column named Description wins (Chase's first column, Details, holds DEBIT or CREDIT).
        if let Some(i) = fields.iter().position(|f| f.to_lowercase().contains("description")) {
            c.description = Some(i);
        }
        let has_money = c.amount.is_some() || c.debit.is_some();
        let has_what = c.merchant.is_some() || c.description.is_some();
        // A row of values is not a header (checked last: the regexes cost).
        let values = || fields.iter().any(|f| money::parse_amount(f).is_some() || dates::parse_date(f).is_some());
        (has_money && (has_what || c.date.is_some()) && !values()).then_some(c)
    }
}

/// Where a statement's rows are and how to read them.
struct Layout {
    /// The first line after the header (or the first row when there is none).
    start: usize,
    split: Split,
    cols: Columns,
    /// Without a header: the field count of a row; other lines are not rows.
    width: Option<usize>,
    /// A header split on spaces: where its columns are, to place a row's cells.
    header: Option<Vec<(usize, usize)>>,
    /// The header's field count.
    columns: usize,
}

/// A header line anywhere in the text (a request may start with prose). Text
/// split on spaces needs a date column to count as a statement.
fn with_header(lines: &[&str]) -> Option<Layout> {
    lines.iter().enumerate().find_map(|(i, line)| {
        Split::ALL.into_iter().find_map(|split| {
            // A header spaced out has a date, a text and an amount column at least.
            let (usable, least) = match split {
                Split::Char(d) => (line.contains(d), 2),
                Split::Gaps => (line.contains("  ") || line.contains('\t'), 3),
            };
            let names = Some(split.fields(line)).filter(|n| usable && n.len() >= least)?;
            let cols = Columns::from_header(&names)?;
            let header = (split == Split::Gaps).then(|| spans(line));
            (split != Split::Gaps || cols.date.is_some()).then_some(Layout {
                start: i + 1,
                split,
                cols,
                width: None,
                header,
                columns: names.len(),
            })
        })
    })
}

/// Rows without a header, told by their values: a date column, a text column
/// and one or two amount columns; of two amount columns filled on every row,
/// the one whose running difference matches the other is the balance (or,
/// when none does, the last one).
fn without_header(lines: &[&str]) -> Option<Layout> {
    Split::ALL.into_iter().find_map(|split| {
        let split_lines: Vec<(usize, Vec<String>)> =
            lines.iter().enumerate().map(|(i, l)| (i, split.fields(l))).filter(|(_, f)| f.len() >= 3).collect();
        let mut widths: Vec<(usize, usize)> = Vec::new();
        for (_, f) in &split_lines {
            match widths.iter_mut().find(|(w, _)| *w == f.len()) {
                Some((_, n)) => *n += 1,
                None => widths.push((f.len(), 1)),
            }
        }
        let (width, count) = widths.iter().copied().max_by_key(|(w, n)| (*n, *w))?;
        if count < if split == Split::Gaps { 2 } else { 1 } {
            return None;
        }
        let rows: Vec<&(usize, Vec<String>)> = split_lines.iter().filter(|(_, f)| f.len() == width).collect();
        let start = rows.first()?.0;
        let fields: Vec<&Vec<String>> = rows.iter().map(|(_, f)| f).collect();
        let cols = infer_columns(&fields, width)?;
        Some(Layout { start, split, cols, width: Some(width), header: None, columns: width })
    })
}

fn is_date_field(f: &str) -> bool {
    f.len() <= 25 && f.chars().filter(|c| c.is_alphabetic()).count() <= 4 && dates::parse_date(f).is_some()
}

/// An amount with cents (`-4.50`, `1.234,56 €`); a check number is not one.
fn is_money_field(f: &str) -> bool {
    let digits = f.trim_end_matches(|c: char| !c.is_ascii_digit()).as_bytes();
    let n = digits.len();
    n >= 3 && matches!(digits[n - 3], b'.' | b',') && money::parse_amount(f).is_some()
}

fn infer_columns(rows: &[&Vec<String>], width: usize) -> Option<Columns> {
    let column = |i: usize| rows.iter().map(move |r| r.get(i).map_or("", String::as_str));
    let date = (0..width).find(|&i| column(i).all(is_date_field))?;
    let money: Vec<usize> = (0..width)
        .filter(|&i| i != date)
        .filter(|&i| column(i).all(|f| f.is_empty() || is_money_field(f)) && column(i).any(|f| !f.is_empty()))
        .collect();
    let lettered = |i: usize| column(i).filter(|f| f.chars().any(char::is_alphabetic)).count();
    let description = (0..width)
        .filter(|i| *i != date && !money.contains(i) && lettered(*i) * 2 >= rows.len())
        .max_by_key(|&i| (lettered(i), column(i).map(str::len).sum::<usize>()))?;
    let values = |i: usize| column(i).map(|f| money::parse_amount(f).unwrap_or(0)).collect::<Vec<Cents>>();
    let filled = |i: usize| column(i).all(|f| !f.is_empty());
    // A debit/credit pair: never both filled on one row.
    let pair = |a: usize, b: usize| column(a).zip(column(b)).all(|(x, y)| x.is_empty() || y.is_empty());
    let mut c = Columns { date: Some(date), description: Some(description), ..Columns::default() };
    let (first, rest) = money.split_first()?;
    let balance = if rest.is_empty() || (rest.len() == 1 && pair(*first, rest[0])) {
        None
    } else {
        let balances: Vec<usize> = money.iter().copied().filter(|&i| filled(i)).collect();
        let others = |b: usize| -> Vec<Cents> {
            let cols: Vec<usize> = money.iter().copied().filter(|&i| i != b).collect();
            match cols.as_slice() {
                [a] => values(*a),
                [d, cr, ..] => values(*cr).iter().zip(values(*d)).map(|(x, y)| x.abs() - y.abs()).collect(),
                [] => Vec::new(),
            }
        };
        balances.iter().copied().find(|&b| runs_as_balance(&values(b), &others(b))).or(balances.last().copied())
    };
    let amounts: Vec<usize> = money.iter().copied().filter(|i| Some(*i) != balance).collect();
    match amounts.as_slice() {
        [a] => c.amount = Some(*a),
        [d, cr, ..] if pair(*d, *cr) => (c.debit, c.credit) = (Some(*d), Some(*cr)),
        [a, ..] => c.amount = Some(*a),
        [] => return None,
    }
    Some(c)
}

/// Whether `balance` moves by `amounts` from row to row (in either order, either sign).
fn runs_as_balance(balance: &[Cents], amounts: &[Cents]) -> bool {
    let steps: Vec<(Cents, Cents, Cents)> =
        balance.windows(2).zip(amounts.windows(2)).map(|(b, a)| (b[1] - b[0], a[0], a[1])).collect();
    let matches = |f: &dyn Fn(&(Cents, Cents, Cents)) -> bool| steps.iter().filter(|s| f(s)).count();
    let best = [
        matches(&|(d, _, next)| *d == *next),
        matches(&|(d, _, next)| *d == -*next),
        matches(&|(d, prev, _)| -*d == *prev),
        matches(&|(d, prev, _)| *d == *prev),
    ]
    .into_iter()
    .max()
    .unwrap_or(0);
    !steps.is_empty() && best * 2 > steps.len()
}

/// A statement: with a header line (columns date, description/merchant/payee,
/// amount or debit/credit, optional category, currency and type), or without
/// one (columns told by their values). Fields split on `,`, `;`, tabs, `|` or
/// runs of spaces. Numeric dates are read day first when the file says so or
/// is in a currency of day-first countries. Sign rule: a debit/credit pair
/// or a `type` column says which rows are spending; with a single amount
/// column, if most rows are negative the file is a bank export where
/// negative means money out, so signs are flipped; otherwise positive is
/// spending. Returns the transactions and the count of unreadable rows.
pub fn from_csv(text: &str) -> Option<(Vec<Transaction>, usize)> {
    let lines: Vec<&str> = text.lines().take(MAX_LINES).collect();
    let Layout { start, split, cols, width, header, columns } =
        with_header(&lines).or_else(|| without_header(&lines))?;
    let text_currency = money::detect_currency(text).unwrap_or("USD");
    let day_first = dates::day_first_for(text, text_currency);
    let mut rows = Vec::new();
    let mut skipped = 0;
    for line in lines.iter().skip(start) {
        if line.trim().is_empty() {
            continue;
        }
        let fields = match (&header, split) {
            (Some(h), _) => aligned(line, h),
            (None, Split::Char(',')) => rejoin_thousands(split.fields(line), columns),
            (None, _) => split.fields(line),
        };
        let get = |col: Option<usize>| col.and_then(|i| fields.get(i)).map(String::as_str).filter(|s| !s.is_empty());
        // Without a header, or in text split on spaces, a line without a date is not a row.
        let dated = get(cols.date).and_then(dates::parse_date).is_some();
        if width.is_some_and(|w| w != fields.len() || !dated) || (split == Split::Gaps && !dated) {
            continue;
        }
        if fields.len() < 2 {
            if rows.is_empty() {
                continue;
            }
            break;
        }
        let amount = match (get(cols.debit), get(cols.credit), get(cols.amount)) {
            (Some(d), _, _) if money::parse_amount(d).is_some_and(|a| a != 0) => {
                money::parse_amount(d).map(|a| (a.abs(), true))
            }
            (_, Some(c), _) if money::parse_amount(c).is_some_and(|a| a != 0) => {
                money::parse_amount(c).map(|a| (-a.abs(), true))
            }
            (_, _, Some(a)) => money::parse_amount(a).map(|a| match get(cols.kind).map(str::to_lowercase) {
                Some(k) if k.contains("credit") || k.starts_with("cr") || k.contains("deposit") => (-a.abs(), true),
                Some(k) if k.contains("debit") || k.starts_with("dr") || k.contains("withdraw") => (a.abs(), true),
                _ => (a, false),
            }),
            _ => None,
        };
        let description = get(cols.description).or(get(cols.merchant)).unwrap_or_default().to_string();
        let Some((amount, signed)) = amount else {
            // `Beginning balance as of 10/01/2025` with no amount is not a transaction.
            if !description.to_lowercase().contains("balance") {
                skipped += 1;
            }
            continue;
        };
        let merchant = get(cols.merchant).or(get(cols.description)).map_or_else(|| "Unknown".into(), clean_merchant);
        let currency = get(cols.currency)
            .filter(|c| c.len() == 3)
            .map(str::to_ascii_uppercase)
            .or_else(|| {
                let money_field = get(cols.amount).or(get(cols.debit)).or(get(cols.credit));
                money_field.and_then(money::detect_currency).map(str::to_string)
            })
            .unwrap_or_else(|| text_currency.to_string());
        let mut t = Transaction::new(merchant, amount, currency);
        t.date = get(cols.date).and_then(|d| dates::parse_date_ordered(d, day_first));
        t.description = description;
        t.category = get(cols.category).map(str::to_string);
        rows.push((t, signed));
        if rows.len() >= MAX_TRANSACTIONS {
            break;
        }
    }
    let unsigned: Vec<Cents> = rows.iter().filter(|(_, s)| !s).map(|(t, _)| t.amount).collect();
    let negatives = unsigned.iter().filter(|a| **a < 0).count();
    let bank_style = negatives * 2 > unsigned.len();
    let transactions: Vec<Transaction> = rows
        .into_iter()
        .map(|(mut t, signed)| {
            if bank_style && !signed {
                t.amount = -t.amount;
            }
            t
        })
        .collect();
    (!transactions.is_empty()).then_some((transactions, skipped))
}

/// Free lines with an amount: `2025-10-01 Starbucks 4.50`, `Uber $12 on Oct 2,
/// 2025`, `I spent $45.99 at Starbucks`, `paid 1,200 bucks rent`. An amount
/// has cents, a currency, a `k` or a money word (`bucks`); a bare number counts
/// when the line has a date or says it was spent (`spent 45 at Subway`). A line
/// with several amounts (`45 at Starbucks and 12 at Subway`) is split into
/// its clauses, one purchase each.
pub fn from_lines(text: &str) -> Vec<Transaction> {
    let currency = money::detect_currency(text).unwrap_or("USD");
    let day_first = dates::day_first_for(text, currency);
    text.lines()
        .take(MAX_LINES)
        .flat_map(|line| line_transactions(line, currency, day_first))
        .take(MAX_TRANSACTIONS)
        .collect()
}

static SPENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(spent|paid|bought|cost|charged|dropped|blew|grabbed|got charged)\b").expect("valid regex")
});
/// Money coming back: the amount is negative (not spending).
static REFUND: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(refund(ed)?|returned|reimbursed|cash ?back|got back|money back|received|deposit(ed)?)\b")
        .expect("valid regex")
});

/// Words after a number that make it money (`1,200 bucks`) or not money (`3 kids`).
const MONEY_WORDS: &[&str] = &["bucks", "dollars", "dollar", "usd", "cad", "eur", "euros", "gbp", "quid", "pounds"];
const NOT_MONEY_WORDS: &[&str] =
    &["year", "yr", "month", "week", "day", "hour", "min", "time", "kid", "people", "am", "pm", "x ", "%", "items"];

fn is_amount(text: &str, f: &money::Figure, context: bool) -> bool {
    let raw = text.get(f.start..f.end).unwrap_or_default();
    let after = text.get(f.end..).unwrap_or_default().trim_start().to_ascii_lowercase();
    if f.is_percent || NOT_MONEY_WORDS.iter().any(|w| after.starts_with(w)) {
        return false;
    }
    let marked = raw.contains(['.', '$', '€', '£']) || raw.ends_with(['k', 'K']);
    marked || context || MONEY_WORDS.iter().any(|w| after.starts_with(w))
}

fn line_transactions(line: &str, currency: &str, day_first: bool) -> Vec<Transaction> {
    let line = line.trim().trim_start_matches(['-', '*', '•']).trim();
    let (date, rest) = match dates::find_date_ordered(line, day_first) {
        Some((d, r)) => (Some(d), format!("{} {}", &line[..r.start], &line[r.end..])),
        None => (None, line.to_string()),
    };
    let context = date.is_some() || SPENT.is_match(&rest) || REFUND.is_match(&rest);
    let line_currency = money::detect_currency(line).unwrap_or(currency);
    let one = |clause: &str, figure: &money::Figure| {
        let words = format!("{} {}", clause.get(..figure.start)?, clause.get(figure.end..)?);
        let merchant = merchant_from_prose(&words)?;
        let amount = if REFUND.is_match(clause) { -figure.value.abs() } else { figure.value };
        let mut t = Transaction::new(merchant, amount, line_currency);
        t.date = date;
        t.description = line.to_string();
        Some(t)
    };
    let amounts = |clause: &str| -> Vec<money::Figure> {
        money::figures(clause).into_iter().filter(|f| is_amount(clause, f, context)).collect()
    };
    let found = amounts(&rest);
    if found.len() > 1 {
        let clauses: Vec<&str> = rest
            .split("; ")
            .flat_map(|c| c.split(", "))
            .flat_map(|c| c.split(" and "))
            .flat_map(|c| c.split(" & "))
            .collect();
        let per_clause: Vec<Vec<money::Figure>> = clauses.iter().map(|c| amounts(c)).collect();
        if per_clause.iter().map(Vec::len).sum::<usize>() == found.len() && per_clause.iter().all(|f| f.len() <= 1) {
            return clauses.iter().zip(&per_clause).filter_map(|(c, f)| one(c, f.first()?)).collect();
        }
    }
    found.last().and_then(|f| one(&rest, f)).into_iter().collect()
}

/// The payee in a line of prose: what follows " at " (or " from ") if
/// anything, else the words left once filler is removed; after a colon when
/// the colon follows an instruction (`Categorize this: Starbucks`). None
/// without letters.
fn merchant_from_prose(words: &str) -> Option<String> {
    const ASKS: &[&str] =
        &["categor", "extract", "receipt", "transaction", "please", "analy", "here", "add", "record", "log"];
    let words = match words.split_once(':') {
        Some((head, tail)) if ASKS.iter().any(|a| head.to_lowercase().contains(a)) => tail,
        _ => words,
    };
    // ASCII lowercasing keeps byte offsets valid in `words`.
    let lower = words.to_ascii_lowercase();
    let focus = match lower.find(" at ").map(|i| i + 4).or_else(|| lower.find(" from ").map(|i| i + 6)) {
        Some(i) => {
            let after = words.get(i..).unwrap_or_default();
            let end = [" on ", " for ", " in ", " yesterday", " today", " last ", " this "]
                .iter()
                .filter_map(|w| after.to_ascii_lowercase().find(w))
                .min();
            after.get(..end.unwrap_or(after.len())).unwrap_or(after)
        }
        None => words,
    };
    const FILLER: &[&str] = &[
        "i",
        "i've",
        "ive",
        "just",
        "spent",
        "paid",
        "bought",
        "got",
        "grabbed",
        "charged",
        "on",
        "at",
        "for",
        "a",
        "an",
        "the",
        "to",
        "my",
        "me",
        "some",
        "about",
        "around",
        "roughly",
        "approx",
        "like",
        "bucks",
        "dollars",
        "usd",
        "what",
        "which",
        "category",
        "is",
        "does",
        "should",
        "where",
        "refund",
        "refunded",
        "returned",
        "received",
        "yesterday",
        "today",
        "tonight",
        "last",
        "night",
        "week",
        "this",
        "morning",
        "hey",
        "so",
        "was",
    ];
    let kept: Vec<&str> = focus
        .split(|c: char| c.is_whitespace() || matches!(c, ':' | ',' | '–' | '|'))
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '&' && c != '\''))
        .filter(|w| !w.is_empty() && !FILLER.contains(&w.to_lowercase().as_str()))
        .collect();
    let merchant = kept.join(" ");
    merchant.chars().any(char::is_alphabetic).then(|| clean_merchant(&merchant))
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;
    use serde_json::json;

    use super::*;
    use crate::protocol::HandoffData;

    const STATEMENT: &str = include_str!("../../../examples/statement.csv");

    #[test]
    fn transactions_parse_example_statement() {
        let (ts, skipped) = from_csv(STATEMENT).expect("statement parses");
        assert_eq!(skipped, 0);
        assert!(ts.len() >= 20, "{} rows", ts.len());
        assert!(ts.iter().all(|t| t.date.is_some() && t.currency == "USD"));
        // A bank export: spending is negative in the file, positive here; pay is a credit.
        let rent = ts.iter().find(|t| t.merchant.to_lowercase().contains("rent")).expect("rent row");
        assert!(rent.amount > 0);
        assert!(ts.iter().any(|t| t.amount < 0), "payroll deposits are credits");
    }

    #[test]
    fn transactions_csv_handles_quotes_thousands_and_positive_spending() {
        let csv = "Here is my card export:\nDate,Payee,Amount,Category\n\
                   10/01/2025,\"STARBUCKS #1234\",\"$1,234.56\",Coffee\n\
                   10/02/2025,\"Uber, Inc\",12.00,\n10/03/2025,Broken,abc,\nThanks!";
        let (ts, skipped) = from_csv(csv).expect("csv");
        assert_eq!(skipped, 1);
        assert_eq!(ts.len(), 2);
        assert_eq!(ts[0].merchant, "Starbucks");
        assert_eq!(ts[0].amount, 123_456);
        assert_eq!(ts[0].category.as_deref(), Some("Coffee"));
        assert_eq!(ts[1].merchant, "Uber, Inc");
        assert_eq!(ts[1].date, NaiveDate::from_ymd_opt(2025, 10, 2));
    }

    #[test]
    fn transactions_csv_debit_credit_columns_set_the_sign() {
        let csv = "Date;Description;Debit;Credit\n2025-10-01;Grocer;45,10;\n2025-10-02;Salary;;2500,00";
        let (ts, _) = from_csv(csv).expect("csv");
        assert_eq!(ts.iter().map(|t| t.amount).collect::<Vec<_>>(), vec![4510, -250_000]);
    }

    #[test]
    fn transactions_free_lines_parse() {
        let ts = from_lines(
            "Here you go:\n2025-10-01 Starbucks 4.50\n- Uber $12 on Oct 2, 2025\nI spent $45.99 at Best Buy\n\
             Please categorize this: Blue Bottle Coffee $6.50 on 2025-10-09\nShell: fuel $40.00",
        );
        let got: Vec<(&str, Cents)> = ts.iter().map(|t| (t.merchant.as_str(), t.amount)).collect();
        assert_eq!(
            got,
            vec![
                ("Starbucks", 450),
                ("Uber", 1200),
                ("Best Buy", 4599),
                ("Blue Bottle Coffee", 650),
                ("Shell fuel", 4000)
            ]
        );
        assert_eq!(ts[1].date, NaiveDate::from_ymd_opt(2025, 10, 2));
    }

    #[test]
    fn transactions_prefer_the_latest_handoff_artifact() {
        let mut task = Task::new("Categorize", "2025-10-01 Ignored 1.00");
        task.handoff = HandoffData {
            intermediate_results: Some(json!([
                {"agent": "byte-doc", "status": "success", "artifacts": [
                    {"type": "json", "label": "transactions", "value": [{"merchant": "Old", "amount": 1.0}]}]},
                {"agent": "tag-ai", "status": "success", "artifacts": [
                    {"type": "json", "label": "transactions", "value": [
                        {"date": "2025-10-09", "merchant": "Starbucks", "amount": 45.99, "currency": "USD",
                         "description": "Latte", "category": "Dining - Coffee", "confidence": 95}]}]},
                {"agent": "crystal-analytics", "status": "success", "artifacts": [{"label": "analysis", "value": {}}]}
            ])),
            ..HandoffData::default()
        };
        let got = from_task(&task);
        assert_eq!(got.source, Some(Source::Handoff("tag-ai".into())));
        assert_eq!(got.transactions.len(), 1);
        assert_eq!(got.transactions[0].amount, 4599);
        assert_eq!(got.transactions[0].category.as_deref(), Some("Dining - Coffee"));
        assert_eq!(got.transactions[0].to_json()["amount"], json!(45.99));
    }

    #[test]
    fn transactions_read_json_input() {
        let got =
            from_text(r#"[{"type":"json","label":"transactions","value":[{"payee":"Shell","amount":"$40.00"}]}]"#);
        assert_eq!(got.source, Some(Source::Json));
        assert_eq!(got.transactions[0].merchant, "Shell");
        assert_eq!(got.transactions[0].amount, 4000);
    }

    #[test]
    fn transactions_garbage_gives_nothing() {
        for text in ["", "hello there", "{\"a\": 1}", "\u{0}\u{1}💥", "1,2,3\n4,5,6"] {
            assert!(from_text(text).transactions.is_empty(), "{text:?}");
        }
    }
}
