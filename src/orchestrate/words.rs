//! What Prime says itself: a few terms it can explain, small talk, its
//! team's introduction, the one question it asks when it cannot tell what
//! is wanted, and the short objective it gives a specialist.

use std::fmt::Write as _;

use crate::config::AgentSpec;

/// A few terms Prime can explain without a specialist.
const GLOSSARY: &[(&str, &str)] = &[
    (
        "emergency fund",
        "An emergency fund is cash set aside for unexpected costs such as a job loss or a car repair; a common target is three to six months of essential expenses, kept in an account you can reach quickly.",
    ),
    (
        "apr",
        "APR (annual percentage rate) is the yearly cost of borrowing, including interest and some fees; a card at 24% APR charges about 2% of the balance each month.",
    ),
    (
        "avalanche",
        "The debt avalanche pays minimums on every debt and puts every extra dollar on the highest-interest debt first; it costs the least interest overall.",
    ),
    (
        "snowball",
        "The debt snowball pays minimums on every debt and puts every extra dollar on the smallest balance first; it costs a little more interest but clears accounts sooner.",
    ),
    (
        "deduction",
        "A tax deduction lowers your taxable income; business expenses such as office supplies or software you use for work usually qualify when you keep the receipts.",
    ),
    (
        "budget",
        "A budget is a plan for your income: what goes to needs, wants and savings each month. The 50/30/20 rule is a simple start.",
    ),
    (
        "compound interest",
        "Compound interest is interest earned on interest: the balance grows faster the longer it stays invested.",
    ),
    (
        "credit score",
        "A credit score summarizes how reliably you repay debt; paying on time and keeping card balances low raise it.",
    ),
];

/// The explanation of a term the message asks about ("What is APR?"): a
/// question that names the term and nothing else ("what's eating up my
/// budget?" and "what are my deductions?" are about the user's money).
pub(super) fn definition(lower: &str) -> Option<&'static str> {
    let asks = ["what is", "what's", "what are", "define", "explain", "what does", "meaning of"];
    if !asks.iter().any(|a| lower.starts_with(a)) {
        return None;
    }
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    if words.iter().any(|w| ["my", "our", "i", "me"].contains(w)) {
        return None;
    }
    let (term, text) = GLOSSARY.iter().find(|(term, _)| {
        let t = *term;
        words.iter().any(|w| *w == t || w.strip_suffix('s') == Some(t)) || (t.contains(' ') && lower.contains(t))
    })?;
    // what else it says: the words of a definition question, and nothing more
    const ASKING: [&str; 10] =
        ["explain", "define", "mean", "means", "meaning", "method", "exactly", "term", "stand", "stands"];
    let term_words: Vec<&str> = term.split(' ').collect();
    let other = crate::route::text::content(lower)
        .into_iter()
        .filter(|w| !ASKING.contains(&w.as_str()))
        .filter(|w| !term_words.iter().any(|t| w == t || w.strip_suffix('s') == Some(t)))
        .count();
    (other == 0).then_some(*text)
}

/// A request for advice on what to buy or invest in ("which tv should I
/// buy", "should I put money into real estate"): no one on the team gives it.
pub(super) fn asks_what_to_buy(lower: &str) -> bool {
    static ADVICE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"\b(?:should i (?:buy|purchase|invest)\b|(?:which|what) (?:[a-z]+ ){1,3}(?:should|do|can) i (?:buy|purchase|invest)\b|best [a-z]+(?: [a-z]+)? to (?:buy|purchase|invest)\b|(?:put|invest) (?:my |some )?money (?:in|into)\b|should i invest\b)",
        )
        .expect("valid regex")
    });
    ADVICE.is_match(lower)
}

/// A request to reach someone by a channel the team does not have: a
/// call or a text message ("text my brother that…", "call the pharmacy").
pub(super) fn asks_to_call_or_text(lower: &str) -> bool {
    static CHANNEL: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^(?:(?:can|could|would) you |please )*(?:call|phone|ring|text|message|sms|dm|whatsapp)\b(?: me)? (?:my|the|to|a|an|him|her|them|[a-z]+ (?:that|to|about))\b")
            .expect("valid regex")
    });
    CHANNEL.is_match(lower)
}

