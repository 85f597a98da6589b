//! The spellings people, spreadsheets and PDF text give card numbers, SSNs,
//! SINs, phones and IBANs: every separator between the digit groups that
//! real text has (several spaces, tabs, no-break and thin spaces, Unicode
//! dashes, dots, slashes, none, a mix, a line break a PDF extractor left
//! inside the number), in the places such text puts them. Recall is
//! measured on valid numbers × separators × contexts and hand-written
//! cases; false positives on dates, amounts, order, invoice and tracking
//! numbers, times, versions and table rows written with the same
//! separators.

use super::corpus::{Rng, fill, iban_parts, luhn_check_digit, split};
use super::*;

/// Blanks between groups: space, tab, no-break, thin, narrow no-break,
/// figure and punctuation spaces, and a few of them in a row.
const BLANKS: &[&str] =
    &[" ", "\t", "\u{a0}", "\u{2009}", "\u{202f}", "\u{2007}", "\u{2008}", "\u{200a}", "  ", "   ", "\u{a0}\u{a0}"];
/// Marks between groups: ASCII and Unicode dashes, a dot; with blanks around.
const MARKS: &[&str] = &[
    "-",
    "\u{2010}",
    "\u{2011}",
    "\u{2012}",
    "\u{2013}",
    "\u{2014}",
    "\u{2212}",
    "\u{ff0d}",
    ".",
    " - ",
    " \u{2013} ",
];
/// A PDF's line break inside a number.
const BREAKS: &[&str] = &["\n", " \n", "\r\n", "-\n", "\n "];

/// How a number's groups are separated: all with one separator (of a kind
/// the number's spelling admits) or each gap its own.
fn separators(rng: &mut Rng, gaps: usize, several_blanks: bool, slash: bool) -> Vec<String> {
    let pick = |rng: &mut Rng| -> String {
        // several blanks or a tab part a table's cells, except in a card
        let blank = loop {
            let b = *rng.pick(BLANKS);
            if several_blanks || (b.chars().count() == 1 && b != "\t") {
                break b;
            }
        };
        match rng.below(10) {
            0..=3 => blank.into(),
            4..=7 => (*rng.pick(MARKS)).into(),
            8 if slash => "/".into(),
            _ => (*rng.pick(BREAKS)).into(),
        }
    };
    if rng.chance(25) {
        (0..gaps).map(|_| pick(rng)).collect()
    } else {
        let one = pick(rng);
        vec![one; gaps]
    }
}

/// `groups` joined by `seps`.
fn joined(groups: &[&str], seps: &[String]) -> String {
    let mut out = String::new();
    for (i, g) in groups.iter().enumerate() {
        if i > 0 {
            out.push_str(&seps[i - 1]);
        }
        out.push_str(g);
    }
    out
}

fn card(rng: &mut Rng) -> String {
    // (prefix, length, grouping)
    const BRANDS: &[(&str, usize, &[usize])] = &[
        ("4", 16, &[4, 4, 4]),
        ("4", 19, &[4, 4, 4, 4]),
        ("4", 13, &[4, 3, 3]),
        ("51", 16, &[4, 4, 4]),
        ("2221", 16, &[4, 4, 4]),
        ("34", 15, &[4, 6]),
        ("37", 15, &[4, 6]),
        ("6011", 16, &[4, 4, 4]),
        ("6011", 19, &[4, 4, 4, 4]),
        ("36", 14, &[4, 6]),
        ("62", 19, &[6, 13]),
        ("62", 19, &[4, 4, 4, 4]),
        ("3530", 16, &[4, 4, 4]),
        ("2201", 16, &[4, 4, 4]),
    ];
    let &(prefix, len, sizes) = rng.pick(BRANDS);
    let payload = format!("{prefix}{}", rng.digits(len - prefix.len() - 1));
    let number = format!("{payload}{}", luhn_check_digit(&payload));
    if rng.chance(8) {
        return number;
    }
    let groups = split(&number, sizes);
    let seps = separators(rng, groups.len() - 1, true, true);
    joined(&groups, &seps)
}

fn ssn(rng: &mut Rng) -> String {
    let area = loop {
        let a = rng.range(1, 899);
        if a != 666 {
            break a;
        }
    };
    let (a, g, s) = (format!("{area:03}"), format!("{:02}", rng.range(1, 99)), format!("{:04}", rng.range(1, 9999)));
    let seps = separators(rng, 2, false, false);
    joined(&[&a, &g, &s], &seps)
}

