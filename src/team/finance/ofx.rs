//! OFX and QFX statements (what banks offer as "Quicken" or "Money" downloads):
//! SGML OFX 1.x, whose tags are often left unclosed, and XML OFX 2.x. Each
//! `<STMTTRN>` becomes a transaction; OFX's sign (negative `TRNAMT` is money
//! out) is turned into ours (positive is money spent).

use chrono::NaiveDate;

use super::money;
use super::transaction::{MAX_TRANSACTIONS, Transaction, clean_merchant};

/// Whether a text is an OFX document: a 1.x header, a 2.x processing
/// instruction or an `<OFX>` element, with at least one transaction.
pub(crate) fn is_ofx(text: &str) -> bool {
    let head = text.get(..text.len().min(4096)).unwrap_or(text).to_ascii_uppercase();
    let marked = head.contains("OFXHEADER") || head.contains("<OFX>");
    marked && text.to_ascii_uppercase().contains("<STMTTRN>")
}

/// The transactions of an OFX statement, in file order; empty when `text` is not one.
pub(crate) fn parse(text: &str) -> Vec<Transaction> {
    if !is_ofx(text) {
        return Vec::new();
    }
    // ASCII uppercasing keeps byte offsets valid in `text`.
    let upper = text.to_ascii_uppercase();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = upper.get(from..).and_then(|s| s.find("<STMTTRN>")) {
        let start = from + found + "<STMTTRN>".len();
        let rest = upper.get(start..).unwrap_or_default();
        let len = ["</STMTTRN>", "<STMTTRN>", "</BANKTRANLIST>"].iter().filter_map(|end| rest.find(end)).min();
        let end = start + len.unwrap_or(rest.len());
        let currency = last_value(upper.get(..start).unwrap_or_default(), text, "CURDEF")
            .filter(|c| c.len() == 3 && c.chars().all(|ch| ch.is_ascii_alphabetic()))
            .map_or_else(|| "USD".to_string(), |c| c.to_ascii_uppercase());
        if let Some(t) =
            transaction(upper.get(start..end).unwrap_or_default(), text.get(start..end).unwrap_or_default(), currency)
        {
            out.push(t);
        }
        from = end;
        if out.len() >= MAX_TRANSACTIONS {
            break;
        }
    }
    out
}

fn transaction(upper: &str, block: &str, currency: String) -> Option<Transaction> {
    let field = |tag: &str| value(upper, block, tag);
    // OFX amounts have no thousands separators; some banks write a decimal comma.
    let amount = money::parse_amount(&field("TRNAMT")?)?;
    let name = field("NAME").or_else(|| field("PAYEE")).filter(|n| !n.is_empty());
    let memo = field("MEMO").filter(|m| !m.is_empty());
    let raw = name.clone().or_else(|| memo.clone())?;
    let mut t = Transaction::new(clean_merchant(&raw), -amount, currency);
    t.date = field("DTPOSTED").as_deref().and_then(date).or_else(|| field("DTUSER").as_deref().and_then(date));
    t.description = match (name, memo) {
        (Some(n), Some(m)) => format!("{n} {m}"),
        (n, m) => n.or(m).unwrap_or_default(),
    };
    Some(t)
}

/// The text after the first `<TAG>` in a block, up to the next tag or line end,
/// with SGML entities decoded.
fn value(upper: &str, original: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let start = upper.find(&open)? + open.len();
    let rest = original.get(start..)?;
    let end = rest.find(['<', '\n', '\r']).unwrap_or(rest.len());
    Some(decode(rest.get(..end)?.trim()))
}

/// The value of the last `<TAG>` before a point (the statement's `CURDEF` for a transaction).
fn last_value(upper_before: &str, original: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let at = upper_before.rfind(&open)?;
    value(upper_before.get(at..)?, original.get(at..)?, tag)
}

fn decode(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

/// `20251003120000[-5:EST]`, `20251003120000.000`, `20251003`: the date part.
fn date(raw: &str) -> Option<NaiveDate> {
    let digits = raw.get(..8)?;
    if !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    NaiveDate::from_ymd_opt(
        digits.get(..4)?.parse().ok()?,
        digits.get(4..6)?.parse().ok()?,
        digits.get(6..8)?.parse().ok()?,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ofx_reads_unclosed_sgml_and_flips_the_sign() {
        let text = "OFXHEADER:100\n<OFX><STMTRS><CURDEF>EUR\n<STMTTRN><TRNAMT>-4,50<DTPOSTED>20251003<NAME>CAF&Eacute; X\n\
                    <STMTTRN><TRNAMT>10.00<NAME>REFUND</BANKTRANLIST>";
        let ts = parse(text);
        assert_eq!(
            ts.iter().map(|t| (t.amount, t.currency.as_str())).collect::<Vec<_>>(),
            vec![(450, "EUR"), (-1000, "EUR")]
        );
        assert_eq!(ts[0].date, NaiveDate::from_ymd_opt(2025, 10, 3));
    }

    #[test]
    fn ofx_ignores_broken_input() {
        for text in
            ["<OFX><STMTTRN>", "<OFX><STMTTRN><TRNAMT>abc", "OFXHEADER<STMTTRN><DTPOSTED>2025é<TRNAMT>1", "<ofx>"]
        {
            assert!(parse(text).iter().all(|t| t.date.is_none()), "{text}");
        }
        assert!(parse("<OFX><STMTTRN><TRNAMT>1.00").is_empty(), "no name nor memo");
    }
}
