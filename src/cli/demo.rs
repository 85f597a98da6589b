//! `switchboard demo`: the showcase scenarios, each printed with its tree.

use serde_json::json;

use crate::auth::Principal;
use crate::pipeline::{AskOptions, Door, Turn};
use crate::protocol::UserId;
use crate::runtime::Runtime;

use super::output::{EXIT_FAILED, EXIT_OK, print_ask};

/// (title, message, input)
pub(super) const SCENARIOS: &[(&str, &str, Option<&str>)] = &[
    ("A greeting: Prime answers directly", "Hi Prime! What can you do?", None),
    ("Chain: Byte extracts, Tag categorizes", "Upload this receipt and categorize it", Some(RECEIPT)),
    ("Chain: Byte extracts, Ledger finds deductions", "Analyze my receipts and suggest tax deductions", Some(RECEIPTS)),
    ("Parallel: Crystal, Tag and Ledger at once", "Analyze my spending and suggest improvements", Some(STATEMENT)),
    ("Workflow: extract, categorize, then analysis and deductions", "Give me a spending review", Some(STATEMENT)),
    ("Tool agent with a Task Note, verified", EMAIL_NOTE, None),
    ("A bad Task Note is sent back for clarification", "Email Alex about that thing we talked about earlier", None),
];

pub(super) const RECEIPT: &str = include_str!("../../examples/receipt.txt");
pub(super) const RECEIPTS: &str = include_str!("../../examples/receipts.txt");
pub(super) const STATEMENT: &str = include_str!("../../examples/statement.csv");
pub(super) const EMAIL_NOTE: &str = "Draft apology email to alex.chan@company.com about missed project deadline. \
Mention new ETA of Oct 22. Tone: warm-professional. Length: max 120 words. \
Required: apologize, acknowledge impact, provide new timeline. Subject hint: \"Apology for delay\"";

pub(super) async fn run(runtime: &Runtime, json: bool) -> u8 {
    let user = UserId::parse("demo-user").expect("a valid user id");
    let mut code = EXIT_OK;
    let mut all = Vec::new();
    for (title, message, input) in SCENARIOS {
        let opts = AskOptions { input: input.map(str::to_string), ..AskOptions::default() };
        match runtime.enter(Door::Cli, &Principal::User(user.clone()), Turn::ask(*message, opts)).await {
            Ok(r) => {
                if json {
                    all.push(json!({"scenario": title, "message": message, "answer": r.answer, "status": r.status, "tree": r.tree}));
                } else {
                    outln!("━━ {title}\n> {message}\n");
                    print_ask(&r, false);
                    outln!();
                }
            }
            Err(e) => {
                eprintln!("{title}: {}: {}", e.code, e.message);
                code = EXIT_FAILED;
            }
        }
    }
    if json {
        outln!("{}", serde_json::Value::Array(all));
    }
    code
}
