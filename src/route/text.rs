//! How the router reads a request: words (lowercased, numbers and names
//! set aside, irregular verbs and plural or -ing forms reduced to one
//! form), the features a request is compared by (those words, pairs of
//! them, and their character n-grams, which is what carries a misspelled
//! word to the right one), and the clauses of a request that asks for two
//! things at once.

use std::hash::Hasher;
use std::sync::LazyLock;

use regex::Regex;
use rustc_hash::{FxHashMap, FxHasher};

/// Words that say nothing about who should do the work.
#[rustfmt::skip]
const STOP: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "but", "by", "can", "could", "did", "do", "does", "doing", "each", "every", "for", "from", "get",
    "give", "got", "had", "has", "have", "hey", "hi", "how", "i", "id", "if", "ill", "im", "in", "into", "is",
    "it", "its", "ive", "just", "least", "less", "let", "lets", "many", "may", "me", "might", "mine", "more",
    "most", "much", "must", "my", "of", "on", "onto", "or", "our", "please", "pls", "plz", "shall", "should",
    "show", "so", "some", "tell", "than", "thanks", "that", "the", "their", "them", "then", "there", "these",
    "this", "those", "thx", "to", "too", "under", "up", "very", "was", "we", "were", "what", "whats", "when",
    "where", "which", "who", "whom", "why", "will", "with", "would", "you", "your",
];

/// Irregular forms and their base word (`spent` → `spend`).
const IRREGULAR: &[(&str, &str)] = &[
    ("bought", "buy"),
    ("done", "do"),
    // a list's addresses, not messages: `check which emails are invalid` is not Email's
    ("emails", "addresses"),
    ("gave", "give"),
    ("got", "get"),
    ("made", "make"),
    ("owed", "owe"),
    ("paid", "pay"),
    ("ran", "run"),
    ("saved", "save"),
    ("sent", "send"),
    ("spent", "spend"),
    ("took", "take"),
    ("went", "go"),
    ("written", "write"),
    ("wrote", "write"),
];

/// Endings reduced so that `categories`, `categorized` and `categorize` meet.
const ENDINGS: &[(&str, &str)] = &[
    ("ations", ""),
    ("ation", ""),
    ("ings", ""),
    ("ing", ""),
    ("ies", "y"),
    ("ied", "y"),
    ("ed", ""),
    ("es", ""),
    ("s", ""),
    ("ly", ""),
];

/// Weights of the kinds of features (docs/ROUTING.md: the first three chosen
/// on the tune half, the others by leave-one-round-out over the seen rounds).
const WORD: f32 = 1.0;
const PAIR: f32 = 0.5;
const GRAM: f32 = 0.3;
/// The first content word (what is asked: `move`, `group`, `how much`… `top`)
/// and the last one, again on their own.
const FIRST: f32 = 1.0;
const LAST: f32 = 0.5;
/// The shape of the figures: a date, an amount with cents, a rate.
const SHAPE: f32 = 1.0;

/// A feature: its [`Kind`] in the top four bits, a hash of its text in the
/// rest. Two texts of ~60 bits collide about once in 10^13 pairs; the
/// router learns from tens of thousands of features, so a key stands for
/// its text without the text being kept (or allocated, or hashed twice:
/// a start-up learns from ~3,400 texts).
pub(crate) type Feature = u64;

/// The features of a text and their raw weights.
pub(crate) type Features = FxHashMap<Feature, f32>;

/// What a [`Feature`] is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// A content word, in base form.
    Word = 1,
    /// The first content word, again.
    First,
    /// The last content word, again.
    Last,
    /// Two neighbouring content words.
    Pair,
    /// Three or four characters of a word (its pieces: what a misspelling keeps).
    Gram,
    /// The shape of a figure in the text ([`shapes`]).
    Shape,
}

const KIND_SHIFT: u32 = 60;

fn tagged(kind: Kind, h: FxHasher) -> Feature {
    (u64::from(kind as u8) << KIND_SHIFT) | (h.finish() & ((1 << KIND_SHIFT) - 1))
}

