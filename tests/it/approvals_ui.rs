//! The dashboard's approvals, in headless Chromium: a tree that pauses for
//! an approval shows its waiting nodes and the pending approval; clicking
//! Approve resumes it (the store says approved and the tree done, and the
//! page shows it finished); Reject takes a reason; Cancel (two clicks)
//! cancels a waiting tree for good. A tree a restarted server resumed is
//! marked so, and its Replay buttons show the verdict per node and the
//! list of its earlier replays.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use base64::Engine as _;
use serde_json::{Value, json};
use switchboard::protocol::RequestId;
use switchboard::store::{ApprovalState, StepState, Store};

use super::approvals_http::{self as setup, ALICE, Client, Runs};
use super::ui::{self, Cdp, Harness};
use crate::db;

/// What the page shows of tree `root` and of the approvals list.
fn page_js(root: &str) -> String {
    format!(
        "(() => {{
          if (document.readyState === 'loading' || !document.getElementById('approvals')) return null;
          const t = [...document.querySelectorAll('#trees [data-root-id]')].find(t => t.dataset.rootId === {root});
          const nodes = t ? [...t.querySelectorAll('[data-request-id]')].map(n => ({{
            agent: n.dataset.agent, status: n.dataset.status,
            badge: n.querySelector('.status .badge')?.textContent ?? '' }})) : [];
          return {{
            box: !document.getElementById('approvals-box').hidden,
            tree_status: t?.dataset.status ?? null,
            tree_badge: t?.querySelector('header .badge')?.textContent ?? null,
            cancel: !!t?.querySelector('header button.cancel'),
            nodes,
            approvals: [...document.querySelectorAll('#approvals [data-approval-id]')].map(a => ({{
              id: a.dataset.approvalId, root: a.dataset.rootId, state: a.dataset.state,
              text: a.textContent, buttons: a.querySelectorAll('button[data-decision]').length }})),
          }};
        }})()",
        root = serde_json::to_string(root).unwrap()
    )
}

fn node<'a>(v: &'a Value, agent: &str) -> Option<&'a Value> {
    v["nodes"].as_array()?.iter().find(|n| n["agent"] == agent)
}

fn approval<'a>(v: &'a Value, id: &str) -> Option<&'a Value> {
    v["approvals"].as_array()?.iter().find(|a| a["id"] == id)
}

/// Starts a tree that pauses (through `POST /v1/chat` as alice): its root and approval ids.
async fn pause(c: &Client) -> Result<(String, String), String> {
    let (status, chat) = c.post(ALICE, "/v1/chat", json!({ "message": "Do the report and mail it" })).await;
    if status != 202 {
        return Err(format!("POST /v1/chat: {status}: {chat}"));
    }
    let root = chat["request_id"].as_str().ok_or(format!("no request_id: {chat}"))?.to_string();
    let id = chat["approvals"][0].as_str().ok_or(format!("no approval: {chat}"))?.to_string();
    Ok((root, id))
}

async fn click(cdp: &mut Cdp, selector: &str) -> Result<(), String> {
    let js = format!(
        "(() => {{ const b = document.querySelector({s}); if (!b) return false; b.click(); return true; }})()",
        s = serde_json::to_string(selector).unwrap()
    );
    match cdp.eval(&js).await? {
        Value::Bool(true) => Ok(()),
        _ => Err(format!("nothing to click at {selector}")),
    }
}

