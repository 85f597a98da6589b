//! PII: agents see typed tokens, the caller gets its values back, look-alikes
//! are left alone, and no raw value reaches the audit log or the tree.

use std::sync::{Arc, Mutex};

use switchboard::AgentOutput;
use switchboard::Call;

use crate::support::*;

const RAW: &[&str] = &[
    "alex.chan@company.com",
    "(415) 555-2671",
    "4111 1111 1111 1111",
    "GB82 WEST 1234 5698 7654 32",
    "123-45-6789",
    "192.168.10.24",
    "2001:db8::1",
];

fn message() -> String {
    format!(
        "Contact {} or {}. Card {}, IBAN {}, SSN {}, server {} / {}. \
         Not PII: card-like 4111 1111 1111 1112, order 2025-10-22, price $1,234.56, version 1.2.3.4.5",
        RAW[0], RAW[1], RAW[2], RAW[3], RAW[4], RAW[5], RAW[6]
    )
}

#[tokio::test]
async fn agents_see_tokens_and_the_caller_gets_the_values_back() {
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let (s1, s2) = (seen.clone(), seen.clone());
    let rt = builder(&[("a", &["b"], &[]), ("b", &["c"], &[]), ("c", &[], &[])])
        .agent(
            "b",
            agent(move |ctx, task| {
                let s1 = s1.clone();
                async move {
                    s1.lock().unwrap().push(format!("{} | {}", task.objective, task.input));
                    // hand the input on: the grandchild must see the same tokens
                    let r = ctx.delegator()?.delegate(Call::to("c", "forward")?.input(task.input.clone())).await;
                    Ok(AgentOutput::new("echoed", format!("{} || {}", task.input, r.result)))
                }
            }),
        )
        .agent(
            "c",
            agent(move |_ctx, task| {
                let s2 = s2.clone();
                async move {
                    s2.lock().unwrap().push(task.input.clone());
                    Ok(AgentOutput::new("c", task.input))
                }
            }),
        )
        .build()
        .unwrap();
    let mut req = nested_request("a", "b", &format!("write to {}", RAW[0]));
    req.input = message();
    let r = rt.delegate(&operator(), req.clone()).await;
    assert!(r.is_success(), "{r:?}");

    let seen = seen.lock().unwrap().join("\n");
    for raw in RAW {
        assert!(!seen.contains(raw), "agent saw raw {raw}: {seen}");
    }
    for token in ["<EMAIL_1>", "<PHONE_1>", "<CARD_1>", "<IBAN_1>", "<SSN_1>", "<IP_1>", "<IP_2>"] {
        assert!(seen.contains(token), "{token} missing: {seen}");
    }
    for lookalike in ["4111 1111 1111 1112", "2025-10-22", "$1,234.56", "1.2.3.4.5"] {
        assert!(seen.contains(lookalike), "look-alike {lookalike} was redacted: {seen}");
    }
    // the caller supplied these values: it gets them back, in both hops' output
    assert_eq!(r.result.matches(RAW[2]).count(), 2, "{}", r.result);
    assert!(!r.result.contains("<CARD_1>"));

    let audit = serde_json::to_string(&rt.store().audit_log().await.unwrap()).unwrap();
    let tree = serde_json::to_string(&rt.tree(req.request_id).await.unwrap()).unwrap();
    for raw in RAW {
        assert!(!audit.contains(raw), "audit holds raw {raw}");
        assert!(!tree.contains(raw), "tree holds raw {raw}");
    }
    assert!(audit.contains("write to <EMAIL_1>"), "{audit}");
}

#[tokio::test]
async fn an_agent_trusted_with_pii_sees_the_real_values() {
    let seen = Arc::new(Mutex::new(String::new()));
    let s = seen.clone();
    let mut cfg = config(&[("a", &["b"], &[]), ("b", &[], &[])]);
    cfg.agents[1].pii_access = true;
    let rt = switchboard::Runtime::builder()
        .config(cfg)
        .agent("a", echo(counter()))
        .agent(
            "b",
            agent(move |_ctx, task| {
                let s = s.clone();
                async move {
                    *s.lock().unwrap() = task.input.clone();
                    Ok(AgentOutput::new("ok", "ok"))
                }
            }),
        )
        .build()
        .unwrap();
    let mut req = request("a", "b", "send it");
    req.input = format!("mail {}", RAW[0]);
    assert!(rt.delegate(&operator(), req).await.is_success());
    assert_eq!(*seen.lock().unwrap(), format!("mail {}", RAW[0]));
}