/// A greeting, thanks, or a question about Prime itself.
pub(super) fn is_small_talk(lower: &str) -> bool {
    const OPENERS: [&str; 12] = [
        "hi",
        "hello",
        "hey",
        "yo",
        "good morning",
        "good afternoon",
        "good evening",
        "thanks",
        "thank you",
        "how are you",
        "who are you",
        "what can you do",
    ];
    OPENERS.iter().any(|o| lower.starts_with(o) && lower[o.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric()))
}

/// `lead`, then the team, one line per agent.
pub(super) fn introduction(team: &[AgentSpec], lead: &str) -> String {
    let mut s = String::from(lead);
    if !s.is_empty() {
        s.push(' ');
    }
    s.push_str("My team can help with:\n");
    for a in team {
        let _ = writeln!(s, "• {} ({}): {}", a.name, a.slug, a.description);
    }
    s.push_str("Tell me what you need, and attach a receipt or statement with --file when there is one.");
    s
}

/// What an agent is for, in a few words: its description up to the first
/// `:`, `,` or `.` ("Document processing: extracts …" → "document processing").
fn label(spec: &AgentSpec) -> String {
    let d = spec.description.trim();
    let cut = d.find([':', ',', '.']).unwrap_or(d.len());
    // at most ten words
    let short = d[..cut].split_whitespace().take(10).collect::<Vec<_>>().join(" ");
    let mut chars = short.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => spec.name.clone(),
    }
}

/// The one question Prime asks when it cannot tell what is wanted: what
/// its team does, in a sentence.
pub(super) fn offer(team: &[AgentSpec]) -> String {
    let items: Vec<String> = team.iter().map(|a| format!("{} ({})", label(a), a.name)).collect();
    match items.as_slice() {
        [] => "What would you like me to do?".to_string(),
        [one] => format!("Is it something for {one}?"),
        [init @ .., last] => format!("What would you like done? My team does {} and {last}.", init.join(", ")),
    }
}

/// A short objective from a message: its first sentence, at most 120 characters.
pub(super) fn objective_of(msg: &str) -> String {
    // A sentence ends at a line break, or at . ? ! before a space or the end
    // (so "alex.chan@company.com" stays whole).
    let mut end = msg.len();
    let mut chars = msg.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next_is_space = chars.peek().is_none_or(|(_, n)| n.is_whitespace());
        if c == '\n' || (matches!(c, '.' | '?' | '!') && next_is_space && i > 0) {
            end = i;
            break;
        }
    }
    let first = msg[..end].trim();
    let first = if first.is_empty() { msg.trim() } else { first };
    let mut out: String = first.chars().take(120).collect();
    if first.chars().count() > 120 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn a_definition_question_names_the_term_and_nothing_else() {
        for q in [
            "what is apr?",
            "what's a credit score",
            "explain the snowball method",
            "explain what a budget is",
            "what does apr stand for",
        ] {
            assert!(definition(q).is_some(), "{q}");
        }
        for q in ["what's eating up my budget?", "what are my deductions", "what is the apr on my visa card"] {
            assert!(definition(q).is_none(), "{q}");
        }
    }

    #[test]
    fn advice_on_buying_and_calls_or_texts_are_told_apart_from_the_team_s_work() {
        for q in [
            "which tv should i buy",
            "should i buy bitcoin?",
            "what's the best phone to buy",
            "should i put money into real estate",
        ] {
            assert!(asks_what_to_buy(q), "{q}");
        }
        for q in [
            "what did i buy at target",
            "should i pay the card or the loan first",
            "how much did i spend on what i buy online",
        ] {
            assert!(!asks_what_to_buy(q), "{q}");
        }
        for q in ["text my brother that i'm on my way", "can you call my mom", "message my wife that i'll be late"] {
            assert!(asks_to_call_or_text(q), "{q}");
        }
        for q in ["email my landlord about the heater", "how much is my phone bill", "categorize my calls"] {
            assert!(!asks_to_call_or_text(q), "{q}");
        }
    }

    #[test]
    fn the_question_names_what_the_team_does_in_a_few_words() {
        let c = Config::builtin();
        let team: Vec<AgentSpec> = c.agents.iter().filter(|a| a.slug.as_str() != "prime-boss").cloned().collect();
        let q = offer(&team);
        assert!(
            q.starts_with("What would you like done? My team does document processing (Byte), categorization (Tag)"),
            "{q}"
        );
        assert!(q.ends_with('.') && q.matches('?').count() == 1, "{q}");
    }
}