async fn drive(h: &mut Harness, addr: &str, chromium: &Path, db: &db::Db, runs: &Arc<Runs>) -> Result<(), String> {
    let c = Client::new(addr);
    let store = db.dyn_store();
    let mut cdp = ui::open_page(h, chromium).await?;
    cdp.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": false}),
    )
    .await?;
    cdp.call("Page.navigate", json!({ "url": format!("http://{addr}/#token={ALICE}") })).await?;
    cdp.wait_for("the live connection", "document.querySelector('[data-connected=\"true\"]') !== null", |v| v == true)
        .await?;

    // a tree pauses while the page watches: the waiting nodes and the approval appear
    let (root, id) = pause(&c).await?;
    let shown = cdp
        .wait_for("the waiting tree and its approval", &page_js(&root), |v| {
            v["box"] == true
                && v["tree_status"] == "needs_approval"
                && node(v, "mailer").is_some_and(|n| n["status"] == "needs_approval")
                && approval(v, &id).is_some_and(|a| a["state"] == "pending")
        })
        .await?;
    assert_eq!(shown["tree_badge"], "waiting", "{shown}");
    assert_eq!(node(&shown, "mailer").unwrap()["badge"], "waiting", "{shown}");
    assert_eq!(node(&shown, "first").unwrap()["status"], "success", "{shown}");
    assert_eq!(shown["cancel"], true, "a waiting tree can be cancelled: {shown}");
    let a = approval(&shown, &id).unwrap();
    assert_eq!((&a["root"], &a["buttons"]), (&json!(root), &json!(2)), "{a}");
    let text = a["text"].as_str().unwrap();
    assert!(text.contains("mailer") && text.contains("send_email") && text.contains("<EMAIL_1>"), "{text}");
    assert!(!text.contains("alex@example.com"), "the summary is redacted: {text}");

    // the picture, for people
    ui::screenshot(&mut cdp, "approvals").await?;

    // Approve: the tree resumes and finishes, on the page and in the store
    click(&mut cdp, &format!("[data-approval-id=\"{id}\"] button[data-decision=approve]")).await?;
    let shown = cdp
        .wait_for("the approved tree finished", &page_js(&root), |v| {
            v["tree_status"] == "success"
                && node(v, "mailer").is_some_and(|n| n["status"] == "success")
                && approval(v, &id).is_some_and(|a| a["state"] == "approved")
        })
        .await?;
    assert_eq!(shown["cancel"], false, "a finished tree has nothing to cancel: {shown}");
    assert_eq!(approval(&shown, &id).unwrap()["buttons"], 0, "{shown}");
    let stored = store.approval(&id).await.map_err(|e| e.to_string())?.ok_or("no approval")?;
    assert_eq!((stored.state, stored.decided_by.as_deref()), (ApprovalState::Approved, Some("user:alice")));
    let root_id: RequestId = root.parse().map_err(|_| "root id")?;
    let top = store.step(root_id).await.map_err(|e| e.to_string())?.ok_or("no root step")?;
    assert_eq!(top.state, StepState::Done, "{top:?}");
    assert_eq!(runs.sent.load(Ordering::SeqCst), 1);

    // Reject with a reason typed in
    let (root2, id2) = pause(&c).await?;
    cdp.wait_for("the second approval", &page_js(&root2), |v| {
        approval(v, &id2).is_some_and(|a| a["state"] == "pending")
    })
    .await?;
    cdp.eval(&format!(
        "document.querySelector('[data-approval-id=\"{id2}\"] input.reason').value = 'not to that address'"
    ))
    .await?;
    click(&mut cdp, &format!("[data-approval-id=\"{id2}\"] button[data-decision=reject]")).await?;
    cdp.wait_for("the rejected tree finished", &page_js(&root2), |v| {
        v["tree_status"] == "success" && approval(v, &id2).is_some_and(|a| a["state"] == "rejected")
    })
    .await?;
    let stored = store.approval(&id2).await.map_err(|e| e.to_string())?.ok_or("no approval")?;
    assert_eq!((stored.state, stored.reason.as_deref()), (ApprovalState::Rejected, Some("not to that address")));
    assert_eq!(runs.sent.load(Ordering::SeqCst), 1, "nothing more was sent");

    // Cancel takes two clicks
    let (root3, id3) = pause(&c).await?;
    let cancel = format!("[data-root-id=\"{root3}\"] header button.cancel");
    cdp.wait_for("the third tree waiting", &page_js(&root3), |v| {
        v["tree_status"] == "needs_approval" && v["cancel"] == true
    })
    .await?;
    click(&mut cdp, &cancel).await?;
    let root3_id: RequestId = root3.parse().map_err(|_| "root id")?;
    let step = store.step(root3_id).await.map_err(|e| e.to_string())?.ok_or("no root step")?;
    assert_eq!(step.state, StepState::Waiting, "one click only arms the button");
    click(&mut cdp, &cancel).await?;
    let shown = cdp
        .wait_for("the cancelled tree", &page_js(&root3), |v| {
            v["tree_status"] == "cancelled" && v["cancel"] == false && approval(v, &id3).is_none()
        })
        .await?;
    // the mailer's record still says it waited; the journal says it was cancelled
    assert_eq!(node(&shown, "mailer").map(|n| &n["status"]), Some(&json!("cancelled")), "{shown}");
    assert_eq!(node(&shown, "first").map(|n| &n["status"]), Some(&json!("success")), "{shown}");
    let step = store.step(root3_id).await.map_err(|e| e.to_string())?.ok_or("no root step")?;
    assert_eq!(step.state, StepState::Cancelled);
    let closed = store.approval(&id3).await.map_err(|e| e.to_string())?.ok_or("no approval")?;
    assert_eq!(closed.state, ApprovalState::Rejected);

    assert!(cdp.page_errors.is_empty(), "the page reported errors: {:?}", cdp.page_errors);
    cdp.session = None;
    // The browser may close the connection before it answers.
    let _ = cdp.call("Browser.close", json!({})).await;
    Ok(())
}

