//! A note's clauses and their pieces: sentences split outside quotes and
//! abbreviations, capture groups, lists, and objects without their article.

use regex::Captures;

use crate::verify::text;

#[rustfmt::skip]
const ABBREVIATED_WORDS: &[&str] = &[
    "e.g", "i.e", "etc", "vs", "mr", "mrs", "ms", "dr", "st", "approx", "jan", "feb", "mar", "apr",
    "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
];

/// Splits a line into sentences at `.`, `!`, `?` followed by a blank, outside
/// quotes and not after an abbreviation (`Oct. 22`, `e.g.`).
pub(super) fn split_sentences(line: &str) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    for (i, &c) in chars.iter().enumerate() {
        cur.push(c);
        let prev = i.checked_sub(1).map(|j| chars[j]);
        let next = chars.get(i + 1).copied();
        match quote {
            Some(q) if c == q && (q != '\'' || next.is_none_or(|n| !n.is_alphanumeric())) => quote = None,
            Some(_) => {}
            None => match c {
                '"' => quote = Some('"'),
                '“' => quote = Some('”'),
                '‘' => quote = Some('’'),
                '\'' if prev.is_none_or(|p| p.is_whitespace() || matches!(p, ':' | '(')) => quote = Some('\''),
                '.' | '!' | '?' if next.is_none_or(char::is_whitespace) => {
                    let body = &cur[..cur.len() - 1];
                    let last = body.rsplit(|ch: char| ch.is_whitespace()).next().unwrap_or("").to_ascii_lowercase();
                    if c != '.' || !ABBREVIATED_WORDS.contains(&last.as_str()) {
                        out.push(std::mem::take(&mut cur));
                    }
                }
                _ => {}
            },
        }
    }
    out.push(cur);
    out.into_iter()
        .map(|s| s.trim().trim_end_matches(['.', ';']).trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

pub(super) fn cap<'c>(c: &'c Captures<'_>, i: usize) -> &'c str {
    c.get(i).map_or("", |m| m.as_str()).trim()
}

pub(super) fn num<T: std::str::FromStr>(c: &Captures<'_>, i: usize) -> Option<T> {
    cap(c, i).parse().ok()
}

/// Items of a list: `a, b and c`, `a; b`.
pub(super) fn list(s: &str) -> Vec<String> {
    s.split([',', ';'])
        .flat_map(|p| p.split(" and "))
        .map(|p| text::unquote(p.trim().trim_end_matches('.')).to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

pub(super) fn strip_article(s: &str) -> String {
    let t = s.trim().trim_end_matches(':').trim();
    ["a ", "an ", "the "]
        .iter()
        .find_map(|a| {
            let (head, rest) = (t.get(..a.len())?, t.get(a.len()..)?);
            (head.eq_ignore_ascii_case(a) && !rest.trim().is_empty()).then(|| rest.trim())
        })
        .unwrap_or(t)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_split_outside_quotes_and_abbreviations() {
        assert_eq!(
            split_sentences("Mention Oct. 22. Subject: \"A. B.\" Then go"),
            ["Mention Oct. 22", "Subject: \"A. B.\" Then go"]
        );
        assert_eq!(split_sentences("Email alex.chan@company.com now."), ["Email alex.chan@company.com now"]);
    }
}
