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
        "net worth",
        "Net worth is what you own minus what you owe: savings, investments and property, less debts such as loans and card balances.",
    ),
    (
        "index fund",
        "An index fund holds every stock (or bond) of a market index, such as the S&P 500, so it follows the market at a low fee instead of picking winners.",
    ),
    (
        "amortization",
        "Amortization is paying a loan off in equal installments: each payment covers that month's interest and repays part of the principal, so the interest share shrinks over time.",
    ),
    ("principal", "The principal is the amount you borrowed (or still owe), without the interest on it."),
    (
        "interest rate",
        "An interest rate is what borrowing costs (or saving earns) per year, as a share of the balance.",
    ),
    (
        "minimum payment",
        "The minimum payment is the least a lender accepts each month to keep the account in good standing; paying only that keeps most of the balance, and its interest, for years.",
    ),
    (
        "credit utilization",
        "Credit utilization is how much of your card limits you use: a $600 balance on a $2,000 limit is 30%. Under 30% is better for a credit score.",
    ),
    (
        "balance transfer",
        "A balance transfer moves a card balance to another card, often at a low introductory rate for some months, usually for a fee of 3-5% of what is moved.",
    ),
    (
        "inflation",
        "Inflation is the rise of prices over time: at 3% a year, what costs $100 today costs about $103 next year, so cash kept idle buys less.",
    ),
    (
        "sinking fund",
        "A sinking fund is money put aside a little each month for a known future cost, such as insurance, a car or holidays, so the cost does not land at once.",
    ),
    (
        "write-off",
        "A write-off is an expense you may deduct from taxable income, such as business costs you keep receipts for.",
    ),
    (
        "tax bracket",
        "A tax bracket is the range of income taxed at one rate; only the income inside a bracket is taxed at that bracket's rate.",
    ),
    (
        "credit score",
        "A credit score summarizes how reliably you repay debt; paying on time and keeping card balances low raise it.",
    ),
];

/// What Prime answers to a question about a term ("What is APR?", "define
/// net worth", "emergency fund, what is that?"): the explanation from its
/// glossary, or, for a term it does not know, that it has none (the
/// question is still Prime's, not a specialist's). A question that names
/// the user's own money ("what's eating up my budget?", "what are my
/// deductions?"), a document or a period is not about a term.
pub(super) enum Definition {
    /// The glossary's explanation.
    Known(String),
    /// The terms asked about (one, or two compared), none of which the
    /// glossary has.
    Unknown(Vec<String>),
}

/// What a definition question says around its term without changing it:
/// a polite lead before the verb that asks ("can you explain …", "please
/// define …") and hedges ("actually", "in simple words", "in plain
/// English"). Taken out before the question's shape is read.
static AROUND: std::sync::LazyLock<[regex::Regex; 2]> = std::sync::LazyLock::new(|| {
    let re = |p: &str| regex::Regex::new(p).expect("valid regex");
    [
        re(r"^(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?|please\s+)+(explain|define|describe|tell me)\b"),
        re(
            r",?\s*\bin\s+(?:simple|plain|easy|layman'?s?)\s+(?:words|terms|english|language)\b,?|\b(?:actually|exactly|simply|really|briefly)\s+",
        ),
    ]
});

/// The term a message asks to have explained, and what Prime says of it.
pub(super) fn definition(lower: &str) -> Option<Definition> {
    let [lead, hedge] = &*AROUND;
    let plain = hedge.replace_all(lower.trim(), "");
    let plain = lead.replace(plain.trim(), "$1");
    let lower = plain.trim();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    const OWN: [&str; 14] =
        ["my", "our", "i", "me", "we", "us", "you", "your", "this", "these", "those", "that's", "last", "month"];
    // a figure ("what's 20 times 45", "what is 15% of 80") is a sum, not a term; "401k" and "w2" are terms
    if words.iter().any(|w| OWN.contains(w) || w.chars().all(|c| c.is_ascii_digit())) {
        return None;
    }
    if let Some((one, other)) = compared(lower) {
        return Some(pair(&one, &other));
    }
    let known = GLOSSARY.iter().find(|(term, _)| {
        let t = *term;
        words.iter().any(|w| *w == t || w.strip_suffix('s') == Some(t)) || (t.contains(' ') && lower.contains(t))
    });
    if let Some((term, text)) = known {
        let asks = ["what is", "what's", "whats", "what are", "define", "explain", "what does", "meaning of"];
        // what else it says: the words of a definition question, and nothing more
        const ASKING: [&str; 12] = [
            "explain", "define", "mean", "means", "meaning", "method", "exactly", "term", "stand", "stands", "heard",
            "never",
        ];
        let term_words: Vec<&str> = term.split(' ').collect();
        let other = crate::route::text::content(lower)
            .into_iter()
            .filter(|w| !ASKING.contains(&w.as_str()))
            .filter(|w| !term_words.iter().any(|t| w == t || w.strip_suffix('s') == Some(t)))
            .count();
        let shaped = asks.iter().any(|a| lower.starts_with(a)) || term_asked(lower).is_some();
        return (other == 0 && shaped).then_some(Definition::Known(text.to_string()));
    }
    term_asked(lower).map(|term| Definition::Unknown(vec![term]))
}