#[tokio::test]
async fn dashboard_shows_a_waiting_tree_and_approving_it_resumes_the_tree() {
    let Some(chromium) = ui::chromium_or_skip("the approvals page test") else { return };
    let db = db::sqlite().await;
    let runs = Arc::new(Runs::default());
    let addr = setup::serve(setup::runtime(&db, &runs)).await;
    // the server runs in this process: the harness's server is a stand-in that has exited
    let stand_in = tokio::process::Command::new("true").kill_on_drop(true).spawn().expect("true");
    let dir = tempfile::tempdir().unwrap();
    let mut h = Harness { server: stand_in, chromium: None, database_url: db.url.clone(), dir };
    if let Err(e) = drive(&mut h, &addr, &chromium, &db, &runs).await {
        panic!("{e}\n{}", h.logs());
    }
    ui::close(h, None).await;
}

/// What the page shows of tree `root`: its status, the resumed badge and the replay panel.
fn replay_js(root: &str) -> String {
    format!(
        "(() => {{
          const t = [...document.querySelectorAll('#trees [data-root-id]')].find(t => t.dataset.rootId === {root});
          if (!t) return null;
          const p = t.querySelector('.replay-panel');
          const list = p?.querySelector('.replays ol');
          return {{
            status: t.dataset.status,
            resumed: t.querySelector('header .badge.resumed')?.textContent ?? null,
            nodes: [...t.querySelectorAll('.nodes [data-request-id]')].map(n => [n.dataset.agent, n.dataset.status]),
            buttons: [...t.querySelectorAll('header button.replay-run')].map(b => b.dataset.mode),
            panel: !!p,
            busy: !!p?.querySelector('.busy'),
            result: p?.querySelector('.replay-result h3 .badge')?.textContent ?? null,
            result_mode: p?.querySelector('.replay-result')?.dataset.mode ?? null,
            verdicts: [...(p?.querySelectorAll('.replay-node') ?? [])].map(n => [n.dataset.agent, n.dataset.verdict]),
            earlier: list ? [...list.querySelectorAll('li[data-replay-id]')].map(li => ({{
              mode: li.dataset.mode, identical: li.dataset.identical, text: li.textContent }})) : null,
            error: p?.querySelector('.error')?.textContent ?? null,
          }};
        }})()",
        root = serde_json::to_string(root).unwrap()
    )
}

fn earlier(v: &Value) -> usize {
    v["earlier"].as_array().map_or(0, Vec::len)
}

