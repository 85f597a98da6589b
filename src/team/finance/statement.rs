//! Bank statements as tables: CSV (any delimiter, with a header or none,
//! debit/credit or signed amounts, thousands separators, quoted fields) and
//! text tables split on runs of spaces (a PDF's text layer), read into
//! transactions. `transactions.rs` decides when a text is one.

use std::sync::LazyLock;

use regex::Regex;

use super::dates;
use super::money::{self, Cents};
use super::transaction::{MAX_LINES, MAX_TRANSACTIONS, Transaction, clean_merchant};

/// Splits a CSV line on `delim`, honouring double quotes (`""` is a quote).
pub(crate) fn split_csv(line: &str, delim: char) -> Vec<String> {
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
pub(crate) fn from_csv(text: &str) -> Option<(Vec<Transaction>, usize)> {
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
