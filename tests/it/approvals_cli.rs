//! A person's part in a durable tree, through the `switchboard` binary on
//! one SQLite file: Prime hands "Email …" to the email agent, whose send
//! waits for approval; the tree pauses (exit 0, `needs_approval`), and a
//! later process approves, rejects or cancels it. Approved, the email is
//! written to the local mail sink once; otherwise nothing is sent. Every
//! command is its own process: the tree waits in the database in between.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const EMAIL: &str = "Email alex@example.com the October summary";

/// A database file and a mail sink in a temporary directory.
struct Setup {
    _dir: tempfile::TempDir,
    db: String,
    sink: PathBuf,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("sb.db").display());
    let sink = dir.path().join("mail-sink");
    Setup { _dir: dir, db, sink }
}

impl Setup {
    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_remove("SWITCHBOARD_CONFIG")
            .env_remove("SWITCHBOARD_USER")
            .env_remove("RUST_LOG")
            .env("SWITCHBOARD_DATABASE_URL", &self.db)
            .env("SWITCHBOARD_MAIL_SINK", &self.sink)
            .args(args)
            .output()
            .expect("the binary runs")
    }

    /// `ask` as alice with the email message: the tree pauses; its root id and approval id.
    fn paused_email(&self) -> (String, String) {
        let o = self.run(&["ask", "--json", "--user", "alice", EMAIL]);
        assert_eq!(o.status.code(), Some(0), "a pause is not a failure: {}", text(&o));
        let v = json(&o);
        assert_eq!(v["status"], "needs_approval", "{v:#}");
        assert_eq!(v["tree"]["agent"], "prime-boss", "{v:#}");
        let approvals = v["approvals"].as_array().unwrap();
        assert_eq!(approvals.len(), 1, "{v:#}");
        assert_eq!(approvals[0]["agent"], "email");
        assert_eq!(approvals[0]["action"], "send_email");
        let id = approvals[0]["id"].as_str().unwrap().to_string();
        assert!(id.starts_with("apr-"), "{id}");
        (v["request_id"].as_str().unwrap().to_string(), id)
    }

    fn pending(&self) -> Vec<Value> {
        let o = self.run(&["approvals", "--json"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        json(&o).as_array().unwrap().clone()
    }
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(o)))
}

/// The messages in the sink (`.eml` files; nothing else may be there).
fn sent(sink: &Path) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(sink) else { return Vec::new() };
    let mut names: Vec<PathBuf> = dir.map(|e| e.unwrap().path()).collect();
    names.sort();
    names
        .iter()
        .map(|p| {
            assert_eq!(p.extension().and_then(|e| e.to_str()), Some("eml"), "{}", p.display());
            std::fs::read_to_string(p).unwrap()
        })
        .collect()
}

fn header<'a>(message: &'a str, name: &str) -> Option<&'a str> {
    message.split("\r\n\r\n").next()?.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
}