/// The glossary's explanation of `term`: its own, or a plural's.
fn explained(term: &str) -> Option<&'static str> {
    let term = term.trim();
    GLOSSARY.iter().find(|(t, _)| term == *t || term.strip_suffix('s') == Some(t)).map(|(_, text)| *text)
}

/// What Prime says of two terms compared: what the glossary has of each,
/// and which of them it has no explanation of.
fn pair(one: &str, other: &str) -> Definition {
    match (explained(one), explained(other)) {
        (None, None) => Definition::Unknown(vec![one.to_string(), other.to_string()]),
        (a, b) => {
            let mut out = String::new();
            for (term, text) in [(one, a), (other, b)] {
                if !out.is_empty() {
                    out.push(' ');
                }
                match text {
                    Some(text) => out.push_str(text),
                    None => write!(out, "I don't have an explanation of \"{term}\" at hand.").unwrap_or_default(),
                }
            }
            Definition::Known(out)
        }
    }
}

/// The two terms of a question that compares them, whatever they are
/// ("what's the difference between APR and APY?", "Roth IRA vs
/// traditional IRA: what's the difference?", "how is a credit union
/// different from a bank?"). Two periods or two of the user's things
/// compared ("the difference between September and October", "between my
/// rent and my groceries") are a question about the user's money, not
/// about terms.
fn compared(lower: &str) -> Option<(String, String)> {
    const TERM: &str = r"(?:an?\s+|the\s+)?([a-z0-9][a-z0-9'\-]*(?:\s+[a-z][a-z'\-]*){0,2})";
    static SHAPES: std::sync::LazyLock<[regex::Regex; 3]> = std::sync::LazyLock::new(|| {
        let re = |p: String| regex::Regex::new(&p).expect("valid regex");
        [
            re(format!(
                r"^(?:(?:what(?:'s| is)|whats)\s+)?(?:the\s+)?difference\s+between\s+{TERM}\s+and\s+{TERM}\s*\??$"
            )),
            re(format!(
                r"^{TERM}\s+(?:vs\.?|versus|or)\s+{TERM}\s*[-—–:,?]*\s*(?:what(?:'s| is)|whats)\s+the\s+difference\s*\??$"
            )),
            re(format!(r"^how\s+(?:is|are|does|do)\s+{TERM}\s+differ(?:ent)?\s+from\s+{TERM}\s*\??$")),
        ]
    });
    const PERIODS: [&str; 24] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
    ];
    let c = SHAPES.iter().find_map(|re| re.captures(lower.trim()))?;
    let (one, other) = (c[1].to_string(), c[2].to_string());
    // a month or a year is a period ("apr" is also a term the glossary has)
    let period = |t: &str| {
        explained(t).is_none() && t.split(' ').any(|w| PERIODS.contains(&w) || w.chars().all(|c| c.is_ascii_digit()))
    };
    (!period(&one) && !period(&other)).then_some((one, other))
}

/// The term of a question shaped as one about a term, whatever the term:
/// `what is a/an X`, `what's X` (X one to three words, no article *the*),
/// `define X`, `what does X mean`, `X, what is that?`, `explain what X is`.
fn term_asked(lower: &str) -> Option<String> {
    static SHAPES: std::sync::LazyLock<[regex::Regex; 5]> = std::sync::LazyLock::new(|| {
        let re = |p: &str| regex::Regex::new(p).expect("valid regex");
        [
            re(
                r"^(?:what is|what's|whats|what are)\s+(?:an?\s+)?([a-z0-9][a-z0-9'\-]*(?:\s+[a-z][a-z'\-]*){0,2})\s*\??$",
            ),
            re(r"^(?:define|meaning of)\s+(?:an?\s+|the\s+)?([a-z0-9][a-z0-9'\-]*(?:\s+[a-z][a-z'\-]*){0,2})\s*[.?]?$"),
            re(
                r"^what does\s+(?:an?\s+|the\s+)?([a-z0-9][a-z0-9'\-]*(?:\s+[a-z][a-z'\-]*){0,2})\s+(?:mean|stand for)\s*\??$",
            ),
            re(r"^([a-z0-9][a-z0-9'\-]*(?:\s+[a-z][a-z'\-]*){0,2}),?\s+what(?:'s| is) (?:that|it|this)\b"),
            // the question inside a request: "explain what a sinking fund is"
            re(
                r"^(?:explain|describe|tell me)\s+what\s+(?:an?\s+|the\s+)?([a-z0-9][a-z0-9'\-]*(?:\s+[a-z][a-z'\-]*){0,2})\s+(?:is|are|means)\s*[.?]?$",
            ),
        ]
    });
    let term = SHAPES.iter().find_map(|re| re.captures(lower.trim()).map(|c| c[1].to_string()))?;
    // "what is the total", "what's up", "whats left": not a term
    const NOT: [&str; 14] = [
        "the",
        "up",
        "left",
        "new",
        "next",
        "wrong",
        "going",
        "happening",
        "due",
        "owed",
        "best",
        "it",
        "that",
        "this",
    ];
    let first = term.split(' ').next().unwrap_or_default();
    // a term is a thing: "still uncategorized", "tax deductable" ask what is so in the user's money
    let last = term.rsplit(' ').next().unwrap_or_default();
    let describes = ["ed", "able", "ible", "ized"].iter().any(|e| last.ends_with(e)) || first == "still";
    let named = !crate::route::text::content(&term).is_empty()
        || term.split(' ').any(|w| w.chars().any(|c| c.is_ascii_digit()) && w.chars().any(|c| c.is_ascii_alphabetic()));
    (!NOT.contains(&first) && !describes && named).then_some(term)
}