/// Collects what `tracing` writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Run alone in a process of its own: tracing caches which callsites a
/// subscriber wants, and tests on other threads of this binary racing to
/// register the same callsites can leave one marked unwanted.
#[test]
fn no_raw_pii_reaches_the_logs() {
    if std::env::var_os("SWITCHBOARD_LOG_CAPTURE_CHILD").is_some() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        return rt.block_on(logs_of_three_delegations());
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["pii::no_raw_pii_reaches_the_logs", "--exact", "--nocapture", "--test-threads", "1"])
        .env("SWITCHBOARD_LOG_CAPTURE_CHILD", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "the child ran no test: {text}");
}

async fn logs_of_three_delegations() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::FULL)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let rt = builder(&[("a", &["b", "c"], &[]), ("b", &[], &[]), ("c", &[], &[])])
        .agent("b", agent(|_ctx, task| async move { Ok(AgentOutput::new(format!("saw {}", task.input), task.input)) }))
        .agent(
            "c",
            agent(|_ctx, task| async move {
                Err(switchboard::DelegationError::new(
                    switchboard::ErrorCode::AgentFailed,
                    format!("could not handle {}", task.input),
                ))
            }),
        )
        .build()
        .unwrap();
    let mut ok = request("a", "b", &format!("mail {}", RAW[0]));
    ok.input = message();
    rt.delegate(&operator(), ok).await;
    let mut failing = request("a", "c", &format!("call {}", RAW[1]));
    failing.input = message();
    rt.delegate(&operator(), failing).await;
    let mut refused = request("a", "nobody-here", &format!("card {}", RAW[2]));
    refused.input = message();
    rt.delegate(&operator(), refused).await;

    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("delegation finished") && logs.contains("delegation refused"),
        "the logs were captured: {logs}"
    );
    for raw in RAW {
        assert!(!logs.contains(raw), "raw {raw} in the logs:\n{logs}");
    }
}

/// Issue 15, reproduced on main: the vault lives per tree, so in turn 2 of a
/// session the new number got `<PHONE_1>` too, and turn 1's `<PHONE_1>` in
/// the history was restored with turn 2's number: another person's.
#[tokio::test]
async fn two_persons_numbers_in_two_turns_are_each_restored_to_their_own_turn() {
    const ANN: &str = "(415) 555-2671";
    const BOB: &str = "(212) 555-0198";
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let s = seen.clone();
    // answers with what it remembers of the session, then with this turn's input
    let parrot = agent(move |_ctx, task| {
        let s = s.clone();
        async move {
            let remembered: Vec<String> = task.history.iter().map(|m| format!("{}: {}", m.role, m.content)).collect();
            s.lock().unwrap().push(format!("{} || {}", remembered.join(" / "), task.objective));
            Ok(AgentOutput::new("noted", format!("earlier [{}] now [{}]", remembered.join(" / "), task.objective)))
        }
    });
    let rt = builder(&[("parrot", &[], &[])]).agent("parrot", parrot).build().unwrap();
    let alice = switchboard::protocol::UserId::parse("alice").unwrap();
    let to = |session| switchboard::AskOptions {
        agent: Some(switchboard::protocol::AgentSlug::parse("parrot").unwrap()),
        session,
        ..Default::default()
    };
    let first = rt.ask(&alice, &format!("Call Ann at {ANN}"), to(None)).await.unwrap();
    assert!(first.answer.contains(ANN), "{}", first.answer);
    let second = rt.ask(&alice, &format!("Call Bob at {BOB}"), to(Some(first.session_id))).await.unwrap();
    // the agent saw two different tokens for two different numbers
    let seen = seen.lock().unwrap().clone();
    assert!(seen[1].contains("<PHONE_1>") && seen[1].contains("<PHONE_2>"), "{seen:?}");
    assert!(!seen.iter().any(|s| s.contains(ANN) || s.contains(BOB)), "{seen:?}");
    // and Bob's number appears once, in this turn, never in place of Ann's
    assert_eq!(second.answer.matches(BOB).count(), 1, "{}", second.answer);
    let earlier = second.answer.split("now [").next().unwrap();
    assert!(!earlier.contains(BOB), "turn 1's number was restored with turn 2's: {}", second.answer);
}