fn sin(rng: &mut Rng) -> String {
    let payload = format!("{}{}", rng.pick(&[1, 2, 3, 4, 5, 6, 7, 9]), rng.digits(7));
    let number = format!("{payload}{}", luhn_check_digit(&payload));
    let seps = separators(rng, 2, false, false);
    joined(&split(&number, &[3, 3]), &seps)
}

fn phone(rng: &mut Rng) -> String {
    let area = format!("{}{}", rng.range(2, 9), rng.digits(2));
    let exchange = format!("{}{}", rng.range(2, 9), rng.digits(2));
    let line = rng.digits(4);
    let seps = separators(rng, 3, false, true);
    match rng.below(4) {
        0 => joined(&[&area, &exchange, &line], &seps[..2]),
        1 => format!("({area}){}{exchange}{}{line}", seps[0], seps[1]),
        2 => format!("+1{}{}", seps[2].replace('/', " "), joined(&[&area, &exchange, &line], &seps[..2])),
        _ => {
            const INTL: &[(&str, usize, &[usize])] = &[
                ("44", 10, &[2, 4]),
                ("49", 11, &[3, 4]),
                ("33", 9, &[1, 2, 2, 2]),
                ("61", 9, &[1, 4]),
                ("34", 9, &[3, 3]),
                ("353", 9, &[2, 3]),
            ];
            let &(cc, len, sizes) = rng.pick(INTL);
            let national = format!("{}{}", rng.range(1, 9), rng.digits(len - 1));
            let groups = split(&national, sizes);
            let seps = separators(rng, groups.len(), false, false);
            format!("+{cc}{}{}", seps[0], joined(&groups, &seps[1..]))
        }
    }
}

fn iban(rng: &mut Rng) -> String {
    let (head, bban) = iban_parts(rng);
    let compact = format!("{head}{bban}");
    let groups = split(&compact, &[4; 8]);
    let seps: Vec<String> = if rng.chance(50) {
        vec![(*rng.pick(&[" ", "\u{a0}", "\u{2009}", "\u{202f}", "  ", "\t", "-"])).into(); groups.len() - 1]
    } else {
        (0..groups.len() - 1).map(|_| (*rng.pick(&[" ", " ", " ", "\u{a0}", "\u{202f}", "\n", " \n"])).into()).collect()
    };
    joined(&groups, &seps)
}

/// Where such numbers stand: prose, a CSV field, a PDF line laid out in
/// columns, JSON, a form's label, the start or end of a line.
const CONTEXTS: &[&str] = &[
    "Please charge {} today.",
    "My number is {}, thanks",
    "2025-10-01,Payment,{},USD",
    "\"{}\";\"DE\";\"2025\"",
    "Card number:   {}    Exp 12/27",
    "Kontonummer\u{a0}{}\u{a0}gültig",
    "{\"value\": \"{}\"}",
    "SSN/Card: {}\nNext line",
    "{}",
    "({})",
    "Numéro : {} .",
    "Ref.:\t{}\tEnd",
    "call me on {} or mail",
    "- {}\n- more",
];

