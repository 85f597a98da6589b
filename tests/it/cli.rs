//! The `switchboard` binary: the scenarios, exit codes and bad input.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

/// The binary, with state in memory unless a test names a database.
fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_switchboard"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c.env_remove("SWITCHBOARD_CONFIG").env_remove("SWITCHBOARD_USER").env_remove("RUST_LOG");
    c.env("SWITCHBOARD_DATABASE_URL", "memory:");
    c
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", stdout(o), stderr(o)))
}

fn children(tree: &Value) -> Vec<String> {
    tree["children"].as_array().unwrap().iter().map(|c| c["agent"].as_str().unwrap().to_string()).collect()
}

fn example(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples").join(name).display().to_string()
}

#[test]
fn upload_a_receipt_and_categorize_it_chains_byte_then_tag() {
    let o = run(&["ask", "--json", "--file", &example("receipt.txt"), "Upload this receipt and categorize it"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["tree"]["agent"], "prime-boss");
    assert_eq!(children(&v["tree"]), ["byte-doc", "tag-ai"]);
    let answer = v["answer"].as_str().unwrap();
    for needle in ["Starbucks", "$45.99", "Dining - Coffee", "Byte", "Tag"] {
        assert!(answer.contains(needle), "{needle} missing from: {answer}");
    }
    assert!(v["session_id"].as_str().unwrap().len() == 36);
    for child in v["tree"]["children"].as_array().unwrap() {
        for key in ["objective", "status", "duration_ms", "children"] {
            assert!(child.get(key).is_some(), "{key} missing in {child}");
        }
        assert_eq!(child["status"], "success");
    }
}

#[test]
fn receipts_and_tax_deductions_chain_byte_then_ledger() {
    let o =
        run(&["ask", "--json", "--file", &example("receipts.txt"), "Analyze my receipts and suggest tax deductions"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(children(&v["tree"]), ["byte-doc", "ledger-tax"]);
    assert!(v["answer"].as_str().unwrap().contains("deductible"), "{}", v["answer"]);
}

#[test]
fn analyzing_spending_fans_out_to_crystal_tag_and_ledger_in_parallel() {
    let o =
        run(&["ask", "--json", "--file", &example("statement.csv"), "Analyze my spending and suggest improvements"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    let mut kids = children(&v["tree"]);
    kids.sort();
    assert_eq!(kids, ["crystal-analytics", "ledger-tax", "tag-ai"]);
    let answer = v["answer"].as_str().unwrap();
    assert!(answer.contains("(parallel)"), "{answer}");
    assert!(answer.contains("Crystal") && answer.contains("Ledger"), "{answer}");
}

#[test]
fn a_greeting_and_a_general_question_are_answered_directly() {
    for message in ["Hello!", "What is an emergency fund?"] {
        let o = run(&["ask", "--json", message]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v = json(&o);
        assert!(children(&v["tree"]).is_empty(), "{message} was delegated: {v}");
        assert!(!v["answer"].as_str().unwrap().is_empty());
    }
}

#[test]
fn the_seed_email_task_note_gets_a_short_draft_mentioning_the_new_eta() {
    let note = "Draft apology email to alex.chan@company.com about missed project deadline. \
        Mention new ETA of Oct 22. Tone: warm-professional. Length: max 120 words. \
        Required: apologize, acknowledge impact, provide new timeline.";
    let o = run(&["ask", "--json", note]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(children(&v["tree"]), ["email"]);
    let answer = v["answer"].as_str().unwrap();
    // "I had Email take this. <summary>\n\n<draft>"
    let draft = answer.split_once("\n\n").map(|(_, d)| d).unwrap_or_default();
    let words = draft.split_whitespace().count();
    assert!((20..=120).contains(&words), "{words} words: {draft}");
    assert!(draft.contains("Oct 22"), "{draft}");
    // issue 15: the address was tokenised on the way to Email, so it greeted
    // "Hi there"; its name comes back from the user's own vault
    assert!(draft.starts_with("Hi Alex,"), "{draft}");

    // The same note sent directly shows the verifier's verdict.
    let o = run(&["delegate", "--json", "--to", "email", "--objective", "Draft apology email", "--task-note", note]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = json(&o);
    assert_eq!(r["verifier"]["passed"], true, "{r}");
    let names: Vec<&str> =
        r["verifier"]["checks"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"max_120_words") && names.contains(&"contains_oct_22"), "{names:?}");
    assert_eq!(r["execution"]["attempts"], 1);
    assert!(r["result"].as_str().unwrap().starts_with("Hi Alex,"), "{r}");
}

#[test]
fn exit_codes_say_refused_failed_or_usage() {
    // refused by a rail: 3
    let o = run(&["delegate", "--from", "byte-doc", "--to", "tag-ai", "--depth", "1", "--objective", "Categorize"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("DEPTH_LIMIT"), "{}", stderr(&o));
    let o = run(&["delegate", "--from", "tag-ai", "--to", "ledger-tax", "--objective", "x"]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("DELEGATION_NOT_ALLOWED"));
    // input without what the agent needs: a question back, 0
    let o = run(&["delegate", "--to", "byte-doc", "--objective", "Extract receipt data", "--input", "no receipt here"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("needs more from you") && stdout(&o).contains("paste the receipt"), "{}", stdout(&o));
    // the agent failed or timed out: 4 (3,000 rows cannot be converted in 1 ms)
    let csv: String = (0..3000).map(|i| format!("Person {i},p{i}@example.com,role\n")).collect();
    let o = run(&[
        "delegate",
        "--to",
        "data",
        "--objective",
        "Transform CSV data to JSON",
        "--task-note",
        "Transform CSV data to JSON format.\nInput columns: name, email, role.",
        "--deadline-ms",
        "1",
        "--input",
        &format!("name,email,role\n{csv}"),
    ]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("DEADLINE_EXCEEDED"), "{}", stderr(&o));
    // usage: 2
    for args in [
        vec!["delegate", "--to", "Not A Slug", "--objective", "x"],
        vec!["delegate", "--to", "ghost", "--objective", "x"],
        vec!["delegate", "--to", "email", "--objective", "x", "--max-tokens", "-5"],
        vec!["ask", "--user", "bad user", "hi"],
        vec!["ask", "--file", "/nonexistent/file", "hi"],
        vec!["frobnicate"],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).is_empty(), "{args:?} must say why");
    }
    // a successful delegation: 0
    let o = run(&[
        "delegate",
        "--to",
        "format",
        "--objective",
        "Format this text to professional business style. No abbreviations.",
        "--input",
        "hey can u send me the report thx",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// `ask --file` holds a file to `[limits]` before the work: a file over four
/// times `max_input_bytes` is refused before it is read, a text over
/// `max_input_bytes` as it is extracted; both `INVALID_REQUEST`, naming the
/// limit, and nothing reaches the runtime.
#[test]
fn a_file_over_the_limits_is_refused_before_it_is_read_or_extracted() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("state.db").display());
    let big = dir.path().join("big.csv");
    std::fs::write(&big, "2025-10-01,Starbucks,4.50\n".repeat(45_000)).unwrap(); // 1.17 MB
    let long = dir.path().join("long.csv");
    std::fs::write(&long, "2025-10-01,Starbucks,4.50\n".repeat(11_000)).unwrap(); // 286 KB
    for (file, says) in [
        (&big, "files up to 1048576 bytes are read (4 × [limits] max_input_bytes)"),
        (&long, "its text passes the input limit of 262144 bytes ([limits] max_input_bytes)"),
    ] {
        let o = run_on(&url, &["ask", "--json", "--file", file.to_str().unwrap(), "Categorize these"]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let v = json(&o);
        assert_eq!(v["error"]["code"], "INVALID_REQUEST", "{v}");
        assert!(v["error"]["message"].as_str().unwrap().contains(says), "{v}");
        let o = run_on(
            &url,
            &["delegate", "--to", "byte-doc", "--objective", "Extract", "--input-file", file.to_str().unwrap()],
        );
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("INVALID_REQUEST") && stderr(&o).contains(says), "{}", stderr(&o));
    }
    let o = run_on(&url, &["audit", "--json"]);
    assert_eq!(json(&o)["records"].as_array().map(Vec::len), Some(0), "nothing was run: {}", stdout(&o));
}

#[test]
fn a_bad_config_file_is_a_usage_error_that_names_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("team.toml");
    std::fs::write(&path, "[limits]\nfan_out = \"three\"\n").unwrap();
    let o = run(&["--config", path.to_str().unwrap(), "agents"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("fan_out"), "{}", stderr(&o));
    let o = run(&["agents", "--config", "/nonexistent.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot read"), "{}", stderr(&o));
    // the lineage settings (issue 16): each mistake named
    let team = switchboard::config::DEFAULT_TOML;
    for (extra, named) in [
        ("[auth]\nservice_roots = { \"ghost\" = [\"*\"] }\n", "auth.service_roots names unknown agent 'ghost'"),
        ("[auth]\nservice_roots = { \"prime-boss\" = [\"not a user\"] }\n", "'not a user' is not a user id"),
        ("[lineage]\nname = \"runtime a\"\n", "lineage.name 'runtime a'"),
    ] {
        std::fs::write(&path, format!("{team}\n{extra}")).unwrap();
        let o = run(&["--config", path.to_str().unwrap(), "agents"]);
        assert_eq!(o.status.code(), Some(2), "{extra}");
        assert!(stderr(&o).contains(named), "{extra}: {}", stderr(&o));
    }
    let remote = "[[agents]]\nslug = \"far\"\nname = \"Far\"\nbackend = { kind = \"http\", url = \"http://127.0.0.1:9\", peer = \"no spaces\" }\n";
    std::fs::write(&path, format!("{team}\n{remote}")).unwrap();
    let o = run(&["--config", path.to_str().unwrap(), "agents"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("agent 'far': backend.peer 'no spaces'"), "{}", stderr(&o));
}

#[test]
fn agents_lists_the_team_with_breaker_state() {
    let o = run(&["agents", "--json"]);
    assert!(o.status.success());
    let v = json(&o);
    let slugs: Vec<&str> = v.as_array().unwrap().iter().map(|a| a["slug"].as_str().unwrap()).collect();
    assert_eq!(slugs.len(), 12);
    assert!(slugs.contains(&"prime-boss") && slugs.contains(&"blitz-debt") && slugs.contains(&"calendar"));
    assert!(v.as_array().unwrap().iter().all(|a| a["breaker"] == "closed"));
}

#[test]
fn demo_runs_every_scenario() {
    let o = run(&["demo", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    let scenarios = v.as_array().unwrap();
    assert_eq!(scenarios.len(), 7);
    let (bad_note, rest) = scenarios.split_last().unwrap();
    assert!(rest.iter().all(|s| s["status"] == "success"), "{v:#}");
    // the user's vague note comes back as a question for them, not a success
    assert_eq!(bad_note["status"], "needs_input", "{bad_note:#}");
    assert!(bad_note["answer"].as_str().unwrap().contains("Email asks: Please tell me more"), "{bad_note:#}");
}

#[test]
fn the_seed_task_notes_run_end_to_end_through_delegate_with_their_verdicts_printed() {
    let email = "Draft apology email to alex.chan@company.com about missed project deadline. Mention new ETA of Oct 22. \
        Tone: warm-professional. Length: max 120 words. Required: apologize, acknowledge impact, provide new timeline.";
    let format = "Format this text to professional business style:\n\"hey can u send me the report thx\"\n\n\
        Target: formal email greeting.\nPreserve intent, improve clarity.\nNo abbreviations, proper capitalization.";
    let data = "Transform CSV data to JSON format.\nInput columns: name, email, role.\n\
        Output structure: array of objects with camelCase keys.\nValidate: all emails match pattern, no duplicates.";
    let csv = "name,email,role\nAlex Chan,alex.chan@company.com,PM\nBea Li,bea.li@company.com,Engineer\nAlex Chan,alex.chan@company.com,PM\n";
    for (agent, note, input, expect) in [
        ("email", email, "", vec!["✓ max_120_words", "✓ contains_oct_22", "✓ required_apologize"]),
        ("format", format, "", vec!["Thank you", "verifier: passed"]),
        ("data", data, csv, vec!["✓ keys_camel_case", "✓ valid_email", "✓ unique_email", "1 duplicate removed"]),
    ] {
        let o =
            run(&["delegate", "--to", agent, "--objective", "Do the Task Note", "--task-note", note, "--input", input]);
        let out = stdout(&o);
        assert!(o.status.success(), "{agent}: {}\n{out}", stderr(&o));
        assert!(out.contains("verifier: passed"), "{agent}: {out}");
        for e in expect {
            assert!(out.contains(e), "{agent}: '{e}' missing in\n{out}");
        }
        assert!(out.contains("execution: 1 attempt(s)"), "{out}");
    }
}

fn run_on(db: &str, args: &[&str]) -> Output {
    bin().env("SWITCHBOARD_DATABASE_URL", db).args(args).output().expect("the binary runs")
}

#[test]
fn state_lives_in_the_database_named_by_the_flag_or_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("state.db").display());
    // the flag after the subcommand...
    let o = run(&[
        "ask",
        "--json",
        "--file",
        &example("receipt.txt"),
        "Upload this receipt and categorize it",
        "--database-url",
        &url,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let id = json(&o)["request_id"].as_str().unwrap().to_string();
    // ...before it...
    let o = run(&["--database-url", &url, "trace", &id, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let tree = json(&o);
    assert_eq!(tree["agent"], "prime-boss");
    assert_eq!(children(&tree), ["byte-doc", "tag-ai"]);
    assert!(tree["children"][0]["duration_ms"].is_u64());
    // ...or in the environment
    let o = run_on(&url, &["trace", &id]);
    let text = stdout(&o);
    assert!(text.contains("byte-doc \"Extract receipt data\" success"), "{text}");
    let o = run_on(&url, &["audit", "--verify"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("audit chain verified: 3 records"), "{}", stdout(&o));
    let o = run_on(&url, &["audit", "--json", "--verify", "--last", "1"]);
    let v = json(&o);
    assert_eq!(v["verify"]["valid"], true);
    assert_eq!(v["records"].as_array().unwrap().len(), 1);
    assert_eq!(v["records"][0]["target"], "prime-boss");

    // issue 15: the last record deleted behind the service's back is named, not missed
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        use sqlx::Executor;
        let store = switchboard::SqlStore::connect(&url).await.unwrap();
        store.pool().execute("DELETE FROM audit_log WHERE seq = 3").await.unwrap();
    });
    let o = run_on(&url, &["audit", "--verify"]);
    assert!(!o.status.success(), "a truncated log must not verify");
    assert!(stdout(&o).contains("BROKEN at record 3: records 3 to 3 are missing"), "{}", stdout(&o));

    // a tree that is not there, and an id that is not one
    let o = run_on(&url, &["trace", "01a20144-ac5b-73dc-b3ce-30d30f72c767"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(run_on(&url, &["trace", "nope"]).status.code(), Some(2));
    let o = run(&["--database-url", "mysql://x@y/z", "agents"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("sqlite://PATH"), "{}", stderr(&o));
}

/// Issue 15: only an anchor outside the database sees the end of the log
/// deleted together with `audit_head` rewritten to match it.
#[test]
fn an_anchor_file_catches_a_tail_deleted_with_audit_head_rewritten_to_match() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("state.db").display());
    let config = dir.path().join("team.toml");
    // the built-in team, anchored to a file named relative to the working directory
    let team = include_str!("../../src/config/default.toml");
    std::fs::write(&config, format!("{team}\n[audit]\nanchor_file = \"anchor.json\"\n")).unwrap();
    let anchored = |args: &[&str]| {
        let mut c = bin();
        c.current_dir(dir.path()).env("SWITCHBOARD_DATABASE_URL", &url).env("SWITCHBOARD_CONFIG", &config);
        c.args(args).output().expect("the binary runs")
    };
    let categorize =
        ["delegate", "--to", "tag-ai", "--objective", "Categorize", "--input", "2025-10-01 Starbucks 4.50"];
    let o = anchored(&[&categorize[..], &["--repeat", "4"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let file: Value = serde_json::from_slice(&std::fs::read(dir.path().join("anchor.json")).unwrap()).unwrap();
    assert_eq!(file["seq"], 4, "{file}");
    let o = anchored(&["audit", "--verify"]);
    assert!(o.status.success(), "{}", stdout(&o));
    assert!(stdout(&o).contains("audit chain verified: 4 records"), "{}", stdout(&o));
    assert!(stdout(&o).contains("anchors checked: audit_head, anchor file anchor.json"), "{}", stdout(&o));

    // configured, but the file is gone while the log has records
    std::fs::rename(dir.path().join("anchor.json"), dir.path().join("moved.json")).unwrap();
    let o = anchored(&["audit", "--verify"]);
    assert_eq!(o.status.code(), Some(4));
    assert!(stdout(&o).contains("the anchor file is missing while the log has 4 records"), "{}", stdout(&o));
    std::fs::rename(dir.path().join("moved.json"), dir.path().join("anchor.json")).unwrap();

    // records 3 and 4 deleted, and audit_head rewritten to the new last record
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        use sqlx::Executor;
        let store = switchboard::SqlStore::connect(&url).await.unwrap();
        store.pool().execute("DELETE FROM audit_log WHERE seq > 2").await.unwrap();
        store
            .pool()
            .execute("UPDATE audit_head SET seq = 2, hash = (SELECT hash FROM audit_log WHERE seq = 2) WHERE id = 1")
            .await
            .unwrap();
    });
    let o = run_on(&url, &["audit", "--verify"]);
    assert!(o.status.success(), "the database alone cannot tell: {}", stdout(&o));
    let o = anchored(&["audit", "--verify"]);
    assert_eq!(o.status.code(), Some(4), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(
        out.contains("BROKEN at record 3: records 3 to 4 are missing: the log ends at 2, the anchor file at 4"),
        "{out}"
    );
    let v = json(&anchored(&["audit", "--json", "--verify"]));
    assert_eq!((v["verify"]["valid"].as_bool(), v["verify"]["broken_at"].as_u64()), (Some(false), Some(3)));
    assert_eq!(v["verify"]["anchors"], serde_json::json!(["audit_head", "anchor file anchor.json"]));

    // the next delegation does not paper over it: the file stays as the evidence
    let o = anchored(&categorize);
    assert!(o.status.success(), "the commit stands: {}", stderr(&o));
    assert!(stderr(&o).contains("holds record 4, which the log does not have"), "{}", stderr(&o));
    let kept: Value = serde_json::from_slice(&std::fs::read(dir.path().join("anchor.json")).unwrap()).unwrap();
    assert_eq!(kept, file);
    assert_eq!(anchored(&["audit", "--verify"]).status.code(), Some(4));
}

#[test]
fn the_default_database_is_an_sqlite_file_in_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .current_dir(dir.path())
        .env_remove("SWITCHBOARD_DATABASE_URL")
        .args(["ask", "Hello"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(dir.path().join("switchboard.db").exists());
    let help = stdout(&run(&["--help"]));
    assert!(help.contains("sqlite://switchboard.db"), "{help}");
}

#[test]
fn an_idempotency_key_replays_the_stored_response() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("state.db").display());
    let args = [
        "delegate",
        "--json",
        "--to",
        "tag-ai",
        "--objective",
        "Categorize",
        "--input",
        "2025-10-01 Starbucks 4.50",
        "--idempotency-key",
        "k-1",
    ];
    let first = json(&run_on(&url, &args));
    let second = json(&run_on(&url, &args));
    assert_eq!(first["request_id"], second["request_id"], "the stored response comes back");
    assert_eq!(first, second);
    let log = json(&run_on(&url, &["audit", "--json"]));
    assert_eq!(log["records"].as_array().unwrap().len(), 1, "the agent ran once");
    let mut changed = args.to_vec();
    changed[5] = "Categorize differently";
    let o = run_on(&url, &changed);
    assert_eq!(o.status.code(), Some(2));
    assert!(stdout(&o).contains("INVALID_REQUEST"), "{}", stdout(&o));
}

/// issue 15 item 6: a question with no data behind it is the caller's to
/// Issue 15, reproduced on main: a message's second sentence never reached
/// the specialist (Prime handed it the first sentence as its objective), so
/// Blitz planned the car loan alone and called it a success; and the answer
/// to Blitz's question, in the next turn, was read on its own.
#[test]
fn every_sentence_reaches_the_specialist_and_the_next_turn_answers_its_question() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("state.db").display());
    let ask = |args: &[&str]| {
        let o = bin().env("SWITCHBOARD_DATABASE_URL", &url).arg("ask").arg("--json").args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
        json(&o)
    };
    let v = ask(&["I have 9000 on my car loan at 6% with a 250 minimum. My card has 2500 at 19.99%, minimum 50."]);
    let answer = v["answer"].as_str().unwrap();
    assert_eq!(v["status"], "success", "{answer}");
    assert!(answer.contains("card paid off") && answer.contains("car loan paid off"), "both debts: {answer}");

    // turn 1 leaves the card's rate and minimum out: a question, not a plan
    let v = ask(&["I have 9000 on my car loan at 6% with a 250 minimum and 2500 on a card. How do I pay them off?"]);
    assert_eq!(v["status"], "needs_input", "{v}");
    let answer = v["answer"].as_str().unwrap();
    assert!(answer.contains("card ($2,500.00): its interest rate (APR) and its minimum"), "{answer}");
    let session = v["session_id"].as_str().unwrap().to_string();
    // turn 2 answers it: read with turn 1, the plan has both debts
    let v = ask(&["--session", &session, "The card is 19.99% APR with a 50 minimum"]);
    let answer = v["answer"].as_str().unwrap();
    assert_eq!(v["status"], "success", "{answer}");
    assert_eq!(children(&v["tree"]), ["blitz-debt"]);
    assert!(answer.contains("card paid off") && answer.contains("car loan paid off"), "{answer}");
    assert!(answer.contains("$300.00/month"), "250 + 50 a month: {answer}");
    // after another question, a new subject is planned on its own
    let v = ask(&["I have 9000 on my car loan and 2500 on a card"]);
    assert_eq!(v["status"], "needs_input", "{v}");
    let session = v["session_id"].as_str().unwrap().to_string();
    let v = ask(&["--session", &session, "What is APR?"]);
    assert_eq!(v["tree"]["children"].as_array().unwrap().len(), 0, "a definition, answered directly: {v}");
    assert!(v["answer"].as_str().unwrap().to_lowercase().contains("annual percentage rate"), "{v}");
    // the same words in a new session have nothing to answer
    let v = ask(&["The card is 19.99% APR with a 50 minimum"]);
    assert!(!v["answer"].as_str().unwrap().contains("paid off"), "{v}");
}

/// answer, not three agents failing three times each.
#[test]
fn analyzing_spending_with_no_data_asks_the_user_instead_of_failing() {
    let o = run(&["ask", "--json", "Analyze my spending"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let v = json(&o);
    assert_eq!(v["status"], "needs_input", "{v}");
    let answer = v["answer"].as_str().unwrap();
    assert!(answer.contains("transactions"), "the question says what is missing: {answer}");
    assert!(answer.contains("upload") || answer.contains("--file"), "and how to give it: {answer}");
    assert!(!answer.contains("AGENT_FAILED") && !answer.contains("couldn't"), "{answer}");
    // one question, not three copies of it
    assert_eq!(answer.matches("I don't have any transactions").count(), 1, "{answer}");
    assert_eq!(v["tree"]["status"], "needs_input");
    for child in v["tree"]["children"].as_array().unwrap() {
        assert_eq!(child["status"], "needs_input", "{child}");
        assert_eq!(child["error_code"], "NEEDS_INPUT", "{child}");
        assert_eq!(child["attempts"], 1, "the caller's missing input is not retried: {child}");
    }

    // three specialists missing the same data: one question, naming them all, no retries
    let o = run(&["ask", "--json", "Analyze my spending and suggest improvements"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["status"], "needs_input", "{v}");
    let answer = v["answer"].as_str().unwrap();
    assert_eq!(answer.matches("I don't have any transactions").count(), 1, "{answer}");
    assert!(answer.contains("Crystal, Tag and Ledger ask"), "{answer}");
    assert_eq!(children(&v["tree"]), ["crystal-analytics", "tag-ai", "ledger-tax"]);
    assert!(v["tree"]["children"].as_array().unwrap().iter().all(|c| c["attempts"] == 1), "{v}");

    // sent straight to the agent, the envelope says so too
    let o = run(&["delegate", "--json", "--to", "crystal-analytics", "--objective", "Analyze my spending"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = json(&o);
    assert_eq!(r["status"], "needs_input", "{r}");
    assert_eq!(r["error"]["code"], "NEEDS_INPUT");
    assert_eq!(r["requires_followup"], true);
    assert_eq!(r["execution"]["attempts"], 1);
}

/// issue 15 item 5: balances with no rate or minimum are not a plan; Blitz
/// asks for what is missing instead of planning with a misread amount.
#[test]
fn blitz_asks_for_rates_and_minimums_instead_of_misreading_balances() {
    let o = run(&["ask", "--json", "I have 9000 on my car loan and 2500 on a card. How do I pay them off?"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["status"], "needs_input", "{v}");
    assert_eq!(children(&v["tree"]), ["blitz-debt"]);
    let answer = v["answer"].as_str().unwrap();
    for needle in ["car loan ($9,000.00)", "card ($2,500.00)", "interest rate (APR)", "minimum monthly payment"] {
        assert!(answer.contains(needle), "{needle} missing from: {answer}");
    }
    assert!(!answer.contains("plan:") && !answer.contains("debt-free"), "no plan from guesses: {answer}");
}

/// Issue 16 (foundation): a runtime's lineage keys are made at first use,
/// kept, rotated with the old key still listed until it expires, and printed
/// as the `[[trust]]` entry a peer's configuration takes; a peer key that is
/// not an Ed25519 key is a configuration error.
#[test]
fn lineage_keys_are_made_once_rotated_and_shown_as_a_trust_entry() {
    let dir = tempfile::tempdir().unwrap();
    let keys = |args: &[&str]| {
        let o = bin().current_dir(dir.path()).args(["keys", "--json"]).args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        json(&o)
    };
    let first = keys(&[]);
    assert_eq!(first["name"], "switchboard");
    assert_eq!(first["keys"].as_array().unwrap().len(), 1);
    assert_eq!(keys(&[])["current"], first["current"], "the same key at the next start");
    let rotated = keys(&["--rotate"]);
    let listed = rotated["keys"].as_array().unwrap();
    assert_eq!(listed.len(), 2, "{rotated}");
    assert_ne!(rotated["current"], first["current"]);
    assert_eq!(listed[0]["id"], first["current"]);
    assert!(listed[0]["expires_ms"].as_u64().is_some(), "the old key verifies until it expires: {rotated}");
    assert!(listed[1]["expires_ms"].is_null());
    // `keys stage` then `keys rotate`: the staged key is listed first, then signs
    let staged = keys(&["stage"]);
    let next = staged["keys"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((next["staged"].as_bool(), staged["current"].clone()), (Some(true), rotated["current"].clone()));
    assert_eq!(keys(&["rotate"])["current"], next["id"], "the staged key signs after the rotation");
    let o = bin().current_dir(dir.path()).args(["keys", "rotate", "--stage"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "one action at a time: {}", stderr(&o));

    // the text output is a [[trust]] entry another runtime's config accepts
    let o = bin().current_dir(dir.path()).arg("keys").output().unwrap();
    let text = stdout(&o);
    let entry = &text[text.find("[[trust]]").expect(&text)..];
    let config = dir.path().join("peer.toml");
    std::fs::write(&config, entry.replace("may_call = []", "may_call = [\"byte-doc\"]")).unwrap();
    let o = bin().current_dir(dir.path()).arg("--config").arg(&config).arg("agents").output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}\n{entry}", stderr(&o));

    // a key that is not one is refused with the entry named, exit 2
    std::fs::write(&config, "[[trust]]\nname = \"b\"\npublic_key = \"AAAA\"\n").unwrap();
    let o = bin().current_dir(dir.path()).arg("--config").arg(&config).arg("agents").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("trust[0] ('b'): public_key must be 32 bytes in base64"), "{}", stderr(&o));
}

#[test]
fn a_reader_that_stops_reading_ends_the_output_without_a_panic() {
    use std::process::Stdio;
    // the statement's answer is long; the pipe is closed before it is written
    let mut child = bin()
        .args(["ask", "--database-url", "memory:", "--file", &example("statement.csv"), "Here's my bank statement"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_ne!(out.status.code(), Some(101), "{err}");
}

#[test]
fn ask_out_writes_the_users_spending_by_category_as_an_svg_with_a_bar_per_category() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("state.db").display());
    let out = dir.path().join("spending.svg");
    let out_arg = out.display().to_string();
    let statement = example("statement.csv");
    let args = ["ask", "--user", "alice", "--file", &statement, "Categorize my transactions", "--out", &out_arg];
    let o = run_on(&url, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(&format!("chart: {out_arg}")), "the path is printed: {}", stdout(&o));
    let svg = std::fs::read_to_string(&out).expect("the chart is written");
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\"") && svg.ends_with("</svg>"), "{svg}");

    // one bar per category the user spent in, read from the money records itself
    let rt = tokio::runtime::Runtime::new().unwrap();
    let kept = rt.block_on(async {
        use switchboard::store::Store;
        let store = switchboard::SqlStore::connect(&url).await.unwrap();
        store.money(&switchboard::protocol::UserId::parse("alice").unwrap()).await.unwrap()
    });
    let mut categories: Vec<String> =
        kept.iter().filter(|e| e.amount > 0).map(|e| e.category.clone().unwrap_or("Uncategorized".into())).collect();
    categories.sort();
    categories.dedup();
    assert!(categories.len() >= 5, "{categories:?}");
    assert_eq!(svg.matches("<rect class=\"bar\"").count(), categories.len(), "{svg}");
    for c in &categories {
        let label = c.replace('&', "&amp;").replace('\'', "&apos;");
        assert!(svg.contains(&format!("data-label=\"{label}\"")), "no bar for {c}: {svg}");
    }

    // --json keeps stdout one JSON document; the path goes to stderr
    let json_out = dir.path().join("again.svg");
    let o = run_on(&url, &["ask", "--json", "--user", "alice", "hello", "--out", &json_out.display().to_string()]);
    assert!(o.status.success(), "{}", stderr(&o));
    json(&o);
    assert!(stderr(&o).contains("chart: "), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&json_out).unwrap(), svg, "the same records, the same chart");

    // a directory that does not exist, or a picture format it does not write: exit 2 before Prime runs
    let missing = dir.path().join("no-such-dir").join("chart.svg");
    let o = run_on(&url, &["ask", "--user", "alice", "hello", "--out", &missing.display().to_string()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("does not exist") && stderr(&o).contains("no-such-dir"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty(), "nothing ran: {}", stdout(&o));
    let png = dir.path().join("chart.png");
    let o = run_on(&url, &["ask", "--user", "alice", "hello", "--out", &png.display().to_string()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("SVG"), "{}", stderr(&o));
    assert!(!png.exists());
}