/// The feature of `kind` whose text is `parts`, one after another.
pub(crate) fn feature(kind: Kind, parts: &[&str]) -> Feature {
    let mut h = FxHasher::default();
    for p in parts {
        h.write(p.as_bytes());
        // ends each part: `ab`+`c` is not `a`+`bc`
        h.write_u8(0xff);
    }
    tagged(kind, h)
}

/// The kind of a feature.
pub(crate) fn kind(f: Feature) -> u8 {
    (f >> KIND_SHIFT) as u8
}

/// A redacted value (`<EMAIL_1>`, `<CARD_2>`): what it stood for is not a request.
static PII_TOKEN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"<[A-Z][A-Z_]*_\d+>").expect("valid regex"));
static TOKEN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\$?\d[\d,]*(?:\.\d+)?%?|[a-z][a-z'\-]*").expect("valid regex"));
/// Where a request that asks two things is cut: the end of a sentence, a
/// line, or a joining word between two clauses.
static CLAUSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)[.?!;]+(?:\s+|$)|\n+|,?\s+(?:and then|and also|and|then|also|plus|as well as)\s+|,\s+(?:then|also)\s+",
    )
    .expect("valid regex")
});

fn is_stop(w: &str) -> bool {
    STOP.binary_search(&w).is_ok()
}

pub(crate) fn base(w: &str) -> String {
    if let Some((_, b)) = IRREGULAR.iter().find(|(form, _)| *form == w) {
        return (*b).to_string();
    }
    for (end, with) in ENDINGS {
        // `going` → `go`, `goes` → `go`; other endings keep a stem of three letters
        let short = matches!(*end, "ing" | "es");
        if let Some(stem) = w.strip_suffix(end)
            && (stem.chars().count() >= 3 || (short && stem.chars().count() == 2))
        {
            return format!("{stem}{with}");
        }
    }
    w.to_string()
}

/// The words of a text, lowercased; numbers are left out (amounts say
/// little about who should do the work).
pub(crate) fn words(text: &str) -> Vec<String> {
    let lower = PII_TOKEN.replace_all(text, " ").to_lowercase().replace('’', "'");
    let mut out = Vec::new();
    for m in TOKEN.find_iter(&lower) {
        let w = m.as_str();
        if w.starts_with(|c: char| c.is_ascii_digit() || c == '$') {
            continue;
        }
        let w = w.strip_suffix("'s").unwrap_or(w);
        out.extend(w.split('-').map(|p| p.trim_matches('\'').replace('\'', "")).filter(|p| !p.is_empty()));
    }
    out
}

/// The words that carry meaning: [`words`] without the stop words.
pub(crate) fn content(text: &str) -> Vec<String> {
    words(text).into_iter().filter(|w| !is_stop(w)).collect()
}

/// An example without the names in it (a capitalized word inside a
/// sentence: a merchant, a person): `that Starbucks was a business lunch`
/// teaches that a purchase was something, not that Starbucks is Tag's.
pub(crate) fn without_names(example: &str) -> String {
    let mut out = String::with_capacity(example.len());
    let mut start = true;
    for token in example.split_inclusive(char::is_whitespace) {
        let word = token.trim().trim_start_matches(['"', '\'', '(']);
        let name = !start
            && word.starts_with(|c: char| c.is_uppercase())
            && !word.starts_with("I'")
            && word != "I"
            && !word.chars().all(|c| !c.is_lowercase());
        out.push_str(if name { " " } else { token });
        if !token.trim().is_empty() {
            start = token.trim_end().ends_with(['.', '?', '!', ':']);
        }
    }
    out
}

/// The features of a text and their raw weights: its content words (in
/// base form), the first and the last of them again, pairs of neighbouring
/// ones, the 3- and 4-character pieces of each word, and the shapes of its
/// figures.
pub(crate) fn features(text: &str) -> Features {
    let mut f = features_of(&content(text));
    shapes(text, &mut f);
    f
}

