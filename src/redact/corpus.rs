//! Measured detection quality on a deterministic corpus, and properties over
//! arbitrary text.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

use super::checksums::{card_issuer_ok, iban_length, luhn_ok};
use super::*;

/// SplitMix64: deterministic, dependency-free.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub(super) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    pub(super) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    pub(super) fn digits(&mut self, n: usize) -> String {
        (0..n).map(|_| char::from(b'0' + self.below(10) as u8)).collect()
    }

    pub(super) fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

pub(super) fn luhn_check_digit(payload: &str) -> char {
    let sum: u32 = payload
        .bytes()
        .rev()
        .enumerate()
        .map(|(i, b)| {
            let d = u32::from(b - b'0');
            if i % 2 == 0 { if d > 4 { d * 2 - 9 } else { d * 2 } } else { d }
        })
        .sum();
    char::from(b'0' + ((10 - sum % 10) % 10) as u8)
}

/// Splits `s` at the given group sizes (the last takes the rest).
pub(super) fn split<'a>(s: &'a str, sizes: &[usize]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut rest = s;
    for &n in sizes {
        if rest.len() <= n {
            break;
        }
        let (head, tail) = rest.split_at(n);
        out.push(head);
        rest = tail;
    }
    out.push(rest);
    out
}

/// Splits `s` into groups of the given sizes (the last takes the rest).
fn grouped(s: &str, sizes: &[usize], sep: &str) -> String {
    split(s, sizes).join(sep)
}

fn email(rng: &mut Rng) -> (String, String) {
    const NAMES: &[&str] = &["jo", "anna", "m.smith", "li_wei", "o'neil", "ops", "x", "Zoë", "first.last"];
    const DOMAINS: &[&str] =
        &["example.com", "mail.co.uk", "corp-mail.de", "ü-mail.fr", "a.io", "sub.dept.example.org"];
    let mut local = rng.pick(NAMES).replace('\'', "");
    if rng.chance(40) {
        let n = rng.range(1, 4) as usize;
        local.push_str(&rng.digits(n));
    }
    if rng.chance(20) {
        local.push_str("+tag");
    }
    let raw = format!("{local}@{}", rng.pick(DOMAINS));
    (raw.clone(), raw)
}

fn phone(rng: &mut Rng) -> (String, String) {
    let area = format!("{}{}", rng.range(2, 9), rng.digits(2));
    let exchange = format!("{}{}", rng.range(2, 9), rng.digits(2));
    let line = rng.digits(4);
    // (country code, national digits, grouping)
    const INTL: &[(&str, usize, &[usize])] = &[
        ("44", 10, &[2, 4]),
        ("49", 11, &[3, 4]),
        ("33", 9, &[1, 2, 2, 2]),
        ("61", 9, &[1, 4]),
        ("81", 10, &[2, 4]),
        ("91", 10, &[5]),
        ("34", 9, &[3, 3]),
        ("39", 10, &[3, 3]),
        ("31", 9, &[1, 4]),
        ("55", 11, &[2, 5]),
        ("86", 11, &[3, 4]),
        ("353", 9, &[2, 3]),
    ];
    let raw = match rng.below(11) {
        0 => format!("({area}) {exchange}-{line}"),
        1 => format!("{area}-{exchange}-{line}"),
        2 => format!("{area}.{exchange}.{line}"),
        3 => format!("{area} {exchange} {line}"),
        4 => format!("+1 {area} {exchange} {line}"),
        5 => format!("+1{area}{exchange}{line}"),
        6 => format!("1-{area}-{exchange}-{line}"),
        7 => format!("+1 ({area}) {exchange}-{line}"),
        8 => {
            return (format!("{area}{exchange}{line}"), format!("phone: {area}{exchange}{line}"));
        }
        _ => {
            let &(cc, len, groups) = rng.pick(INTL);
            let national = format!("{}{}", rng.range(1, 9), rng.digits(len - 1));
            let sep = *rng.pick(&["", " ", " ", "-"]);
            let national = if sep.is_empty() { national } else { grouped(&national, groups, sep) };
            format!("+{cc}{}{national}", if sep.is_empty() { "" } else { " " })
        }
    };
    (raw.clone(), raw)
}