/// An agent that asks a person before it "calls": objectives that start
/// with "Call" wait for approval `call`. What it saw goes to `seen`.
fn caller_runtime(
    seen: &Arc<Mutex<Vec<String>>>,
    store: Option<Arc<dyn switchboard::store::Store>>,
    key_file: Option<&std::path::Path>,
) -> switchboard::Runtime {
    let s = seen.clone();
    let caller = agent(move |ctx, task| {
        let s = s.clone();
        async move {
            s.lock().unwrap().push(task.objective.clone());
            if task.objective.starts_with("Call") {
                ctx.approve("call", &task.objective).await?;
            }
            Ok(AgentOutput::new("done", format!("done: {}", task.objective)))
        }
    });
    let mut toml = String::from("[[agents]]\nslug = \"caller\"\nname = \"caller\"\nrequires_approval = [\"call\"]\n");
    if let Some(key) = key_file {
        toml = format!("[pii]\nseal_key_file = {:?}\n\n{toml}", key.display().to_string());
    }
    let mut b = switchboard::Runtime::builder().config(switchboard::config::Config::from_toml(&toml).unwrap());
    if let Some(store) = store {
        b = b.store(store);
    }
    b.agent("caller", caller).build().unwrap()
}

fn to_caller(session: Option<switchboard::protocol::SessionId>) -> switchboard::AskOptions {
    switchboard::AskOptions {
        agent: Some(switchboard::protocol::AgentSlug::parse("caller").unwrap()),
        session,
        ..Default::default()
    }
}

const ANN: &str = "(415) 555-2671";
const BOB: &str = "(212) 555-0198";

/// Turn 1 notes Ann's number, turn 2 asks to call Bob and pauses for approval: its root id.
async fn two_turns_the_second_paused(rt: &switchboard::Runtime) -> switchboard::protocol::RequestId {
    let alice = switchboard::protocol::UserId::parse("alice").unwrap();
    let first = rt.ask(&alice, &format!("Note Ann's number {ANN}"), to_caller(None)).await.unwrap();
    assert!(first.answer.contains(ANN), "{}", first.answer);
    let second = rt.ask(&alice, &format!("Call Bob at {BOB}"), to_caller(Some(first.session_id))).await.unwrap();
    assert_eq!(second.status, switchboard::protocol::Status::NeedsApproval, "{}", second.answer);
    second.request_id
}

/// Approves the pending approval and resumes its tree: the answer, as the caller gets it.
async fn approve_and_resume(rt: &switchboard::Runtime, root: switchboard::protocol::RequestId) -> String {
    let me = switchboard::Principal::User(switchboard::protocol::UserId::parse("alice").unwrap());
    let approval = rt.approvals(&me, true).await.unwrap().pop().unwrap();
    assert!(!approval.summary.contains(BOB), "{}", approval.summary);
    rt.decide(&me, &approval.id, true, None).await.unwrap();
    let done = rt.resume_tree(root).await.unwrap();
    assert_eq!(done.status, switchboard::protocol::Status::Success, "{:?}", done.error);
    done.result
}

/// A tree paused for approval runs again from its journal step. On main the
/// step's envelope was tokenized on a vault of its own: in turn 2 of a
/// session Bob's number was `<PHONE_1>` there, while the session's vault
/// (which the resumed tree takes) says `<PHONE_1>` is Ann's, so the answer
/// after the approval named Ann's number where the user had typed Bob's.
#[tokio::test]
async fn a_tree_resumed_after_an_approval_restores_this_turns_values_not_an_earlier_turns() {
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let rt = caller_runtime(&seen, None, None);
    let root = two_turns_the_second_paused(&rt).await;
    let answer = approve_and_resume(&rt, root).await;
    // the resumed agent saw the same token for Bob's number as before the pause
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert_eq!(seen[1], seen[2], "the objective before and after the pause");
    assert!(answer.contains(BOB) && !answer.contains(ANN), "Bob's number, not Ann's: {answer}");
}