/// What the figures of a text look like: a date, an amount with cents, a
/// percentage (a pasted receipt, a debt's rate), whatever their values.
static SHAPES: LazyLock<[(Regex, &str); 6]> = LazyLock::new(|| {
    [
        (Regex::new(r"\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b|\b\d{4}-\d{2}-\d{2}\b").expect("valid regex"), "date"),
        (Regex::new(r"\$\s?\d[\d,]*(?:\.\d{2})?|\b\d[\d,]*\.\d{2}\b").expect("valid regex"), "money"),
        (Regex::new(r"\d(?:\.\d+)?\s?(?:%|percent\b)").expect("valid regex"), "rate"),
        // an amount each period: "300 a month", "175 every two weeks", "500 monthly"
        (
            Regex::new(r"(?i)\d[\d,.]*k?\s*(?:(?:a|an|per|each|every)\s+(?:[a-z]+\s+)?(?:day|week|month|year|paycheck|payday)s?\b|(?:daily|weekly|biweekly|monthly|yearly|annually)\b|/\s?(?:mo|month|wk|week|yr)\b)")
                .expect("valid regex"),
            "per",
        ),
        // something put somewhere else: "move netflix into entertainment", "mark it as car expenses",
        // "from groceries to dining", "should be recreation not clothing", "was health, not personal care"
        (
            Regex::new(r"(?i)\b(?:into|under|as)\s+(?:an?\s+|the\s+)?[a-z]+(?:\s+[a-z]+)?\s*[.!?]?$|\bfrom\s+[a-z]+(?:\s+[a-z]+)?\s+to\s+[a-z]+|\bshould be\s+[a-z]+(?:\s+[a-z]+)?,?\s+not\s+[a-z]+|[a-z],\s+not\s+(?:a\s+|an\s+|the\s+)?[a-z]+(?:\s+[a-z]+)?\s*[.!?]?$")
                .expect("valid regex"),
            "move",
        ),
        // a round sum: "10k", "12,000", "6000"
        (Regex::new(r"(?i)\b\d+(?:\.\d+)?k\b|\b\d{1,3}(?:,\d{3})+\b|\b[1-9]\d{3,5}\b").expect("valid regex"), "sum"),
    ]
});

/// Adds to `f` the shapes of the figures in `text` (numbers are not words:
/// `10/29/2025 6.20` says "a purchase", not which).
pub(crate) fn shapes(text: &str, f: &mut Features) {
    for (re, name) in SHAPES.iter() {
        // a year ("in 2025", "10/30/2025") is not a sum
        let year = |m: &regex::Match<'_>| {
            let t = m.as_str();
            text[..m.start()].ends_with(['/', '-']) || t.len() == 4 && (t.starts_with("19") || t.starts_with("20"))
        };
        if re.find_iter(text).any(|m| *name != "sum" || !year(&m)) {
            *f.entry(feature(Kind::Shape, &[name])).or_default() += SHAPE;
        }
    }
}

/// The features of a text's content words (see [`features`]).
pub(crate) fn features_of(words: &[String]) -> Features {
    let bases: Vec<String> = words.iter().map(|w| base(w)).collect();
    let mut f = Features::default();
    let mut add = |k: Feature, w: f32| *f.entry(k).or_default() += w;
    for b in &bases {
        add(feature(Kind::Word, &[b]), WORD);
    }
    if let (Some(first), Some(last)) = (bases.first(), bases.last()) {
        add(feature(Kind::First, &[first]), FIRST);
        add(feature(Kind::Last, &[last]), LAST);
    }
    for pair in bases.windows(2) {
        add(feature(Kind::Pair, &[&pair[0], &pair[1]]), PAIR);
    }
    let mut padded: Vec<char> = Vec::new();
    for w in words {
        padded.clear();
        padded.push('<');
        padded.extend(w.chars());
        padded.push('>');
        for n in 3..=4 {
            for g in padded.windows(n) {
                let mut h = FxHasher::default();
                for c in g {
                    h.write_u32(u32::from(*c));
                }
                add(tagged(Kind::Gram, h), GRAM);
            }
        }
    }
    f
}

/// The clauses of a request, in order: cut at sentence ends, lines and
/// joining words, with a piece of fewer than two content words (`and
/// lyft`, `please`) kept with the clause before it.
pub(crate) fn clauses(text: &str) -> Vec<String> {
    clause_pieces(text).into_iter().map(|pieces| pieces.join(" ")).collect()
}