async fn drive_replay(
    h: &mut Harness,
    addr: &str,
    chromium: &Path,
    db: &db::Db,
    rt: &switchboard::Runtime,
) -> Result<(), String> {
    use super::replay_http::{self as rp, ALICE};
    let c = Client::new(addr);
    let mut cdp = ui::open_page(h, chromium).await?;
    cdp.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": false}),
    )
    .await?;
    cdp.call("Page.navigate", json!({ "url": format!("http://{addr}/#token={ALICE}") })).await?;
    cdp.wait_for("the live connection", "document.querySelector('[data-connected=\"true\"]') !== null", |v| v == true)
        .await?;

    // a process dies mid-tree; this server resumes it (as `serve` does at start) while the page watches
    let runs = Arc::new(rp::Runs::default());
    let root = rp::cut_off_mid_tree(db, &runs).await;
    // as a server's takeover does every half lease period: a look that found the dead
    // runtime's step just written (its aborted work still ending) looks again
    let mut found = rt.resume_open_trees().await.map_err(|e| e.to_string())?;
    for _ in 0..20 {
        if !found.elsewhere.contains(&root) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        found = rt.resume_open_trees().await.map_err(|e| e.to_string())?;
    }
    if found.resumed != [root] {
        return Err(format!("not resumed: {found:?}"));
    }
    let root = root.to_string();
    let shown = cdp
        .wait_for("the resumed tree, marked", &replay_js(&root), |v| {
            // first ended before the restart (the resumed run sent no events for it): it comes from the
            // stored tree, placed when its step was first written
            v["status"] == "success"
                && v["resumed"] == "resumed after a restart"
                && v["nodes"] == json!([["boss", "success"], ["first", "success"], ["second", "success"]])
        })
        .await?;
    assert_eq!(shown["buttons"], json!(["recorded", "live"]), "an ended tree can be replayed: {shown}");
    assert_eq!(shown["panel"], false, "{shown}");

    // one replay already kept; the list shows it
    let (status, first) = c.post(ALICE, &format!("/v1/trees/{root}/replay"), json!({})).await;
    if status != 200 {
        return Err(format!("POST replay: {status}: {first}"));
    }
    click(&mut cdp, &format!("[data-root-id=\"{root}\"] header button.replay-list")).await?;
    let shown = cdp.wait_for("the earlier replays", &replay_js(&root), |v| earlier(v) == 1).await?;
    let kept = &shown["earlier"][0];
    assert_eq!((&kept["mode"], &kept["identical"]), (&json!("recorded"), &json!("true")), "{shown}");
    let text = kept["text"].as_str().unwrap();
    assert!(text.contains("identical") && text.contains("user:alice"), "{text}");

    // Replay: the verdict per node, and the list grows by one
    click(&mut cdp, &format!("[data-root-id=\"{root}\"] header button.replay-run[data-mode=recorded]")).await?;
    let shown = cdp
        .wait_for("the replay's verdict", &replay_js(&root), |v| {
            v["busy"] == false && v["result"].is_string() && earlier(v) == 2
        })
        .await?;
    assert_eq!((&shown["result"], &shown["result_mode"]), (&json!("identical"), &json!("recorded")), "{shown}");
    assert_eq!(shown["verdicts"], json!([["boss", "same"], ["first", "same"], ["second", "same"]]), "{shown}");
    assert_eq!(shown["error"], Value::Null, "{shown}");

    // the picture, for people
    let shot = cdp.call("Page.captureScreenshot", json!({"format": "png", "captureBeyondViewport": true})).await?;
    let png = base64::engine::general_purpose::STANDARD
        .decode(shot["data"].as_str().ok_or("no screenshot data")?)
        .map_err(|e| e.to_string())?;
    let artifacts = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).parent().map(|t| t.join("test-artifacts")).unwrap();
    std::fs::create_dir_all(&artifacts).map_err(|e| e.to_string())?;
    std::fs::write(artifacts.join("replay.png"), &png).map_err(|e| e.to_string())?;
    eprintln!("screenshot: {}", artifacts.join("replay.png").display());

    // Replay live: newest first in the list
    click(&mut cdp, &format!("[data-root-id=\"{root}\"] header button.replay-run[data-mode=live]")).await?;
    let shown = cdp.wait_for("the live replay", &replay_js(&root), |v| v["busy"] == false && earlier(v) == 3).await?;
    assert_eq!((&shown["result"], &shown["result_mode"]), (&json!("identical"), &json!("live")), "{shown}");
    assert_eq!(shown["earlier"][0]["mode"], "live", "{shown}");
    // an earlier one is shown again from its kept report
    click(&mut cdp, &format!("[data-root-id=\"{root}\"] .replays li:nth-child(2) button.replay-show")).await?;
    cdp.wait_for("an earlier replay shown again", &replay_js(&root), |v| {
        v["result_mode"] == "recorded" && v["verdicts"].as_array().is_some_and(|n| n.len() == 3)
    })
    .await?;
    let root_id: RequestId = root.parse().map_err(|_| "root id")?;
    assert_eq!(db.store.replays(root_id).await.map_err(|e| e.to_string())?.len(), 3);

    // a tree whose journal lost a step: the server's refusal is shown, and nothing is kept
    use sqlx::Executor as _;
    let pool = sqlx::AnyPool::connect(&db.url).await.map_err(|e| e.to_string())?;
    pool.execute(sqlx::AssertSqlSafe(format!("DELETE FROM tree_steps WHERE root_id = '{root}' AND target = 'second'")))
        .await
        .map_err(|e| e.to_string())?;
    click(&mut cdp, &format!("[data-root-id=\"{root}\"] header button.replay-run[data-mode=recorded]")).await?;
    let shown =
        cdp.wait_for("the refusal", &replay_js(&root), |v| v["busy"] == false && v["error"].is_string()).await?;
    let error = shown["error"].as_str().unwrap();
    assert!(error.contains("RECORD_INCOMPLETE") && error.contains("cannot be replayed"), "{shown}");
    assert_eq!((&shown["result"], earlier(&shown)), (&Value::Null, 3), "{shown}");
    assert_eq!(db.store.replays(root_id).await.map_err(|e| e.to_string())?.len(), 3);

    assert!(cdp.page_errors.is_empty(), "the page reported errors: {:?}", cdp.page_errors);
    cdp.session = None;
    let _ = cdp.call("Browser.close", json!({})).await;
    Ok(())
}

#[tokio::test]
async fn dashboard_marks_a_resumed_tree_and_replays_it() {
    let Some(chromium) = ui::chromium_or_skip("the replay page test") else { return };
    let db = db::sqlite().await;
    let runs = Arc::new(super::replay_http::Runs::default());
    let rt = super::replay_http::runtime(&db, &runs, false);
    let addr = setup::serve(rt.clone()).await;
    let stand_in = tokio::process::Command::new("true").kill_on_drop(true).spawn().expect("true");
    let dir = tempfile::tempdir().unwrap();
    let mut h = Harness { server: stand_in, chromium: None, database_url: db.url.clone(), dir };
    if let Err(e) = drive_replay(&mut h, &addr, &chromium, &db, &rt).await {
        panic!("{e}\n{}", h.logs());
    }
    ui::close(h, None).await;
}