/// Hand-written spellings, each with the raw value expected.
const WRITTEN: &[(PiiKind, &str, &str)] = &[
    (PiiKind::Card, "card 4111.1111.1111.1111 exp 09/27", "4111.1111.1111.1111"),
    (PiiKind::Card, "Visa: 4111 1111-1111 1111", "4111 1111-1111 1111"),
    (PiiKind::Card, "4111\u{2013}1111\u{2013}1111\u{2013}1111", "4111\u{2013}1111\u{2013}1111\u{2013}1111"),
    (PiiKind::Card, "Karte 4111\u{a0}1111\u{a0}1111\u{a0}1111 (Visa)", "4111\u{a0}1111\u{a0}1111\u{a0}1111"),
    (PiiKind::Card, "Amex 3782  822463  10005", "3782  822463  10005"),
    (PiiKind::Card, "AMEX 3782-822463-10005.", "3782-822463-10005"),
    (PiiKind::Card, "Card\t4111\t1111\t1111\t1111\tVisa", "4111\t1111\t1111\t1111"),
    (PiiKind::Card, "Card No. 4111 1111\n1111 1111 Expiry", "4111 1111\n1111 1111"),
    (PiiKind::Card, "6011 0009 9013 9424 124 (19 digits)", "6011 0009 9013 9424 124"),
    (PiiKind::Card, "4111/1111/1111/1111", "4111/1111/1111/1111"),
    (PiiKind::Card, "4111 \u{2014} 1111 \u{2014} 1111 \u{2014} 1111", "4111 \u{2014} 1111 \u{2014} 1111 \u{2014} 1111"),
    (PiiKind::Card, "Kartennr.: 5500\u{202f}0000\u{202f}0000\u{202f}0004", "5500\u{202f}0000\u{202f}0000\u{202f}0004"),
    (PiiKind::Ssn, "SSN 123.45.6789", "123.45.6789"),
    (PiiKind::Ssn, "SSN: 123\u{2013}45\u{2013}6789", "123\u{2013}45\u{2013}6789"),
    (PiiKind::Ssn, "ssn 123\u{a0}45\u{a0}6789.", "123\u{a0}45\u{a0}6789"),
    (PiiKind::Ssn, "Social Security No. 123-45-\n6789", "123-45-\n6789"),
    (PiiKind::Ssn, "123 - 45 - 6789", "123 - 45 - 6789"),
    (PiiKind::Ssn, "SSN 123-45 6789", "123-45 6789"),
    (PiiKind::Phone, "call (415)\u{a0}555\u{2013}2671", "(415)\u{a0}555\u{2013}2671"),
    (PiiKind::Phone, "Tel 415\u{2009}555\u{2009}2671", "415\u{2009}555\u{2009}2671"),
    (PiiKind::Phone, "+44\u{a0}20\u{a0}7946\u{a0}0958", "+44\u{a0}20\u{a0}7946\u{a0}0958"),
    (PiiKind::Phone, "+1\u{2011}415\u{2011}555\u{2011}2671", "+1\u{2011}415\u{2011}555\u{2011}2671"),
    (PiiKind::Phone, "office: 415/555-2671", "415/555-2671"),
    (
        PiiKind::Iban,
        "IBAN DE89\u{a0}3704\u{a0}0044\u{a0}0532\u{a0}0130\u{a0}00",
        "DE89\u{a0}3704\u{a0}0044\u{a0}0532\u{a0}0130\u{a0}00",
    ),
    (PiiKind::Iban, "IBAN: DE89 3704 0044\n0532 0130 00", "DE89 3704 0044\n0532 0130 00"),
    (PiiKind::Iban, "GB82-WEST-1234-5698-7654-32", "GB82-WEST-1234-5698-7654-32"),
    (PiiKind::Sin, "SIN 130\u{a0}692\u{a0}544", "130\u{a0}692\u{a0}544"),
    (PiiKind::Sin, "SIN: 130\u{2013}692\u{2013}544", "130\u{2013}692\u{2013}544"),
];

/// What must stay: the same separators in numbers that are not PII.
fn look_alike(rng: &mut Rng) -> String {
    let dash = *rng.pick(&["-", "\u{2013}", "\u{2014}", "\u{2212}", "/", ".", " "]);
    let blank = *rng.pick(&[" ", "\u{a0}", "\u{2009}", "\u{202f}", "  ", "\t"]);
    let (y, m, d) = (rng.range(1990, 2030), rng.range(1, 12), rng.range(1, 28));
    let (hh, mm) = (rng.below(24), rng.below(60));
    match rng.below(16) {
        0 => format!("{y}{dash}{m:02}{dash}{d:02}"),
        1 => format!("{d:02}{dash}{m:02}{dash}{y}"),
        2 => {
            let millions = rng.range(1, 999);
            format!("{millions}{blank}{}{blank}{},{:02}\u{a0}€", rng.digits(3), rng.digits(3), rng.below(100))
        }
        3 => format!("${},{},{}.{:02}", rng.range(1, 999), rng.digits(3), rng.digits(3), rng.below(100)),
        4 => format!("Order #{}-{}-{}", rng.digits(3), rng.digits(7), rng.digits(7)),
        5 => format!("INV{dash}{y}{dash}{}", rng.digits(6)),
        6 => format!("1Z{blank}{}{blank}{}{blank}{}", rng.digits(3), rng.digits(4), rng.digits(6)),
        7 => format!(
            "9400{blank}{}{blank}{}{blank}{}{blank}{}",
            rng.digits(4),
            rng.digits(4),
            rng.digits(4),
            rng.digits(6)
        ),
        8 => format!("{hh:02}:{mm:02}{dash}{:02}:{mm:02}", (hh + 1) % 24),
        9 => format!("v{}.{}.{}", rng.below(20), rng.below(20), rng.below(100)),
        10 => {
            let cells: Vec<String> = (0..4).map(|_| format!("{}.{:02}", rng.range(1, 9999), rng.below(100))).collect();
            format!("{d:02}.{m:02}.{y}   {}", cells.join("   "))
        }
        11 => {
            let cell = *rng.pick(&["  ", "   ", "\t", "\t\t"]);
            format!("Qty{cell}{}{cell}{}{cell}{}", rng.range(100, 999), rng.range(10, 99), rng.range(1000, 9999))
        }
        12 => format!("{}{blank}{}{blank}{}", rng.range(200, 999), rng.range(200, 999), rng.digits(2)),
        13 => format!("Page {}{dash}{} of {}", rng.range(1, 9), rng.range(10, 99), rng.range(100, 999)),
        14 => format!("XXXX{blank}XXXX{blank}XXXX{blank}{}", rng.digits(4)),
        _ => format!("{y}{dash}{}{dash}{}", rng.range(1, 12), rng.digits(5)),
    }
}