/// What a pasted table's rows are cut by in `text` (a bank's CSV export, a
/// sheet's lines): two lines in a row with the same separator, a comma, a
/// tab or a semicolon, as many times and at least twice. None when `text`
/// holds no table.
pub(crate) fn table(text: &str) -> Option<char> {
    [',', '\t', ';'].into_iter().find(|sep| {
        let counts: Vec<usize> = text.lines().map(|l| l.matches(*sep).count()).collect();
        counts.windows(2).any(|w| w[0] >= 2 && w[0] == w[1])
    })
}

/// Whether `clause` is a row of a table cut by `sep` ([`table`]): the
/// separator at least twice, never followed by a blank as a sentence's
/// commas are (`Break down food, rent, and fun` is no row).
pub(crate) fn row(clause: &str, sep: char) -> bool {
    clause.matches(sep).count() >= 2 && (sep != ',' || !clause.contains(", "))
}

/// Whether `line` is a pasted purchase, a statement's or a card's line
/// (`09/03 SHELL OIL 57.80`, `2024-05-02 Trader Joe's 87.13`): an amount,
/// and no word that starts in lower case, so nothing in it asks anyone.
pub(crate) fn purchase_line(line: &str) -> bool {
    let money = SHAPES.iter().find(|(_, name)| *name == "money").map(|(re, _)| re);
    money.is_some_and(|re| re.is_match(line))
        && !line.split_whitespace().any(|w| w.chars().find(|c| c.is_alphabetic()).is_some_and(char::is_lowercase))
}

/// Whether `text` holds a pasted list of purchases: two lines or more
/// that are each a [`purchase_line`], as [`table`] finds a pasted table.
pub(crate) fn purchase_list(text: &str) -> bool {
    text.lines().filter(|l| purchase_line(l)).count() >= 2
}

