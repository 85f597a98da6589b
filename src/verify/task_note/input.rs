//! Taking the material to work on out of a note: a fenced block, the lines
//! after `Data:`, a quoted text (on its own lines or after an instruction) or CSV rows.

use std::sync::LazyLock;

use regex::Regex;

use super::goal::starts_with_action;
use crate::verify::text::{self, re};

static FENCED: LazyLock<Regex> = LazyLock::new(|| re(r"(?s)```[A-Za-z]*[ \t]*\r?\n(.*?)```"));
static INPUT_HEADER: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)^\s*(?:input|data|csv|text|content|rows)\s*:\s*$"));
static INLINE_QUOTE: LazyLock<Regex> = LazyLock::new(|| re(r#"^(.+?):\s*(?:"([^"]+)"|“([^”]+)”)(.*)$"#));
static KEY_PREFIX: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*[A-Za-z][\w \-]{0,30}:\s"));

/// Separates the material to work on from the instructions.
pub(super) fn split_input(note: &str) -> (String, Option<String>) {
    if let Some(m) = FENCED.captures(note) {
        let whole = m.get(0).map_or(0..0, |w| w.range());
        let inner = m.get(1).map_or("", |i| i.as_str()).trim().to_string();
        let rest = format!("{}\n{}", &note[..whole.start], &note[whole.end..]);
        return (rest, Some(inner));
    }
    let lines: Vec<&str> = note.lines().collect();
    if let Some(i) = lines.iter().position(|l| INPUT_HEADER.is_match(l)) {
        let input = lines[i + 1..].join("\n").trim().to_string();
        if !input.is_empty() {
            return (lines[..i].join("\n"), Some(input));
        }
    }
    // A quoted block on lines of its own, after an instruction.
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        let Some(close) = opening_quote(t) else {
            continue;
        };
        if i == 0 && !t.ends_with(close) {
            continue;
        }
        if let Some(end) = (i..lines.len()).find(|&j| {
            let l = lines[j].trim();
            l.ends_with(close) && (j > i || l.chars().count() > 1)
        }) {
            let block = lines[i..=end].join("\n");
            // `"Hopper, Grace",grace@x.io,"dev"` is a CSV row, not a quotation.
            let inner = block.trim().chars().skip(1).collect::<String>();
            if close != '\'' && inner.trim_end_matches(close).contains(close) {
                continue;
            }
            let input = text::unquote(block.trim()).to_string();
            let rest: Vec<&str> = lines[..i].iter().chain(&lines[end + 1..]).copied().collect();
            return (rest.join("\n"), Some(input));
        }
    }
    // `Format this text to business style: "hey can u …"` on one line; a short
    // prefix that is no instruction is a field (`Subject hint: "…"`).
    for (i, line) in lines.iter().enumerate() {
        if let Some(c) = INLINE_QUOTE.captures(line.trim()) {
            let prefix = c.get(1).map_or("", |m| m.as_str());
            if starts_with_action(prefix) || prefix.split_whitespace().count() >= 4 {
                let input = c.get(2).or(c.get(3)).map_or("", |m| m.as_str()).trim().to_string();
                let mut rest: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                rest[i] = format!("{prefix}:{}", c.get(4).map_or("", |m| m.as_str()));
                return (rest.join("\n"), Some(input));
            }
        }
    }
    let lower = note.to_ascii_lowercase();
    if let Some((start, end)) = csv_block(&lines, lower.contains("csv") || lower.contains("column")) {
        let input = lines[start..end].iter().map(|l| l.trim()).collect::<Vec<_>>().join("\n");
        let rest: Vec<&str> = lines[..start].iter().chain(&lines[end..]).copied().collect();
        return (rest.join("\n"), Some(input));
    }
    (note.to_string(), None)
}

fn opening_quote(line: &str) -> Option<char> {
    match line.chars().next()? {
        '"' => Some('"'),
        '“' => Some('”'),
        '\'' => Some('\''),
        _ => None,
    }
}

/// The first run of lines that read as CSV rows: commas outside quotes, the
/// same count on each line, no `Key: value` shape, no sentence ending. Unless
/// the note announces CSV, a block needs two lines and a digit or an `@`
/// somewhere, so that comma-separated instructions are not taken for data.
fn csv_block(lines: &[&str], expects_csv: bool) -> Option<(usize, usize)> {
    let csv_commas = |l: &str| {
        let t = l.trim();
        if t.is_empty() || t.ends_with('.') || KEY_PREFIX.is_match(t) {
            return 0;
        }
        let mut quoted = false;
        t.chars()
            .filter(|&c| {
                if c == '"' {
                    quoted = !quoted;
                }
                c == ',' && !quoted
            })
            .count()
    };
    let min_rows = if expects_csv { 1 } else { 2 };
    let data_like =
        |rows: &[&str]| expects_csv || rows.iter().any(|l| l.contains('@') || l.contains(|c: char| c.is_ascii_digit()));
    let mut i = 0;
    while i < lines.len() {
        let n = csv_commas(lines[i]);
        if n == 0 {
            i += 1;
            continue;
        }
        let end = (i..lines.len()).find(|&j| csv_commas(lines[j]) != n).unwrap_or(lines.len());
        if end - i >= min_rows && data_like(&lines[i..end]) {
            return Some((i, end));
        }
        i = end;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::spec::{TaskKind, TaskSpec};
    use crate::protocol::Check;

    #[test]
    fn inline_quoted_input_is_taken_out_of_the_instruction() {
        for note in [
            "Rewrite this message in a formal style: \"pls fix ur bug asap\". No abbreviations.",
            "Rewrite this message in a formal style: \"pls fix ur bug asap\"\nNo abbreviations.",
        ] {
            let spec = TaskSpec::parse(note).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(spec.kind, TaskKind::Format);
            assert_eq!(spec.context.input.as_deref(), Some("pls fix ur bug asap"));
            assert_eq!(spec.constraints.tone.as_deref(), Some("formal"));
            let not_contains: Vec<_> =
                spec.checks().into_iter().filter(|c| matches!(c, Check::NotContains { .. })).collect();
            assert_eq!(not_contains.len(), 3, "{not_contains:?}");
        }
    }

    #[test]
    fn comma_separated_instructions_are_not_csv() {
        let spec = TaskSpec::parse(
            "Rewrite this text: \"hi\"\nPreserve intent, improve clarity\nNo abbreviations, proper capitalization",
        )
        .unwrap();
        assert_eq!(spec.context.input.as_deref(), Some("hi"));
        assert!(spec.constraints.capitalization && spec.constraints.no_abbreviations);
    }
}