fn card(rng: &mut Rng) -> (String, String) {
    // (prefix, length)
    const BRANDS: &[(&str, usize)] = &[
        ("4", 16),
        ("4", 13),
        ("4", 19),
        ("51", 16),
        ("55", 16),
        ("2221", 16),
        ("2720", 16),
        ("34", 15),
        ("37", 15),
        ("6011", 16),
        ("65", 16),
        ("3530", 16),
        ("36", 14),
        ("62", 19),
        ("6759", 16),
        ("2201", 16),
    ];
    let &(prefix, len) = rng.pick(BRANDS);
    let payload = format!("{prefix}{}", rng.digits(len - prefix.len() - 1));
    let number = format!("{payload}{}", luhn_check_digit(&payload));
    let sep = *rng.pick(&["", " ", "-"]);
    let raw = match (sep, len) {
        ("", _) => number,
        (_, 15 | 14) => grouped(&number, &[4, 6], sep),
        (_, 13) => grouped(&number, &[4, 3, 3], sep),
        _ => grouped(&number, &[4, 4, 4, 4], sep),
    };
    (raw.clone(), raw)
}

const IBAN_COUNTRIES: &[&str] =
    &["DE", "GB", "FR", "ES", "IT", "NL", "BE", "AT", "CH", "PL", "SE", "NO", "IE", "PT", "DK", "FI"];

pub(super) fn iban_parts(rng: &mut Rng) -> (String, String) {
    let country = *rng.pick(IBAN_COUNTRIES);
    let len = iban_length(country).unwrap_or(22);
    let mut bban = String::new();
    if matches!(country, "GB" | "NL" | "IE") {
        bban.extend((0..4).map(|_| char::from(b'A' + rng.below(26) as u8)));
    }
    bban.push_str(&rng.digits(len - 4 - bban.len()));
    let rearranged = format!("{bban}{country}00");
    let rem = rearranged.bytes().fold(0u32, |rem, b| {
        let v = u32::from(if b.is_ascii_digit() { b - b'0' } else { b - b'A' + 10 });
        (if v >= 10 { rem * 100 } else { rem * 10 } + v) % 97
    });
    (format!("{country}{:02}", 98 - rem), bban)
}

fn space_in_fours(s: &str) -> String {
    grouped(s, &[4; 8], " ")
}

fn iban(rng: &mut Rng) -> (String, String) {
    let (head, bban) = iban_parts(rng);
    let compact = format!("{head}{bban}");
    let raw = if rng.chance(50) { space_in_fours(&compact) } else { compact };
    (raw.clone(), raw)
}

fn ssn(rng: &mut Rng) -> (String, String) {
    let area = loop {
        let a = rng.range(1, 899);
        if a != 666 {
            break a;
        }
    };
    let (group, serial) = (rng.range(1, 99), rng.range(1, 9999));
    match rng.below(3) {
        0 => {
            let raw = format!("{area:03}{group:02}{serial:04}");
            (raw.clone(), format!("SSN: {raw}"))
        }
        n => {
            let raw = format!("{area:03}{sep}{group:02}{sep}{serial:04}", sep = if n == 1 { '-' } else { ' ' });
            (raw.clone(), raw)
        }
    }
}

fn ip(rng: &mut Rng) -> (String, String) {
    let raw = match rng.below(4) {
        0 | 1 => (0..4).map(|_| rng.below(256).to_string()).collect::<Vec<_>>().join("."),
        2 => {
            let groups: Vec<String> = (0..8).map(|_| format!("{:x}", rng.below(0x10000))).collect();
            let (from, to) = (rng.range(1, 4) as usize, rng.range(5, 7) as usize);
            if rng.chance(50) {
                format!("{}::{}", groups[..from].join(":"), groups[to..].join(":"))
            } else {
                groups.join(":")
            }
        }
        _ => format!("2001:db8:{:x}::{:x}", rng.below(0x10000), rng.range(1, 0xffff)),
    };
    (raw.clone(), raw)
}

/// A Canadian SIN: first digit 1–7 or 9, Luhn check digit; 3-3-3 or labelled.
fn sin(rng: &mut Rng) -> (String, String) {
    let payload = format!("{}{}", rng.pick(&[1, 2, 3, 4, 5, 6, 7, 9]), rng.digits(7));
    let number = format!("{payload}{}", luhn_check_digit(&payload));
    match rng.below(3) {
        0 => (number.clone(), format!("SIN: {number}")),
        n => {
            let raw = grouped(&number, &[3, 3], if n == 1 { " " } else { "-" });
            (raw.clone(), raw)
        }
    }
}