/// The clauses of a request, each as the pieces it was joined from (see
/// [`clauses`]): `what's my largest expense and is it deductible` is one
/// clause of two pieces, the second of which may still ask someone else.
pub(crate) fn clause_pieces(text: &str) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for piece in CLAUSE.split(text).map(str::trim).filter(|p| !p.is_empty()) {
        match out.last_mut() {
            Some(last) if content(piece).len() < 2 => last.push(piece.to_string()),
            _ => out.push(vec![piece.to_string()]),
        }
    }
    // a short first piece goes with the clause after it
    if out.len() > 1 && content(&out[0].join(" ")).len() < 2 {
        let mut first = out.remove(0);
        first.append(&mut out[0]);
        out[0] = first;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stop_words_are_sorted_for_the_binary_search() {
        assert!(STOP.windows(2).all(|w| w[0] < w[1]), "{STOP:?}");
    }

    #[test]
    fn words_meet_in_their_base_form() {
        assert_eq!(content("How much have I spent on categories?"), ["spent", "categories"]);
        assert_eq!(base("spent"), "spend");
        assert_eq!(base("categories"), "category");
        assert_eq!(base("categorized"), "categoriz");
        assert_eq!(base("categorize"), "categorize");
        assert_eq!((base("going"), base("goes"), base("is")), ("go".into(), "go".into(), "is".into()));
        assert_eq!(words("my write-off at 22% for $40"), ["my", "write", "off", "at", "for"]);
        assert_eq!(words("Maya’s receipts"), ["maya", "receipts"]);
        assert_eq!(words("send it to <EMAIL_1> and <CARD_12>"), ["send", "it", "to", "and"]);
    }

    #[test]
    fn figures_and_moves_have_shapes_whatever_their_values() {
        let shaped = |t: &str| {
            let mut f = Features::default();
            shapes(t, &mut f);
            let names = ["date", "money", "move", "per", "rate", "sum"];
            let k: Vec<String> = names
                .iter()
                .filter(|n| f.contains_key(&feature(Kind::Shape, &[n])))
                .map(|n| format!("s:{n}"))
                .collect();
            assert_eq!(k.len(), f.len(), "{t}: a shape not named here");
            k
        };
        assert_eq!(shaped("at 175 every two weeks, when will I reach 10k"), ["s:per", "s:sum"]);
        assert_eq!(shaped("at 500 monthly, when do I hit 12,000"), ["s:per", "s:sum"]);
        assert_eq!(shaped("put away 300 a month"), ["s:per"]);
        assert_eq!(shaped("move netflix into entertainment"), ["s:move"]);
        assert_eq!(shaped("change Whole Foods from groceries to dining"), ["s:move"]);
        assert_eq!(shaped("the $80 at REI should be recreation not clothing"), ["s:money", "s:move"]);
        // a contrast at the end: what it is, not what it was filed as
        assert_eq!(shaped("the pharmacy was health, not personal care"), ["s:move"]);
        assert_eq!(shaped("spotify goes under subscriptions, not entertainment."), ["s:move"]);
        assert!(shaped("I want totals not details").is_empty(), "without its comma it is no contrast");
        assert_eq!(shaped("CVS Pharmacy 10/30/2025 18.42"), ["s:date", "s:money"]);
        // a year, a day of the month or a small count is not a sum
        assert!(shaped("what did I spend in 2025 on the 20th, 3 times").is_empty());
    }

    #[test]
    fn names_in_an_example_are_not_learned() {
        assert_eq!(without_names("that Starbucks was a business lunch").trim(), "that  was a business lunch");
        assert_eq!(without_names("Email Priya. Thanks"), "Email  Thanks");
        assert_eq!(without_names("I owe 4000 on my Visa at 22%"), "I owe 4000 on my  at 22%");
        assert_eq!(without_names("convert this CSV to JSON"), "convert this CSV to JSON");
    }

    #[test]
    fn a_misspelled_word_shares_most_of_its_pieces_with_the_right_one() {
        let (right, wrong) = (features("categorize"), features("catagorize"));
        let shared = wrong.keys().filter(|k| right.contains_key(*k)).count();
        assert!(shared * 2 > wrong.len(), "{shared} of {}", wrong.len());
    }

    #[test]
    fn figures_count_by_their_shape_and_the_first_word_again() {
        let f = features("add this: Chipotle 10/25/2025 12.80");
        let shape = |n: &str| feature(Kind::Shape, &[n]);
        assert!(f.contains_key(&shape("date")) && f.contains_key(&shape("money")) && !f.contains_key(&shape("rate")));
        assert!(features("2500 at 19.99%").contains_key(&shape("rate")));
        let f = features("move netflix into entertainment");
        assert!(
            f.contains_key(&feature(Kind::First, &["move"]))
                && f.contains_key(&feature(Kind::Last, &["entertainment"]))
        );
        // a feature's parts are kept apart, and its kind is read back off it
        assert_ne!(feature(Kind::Pair, &["ab", "c"]), feature(Kind::Pair, &["a", "bc"]));
        assert_ne!(feature(Kind::Word, &["move"]), feature(Kind::First, &["move"]));
        assert_eq!(kind(feature(Kind::Last, &["entertainment"])), Kind::Last as u8);
    }

    #[test]
    fn a_short_piece_stays_with_its_clause_and_is_kept_apart() {
        assert_eq!(
            clause_pieces("what's my largest expense and is it deductible"),
            [vec!["what's my largest expense".to_string(), "is it deductible".to_string()]]
        );
        assert_eq!(
            clauses("what's my largest expense and is it deductible"),
            ["what's my largest expense is it deductible"]
        );
    }

    #[test]
    fn two_requests_in_one_message_are_two_clauses() {
        assert_eq!(
            clauses("Analyze my spending and check how my house savings goal is going"),
            ["Analyze my spending", "check how my house savings goal is going"]
        );
        assert_eq!(clauses("how much on uber and lyft?"), ["how much on uber lyft"]);
        assert_eq!(clauses("Hi! What did I spend at a@b.com on 18.20?"), ["Hi What did I spend at a@b.com on 18.20"]);
        assert_eq!(
            clauses("Tell me my biggest expense this month. Also what can I write off?"),
            ["Tell me my biggest expense this month", "Also what can I write off"]
        );
    }
}