/// Hand-written look-alikes.
const NOT_PII: &[&str] = &[
    "2025\u{2013}10\u{2013}02 Uber 23.10",
    "1\u{202f}234\u{202f}567,89\u{a0}€",
    "Rechnung 2025/000123 vom 02.10.2025",
    "Tracking 9400 1118 9922 3197 4284 90",
    "10:30\u{2013}11:45",
    "1.234.567,89 EUR",
    "Version 12.4.1 build 2025",
    "ISBN 978\u{2013}3\u{2013}16\u{2013}148410\u{2013}0",
    "Page 1 of 12",
    "Amazon order 112-4567890-1234567",
    "Balance   250   300   4500",
    "Items   100   25   1999",
    "Card ending XXXX XXXX XXXX 1111",
    "From 2024 \u{2013} 2025, 120 \u{2014} 240 units",
];

#[test]
fn spellings_recall_and_false_positives() {
    type Generator = fn(&mut Rng) -> String;
    let generators: [(PiiKind, Generator); 5] = [
        (PiiKind::Card, card),
        (PiiKind::Ssn, ssn),
        (PiiKind::Sin, sin),
        (PiiKind::Phone, phone),
        (PiiKind::Iban, iban),
    ];
    const PER_KIND: usize = 600;
    let (r, mut rng) = (Redactor::new(), Rng(0x5e9a_2a70));
    let (mut valid, mut misses) = (0usize, Vec::new());
    let mut missed_by_kind = [0usize; PiiKind::ALL.len()];
    let mut check = |kind: PiiKind, sentence: &str, start: usize, raw: &str, missed: &mut [usize]| {
        valid += 1;
        let expected = Finding { kind, start, end: start + raw.len() };
        if !r.find(sentence).contains(&expected) {
            missed[kind.index()] += 1;
            misses.push(sentence.to_string());
        }
    };
    for i in 0..generators.len() * PER_KIND {
        let (kind, generate) = generators[i % generators.len()];
        let raw = generate(&mut rng);
        let context = *rng.pick(CONTEXTS);
        let (sentence, at) = fill(context, &raw);
        check(kind, &sentence, at, &raw, &mut missed_by_kind);
    }
    for &(kind, text, raw) in WRITTEN {
        let at = text.find(raw).unwrap_or(0);
        check(kind, text, at, raw, &mut missed_by_kind);
    }
    let (mut look_alikes, mut false_positives) = (0usize, Vec::new());
    let generated: Vec<String> = (0..3000).map(|_| look_alike(&mut rng)).collect();
    for value in generated.iter().map(String::as_str).chain(NOT_PII.iter().copied()) {
        let context = *rng.pick(CONTEXTS);
        let (sentence, _) = fill(context, value);
        look_alikes += 1;
        let found = r.find(&sentence);
        if !found.is_empty() {
            false_positives.push((sentence.clone(), found.iter().map(|f| f.kind).collect::<Vec<_>>()));
        }
    }
    let recall = 1.0 - misses.len() as f64 / valid as f64;
    let fp_rate = false_positives.len() as f64 / look_alikes as f64;
    println!(
        "spellings: recall {:.2}% ({}/{valid}), false positives {:.2}% ({}/{look_alikes})",
        recall * 100.0,
        valid - misses.len(),
        fp_rate * 100.0,
        false_positives.len()
    );
    let by_kind: Vec<String> = generators.iter().map(|(k, _)| format!("{k} {}", missed_by_kind[k.index()])).collect();
    println!("missed per kind (of {PER_KIND} each and the hand-written): {}", by_kind.join(", "));
    println!("missed: {:?}", &misses[..misses.len().min(20)]);
    println!("false positives: {:?}", &false_positives[..false_positives.len().min(20)]);
    for (k, _) in generators {
        let missed = missed_by_kind[k.index()] as f64 / PER_KIND as f64;
        assert!(missed <= 0.01, "{k}: recall {:.1}%", (1.0 - missed) * 100.0);
    }
    assert!(recall >= 0.99, "recall {recall}");
    assert!(fp_rate <= 0.01, "false positives {fp_rate}");
}
