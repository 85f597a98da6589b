//! Tag: spending categories from merchant and description keyword rules. The
//! rules live here and are shared with Crystal and Ledger.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::money::{self, Cents};
use super::reply::{failed_no_transactions, list_lines};
use super::transactions::{self, Transaction};
use crate::agent::{Agent, AgentContext, AgentOutput, Task};
use crate::protocol::{Artifact, DelegationError, NewFact};

pub const TOOL: &str = "categorize";
pub const UNCATEGORIZED: &str = "Uncategorized";

/// A category and the words that place a transaction in it. Brands are
/// specific (Starbucks); words are generic (coffee). Order matters: the first
/// rule that matches wins, so specific rules (Uber Eats) precede broad ones (Uber).
struct Rule {
    category: &'static str,
    brands: &'static [&'static str],
    words: &'static [&'static str],
}

const RULES: &[Rule] = &[
    Rule {
        category: "Income",
        brands: &[],
        words: &["payroll", "salary", "direct deposit", "paycheck", "paycheque", "dividend", "interest earned"],
    },
    Rule {
        category: "Dining - Restaurants",
        brands: &[
            "uber eats",
            "ubereats",
            "doordash",
            "grubhub",
            "skip the dishes",
            "skipthedishes",
            "deliveroo",
            "just eat",
            "postmates",
            "mcdonald's",
            "mcdonalds",
            "burger king",
            "wendy's",
            "chipotle",
            "subway",
            "kfc",
            "taco bell",
            "pizza hut",
            "domino's",
            "dominos",
            "olive garden",
            "chick-fil-a",
            "five guys",
            "shake shack",
            "panera",
            "nando's",
            "a&w",
            "pret a manger",
            "cheesecake factory",
            "the keg",
            "earls",
            "cactus club",
            "applebee's",
            "denny's",
            "ihop",
            "red lobster",
            "popeyes",
        ],
        words: &[
            "restaurant",
            "bistro",
            "grill",
            "pizza",
            "pizzeria",
            "sushi",
            "burger",
            "burgers",
            "diner",
            "tavern",
            "pub",
            "bar",
            "brewery",
            "eatery",
            "steakhouse",
            "taqueria",
            "ramen",
            "noodle",
            "noodles",
            "pho",
            "bbq",
            "trattoria",
            "cantina",
            "brasserie",
            "dinner",
            "lunch",
            "takeout",
            "sirloin",
            "entree",
        ],
    },
    Rule {
        category: "Dining - Coffee",
        brands: &[
            "starbucks",
            "tim hortons",
            "dunkin",
            "second cup",
            "peet's",
            "costa coffee",
            "blue bottle",
            "caribou coffee",
            "dutch bros",
            "philz",
            "coffee bean",
        ],
        words: &["coffee", "cafe", "café", "espresso", "latte", "cappuccino", "coffeehouse", "roasters", "tea house"],
    },
    Rule {
        category: "Groceries",
        brands: &[
            "whole foods",
            "trader joe's",
            "trader joes",
            "safeway",
            "kroger",
            "loblaws",
            "sobeys",
            "no frills",
            "freshco",
            "food basics",
            "costco",
            "aldi",
            "lidl",
            "tesco",
            "sainsbury's",
            "sainsburys",
            "asda",
            "morrisons",
            "publix",
            "wegmans",
            "h-e-b",
            "instacart",
            "real canadian superstore",
            "save-on-foods",
            "albertsons",
            "sprouts",
            "food lion",
            "harris teeter",
            "stop & shop",
            "t&t",
        ],
        words: &["grocery", "groceries", "supermarket", "market", "farmers market", "produce", "butcher"],
    },
    Rule {
        category: "Rent",
        brands: &[],
        words: &["rent", "landlord", "property management", "lease", "apts", "apartments"],
    },
    Rule {
        category: "Utilities",
        brands: &[
            "con edison",
            "coned",
            "pg&e",
            "duke energy",
            "enbridge",
            "hydro one",
            "toronto hydro",
            "bc hydro",
            "national grid",
            "comcast",
            "xfinity",
            "verizon",
            "at&t",
            "t-mobile",
            "rogers",
            "bell canada",
            "telus",
            "spectrum",
            "fido",
            "koodo",
        ],
        words: &[
            "electric",
            "electricity",
            "hydro",
            "water bill",
            "internet",
            "utility",
            "utilities",
            "power",
            "energy",
            "phone bill",
            "wireless",
            "gas bill",
            "heating",
        ],
    },
    Rule {
        category: "Software",
        brands: &[
            "adobe",
            "microsoft",
            "github",
            "gitlab",
            "slack",
            "zoom",
            "dropbox",
            "notion",
            "google workspace",
            "g suite",
            "google cloud",
            "aws",
            "amazon web services",
            "atlassian",
            "jira",
            "jetbrains",
            "figma",
            "canva",
            "heroku",
            "digitalocean",
            "openai",
            "anthropic",
            "1password",
            "lastpass",
            "quickbooks",
            "xero",
            "freshbooks",
            "mailchimp",
            "squarespace",
            "godaddy",
            "namecheap",
            "cloudflare",
            "vercel",
            "netlify",
            "asana",
            "trello",
            "docusign",
            "grammarly",
            "salesforce",
            "hubspot",
            "zapier",
            "office 365",
            "microsoft 365",
        ],
        words: &["software", "saas", "web hosting", "hosting", "domain", "cloud storage", "plugin", "license key"],
    },
    Rule {
        category: "Office Supplies",
        brands: &["staples", "office depot", "officemax", "bureau en gros", "uline", "grand & toy"],
        words: &[
            "office supplies",
            "office supply",
            "stationery",
            "printer",
            "toner",
            "ink",
            "paper",
            "pens",
            "envelopes",
            "stapler",
            "folders",
            "binders",
            "office chair",
            "desk lamp",
        ],
    },
    Rule {
        category: "Education",
        brands: &[
            "coursera",
            "udemy",
            "edx",
            "skillshare",
            "pluralsight",
            "linkedin learning",
            "o'reilly",
            "masterclass",
        ],
        words: &[
            "tuition",
            "course",
            "courses",
            "university",
            "college",
            "textbook",
            "textbooks",
            "conference",
            "seminar",
            "workshop",
            "training",
            "certification",
        ],
    },
    Rule {
        category: "Professional Dues",
        brands: &["ieee", "acm", "aicpa", "cpa canada", "american bar association", "pmi"],
        words: &["membership dues", "dues", "professional association", "professional license", "licensing fee"],
    },
    Rule {
        category: "Travel",
        brands: &[
            "air canada",
            "westjet",
            "delta",
            "united airlines",
            "american airlines",
            "southwest",
            "jetblue",
            "lufthansa",
            "british airways",
            "air france",
            "ryanair",
            "easyjet",
            "expedia",
            "booking.com",
            "airbnb",
            "marriott",
            "hilton",
            "hyatt",
            "holiday inn",
            "best western",
            "amtrak",
            "via rail",
            "greyhound",
            "hertz",
            "avis",
            "enterprise rent-a-car",
        ],
        words: &[
            "airline",
            "airlines",
            "airways",
            "flight",
            "hotel",
            "motel",
            "resort",
            "airport",
            "car rental",
            "lodging",
            "hostel",
        ],
    },
    Rule {
        category: "Transport",
        brands: &[
            "uber",
            "lyft",
            "shell",
            "esso",
            "chevron",
            "exxon",
            "mobil",
            "petro-canada",
            "bp",
            "sunoco",
            "texaco",
            "ttc",
            "presto",
            "mta",
            "bart",
            "go transit",
            "metrocard",
            "clipper",
            "oyster",
        ],
        words: &[
            "taxi",
            "cab",
            "transit",
            "parking",
            "fuel",
            "gas station",
            "gasoline",
            "petrol",
            "toll",
            "unleaded",
            "train",
        ],
    },
    Rule {
        category: "Entertainment",
        brands: &[
            "netflix",
            "spotify",
            "hulu",
            "disney+",
            "disney plus",
            "hbo",
            "amc",
            "cineplex",
            "regal",
            "ticketmaster",
            "live nation",
            "steam",
            "playstation",
            "xbox",
            "nintendo",
            "apple music",
            "itunes",
            "youtube premium",
            "audible",
            "twitch",
            "prime video",
            "paramount+",
        ],
        words: &[
            "cinema",
            "movie",
            "movies",
            "theatre",
            "theater",
            "concert",
            "tickets",
            "museum",
            "bowling",
            "streaming",
            "karaoke",
        ],
    },
    Rule {
        category: "Health",
        brands: &["cvs", "walgreens", "shoppers drug mart", "rexall", "boots", "goodlife", "planet fitness", "equinox"],
        words: &[
            "pharmacy",
            "drugstore",
            "dental",
            "dentist",
            "doctor",
            "clinic",
            "hospital",
            "medical",
            "optometrist",
            "physio",
            "physiotherapy",
            "prescription",
            "gym",
            "fitness",
            "therapy",
            "vision care",
        ],
    },
    Rule {
        category: "Charity",
        brands: &[
            "red cross",
            "unicef",
            "united way",
            "salvation army",
            "oxfam",
            "doctors without borders",
            "msf",
            "world wildlife",
            "wwf",
            "habitat for humanity",
            "food bank",
            "gofundme",
        ],
        words: &["donation", "donate", "charity", "charitable", "foundation", "fundraiser"],
    },
    Rule {
        category: "Shopping",
        brands: &[
            "amazon",
            "amzn",
            "walmart",
            "target",
            "best buy",
            "ikea",
            "ebay",
            "etsy",
            "h&m",
            "zara",
            "uniqlo",
            "gap",
            "old navy",
            "nike",
            "adidas",
            "apple store",
            "home depot",
            "lowe's",
            "canadian tire",
            "winners",
            "marshalls",
            "tj maxx",
            "macy's",
            "nordstrom",
            "sephora",
            "dollarama",
            "dollar tree",
            "aliexpress",
            "wayfair",
        ],
        words: &[
            "store",
            "shop",
            "boutique",
            "clothing",
            "apparel",
            "shoes",
            "electronics",
            "mall",
            "outlet",
            "hardware",
        ],
    },
];

