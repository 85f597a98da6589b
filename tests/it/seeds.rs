//! Seeded agents through the runtime: a request whose
//! checks the agent's first approach fails is answered by its second, which
//! the store promotes while the first is penalized; the next such task goes
//! to the promoted seed first, and once.

use serde_json::Value;
use switchboard::Runtime;
use switchboard::auth::Principal;
use switchboard::protocol::{AgentSlug, Check, DelegationRequest, DelegationResponse, ErrorCode, Status, UserId};
use switchboard::store::task_signature;

/// The seeds an agent of the built-in team tries, in its default order.
fn seeds(rt: &Runtime, agent: &str) -> Vec<u64> {
    let member = rt.registry().get(&AgentSlug::parse(agent).unwrap()).unwrap_or_else(|| panic!("no agent {agent}"));
    member.agent.seeds().to_vec()
}

/// Data and report Task Notes, as an operator sends them.
const DATA_NOTE: &str = "Transform CSV data to JSON format.\nInput columns: name, email, role.\nOutput structure: array of objects with camelCase keys.\nValidate: all emails match pattern, no duplicates.";
const REPORT_NOTE: &str = "Format weekly progress report.\nInput: 12 tasks completed, 3 in progress, 2 blocked.\nOutput: Professional summary, bullet points, metrics.\nInclude completion rate calculation.\nMax 300 words.";

fn slug(s: &str) -> AgentSlug {
    AgentSlug::parse(s).unwrap_or_else(|e| panic!("{e}"))
}

/// Prime's request to `target` with a Task Note, as the operator sends it.
async fn send_to(rt: &Runtime, target: &str, objective: &str, note: &str) -> DelegationResponse {
    let user = UserId::parse("alice").unwrap_or_else(|e| panic!("{e}"));
    let mut r = DelegationRequest::new(slug("prime-boss"), slug(target), user, objective, "");
    r.task_note = Some(note.to_string());
    rt.delegate(&Principal::Admin, r).await
}

async fn send(rt: &Runtime, note: &str) -> DelegationResponse {
    send_to(rt, "data", "Transform the team roster", note).await
}

/// The store's scores for `agent` on this objective, by seed.
async fn scores(rt: &Runtime, agent: &str, objective: &str) -> Vec<(u64, f64)> {
    let mut scores = rt.store().seed_scores(&slug(agent), &task_signature(objective)).await.unwrap_or_default();
    scores.sort_by_key(|(seed, _)| *seed);
    scores
}

fn sorted(mut pairs: Vec<(u64, f64)>) -> Vec<(u64, f64)> {
    pairs.sort_by_key(|(seed, _)| *seed);
    pairs
}

/// A roster with an address that is no email and a repeated row. (No
/// duplicate differing only in case: under PII redaction the two spellings
/// become different tokens, so the agent could not see them as one.)
const ROSTER: &str = "name,email,role\nAlex Chan,alex.chan@company.com,PM\nBo,bo@x,dev\nBea Li,bea.li@company.com,Engineer\nAlex Chan,alex.chan@company.com,PM";

#[tokio::test]
async fn through_the_runtime_the_lenient_reader_fails_validation_and_the_strict_one_is_promoted() {
    let rt = Runtime::embedded();
    let data = seeds(&rt, "data");
    let note = format!("{DATA_NOTE}\n{ROSTER}");
    let r = send(&rt, &note).await;
    assert_eq!(r.status, Status::Success, "{r:#?}");
    let exec = r.execution.clone().expect("an execution record");
    assert_eq!((exec.attempts, exec.seeds_tried.clone()), (2, data.clone()), "lenient first, then strict");
    // the first attempt is kept with what it lacked
    assert_eq!(r.attempts.len(), 1);
    let first = &r.attempts[0];
    assert_eq!((first.attempt, first.seed, first.error.code), (1, Some(data[0]), ErrorCode::VerificationFailed));
    assert_eq!(first.verdict.as_ref().map(|v| v.failed()), Some(vec!["valid_email"]));
    // the answer is the strict reader's: only the row it could vouch for
    let v = r.verifier.clone().expect("a verdict");
    assert!(v.passed && v.checks.iter().any(|c| c.name == "valid_email" && c.passed), "{v:#?}");
    let records: Value = serde_json::from_str(&r.result).expect("JSON records");
    assert_eq!(records.as_array().map(Vec::len), Some(2), "{}", r.result);
    assert!(!r.result.contains("bo@x") && r.result.contains("Bea Li"), "{}", r.result);
    let learned = r.learned.clone().expect("what was learned");
    assert!(learned.seed_promoted && learned.new_seed, "{learned:?}");

    // the store penalized the lenient seed and promoted the strict one
    assert_eq!(scores(&rt, "data", "Transform the team roster").await, sorted(vec![(data[0], -1.0), (data[1], 1.0)]));

    // so the next such task goes to the strict reader first, and once
    let again = send(&rt, &note).await;
    let exec = again.execution.expect("an execution record");
    assert_eq!((again.status, exec.attempts, exec.seeds_tried), (Status::Success, 1, vec![data[1]]));
}