fn alnum(rng: &mut Rng, n: usize) -> String {
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    (0..n).map(|_| char::from(*rng.pick(CHARS))).collect()
}

/// API keys, access tokens and private keys in their issuers' shapes.
fn secret(rng: &mut Rng) -> (String, String) {
    let raw = match rng.below(5) {
        0 => format!("sk-{}{}", rng.pick(&["", "proj-"]), alnum(rng, 40)),
        1 => format!("AKIA{}", alnum(rng, 16).to_uppercase()),
        2 => format!("ghp_{}", alnum(rng, 36)),
        3 => format!("eyJ{}.eyJ{}.{}", alnum(rng, 20), alnum(rng, 30), alnum(rng, 43)),
        _ => format!(
            "-----BEGIN {}PRIVATE KEY-----\n{}\n{}\n-----END {}PRIVATE KEY-----",
            "RSA ",
            alnum(rng, 64),
            alnum(rng, 40),
            "RSA "
        ),
    };
    (raw.clone(), raw)
}

const MONTH_NAMES: &[&str] = &[
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// A date written as people write one: ISO, US, European, with the month's
/// name in full or cut short.
fn written_date(rng: &mut Rng, (y, m, d): (u64, u64, u64)) -> String {
    let name = MONTH_NAMES[(m - 1) as usize];
    let short = &name[..3];
    match rng.below(8) {
        0 => format!("{y}-{m:02}-{d:02}"),
        1 => format!("{m:02}/{d:02}/{y}"),
        2 => format!("{d:02}/{m:02}/{y}"),
        3 => format!("{d:02}.{m:02}.{y}"),
        4 => format!("{name} {d}, {y}"),
        5 => format!("{d} {name} {y}"),
        6 => format!("{short} {d} {y}"),
        _ => format!("{m}/{d}/{y}"),
    }
}

/// A date of birth after one of its labels.
fn dob(rng: &mut Rng) -> (String, String) {
    const LABELS: &[&str] = &[
        "DOB: ",
        "dob ",
        "D.O.B. ",
        "Date of birth: ",
        "date of birth ",
        "born on ",
        "Born ",
        "I was born ",
        "birthday: ",
        "Birth date - ",
        "DOB is ",
    ];
    let date = (rng.range(1920, 2015), rng.range(1, 12), rng.range(1, 28));
    let raw = written_date(rng, date);
    (raw.clone(), format!("{}{raw}", rng.pick(LABELS)))
}

/// Dates that are not birth dates: statement lines, due dates, bookings.
fn dob_look_alike(rng: &mut Rng) -> String {
    let date = (rng.range(1990, 2030), rng.range(1, 12), rng.range(1, 28));
    let date = written_date(rng, date);
    let cents = format!("{}.{:02}", rng.range(1, 999), rng.below(100));
    match rng.below(8) {
        0 => format!("{date} {} {cents}", rng.pick(&["Starbucks", "AMAZON MKTP", "Uber *Trip", "Shell"])),
        1 => format!("due by {date}"),
        2 => format!("Statement date: {date}"),
        3 => format!("paid on {date}, thanks"),
        4 => format!("Posted {date} Transfer to savings"),
        5 => format!("DOB unknown; last visit {date}"),
        6 => format!("birth certificate ordered {date}"),
        _ => format!("valid until {date}"),
    }
}

/// A street address: number, name, suffix in its many spellings, perhaps a
/// direction, a unit, a city with state and ZIP or province and postal code.
fn address(rng: &mut Rng) -> (String, String) {
    const NAMES: &[&str] = &[
        "Main",
        "Oak",
        "Maple",
        "Elm",
        "Cedar Hill",
        "Pennsylvania",
        "5th",
        "42nd",
        "Martin Luther King Jr.",
        "O'Connell",
        "St. Claire",
        "N Broad",
        "W. Lake",
        "Evergreen",
        "Old Mill",
        "Sunset",
        "Baker",
    ];
    const SUFFIXES: &[&str] = &[
        "Street",
        "St",
        "St.",
        "Avenue",
        "Ave",
        "Ave.",
        "Road",
        "Rd",
        "Boulevard",
        "Blvd",
        "Lane",
        "Ln",
        "Drive",
        "Dr",
        "Court",
        "Ct",
        "Way",
        "Place",
        "Pl",
        "Terrace",
        "Circle",
        "Parkway",
        "Highway",
        "street",
        "ST",
        "AVE",
    ];
    const UNITS: &[&str] = &["Apt 4B", "Apt. 12", "Suite 200", "Unit 5", "#12", "Ste 310"];
    const CITIES: &[(&str, &str)] = &[
        ("Springfield", "IL"),
        ("New York", "NY"),
        ("San Francisco", "CA"),
        ("Austin", "TX"),
        ("Salt Lake City", "UT"),
        ("St. Louis", "MO"),
    ];
    const CANADA: &[(&str, &str)] = &[("Toronto", "ON"), ("Ottawa", "ON"), ("Vancouver", "BC"), ("Montréal", "QC")];
    let letters = |rng: &mut Rng| char::from(b'A' + rng.below(26) as u8);
    let digits = rng.range(1, 5) as usize;
    let mut raw = format!("{}{}", rng.range(1, 9), rng.digits(digits - 1));
    if rng.chance(5) {
        raw.push(letters(rng));
    }
    if rng.chance(10) {
        // Everything in lower case, as typed in a hurry.
        let name = *rng.pick(&["main", "oak", "elm", "park"]);
        raw = format!("{raw} {name} {}", rng.pick(&["st", "ave", "rd", "dr", "blvd"]));
        return (raw.clone(), raw);
    }
    raw = format!("{raw} {} {}", rng.pick(NAMES), rng.pick(SUFFIXES));
    if rng.chance(10) {
        raw = format!("{raw} {}", rng.pick(&["NW", "SE", "N", "E"]));
    }
    if rng.chance(30) {
        raw = format!("{raw}{}{}", rng.pick(&[" ", ", "]), rng.pick(UNITS));
    }
    if rng.chance(30) {
        let &(city, state) = rng.pick(CITIES);
        let zip = if rng.chance(30) { format!("{}-{}", rng.digits(5), rng.digits(4)) } else { rng.digits(5) };
        raw = format!("{raw}, {city}, {state} {zip}");
    } else if rng.chance(15) {
        let &(city, province) = rng.pick(CANADA);
        let (l, d) = (letters, |rng: &mut Rng| char::from(b'0' + rng.below(10) as u8));
        let code = format!("{}{}{} {}{}{}", l(rng), d(rng), l(rng), d(rng), l(rng), d(rng));
        raw = format!("{raw}, {city}, {province} {code}");
    } else if raw.ends_with('.') {
        // A lone abbreviation's `.` reads as the end of the sentence.
        raw.pop();
    }
    (raw.clone(), raw)
}

/// A number before words, a street's name without a house number, routes.
fn address_look_alike(rng: &mut Rng) -> String {
    let n = rng.range(2, 99);
    let street = *rng.pick(&["Main Street", "Oak Avenue", "Park Road", "Sunset Blvd", "Elm St"]);
    match rng.below(14) {
        0 => format!("{n} St. Patrick's Day parties"),
        1 => format!("{n} Main courses and {} desserts", rng.range(2, 9)),
        2 => format!("Route {n} and Highway {} traffic", rng.range(1, 9)),
        3 => format!("Order {} shipped to the {street} store", rng.digits(5)),
        4 => format!("${n} at {street} Cafe"),
        5 => format!("Chapter {n} Drive Train"),
        6 => format!("walked {n} blocks down the road"),
        7 => format!("found {n} bugs along the way"),
        8 => format!("Exit {n} {street}"),
        9 => format!("On {} {n} {street} was closed", rng.pick(MONTH_NAMES)),
        10 => format!("drove {n} miles on the highway"),
        11 => format!("Paid ${n},{} {street} Rent", rng.digits(3)),
        12 => format!("in {} {street} reopened", rng.range(1950, 2025)),
        _ => format!("Top {n} Places To Visit"),
    }
}

/// An ABA routing number: a Federal Reserve prefix, six digits, the 3-7-1
/// check digit.
fn aba(rng: &mut Rng) -> String {
    let prefix = *rng.pick(&["01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12", "21", "26", "31"]);
    let body = format!("{prefix}{}", rng.digits(6));
    let sum: u32 = body.bytes().zip([3, 7, 1].iter().cycle()).map(|(b, &w)| u32::from(b - b'0') * w).sum();
    format!("{body}{}", (10 - sum % 10) % 10)
}

/// Routing numbers after a label or beside a labelled account number, and
/// labelled account numbers.
fn bank(rng: &mut Rng) -> (String, String) {
    const ROUTING_LABELS: &[&str] =
        &["Routing: ", "routing number ", "ABA ", "ABA#", "RTN: ", "Routing #: ", "routing no. ", "ABA routing "];
    const ACCOUNT_LABELS: &[&str] = &[
        "Account number: ",
        "acct # ",
        "Acct: ",
        "A/C ",
        "account no. ",
        "Account #",
        "my account number is ",
        "Bank account: ",
        "Acc No: ",
    ];
    let account = loop {
        let n = rng.range(6, 17) as usize;
        let number = rng.digits(n);
        // A number that is also a card is reported as a card (the stronger
        // kind); it is redacted either way, but not as a bank account.
        let digits: Vec<u8> = number.bytes().map(|b| b - b'0').collect();
        if !(luhn_ok(&digits) && card_issuer_ok(&digits)) {
            break number;
        }
    };
    match rng.below(5) {
        0 | 1 => {
            let raw = aba(rng);
            (raw.clone(), format!("{}{raw}", rng.pick(ROUTING_LABELS)))
        }
        2 | 3 => (account.clone(), format!("{}{account}", rng.pick(ACCOUNT_LABELS))),
        _ => {
            let raw = aba(rng);
            let sep = *rng.pick(&[", ", " / ", " "]);
            (raw.clone(), format!("{}{account}{sep}{raw}", rng.pick(ACCOUNT_LABELS)))
        }
    }
}

/// Routing-number-shaped numbers without a label, labelled ones failing the
/// check sum, and what follows `account` without being its number.
fn bank_look_alike(rng: &mut Rng) -> String {
    let valid = aba(rng);
    let last = u32::from(valid.as_bytes()[8] - b'0');
    let failing = format!("{}{}", &valid[..8], (last + rng.range(1, 9) as u32) % 10);
    match rng.below(9) {
        0 => format!("Order {valid} shipped"),
        1 => format!("tracking {valid}"),
        2 => format!("Member ID {valid}"),
        3 => format!("Routing number: {failing}"),
        4 => format!("ABA {failing}"),
        5 => format!("account ending in {}", rng.digits(4)),
        6 => format!("account balance {}.{:02}", rng.range(1000, 99999), rng.below(100)),
        7 => format!("Account created {}-{:02}-{:02}", rng.range(2000, 2025), rng.range(1, 12), rng.range(1, 28)),
        _ => format!("order {}, {valid}", rng.digits(8)),
    }
}

const VALID_SENTENCES: &[&str] = &[
    "Please contact me at {} tomorrow.",
    "My details: {} (private).",
    "{} is what you need",
    "value={};",
    "\"{}\"",
    "Sent from {}, thanks!",
    "Use {} for billing.",
    "- {}\n- next",
    "Here it is:\n{}",
    "Reach me on {}",
    "[{}]",
    "Old: x. New: {}. Done",
];

const LOOK_ALIKE_SENTENCES: &[&str] =
    &["Reference {} attached.", "see {}", "{}", "Item ({}) shipped.", "Note: {}, ok?"];

fn look_alike(rng: &mut Rng) -> String {
    let d = |rng: &mut Rng, n| rng.digits(n);
    match rng.below(16) {
        // Luhn-failing numbers with a card prefix.
        0 => {
            let payload = format!("4{}", d(rng, 14));
            let good = luhn_check_digit(&payload).to_digit(10).unwrap_or(0);
            let bad = (good + rng.range(1, 9) as u32) % 10;
            let number = format!("{payload}{bad}");
            let sep = *rng.pick(&["", " ", "-"]);
            if sep.is_empty() { number } else { grouped(&number, &[4, 4, 4], sep) }
        }
        // IBANs with a wrong check digit.
        1 => {
            let (head, bban) = iban_parts(rng);
            let check: u64 = head[2..].parse().unwrap_or(2);
            let wrong = (check - 2 + rng.range(1, 96)) % 97 + 2;
            let iban = format!("{}{wrong:02}{bban}", &head[..2]);
            if rng.chance(50) { space_in_fours(&iban) } else { iban }
        }
        // SSNs with a forbidden area, group or serial.
        2 => {
            let high = rng.range(900, 999);
            let area = *rng.pick(&[0, 666, high]);
            let (group, serial) = match rng.below(3) {
                0 => (0, rng.range(1, 9999)),
                1 => (rng.range(1, 99), 0),
                _ => (rng.range(1, 99), rng.range(1, 9999)),
            };
            let area = if group == 0 || serial == 0 { rng.range(1, 665) } else { area };
            format!("{area:03}-{group:02}-{serial:04}")
        }
        3 => {
            let (y, m, day) = (rng.range(1990, 2030), rng.range(1, 12), rng.range(1, 28));
            let (hh, mm, ss) = (rng.below(24), rng.below(60), rng.below(60));
            match rng.below(6) {
                0 => format!("{y}-{m:02}-{day:02}"),
                1 => format!("{m:02}/{day:02}/{y}"),
                2 => format!("{day:02}.{m:02}.{y}"),
                3 => format!("{y}-{m:02}-{day:02}T{hh:02}:{mm:02}:{ss:02}Z"),
                4 => format!("{y}{m:02}{day:02}"),
                _ => format!("{y}/{m:02}/{day:02} {hh:02}:{mm:02}"),
            }
        }
        4 => {
            let (whole, cents) = (rng.range(1, 9_999_999), rng.below(100));
            let with_commas = whole
                .to_string()
                .as_bytes()
                .rchunks(3)
                .rev()
                .map(|c| String::from_utf8_lossy(c).into_owned())
                .collect::<Vec<_>>();
            match rng.below(4) {
                0 => format!("${}.{cents:02}", with_commas.join(",")),
                1 => format!("€{},{cents:02}", with_commas.join(".")),
                2 => format!("{},{cents:02} EUR", with_commas.join(" ")),
                _ => format!("USD {whole}.{cents:02}"),
            }
        }
        5 => {
            let v = |rng: &mut Rng| rng.below(30).to_string();
            match rng.below(5) {
                0 => format!("v{}.{}.{}", v(rng), v(rng), v(rng)),
                1 => format!("{}.{}.{}.{}.{}", v(rng), v(rng), v(rng), v(rng), v(rng)),
                2 => format!("version {}.{}.{}.{}", v(rng), v(rng), v(rng), v(rng)),
                3 => format!("10.0.{}.{}", rng.range(10000, 22000), rng.range(256, 9999)),
                _ => format!("release {}.{}.{}-rc.{}", v(rng), v(rng), v(rng), v(rng)),
            }
        }
        6 => {
            let (hh, mm, ss) = (rng.below(24), rng.below(60), rng.below(60));
            match rng.below(4) {
                0 => format!("{hh:02}:{mm:02}"),
                1 => format!("{hh:02}:{mm:02}:{ss:02}"),
                2 => format!("{hh:02}:{mm:02}:{ss:02}.{:03}", rng.below(1000)),
                _ => format!("{}:{mm:02} PM", rng.range(1, 12)),
            }
        }
        7 => match rng.below(5) {
            0 => format!("ORD-{}-{}", rng.range(2000, 2030), d(rng, 5)),
            1 => format!("order #A{}", d(rng, 8)),
            2 => format!("INV{}{}", rng.range(2, 9), d(rng, 9)),
            3 => format!("PO-{}-{}-{}", rng.range(200, 999), rng.range(200, 999), d(rng, 4)),
            _ => {
                let n = rng.range(6, 9) as usize;
                format!("#{}", d(rng, n))
            }
        },
        8 => {
            let body = format!("978{}{}", rng.below(2), d(rng, 8));
            let sum: u32 =
                body.bytes().enumerate().map(|(i, b)| u32::from(b - b'0') * if i % 2 == 0 { 1 } else { 3 }).sum();
            let isbn = format!("{body}{}", (10 - sum % 10) % 10);
            if rng.chance(50) { format!("ISBN {}", grouped(&isbn, &[3, 1, 2, 6], "-")) } else { isbn }
        }
        9 => match rng.below(4) {
            0 => format!(
                "1Z{}{}",
                (0..6).map(|_| char::from(b'A' + rng.below(26) as u8)).collect::<String>(),
                d(rng, 10)
            ),
            1 => d(rng, 12),
            2 => format!("9400{}", d(rng, 18)),
            _ => format!("JD{}", d(rng, 18)),
        },
        10 => {
            let (a, e) = (rng.range(200, 999), rng.range(200, 999));
            match rng.below(5) {
                0 => format!("{e}-{}", d(rng, 4)),
                1 => format!("+1 {e} {}", d(rng, 4)),
                2 => format!("({a}) {e}-{}", d(rng, 3)),
                3 => format!("+44 20 {}", d(rng, 4)),
                _ => format!("{a}-{e}-{}", d(rng, 3)),
            }
        }
        11 => format!("{}.{}.{}.{}", rng.range(256, 999), rng.below(256), rng.below(256), rng.below(256)),
        12 => match rng.below(3) {
            0 => (0..6).map(|_| format!("{:02X}", rng.below(256))).collect::<Vec<_>>().join(":"),
            1 => format!("ratio {}:{}:{}", rng.below(10), rng.below(10), rng.below(10)),
            _ => format!("std::io::{}", rng.pick(&["Result", "Error", "stdin"])),
        },
        // SIN-shaped numbers that fail Luhn or start with 0 or 8.
        13 => {
            let payload = format!("{}{}", rng.pick(&[1, 4, 9]), d(rng, 7));
            let good = luhn_check_digit(&payload).to_digit(10).unwrap_or(0);
            let number = match rng.below(2) {
                0 => format!("{payload}{}", (good + rng.range(1, 9) as u32) % 10),
                _ => format!("{}{}", rng.pick(&[0, 8]), &format!("{payload}{good}")[1..]),
            };
            let sep = if rng.chance(50) { " " } else { "-" };
            grouped(&number, &[3, 3], sep)
        }
        // Key-like words that are not keys.
        14 => match rng.below(5) {
            0 => format!("sk-{}", alnum(rng, 8)),
            1 => format!("AKIA{}", alnum(rng, 16).to_lowercase()),
            2 => format!("ghp_{}", alnum(rng, 12)),
            3 => format!("eyJ{}", alnum(rng, 30)),
            _ => format!("-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----", alnum(rng, 64)),
        },
        _ => format!("{}@localhost and @{}", rng.pick(&["root", "admin"]), rng.pick(&["handle", "team"])),
    }
}

pub(super) fn fill(template: &str, value: &str) -> (String, usize) {
    let at = template.find("{}").unwrap_or(0);
    (format!("{}{value}{}", &template[..at], &template[at + 2..]), at)
}

#[test]
fn corpus_recall_and_false_positives() {
    type Generator = fn(&mut Rng) -> (String, String);
    type LookAlike = fn(&mut Rng) -> String;
    let generators: [(PiiKind, Generator); 11] = [
        (PiiKind::Email, email),
        (PiiKind::Phone, phone),
        (PiiKind::Card, card),
        (PiiKind::Iban, iban),
        (PiiKind::Ssn, ssn),
        (PiiKind::Ip, ip),
        (PiiKind::Sin, sin),
        (PiiKind::Secret, secret),
        (PiiKind::Dob, dob),
        (PiiKind::Address, address),
        (PiiKind::BankAccount, bank),
    ];
    // Look-alikes of the kinds that lean on a label or on words, each
    // measured on its own besides the shared look-alikes.
    let look_alike_generators: [(PiiKind, LookAlike); 3] = [
        (PiiKind::Dob, dob_look_alike),
        (PiiKind::Address, address_look_alike),
        (PiiKind::BankAccount, bank_look_alike),
    ];
    const PER_KIND: u32 = 500;
    let (r, mut rng) = (Redactor::new(), Rng(0x5317_c4b0));
    let (mut valid, mut hits, mut misses) = (0, 0, Vec::new());
    let mut missed_by_kind = [0; PiiKind::ALL.len()];
    for i in 0..generators.len() * PER_KIND as usize {
        let (kind, generate) = generators[i % generators.len()];
        let (raw, embedded) = generate(&mut rng);
        let template = *rng.pick(VALID_SENTENCES);
        let (sentence, at) = fill(template, &embedded);
        let start = at + embedded.len() - raw.len();
        let expected = Finding { kind, start, end: start + raw.len() };
        valid += 1;
        if r.find(&sentence).contains(&expected) {
            hits += 1;
        } else {
            missed_by_kind[kind.index()] += 1;
            misses.push(sentence);
        }
    }
    let (mut look_alikes, mut false_positives) = (0, Vec::new());
    for _ in 0..3000 {
        let template = *rng.pick(LOOK_ALIKE_SENTENCES);
        let (sentence, _) = fill(template, &look_alike(&mut rng));
        look_alikes += 1;
        if r.contains_pii(&sentence) {
            false_positives.push(sentence);
        }
    }
    let mut flagged_by_kind = [0; PiiKind::ALL.len()];
    for (kind, generate) in look_alike_generators {
        for _ in 0..PER_KIND {
            let template = *rng.pick(LOOK_ALIKE_SENTENCES);
            let (sentence, _) = fill(template, &generate(&mut rng));
            look_alikes += 1;
            if r.contains_pii(&sentence) {
                flagged_by_kind[kind.index()] += 1;
                false_positives.push(sentence);
            }
        }
    }
    let recall = f64::from(hits) / f64::from(valid);
    let fp_rate = false_positives.len() as f64 / f64::from(look_alikes);
    println!(
        "redact corpus: recall {:.2}% ({hits}/{valid}), false positives {:.2}% ({}/{look_alikes})",
        recall * 100.0,
        fp_rate * 100.0,
        false_positives.len()
    );
    let by_kind: Vec<String> = PiiKind::ALL.iter().map(|k| format!("{k} {}", missed_by_kind[k.index()])).collect();
    println!("missed per kind (of {PER_KIND} each): {}", by_kind.join(", "));
    let flagged: Vec<String> =
        look_alike_generators.iter().map(|(k, _)| format!("{k} {}", flagged_by_kind[k.index()])).collect();
    println!("flagged per kind's own look-alikes (of {PER_KIND} each): {}", flagged.join(", "));
    for k in PiiKind::ALL {
        let missed = f64::from(missed_by_kind[k.index()]) / f64::from(PER_KIND);
        assert!(missed <= 0.01, "{k}: recall {:.1}%", (1.0 - missed) * 100.0);
        let flagged = f64::from(flagged_by_kind[k.index()]) / f64::from(PER_KIND);
        assert!(flagged <= 0.01, "{k}: false positives {:.1}% on its look-alikes", flagged * 100.0);
    }
    println!("missed: {:?}", &misses[..misses.len().min(20)]);
    println!("false positives: {:?}", &false_positives[..false_positives.len().min(20)]);
    assert!(recall >= 0.99, "recall {recall}");
    assert!(fp_rate <= 0.01, "false positives {fp_rate}");
}

/// Text rich in near-PII: real values, fragments, separators, tokens.
fn pii_soup() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("a@x.com".to_owned()),
        Just("4111 1111 1111 1111".to_owned()),
        Just("4111111111111111".to_owned()),
        Just("DE89370400440532013000".to_owned()),
        Just("123-45-6789".to_owned()),
        Just("+14155552671".to_owned()),
        Just("(415) 555-2671".to_owned()),
        Just("10.0.0.1".to_owned()),
        Just("2001:db8::1".to_owned()),
        Just("<EMAIL_1>".to_owned()),
        Just("<IP_2>".to_owned()),
        Just("SSN ".to_owned()),
        Just("phone ".to_owned()),
        Just("DOB: ".to_owned()),
        Just("1985-03-14".to_owned()),
        Just("March 14, 1985".to_owned()),
        Just("12 Main St".to_owned()),
        Just(", Springfield, IL 62704".to_owned()),
        Just("routing ".to_owned()),
        Just("acct # ".to_owned()),
        Just("021000021".to_owned()),
        "[0-9]{1,6}",
        "[ .:@<>_/+()-]",
        "[a-zA-Z]{1,3}",
        "\\PC{0,3}",
    ];
    prop::collection::vec(piece, 0..14).prop_map(|parts| parts.concat())
}

fn config() -> Config {
    Config { cases: 400, rng_seed: RngSeed::Fixed(0x2ed_ac7), failure_persistence: None, ..Config::default() }
}

fn check_text(text: &str) -> Result<(), TestCaseError> {
    let r = Redactor::new();
    let mut vault = Vault::new();
    let found = r.find(text);
    for pair in found.windows(2) {
        prop_assert!(pair[0].end <= pair[1].start, "{found:?}");
    }
    let redacted = r.redact(text, &mut vault);
    prop_assert_eq!(&vault.restore(&redacted), text);
    for f in &found {
        let raw = text.get(f.start..f.end);
        prop_assert!(raw.is_some_and(|raw| !redacted.contains(raw)), "{:?} in {:?}", raw, redacted);
    }
    prop_assert_eq!(&r.redact(&redacted, &mut vault), &redacted);
    prop_assert_eq!(&r.redact(&redacted, &mut Vault::new()), &redacted);
    prop_assert_eq!(r.contains_pii(text), !found.is_empty());
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_text_round_trips(text in any::<String>()) {
        check_text(&text)?;
    }

    #[test]
    fn pii_rich_text_round_trips(text in pii_soup()) {
        check_text(&text)?;
    }
}