/// Every category the rules can give, plus `Uncategorized`.
pub fn categories() -> impl Iterator<Item = &'static str> {
    RULES.iter().map(|r| r.category).chain([UNCATEGORIZED])
}

/// `term` occurs in `hay` as whole words (both lowercase).
fn has_term(hay: &str, term: &str) -> bool {
    hay.match_indices(term).any(|(i, _)| {
        let before = hay[..i].chars().next_back();
        let after = hay[i + term.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// The first rule with a brand in `hay`, else the first with a word; true for a brand.
fn best_rule(hay: &str) -> Option<(&'static str, bool)> {
    RULES
        .iter()
        .find(|r| r.brands.iter().any(|b| has_term(hay, b)))
        .map(|r| (r.category, true))
        .or_else(|| RULES.iter().find(|r| r.words.iter().any(|w| has_term(hay, w))).map(|r| (r.category, false)))
}

/// The category of a purchase and a confidence: a brand in the merchant name
/// 95, a generic word in it 85, a match in the description only 80 (brand) or
/// 70 (word). A general store (Shopping) yields to what its description says
/// was bought (printer paper from Amazon is Office Supplies, 75). No match is
/// `Uncategorized` at 30.
pub fn categorize(merchant: &str, description: &str) -> (&'static str, u8) {
    let by_merchant = best_rule(&merchant.to_lowercase());
    let by_description = best_rule(&description.to_lowercase());
    match (by_merchant, by_description) {
        (Some(("Shopping", _)), Some((cat, _))) if cat != "Shopping" => (cat, 75),
        (Some((cat, true)), _) => (cat, 95),
        (Some((cat, false)), _) => (cat, 85),
        (None, Some((cat, true))) => (cat, 80),
        (None, Some((cat, false))) => (cat, 70),
        (None, None) => (UNCATEGORIZED, 30),
    }
}

/// The category a transaction gets from the rules; money received that no rule
/// places is `Income` (60).
pub fn categorize_transaction(t: &Transaction) -> (&'static str, u8) {
    match categorize(&t.merchant, &t.description) {
        (UNCATEGORIZED, _) if t.amount < 0 => ("Income", 60),
        found => found,
    }
}

/// Fills in the missing categories (what Crystal and Ledger need).
pub fn ensure_categories(ts: &mut [Transaction]) {
    for t in ts.iter_mut().filter(|t| t.category.as_deref().is_none_or(str::is_empty)) {
        let (cat, conf) = categorize_transaction(t);
        t.category = Some(cat.to_string());
        t.confidence = Some(conf);
    }
}

/// A category whose given name the rules would change.
#[derive(Debug, Clone, PartialEq)]
pub struct Recategorized {
    pub merchant: String,
    pub from: String,
    pub to: &'static str,
}

/// Categorizes every transaction. A category that came with the data is kept
/// unless the rules are sure (85+) of a different one; those changes are returned.
pub fn categorize_all(ts: &mut [Transaction]) -> Vec<Recategorized> {
    let mut changes = Vec::new();
    for t in ts.iter_mut() {
        let (cat, conf) = categorize_transaction(t);
        match t.category.as_deref().map(str::trim).filter(|c| !c.is_empty()) {
            Some(given) if given.eq_ignore_ascii_case(cat) => {
                t.category = Some(cat.to_string());
                t.confidence = Some(conf.max(90));
            }
            Some(given) if conf < 85 => {
                t.category = Some(given.to_string());
                t.confidence = Some(t.confidence.unwrap_or(60));
            }
            given => {
                if let Some(given) = given {
                    changes.push(Recategorized { merchant: t.merchant.clone(), from: given.to_string(), to: cat });
                }
                t.category = Some(cat.to_string());
                t.confidence = Some(conf);
            }
        }
    }
    changes
}

/// Spending per category: (category, total, count), largest first. Money
/// received (negative amounts) is left out.
pub fn totals_by_category(ts: &[Transaction]) -> Vec<(String, Cents, usize)> {
    let mut totals: Vec<(String, Cents, usize)> = Vec::new();
    for t in ts.iter().filter(|t| t.amount > 0) {
        let cat = t.category.as_deref().unwrap_or(UNCATEGORIZED);
        match totals.iter_mut().find(|(c, _, _)| c == cat) {
            Some((_, sum, n)) => {
                *sum += t.amount;
                *n += 1;
            }
            None => totals.push((cat.to_string(), t.amount, 1)),
        }
    }
    totals.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    totals
}

/// Tag (`tag-ai`): transactions in, the same with `category` and `confidence`
/// plus per-category totals out.
pub struct TagAi;

#[async_trait]
impl Agent for TagAi {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        ctx.use_tool(TOOL)?;
        let found = transactions::from_task(task);
        let mut ts = found.transactions;
        if ts.is_empty() {
            return Err(failed_no_transactions("categorize"));
        }
        let changes = categorize_all(&mut ts);
        let currency = transactions::main_currency(&ts);
        let totals = totals_by_category(&ts);
        let spent: Cents = totals.iter().map(|(_, s, _)| s).sum();
        let uncategorized = ts.iter().filter(|t| t.category.as_deref() == Some(UNCATEGORIZED)).count();
        let summary = match ts.as_slice() {
            [t] => format!(
                "Categorized 1 transaction: {} as {}",
                t.merchant,
                t.category.as_deref().unwrap_or(UNCATEGORIZED)
            ),
            _ => {
                let top: Vec<String> =
                    totals.iter().take(3).map(|(c, s, _)| format!("{c} ({})", money::format(*s, &currency))).collect();
                let mut s = format!(
                    "Categorized {} transactions into {} categories; top: {}",
                    ts.len(),
                    totals.len(),
                    top.join(", ")
                );
                if uncategorized > 0 {
                    s.push_str(&format!("; {uncategorized} left {UNCATEGORIZED}"));
                }
                s
            }
        };
        let mut result = list_lines(ts.iter().map(|t| {
            format!(
                "- {} {} -> {} ({}%)",
                t.merchant,
                money::format(t.amount, &t.currency),
                t.category.as_deref().unwrap_or(UNCATEGORIZED),
                t.confidence.unwrap_or(0)
            )
        }));
        if !changes.is_empty() {
            result.push_str("\nChanged categories:");
            for c in &changes {
                result.push_str(&format!("\n- {}: '{}' -> '{}'", c.merchant, c.from, c.to));
            }
        }
        let categories: Vec<Value> = totals
            .iter()
            .map(|(c, s, n)| json!({"category": c, "total": money::to_value(*s), "count": n, "share_pct": money::percent(*s, spent)}))
            .collect();
        let average = ts.iter().map(|t| u32::from(t.confidence.unwrap_or(0))).sum::<u32>() / ts.len().max(1) as u32;
        let mut output = AgentOutput::new(summary, result)
            .with_artifact(Artifact::json("transactions", transactions::to_json_array(&ts)))
            .with_artifact(Artifact::json("categories", Value::Array(categories)))
            .with_confidence(u8::try_from(average).unwrap_or(100));
        if ts.len() >= 5
            && let Some((top, total, _)) = totals.first()
        {
            output = output.with_fact(NewFact::new(format!(
                "User's largest spending category is {top} ({} of {})",
                money::format(*total, &currency),
                money::format(spent, &currency)
            )));
        }
        Ok(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ErrorCode, HandoffData};

    async fn run(task: Task) -> Result<AgentOutput, DelegationError> {
        TagAi.run(&AgentContext::detached([TOOL]), &task).await
    }

    #[test]
    fn tag_ai_rules_pick_specific_categories() {
        let cases = [
            ("Starbucks", "", "Dining - Coffee", 95),
            ("Uber Eats", "", "Dining - Restaurants", 95),
            ("Uber Trip", "", "Transport", 95),
            ("Joe's Coffee House", "", "Dining - Coffee", 85),
            ("Staples", "Stapler", "Office Supplies", 95),
            ("Amazon", "printer paper", "Office Supplies", 75),
            ("Amazon", "headphones", "Shopping", 95),
            ("Adobe Inc", "", "Software", 95),
            ("Rent Payment", "", "Rent", 85),
            ("Parent Teacher Assoc", "", UNCATEGORIZED, 30),
            ("Red Cross Donation", "", "Charity", 95),
            ("Con Edison Electric", "", "Utilities", 95),
            ("Mystery Co", "", UNCATEGORIZED, 30),
            ("Square", "Caesar Salad, Sirloin", "Dining - Restaurants", 70),
        ];
        for (merchant, description, category, confidence) in cases {
            assert_eq!(categorize(merchant, description), (category, confidence), "{merchant}");
        }
    }

    #[tokio::test]
    async fn tag_ai_categorizes_byte_docs_transactions() {
        let mut task = Task::new("Categorize extracted transactions", "");
        task.handoff = HandoffData {
            intermediate_results: Some(json!([{"agent": "byte-doc", "status": "success", "summary": "", "result": "",
                "artifacts": [{"type": "json", "label": "transactions", "value": [
                    {"date": "2025-10-09", "merchant": "Starbucks", "amount": 45.99, "currency": "USD", "description": "Caffe Latte"}]}]}])),
            ..HandoffData::default()
        };
        let out = run(task).await.expect("categorized");
        assert_eq!(out.summary, "Categorized 1 transaction: Starbucks as Dining - Coffee");
        assert_eq!(out.confidence, Some(95));
        let t = &out.artifacts[0].value[0];
        assert_eq!((t["category"].as_str(), t["confidence"].as_u64()), (Some("Dining - Coffee"), Some(95)));
        assert_eq!(
            out.artifacts[1].value,
            json!([{"category": "Dining - Coffee", "total": 45.99, "count": 1, "share_pct": 100.0}])
        );
    }

    #[tokio::test]
    async fn tag_ai_categorizes_the_example_statement() {
        let out = run(Task::new("Categorize", include_str!("../../../../examples/statement.csv"))).await.expect("ok");
        let ts = out.artifacts[0].value.as_array().expect("array").clone();
        let category_of = |m: &str| {
            ts.iter().find(|t| t["merchant"] == m).and_then(|t| t["category"].as_str()).unwrap_or_default().to_string()
        };
        assert_eq!(category_of("Whole Foods Market"), "Groceries");
        assert_eq!(category_of("Netflix"), "Entertainment");
        assert_eq!(category_of("Payroll Deposit Acme Corp"), "Income");
        assert_eq!(category_of("MTA Metrocard"), "Transport");
        assert!(!ts.iter().any(|t| t["category"] == UNCATEGORIZED), "{}", out.result);
        assert_eq!(out.artifacts[1].value[0]["category"], "Rent");
        assert!(out.new_facts[0].fact.starts_with("User's largest spending category is Rent"));
    }

    #[tokio::test]
    async fn tag_ai_keeps_given_categories_unless_sure() {
        let csv = "date,merchant,amount,category\n2025-10-01,Starbucks,4.50,Food\n2025-10-02,Mystery Co,9.00,Gifts";
        let out = run(Task::new("Review categorization accuracy", csv)).await.expect("ok");
        let ts = &out.artifacts[0].value;
        assert_eq!((ts[0]["category"].as_str(), ts[1]["category"].as_str()), (Some("Dining - Coffee"), Some("Gifts")));
        assert!(out.result.contains("Starbucks: 'Food' -> 'Dining - Coffee'"), "{}", out.result);
    }

    #[tokio::test]
    async fn tag_ai_fails_without_transactions_and_without_its_tool() {
        let err = run(Task::new("Categorize my stuff", "")).await.expect_err("nothing");
        assert_eq!(err.code, ErrorCode::AgentFailed);
        let err = TagAi.run(&AgentContext::detached(["extract_receipt"]), &Task::new("x", "Starbucks 4.50")).await;
        assert_eq!(err.expect_err("refused").code, ErrorCode::ToolNotAllowed);
    }
}