#[test]
fn an_email_waits_for_its_approval_and_is_sent_once() {
    let s = setup();
    // the text form names the approval and the command that gives it
    let o = s.run(&["ask", "--user", "alice", EMAIL]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("needs_approval"), "{out}");
    let listed = s.pending();
    assert_eq!(listed.len(), 1, "{listed:?}");
    let id = listed[0]["id"].as_str().unwrap();
    assert!(out.contains(&format!("switchboard approve {id}")), "{out}");
    assert!(sent(&s.sink).is_empty(), "nothing is sent before the approval");
    // the summary a person reads keeps the address out of the store
    let summary = listed[0]["summary"].as_str().unwrap();
    assert!(summary.contains("<EMAIL_1>") && !summary.contains("alex@example.com"), "{summary}");
    assert_eq!(listed[0]["user_id"], "alice");

    // another user may not answer it; nothing changes
    let o = s.run(&["approve", id, "--user", "bob"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(text(&o).contains("USER_MISMATCH"), "{}", text(&o));
    assert!(sent(&s.sink).is_empty());
    assert_eq!(s.pending().len(), 1);
    // bob sees none of alice's
    let o = s.run(&["approvals", "--json", "--user", "bob"]);
    assert_eq!(json(&o), serde_json::json!([]));

    // the operator approves (a new process): the tree finishes and the email goes out once
    let o = s.run(&["approve", id, "--reason", "looks right"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains(&format!("approval {id} approved")), "{out}");
    assert!(out.contains("ended success"), "{out}");
    assert!(out.contains("email"), "the tree shows the email agent: {out}");
    let messages = sent(&s.sink);
    assert_eq!(messages.len(), 1, "{messages:?}");
    // the sink is the outside world: the agent has no pii_access, so it holds the token
    assert_eq!(header(&messages[0], "To"), Some("<EMAIL_1>"), "{}", messages[0]);
    assert!(!messages[0].contains("alex@example.com"), "{}", messages[0]);
    assert!(header(&messages[0], "Subject").is_some_and(|s| s.to_lowercase().contains("october")), "{}", messages[0]);
    assert!(s.pending().is_empty());
    let o = s.run(&["approvals", "--json", "--all"]);
    let all = json(&o);
    assert_eq!(all[0]["state"], "approved", "{all:#}");
    assert_eq!(all[0]["reason"], "looks right", "{all:#}");

    // a second answer changes nothing and sends nothing
    for args in [vec!["approve", id], vec!["approve", id, "--reject"]] {
        let o = s.run(&args);
        assert_eq!(o.status.code(), Some(3), "{}", text(&o));
        assert!(text(&o).contains("ALREADY_DECIDED"), "{}", text(&o));
    }
    assert_eq!(sent(&s.sink).len(), 1);
}

#[test]
fn a_rejected_email_is_not_sent_and_a_cancelled_tree_cannot_be_approved() {
    let s = setup();
    let (_, rejected) = s.paused_email();
    let (root, cancelled) = s.paused_email();
    assert_ne!(rejected, cancelled);
    assert_eq!(s.pending().len(), 2);

    let o = s.run(&["approve", &rejected, "--reject", "--reason", "not yet", "--json"]);
    assert_eq!(o.status.code(), Some(0), "the person's no is what was asked: {}", text(&o));
    let v = json(&o);
    assert_eq!(v["approval"]["state"], "rejected", "{v:#}");
    assert_eq!(v["response"]["status"], "failed", "the tree ended without the send: {v:#}");
    assert_eq!(v["tree"]["children"][0]["error_code"], "APPROVAL_REJECTED", "{v:#}");
    assert!(sent(&s.sink).is_empty(), "a rejected email is not sent");

    let o = s.run(&["cancel", &root, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = json(&o);
    assert!(v["cancelled"].as_u64().unwrap() >= 2, "the root and the email step: {v:#}");
    assert!(s.pending().is_empty(), "a cancelled tree's approval is closed");
    let o = s.run(&["approve", &cancelled]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(text(&o).contains("ALREADY_DECIDED"), "{}", text(&o));
    let o = s.run(&["cancel", &root]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(text(&o).contains("ALREADY_DECIDED"), "{}", text(&o));
    assert!(sent(&s.sink).is_empty());
}

#[test]
fn unknown_or_malformed_ids_are_errors_that_change_nothing() {
    let s = setup();
    let o = s.run(&["approve", "apr-0000000000000000", "--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(json(&o)["error"]["code"], "NOT_FOUND");
    let o = s.run(&["cancel", "8f2b8e0c-1b6e-4c4e-9c61-2f1c0b7d9a10"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("NOT_FOUND"), "{}", text(&o));
    let o = s.run(&["cancel", "not-an-id"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("ROOT_ID"), "{}", text(&o));
    let o = s.run(&["approvals", "--user", "Not A User!"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = s.run(&["approvals"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("no pending approvals"), "{}", text(&o));
}

#[test]
fn a_draft_is_not_a_send_and_needs_no_approval() {
    let s = setup();
    let o =
        s.run(&["ask", "--json", "--user", "alice", "Draft an email to alex@example.com about the October summary"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(json(&o)["status"], "success", "{}", text(&o));
    assert!(s.pending().is_empty());
    assert!(sent(&s.sink).is_empty());
}

#[test]
fn a_send_that_was_written_before_a_crash_is_not_written_again() {
    let s = setup();
    let (_, id) = s.paused_email();
    let listed = s.pending();
    // the send's key is the waiting step's request id: as if a process wrote
    // the message and died before its step was recorded as done
    let key = listed[0]["request_id"].as_str().unwrap();
    std::fs::create_dir_all(&s.sink).unwrap();
    std::fs::write(s.sink.join(format!("{key}.eml")), "written before the crash").unwrap();
    let o = s.run(&["approve", &id, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = json(&o);
    assert_eq!(v["response"]["status"], "success", "{v:#}");
    assert_eq!(sent(&s.sink), ["written before the crash"], "not written twice");
}

#[test]
fn delegate_to_the_email_agent_pauses_with_exit_0_and_names_the_approval() {
    let s = setup();
    let o = s.run(&["delegate", "--to", "email", "--user", "alice", "--objective", EMAIL]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("needs_approval"), "{out}");
    let listed = s.pending();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert!(out.contains(&format!("switchboard approve {}", listed[0]["id"].as_str().unwrap())), "{out}");
    let o = s.run(&["delegate", "--json", "--to", "email", "--user", "alice", "--objective", EMAIL]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(json(&o)["error"]["code"], "NEEDS_APPROVAL");
    assert!(sent(&s.sink).is_empty());
}