#[tokio::test]
async fn through_the_runtime_a_word_limit_the_sectioned_report_exceeds_is_met_by_the_brief() {
    let rt = Runtime::embedded();
    let report = seeds(&rt, "report");
    let note = REPORT_NOTE.replace("Max 300 words", "Max 30 words");
    let r = send_to(&rt, "report", "Weekly progress report", &note).await;
    assert_eq!(r.status, Status::Success, "{r:#?}");
    let exec = r.execution.clone().expect("an execution record");
    assert_eq!((exec.attempts, exec.seeds_tried), (2, report.clone()));
    assert_eq!(r.attempts[0].verdict.as_ref().map(|v| v.failed()), Some(vec!["max_30_words"]));
    assert!(r.result.contains("- Completion rate: 12 / 17 tasks = 70.6%"), "{}", r.result);
    assert!(r.result.split_whitespace().filter(|w| w.chars().any(char::is_alphanumeric)).count() <= 30, "{}", r.result);
    let expected = sorted(vec![(report[0], -1.0), (report[1], 1.0)]);
    assert_eq!(scores(&rt, "report", "Weekly progress report").await, expected);
}

// The finance agents (Byte, Tag): a check only the second approach meets.

/// An OCR misread: the items and tax add to 81.03, the TOTAL reads 18.03.
const MISREAD: &str =
    "Office Depot\n2025-10-14\nToner cartridge 62.00\nPrinter paper 13.00\nSubtotal 75.00\nTax 6.03\nTOTAL 18.03";
/// Office supplies bought at a warehouse store.
const COSTCO: &str = "Costco Wholesale\n2025-10-14\nPrinter paper 24.99\nToner 29.21\nTotal 54.20";

/// Prime's request to `target` with explicit checks.
async fn send_checked(
    rt: &Runtime,
    target: &str,
    objective: &str,
    input: &str,
    checks: Vec<Check>,
) -> DelegationResponse {
    let user = UserId::parse("alice").unwrap_or_else(|e| panic!("{e}"));
    let mut r = DelegationRequest::new(slug("prime-boss"), slug(target), user, objective, input);
    r.checks = checks;
    rt.delegate(&Principal::Admin, r).await
}

/// The first seed failed `check`, the second passed: two attempts in the
/// agent's order, the first kept with the check it failed, and the scores.
async fn second_seed_answered(
    rt: &Runtime,
    r: &DelegationResponse,
    (agent, objective): (&str, &str),
    seeds: Vec<u64>,
    check: &str,
) {
    assert_eq!(r.status, Status::Success, "{r:#?}");
    let exec = r.execution.clone().expect("an execution record");
    assert_eq!((exec.attempts, exec.seeds_tried), (2, seeds.clone()));
    assert_eq!(r.attempts.len(), 1, "{:#?}", r.attempts);
    let first = &r.attempts[0];
    assert_eq!((first.attempt, first.seed, first.error.code), (1, Some(seeds[0]), ErrorCode::VerificationFailed));
    assert_eq!(first.verdict.as_ref().map(|v| v.failed()), Some(vec![check]));
    let v = r.verifier.clone().expect("a verdict");
    assert!(v.passed && v.checks.iter().any(|c| c.name == check && c.passed), "{v:#?}");
    let learned = r.learned.clone().expect("what was learned");
    assert!(learned.seed_promoted && learned.new_seed, "{learned:?}");
    assert_eq!(scores(rt, agent, objective).await, sorted(vec![(seeds[0], -1.0), (seeds[1], 1.0)]));
}

const MATCHING: &str = "Extract the receipt for expense matching";
const REPORT: &str = "Categorize the receipt for the expense report";

#[tokio::test]
async fn through_the_runtime_a_card_charge_the_printed_total_misses_is_met_by_the_reconciled_total() {
    let rt = Runtime::embedded();
    let byte = seeds(&rt, "byte-doc");
    // the expense system matching the receipt to the bank line knows the charge
    let check = Check::Contains { phrase: "$81.03".into() };
    let r = send_checked(&rt, "byte-doc", MATCHING, MISREAD, vec![check]).await;
    second_seed_answered(&rt, &r, ("byte-doc", MATCHING), byte.clone(), "contains_81_03").await;
    assert!(r.result.contains("$81.03 at Office Depot"), "{}", r.result);
    assert_eq!(r.attempts[0].output.as_deref().map(|o| o.contains("$18.03 at Office Depot")), Some(true));

    // so the next such receipt goes to the reconciled total first, and once
    let again =
        send_checked(&rt, "byte-doc", MATCHING, MISREAD, vec![Check::Contains { phrase: "$81.03".into() }]).await;
    let exec = again.execution.expect("an execution record");
    assert_eq!((again.status, exec.attempts, exec.seeds_tried), (Status::Success, 1, vec![byte[1]]));
}

#[tokio::test]
async fn through_the_runtime_an_office_supplies_report_is_met_by_what_was_bought() {
    let rt = Runtime::embedded();
    let tag = seeds(&rt, "tag-ai");
    let check = Check::Contains { phrase: "-> Office Supplies".into() };
    let r = send_checked(&rt, "tag-ai", REPORT, COSTCO, vec![check]).await;
    second_seed_answered(&rt, &r, ("tag-ai", REPORT), tag, "contains_office_supplies").await;
    assert!(r.result.contains("-> Office Supplies (75%)"), "{}", r.result);
    assert_eq!(r.attempts[0].output.as_deref().map(|o| o.contains("-> Groceries (95%)")), Some(true));
}
