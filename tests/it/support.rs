//! Scripted agents and small builders shared by the tests (the ones an
//! embedder can use too are `switchboard::testing`'s, re-exported here).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use switchboard::Principal;
use switchboard::protocol::{AgentSlug, DelegationRequest, UserId};
use switchboard::{Agent, AgentOutput};
// the closure agent, the config table and the runtime builder: what an embedder's tests use too
pub use switchboard::testing::{agent, builder, config};

/// Answers at once with its objective; counts its calls.
pub fn echo(calls: Arc<AtomicUsize>) -> impl Agent {
    agent(move |_ctx, task| {
        let calls = calls.clone();
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(AgentOutput::new(format!("did: {}", task.objective), task.input.clone()))
        }
    })
}

pub fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

pub fn slug(s: &str) -> AgentSlug {
    AgentSlug::parse(s).unwrap()
}

pub fn user(s: &str) -> UserId {
    UserId::parse(s).unwrap()
}

pub fn request(from: &str, to: &str, objective: &str) -> DelegationRequest {
    DelegationRequest::new(slug(from), slug(to), user("alice"), objective, "")
}

/// A request from an outside agent to a target that delegates on: the target
/// runs at depth 1 and its children at 2, so the limit is raised to 3.
pub fn nested_request(from: &str, to: &str, objective: &str) -> DelegationRequest {
    let mut r = request(from, to, objective);
    r.constraints.max_depth = 3;
    r
}

pub fn operator() -> Principal {
    Principal::Admin
}

/// Whether python3 can import `modules` (a comma-separated import list):
/// the official SDKs the interop tests drive, installed with `pip install
/// {requirements}`. Without them the test skips its part ([`skip`]).
pub fn python_has(modules: &str, requirements: &str) -> bool {
    let ok = std::process::Command::new("python3")
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip(
            &format!("the Python interop part ({modules})"),
            &format!("python3 cannot import {modules}"),
            &format!("python3 -m pip install {requirements}"),
        );
    }
    ok
}

/// The file [`skip`] appends to: set by `scripts/test`, which prints the
/// summary after `cargo test`; unset, a skip is only said on stderr.
pub const SKIPS_FILE: &str = "SWITCHBOARD_TEST_SKIPS";

/// Says that the running test skips `what` (it passes without that part)
/// because of `why`, and `how` to make it run; under `CI=true` (where
/// `.ci/run` provides everything) it fails instead. The harness swallows a
/// passing test's output, so the skip is also appended to the file in
/// [`SKIPS_FILE`] for `scripts/test`'s summary.
pub fn skip(what: &str, why: &str, how: &str) {
    assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but {what} cannot run: {why} ({how})");
    eprintln!("skipping {what}: {why}; to run it: {how}");
    if let Some(file) = std::env::var_os(SKIPS_FILE) {
        let test = std::thread::current().name().unwrap_or("an unnamed test").to_string();
        if let Err(e) = record_skip(std::path::Path::new(&file), &test, what, why, how) {
            eprintln!("could not record the skip in {}: {e}", file.display());
        }
    }
}

/// Appends one skip to `file` as a line of four tab-separated fields (test,
/// what, why, how; tabs and line breaks in them become spaces), in one write
/// so that tests on other threads and processes never interleave.
pub fn record_skip(file: &std::path::Path, test: &str, what: &str, why: &str, how: &str) -> std::io::Result<()> {
    use std::io::Write;
    let field = |s: &str| s.split(['\t', '\n', '\r']).filter(|p| !p.is_empty()).collect::<Vec<_>>().join(" ");
    let line = format!("{}\t{}\t{}\t{}\n", field(test), field(what), field(why), field(how));
    std::fs::OpenOptions::new().create(true).append(true).open(file)?.write_all(line.as_bytes())
}

/// Polls `done` every 20 ms until it holds (what runs in tasks of their own,
/// or in other processes, gets there in its time); a panic naming `what`
/// after 30 s.
pub async fn eventually(what: &str, mut done: impl AsyncFnMut() -> bool) {
    for _ in 0..1500 {
        if done().await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("never within 30 s: {what}");
}

/// A journal step of `root`'s tree for store-level tests: alice's, to `boss`,
/// written at time 1, owned by none, with no answer; a test changes what it needs.
pub fn tree_step(
    id: switchboard::protocol::RequestId,
    root: switchboard::protocol::RequestId,
    entry: &str,
    state: switchboard::store::StepState,
) -> switchboard::store::TreeStep {
    switchboard::store::TreeStep {
        request_id: id,
        root_id: root,
        parent_id: (id != root).then_some(root),
        user_id: user("alice"),
        target: "boss".into(),
        state,
        entry: entry.into(),
        caller: "user:alice".into(),
        request: "{}".into(),
        response: None,
        deadline_at: 1,
        budget: 100,
        attempts: 0,
        reads: None,
        resumes: 0,
        pii: None,
        created_at: 1,
        updated_at: 1,
        owner: None,
    }
}

/// A row as the store takes it: through the redactor, with a vault of its own.
pub fn clean<T: switchboard::redact::Texts>(value: T) -> switchboard::redact::Redacted<T> {
    switchboard::redact::Redactor::default().redacted(value, &mut switchboard::redact::Vault::new())
}