/// Across a restart the session's vault is gone; the tree's, sealed in its
/// journal step under the key file, gives the user their values back. The
/// database holds neither number. A process with another key opens nothing:
/// the answer keeps its token, never a wrong value.
#[tokio::test]
async fn a_tree_resumed_after_a_restart_gives_the_values_back_with_its_key_and_tokens_without_it() {
    let db = crate::db::sqlite().await;
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("keys").join("pii-seal.key");
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let root = two_turns_the_second_paused(&caller_runtime(&seen, Some(db.dyn_store()), Some(&key))).await;
    let step = db.dyn_store().step(root).await.unwrap().unwrap();
    let sealed = step.pii.clone().expect("the paused tree's vault is kept, sealed");
    // every form of the two numbers, but not "555" alone: that turns up by
    // chance inside the envelope's uuids (it failed a CI run so)
    for raw in [ANN, BOB, "555-2671", "555-0198", "5552671", "5550198"] {
        assert!(!sealed.contains(raw) && !step.request.contains(raw), "{raw} in the journal");
    }

    // another process, the same key file
    let answer = approve_and_resume(&caller_runtime(&seen, Some(db.dyn_store()), Some(&key)), root).await;
    assert!(answer.contains(BOB) && !answer.contains(ANN), "Bob's number after a restart: {answer}");

    // a process without the key: the token stays a token
    let root = two_turns_the_second_paused(&caller_runtime(&seen, Some(db.dyn_store()), Some(&key))).await;
    let other = dir.path().join("other.key");
    let answer = approve_and_resume(&caller_runtime(&seen, Some(db.dyn_store()), Some(&other)), root).await;
    assert!(answer.contains("<PHONE_") && !answer.contains(ANN) && !answer.contains(BOB), "{answer}");

    // a key file that is not a key: a clear error naming it
    std::fs::write(&other, "not a key").unwrap();
    let toml = format!("[pii]\nseal_key_file = {:?}\n", other.display().to_string());
    let err = switchboard::Runtime::builder().config(switchboard::config::Config::from_toml(&toml).unwrap()).build();
    let err = err.map(drop).unwrap_err();
    assert!(err.message.contains("other.key") && err.message.contains("64 hex digits"), "{}", err.message);
}

/// Numbers as a PDF statement or a spreadsheet spells them (no-break and
/// thin spaces, Unicode dashes, dots, a line break inside the number) reach
/// no agent and no table raw: not the money records, the audit log, the tree's
/// steps nor the conversation.
#[tokio::test]
async fn spellings_from_pdfs_and_spreadsheets_reach_no_table_raw() {
    use switchboard::pipeline::AskOptions;
    use switchboard::runtime::Runtime;
    use switchboard::store::{MemoryStore, Store};
    let spelled = [
        ("4111\u{a0}1111\u{a0}1111\u{a0}1111", "4111111111111111"),
        ("5500\u{2013}0000\u{2013}0000\u{2013}0004", "5500000000000004"),
        ("3782 822463\n10005", "378282246310005"),
        ("123.45.6789", "123456789"),
        ("(415)\u{2009}555\u{2011}2671", "4155552671"),
        ("DE89\u{202f}3704\u{202f}0044\u{202f}0532\u{202f}0130\u{202f}00", "89370400440532013000"),
    ];
    let statement = format!(
        "2025-10-01 Starbucks 4.50 card {}\n2025-10-02 Uber 23.10 card {}\n2025-10-03 Amazon 19.99 card {}\n\
         2025-10-04 Refund 12.00 SSN {} phone {} IBAN {}\n",
        spelled[0].0, spelled[1].0, spelled[2].0, spelled[3].0, spelled[4].0, spelled[5].0
    );
    let store = Arc::new(MemoryStore::new());
    let rt = Runtime::builder().store(store.clone()).build().unwrap();
    let opts = AskOptions { input: Some(statement), ..AskOptions::default() };
    let r = rt.ask(&user("alice"), "Here's my bank statement", opts).await.unwrap();
    let kept = store.money(&user("alice")).await.unwrap();
    let mut amounts: Vec<i64> = kept.iter().map(|e| e.amount).collect();
    amounts.sort();
    assert_eq!(amounts, [-1200, 450, 1999, 2310], "no card's digits read as an amount: {}", r.answer);
    let tables = [
        serde_json::to_string(&kept).unwrap(),
        serde_json::to_string(&store.audit_log().await.unwrap()).unwrap(),
        serde_json::to_string(&store.tree_steps(r.request_id).await.unwrap()).unwrap(),
        serde_json::to_string(&store.recent_messages(r.session_id, 100).await.unwrap()).unwrap(),
    ];
    for (table, text) in ["ledger", "audit", "steps", "messages"].iter().zip(&tables) {
        // the digits alone, so no separator can hide a number
        let digits: String = text.chars().filter(char::is_ascii_digit).collect();
        for (raw, bare) in spelled {
            assert!(!text.contains(raw) && !digits.contains(bare), "{table} holds {raw:?}: {text}");
        }
    }
}