/// A request for advice on what to buy or invest in ("which tv should I
/// buy", "should I put money into real estate"): no one on the team gives it.
pub(super) fn asks_what_to_buy(lower: &str) -> bool {
    static ADVICE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"\b(?:should i (?:buy|purchase|invest)\b|(?:which|what) (?:[a-z]+ ){1,3}(?:should|do|can) i (?:buy|purchase|invest)\b|best [a-z]+(?: [a-z]+)? to (?:buy|purchase|invest|sign up|open|get)\b|(?:put|invest) (?:my |some )?money (?:in|into)\b|should i invest\b)",
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

/// A short question to Prime about itself ("what are your skills", "what
/// kind of things do you handle", "how's your day going"): it speaks to
/// *you* and says nothing of the user's own money.
pub(super) fn asks_about_prime(lower: &str) -> bool {
    // what follows a colon is material ("rewrite this more kindly: you did it wrong")
    let lower = lower.split(':').next().unwrap_or_default();
    let words = crate::route::text::words(lower);
    let to_you = words.iter().any(|w| w == "you" || w == "your" || w == "yourself");
    let mine = words.iter().any(|w| ["my", "our", "i", "me", "we", "us", "mine"].contains(&w.as_str()));
    // "can you clean up this note" asks for work, not about Prime
    let asks_for_work = ["can", "could", "would", "will", "please"].contains(&words.first().map_or("", String::as_str));
    to_you && !mine && !asks_for_work && crate::route::text::content(lower).len() <= 3
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

    /// A polite lead and a hedge are said around the question, not in it: each of these reached a
    /// specialist before (a sinking fund went to Goalie, an amortization schedule to Calendar).
    #[test]
    fn a_definition_asked_politely_or_with_a_hedge_is_one_still() {
        let unknown = |q: &str| match definition(q) {
            Some(Definition::Unknown(terms)) => terms.join(" | "),
            _ => format!("not an unknown term: {q}"),
        };
        assert_eq!(unknown("could you explain what a roth ira is?"), "roth ira");
        assert_eq!(unknown("can you please describe what an escrow account is"), "escrow account");
        assert_eq!(unknown("what does vesting actually mean?"), "vesting");
        assert_eq!(unknown("in simple words, what is a money market account?"), "money market account");
        for q in [
            "can you explain what a sinking fund is?",
            "what does amortization really mean",
            "what's compound interest, in simple words",
            "what's apr, in plain english",
            "please define snowball?",
        ] {
            assert!(matches!(definition(q), Some(Definition::Known(_))), "{q}");
        }
        for q in [
            "can you explain my spending this month",
            "could you tell me what my biggest expense is",
            "explain what happened to my budget",
            "can you explain this charge: netflix 15.49",
        ] {
            assert!(definition(q).is_none(), "{q}");
        }
    }

    /// Two terms compared are a term question too: each of these reached a specialist before
    /// (Byte, Crystal). Two periods or two of the user's own things compared are not.
    #[test]
    fn two_terms_compared_are_explained_side_by_side() {
        let Some(Definition::Known(both)) = definition("what's the difference between apr and a balance transfer?")
        else {
            panic!("two known terms")
        };
        assert!(both.starts_with("APR (annual") && both.contains("A balance transfer moves"), "{both}");
        let Some(Definition::Known(one)) = definition("how is a sinking fund different from an emergency fund?") else {
            panic!("two known terms")
        };
        assert!(one.contains("sinking fund is money") && one.contains("emergency fund is cash"), "{one}");
        let Some(Definition::Known(half)) = definition("snowball vs consolidation loan: what's the difference?") else {
            panic!("one known term")
        };
        assert!(half.contains("debt snowball") && half.contains("\"consolidation loan\" at hand"), "{half}");
        assert!(matches!(
            definition("roth ira or traditional ira - what's the difference?"),
            Some(Definition::Unknown(_))
        ));
        assert!(
            matches!(definition("difference between a stock and a bond"), Some(Definition::Unknown(t)) if t == ["stock", "bond"])
        );
        for q in [
            "what's the difference between september and october?",
            "what is the difference between my rent and my groceries",
            "difference between 2024 and 2025?",
            "how is march different from april?",
        ] {
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
