//! The web page at `/`, in headless Chromium driven over the DevTools
//! Protocol: a user's chat with Prime shows up live as a delegation tree that
//! matches the stored one, and the agents list shows breaker states.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio::time::{Instant, sleep, timeout, timeout_at};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, connect_async};

pub(crate) const ADMIN: &str = "ui-admin-token";
pub(crate) const ALICE: &str = "ui-alice-token";
pub(crate) const BOB: &str = "ui-bob-token";
pub(crate) const PRIME: &str = "ui-prime-token";
/// Each wait is bounded; generous because CI runs this on two loaded cores.
pub(crate) const WAIT: Duration = Duration::from_secs(20);
const CHROMIUM_START: Duration = Duration::from_secs(40);

/// The server and the browser, killed on drop (a panicking test included);
/// `dir` is declared last so that it is removed after both have gone.
pub(crate) struct Harness {
    pub(crate) server: Child,
    pub(crate) chromium: Option<Child>,
    /// The server's store: `memory:` or an SQLite file in `dir`.
    pub(crate) database_url: String,
    pub(crate) dir: tempfile::TempDir,
}

impl Harness {
    /// The tails of both logs, for failure messages.
    pub(crate) fn logs(&self) -> String {
        ["server.log", "chromium.log"]
            .iter()
            .map(|name| {
                let text = std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default();
                // chromium complains at length that there is no D-Bus
                let lines: Vec<&str> = text.lines().filter(|l| !l.contains("dbus")).collect();
                format!("--- {name} (tail)\n{}", lines[lines.len().saturating_sub(30)..].join("\n"))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

pub(crate) fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHROMIUM") {
        return Some(p.into());
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|p| p.is_file())
}

/// Starts `switchboard serve` on a free port, its state in memory or in an
/// SQLite file; returns it with its address.
pub(crate) async fn start_server(sqlite: bool) -> Result<(Harness, String), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let config = dir.path().join("switchboard.toml");
    let database_url =
        if sqlite { format!("sqlite://{}", dir.path().join("state.db").display()) } else { "memory:".into() };
    let auth = format!(
        "\n[auth]\nadmin_tokens = [\"{ADMIN}\"]\nuser_tokens = {{ \"alice\" = \"{ALICE}\", \"bob\" = \"{BOB}\" }}\n\
         service_tokens = {{ \"prime-boss\" = \"{PRIME}\" }}\n"
    );
    std::fs::write(&config, format!("{}{auth}", switchboard::config::DEFAULT_TOML)).map_err(|e| e.to_string())?;
    let log = File::create(dir.path().join("server.log")).map_err(|e| e.to_string())?;
    let mut server = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .env_remove("SWITCHBOARD_CONFIG")
        .env_remove("RUST_LOG")
        .args(["--database-url", &database_url, "--config"])
        .arg(&config)
        .args(["serve", "--addr", "127.0.0.1:0", "--shutdown-grace-ms", "1000"])
        .stdout(Stdio::piped())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start switchboard: {e}"))?;
    let mut lines = BufReader::new(server.stdout.take().expect("piped")).lines();
    let harness = Harness { server, chromium: None, database_url, dir };
    let first = timeout(WAIT, lines.next_line()).await;
    // Keep reading so that later prints (first-start tokens) never meet a closed pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let addr = match &first {
        Ok(Ok(Some(line))) => line.strip_prefix("switchboard listening on http://").map(str::to_owned),
        _ => None,
    };
    match addr {
        Some(addr) => Ok((harness, addr)),
        None => Err(format!("switchboard did not say where it listens ({first:?})\n{}", harness.logs())),
    }
}

/// A Chrome DevTools Protocol client over the browser's WebSocket.
pub(crate) struct Cdp {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    last_id: u64,
    /// The page's session once attached; browser-level commands go without it.
    pub(crate) session: Option<String>,
    /// What the page threw or logged as an error.
    pub(crate) page_errors: Vec<String>,
}

impl Cdp {
    pub(crate) async fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.last_id += 1;
        let id = self.last_id;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = &self.session {
            msg["sessionId"] = s.as_str().into();
        }
        self.ws.send(Message::text(msg.to_string())).await.map_err(|e| format!("{method}: {e}"))?;
        let deadline = Instant::now() + WAIT;
        loop {
            let frame = timeout_at(deadline, self.ws.next()).await.map_err(|_| format!("{method}: no answer"))?;
            let text = match frame {
                Some(Ok(Message::Text(text))) => text,
                Some(Ok(_)) => continue,
                other => return Err(format!("{method}: the DevTools connection ended: {other:?}")),
            };
            let v: Value = serde_json::from_str(&text).map_err(|e| format!("{method}: {e}: {text}"))?;
            if v["id"] == id {
                return match v.get("error") {
                    Some(e) => Err(format!("{method}: {e}")),
                    None => Ok(v["result"].clone()),
                };
            }
            match v["method"].as_str() {
                Some("Runtime.exceptionThrown") => {
                    let d = &v["params"]["exceptionDetails"];
                    let what = d["exception"]["description"].as_str().or(d["text"].as_str()).unwrap_or_default();
                    self.page_errors.push(format!("{what} (line {})", d["lineNumber"]));
                }
                Some("Runtime.consoleAPICalled") if v["params"]["type"] == "error" => {
                    self.page_errors.push(v["params"]["args"].to_string());
                }
                _ => {}
            }
        }
    }

    /// Evaluates `js` in the page; its value as JSON.
    pub(crate) async fn eval(&mut self, js: &str) -> Result<Value, String> {
        let r = self.call("Runtime.evaluate", json!({ "expression": js, "returnByValue": true })).await?;
        match r.get("exceptionDetails") {
            Some(e) => Err(format!("evaluating {js}: {}", e["exception"]["description"].as_str().unwrap_or("?"))),
            None => Ok(r["result"]["value"].clone()),
        }
    }

    /// Evaluates `js` until `done` accepts its value, for at most [`WAIT`].
    pub(crate) async fn wait_for(
        &mut self,
        what: &str,
        js: &str,
        done: impl Fn(&Value) -> bool,
    ) -> Result<Value, String> {
        let deadline = Instant::now() + WAIT;
        loop {
            let v = self.eval(js).await?;
            if done(&v) {
                return Ok(v);
            }
            if Instant::now() >= deadline {
                let body = self.eval("document.body.innerText").await.unwrap_or_default();
                return Err(format!(
                    "timed out waiting for {what}; last value: {v}\npage errors: {:?}\npage text:\n{}",
                    self.page_errors,
                    body.as_str().unwrap_or_default()
                ));
            }
            sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Starts headless Chromium with a fresh profile; its DevTools WebSocket URL.
async fn start_chromium(h: &mut Harness, bin: &Path) -> Result<String, String> {
    let profile = h.dir.path().join("profile");
    let log = File::create(h.dir.path().join("chromium.log")).map_err(|e| e.to_string())?;
    // No background networking: on a closed network it only floods refused connections.
    let chromium = h.chromium.insert(
        Command::new(bin)
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
            .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
            .args(["--no-proxy-server", "--disable-dev-shm-usage", "--remote-debugging-port=0"])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?,
    );
    // Chromium writes the port it picked and the browser's path there.
    let port_file = profile.join("DevToolsActivePort");
    let deadline = Instant::now() + CHROMIUM_START;
    loop {
        let text = std::fs::read_to_string(&port_file).unwrap_or_default();
        let mut lines = text.lines();
        if let (Some(Ok(port)), Some(path)) = (lines.next().map(|l| l.trim().parse::<u16>()), lines.next()) {
            return Ok(format!("ws://127.0.0.1:{port}{}", path.trim()));
        }
        if let Ok(Some(status)) = chromium.try_wait() {
            return Err(format!("chromium exited early ({status})"));
        }
        if Instant::now() >= deadline {
            return Err(format!("chromium wrote no {} within {CHROMIUM_START:?}", port_file.display()));
        }
        sleep(Duration::from_millis(100)).await;
    }
}

/// The nodes of tree `root` as the page shows them.
fn page_tree_js(root: &str) -> String {
    format!(
        "(() => {{
          const t = [...document.querySelectorAll('#trees [data-root-id]')].find(t => t.dataset.rootId === {root});
          return t && [...t.querySelectorAll('[data-request-id]')].map(n => ({{
            id: n.dataset.requestId, parent: n.dataset.parentId ?? null, agent: n.dataset.agent,
            origin: n.dataset.origin, status: n.dataset.status,
            duration_ms: n.querySelector('[data-duration-ms]')?.dataset.durationMs ?? null,
            duration: n.querySelector('.duration')?.textContent ?? '' }}));
        }})()",
        root = serde_json::to_string(root).unwrap()
    )
}

/// The stored tree flattened like [`page_tree_js`]'s nodes (without the text).
fn flatten(node: &Value, parent: Option<&str>, out: &mut Vec<Value>) {
    out.push(json!({
        "id": node["request_id"], "parent": parent, "agent": node["agent"], "origin": node["origin"],
        "status": node["status"], "duration_ms": node["duration_ms"].to_string(),
    }));
    for c in node["children"].as_array().into_iter().flatten() {
        flatten(c, node["request_id"].as_str(), out);
    }
}

fn without_text(node: &Value) -> Value {
    let mut node = node.clone();
    node.as_object_mut().map(|n| n.remove("duration"));
    node
}

fn sorted(mut nodes: Vec<Value>) -> Vec<Value> {
    nodes.sort_by_key(|n| n["id"].as_str().unwrap_or_default().to_owned());
    nodes
}

/// Starts Chromium and opens a blank page, attached, with its errors reported.
pub(crate) async fn open_page(h: &mut Harness, chromium: &Path) -> Result<Cdp, String> {
    let ws_url = start_chromium(h, chromium).await?;
    let (ws, _) = connect_async(&ws_url).await.map_err(|e| format!("DevTools at {ws_url}: {e}"))?;
    let mut cdp = Cdp { ws, last_id: 0, session: None, page_errors: Vec::new() };
    let target = cdp.call("Target.createTarget", json!({ "url": "about:blank" })).await?["targetId"].clone();
    let session = cdp.call("Target.attachToTarget", json!({ "targetId": target, "flatten": true })).await?;
    cdp.session = session["sessionId"].as_str().map(str::to_owned);
    // before navigating, so that an error while the page loads is reported too
    cdp.call("Runtime.enable", json!({})).await?;
    Ok(cdp)
}

/// Closes the browser (killed if it has not gone within the wait) and the server.
pub(crate) async fn close(mut h: Harness, cdp: Option<Cdp>) {
    if let Some(mut cdp) = cdp {
        cdp.session = None;
        // The browser may close the connection before it answers.
        let _ = cdp.call("Browser.close", json!({})).await;
    }
    if let Some(mut c) = h.chromium.take()
        && timeout(WAIT, c.wait()).await.is_err()
    {
        let _ = c.kill().await;
    }
    let _ = h.server.kill().await;
}

/// Takes a screenshot of the whole page and keeps it as
/// `target/test-artifacts/{name}.png`, for people to look at.
pub(crate) async fn screenshot(cdp: &mut Cdp, name: &str) -> Result<(), String> {
    use base64::Engine as _;
    let shot = cdp.call("Page.captureScreenshot", json!({"format": "png", "captureBeyondViewport": true})).await?;
    let png = base64::engine::general_purpose::STANDARD
        .decode(shot["data"].as_str().ok_or("no screenshot data")?)
        .map_err(|e| e.to_string())?;
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    let artifacts = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).parent().map(|t| t.join("test-artifacts")).unwrap();
    std::fs::create_dir_all(&artifacts).map_err(|e| e.to_string())?;
    let file = artifacts.join(format!("{name}.png"));
    std::fs::write(&file, &png).map_err(|e| e.to_string())?;
    eprintln!("screenshot: {}", file.display());
    Ok(())
}

/// The browser for `test`, or None when chromium is missing: the test is
/// skipped (`support::skip`: a failure under `CI=true`).
pub(crate) fn chromium_or_skip(test: &str) -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        crate::support::skip(
            test,
            "chromium is not installed (nor named by CHROMIUM)",
            "apt-get install chromium, or CHROMIUM=/path/to/chromium",
        );
    }
    found
}

async fn drive(h: &mut Harness, addr: &str, chromium: &Path) -> Result<(), String> {
    let mut cdp = open_page(h, chromium).await?;
    cdp.call("Page.navigate", json!({ "url": format!("http://{addr}/#token={ADMIN}") })).await?;

    cdp.wait_for("the live connection", "document.querySelector('[data-connected=\"true\"]') !== null", |v| v == true)
        .await?;
    let agents = cdp
        .wait_for(
            "the agents list",
            "Object.fromEntries([...document.querySelectorAll('#agents [data-agent]')]
               .map(a => [a.dataset.agent, a.dataset.breaker]))",
            |v| v.get("tag-ai").is_some(),
        )
        .await?;
    assert_eq!(agents["tag-ai"], "closed", "agents: {agents}");
    assert_eq!(agents["prime-boss"], "closed", "agents: {agents}");
    let token_gone = cdp.eval("location.hash === '' && localStorage.getItem('switchboard.token')").await?;
    assert_eq!(token_gone, ADMIN, "the token leaves the address bar and is kept in localStorage");

    switchboard::util::install_tls();
    let http = reqwest::Client::builder().no_proxy().timeout(WAIT).build().map_err(|e| e.to_string())?;
    let reply = http
        .post(format!("http://{addr}/v1/chat"))
        .bearer_auth(ALICE)
        .json(&json!({
            "message": "Upload this receipt and categorize it",
            "input": "STARBUCKS\n10/09/2025\nLatte 5.25\nTOTAL $5.25",
        }))
        .send()
        .await
        .map_err(|e| format!("POST /v1/chat: {e}"))?;
    assert!(reply.status().is_success(), "POST /v1/chat: {}", reply.status());
    let reply: Value = reply.json().await.map_err(|e| format!("POST /v1/chat: {e}"))?;
    let root = reply["request_id"].as_str().ok_or(format!("no request_id in {reply}"))?.to_owned();
    let mut stored = Vec::new();
    flatten(&reply["tree"], None, &mut stored);
    let stored = sorted(stored);

    // The page builds the tree from events alone; it must come out as the stored one.
    let shown = cdp
        .wait_for("the delegation tree", &page_tree_js(&root), |v| {
            v.as_array().is_some_and(|nodes| sorted(nodes.iter().map(without_text).collect()) == stored)
        })
        .await?;
    let nodes = shown.as_array().unwrap();
    let prime = nodes.iter().find(|n| n["agent"] == "prime-boss").ok_or(format!("no prime-boss node: {shown}"))?;
    assert_eq!((&prime["id"], &prime["origin"], &prime["status"]), (&json!(root), &json!("user"), &json!("success")));
    let children: Vec<&Value> = nodes.iter().filter(|n| n["parent"] == prime["id"]).collect();
    for agent in ["byte-doc", "tag-ai"] {
        let child = children.iter().find(|n| n["agent"] == agent).ok_or(format!("no {agent} child: {shown}"))?;
        assert_eq!(child["status"], "success", "{child}");
    }
    for n in nodes {
        let text = n["duration"].as_str().unwrap_or_default();
        assert!(text.ends_with(" ms") || text.ends_with(" s"), "duration shown as {text:?}: {n}");
    }

    // A refusal has no `started` event; the page fills the objective in from the stored tree.
    let id = uuid::Uuid::new_v4().to_string();
    let refused = http
        .post(format!("http://{addr}/v1/delegate"))
        .bearer_auth(PRIME)
        .header("x-agent-request-id", &id)
        .header("x-agent-origin", "prime-boss")
        .json(&json!({
            "request_id": id, "origin_employee": "prime-boss", "target_employee": "nobody-here",
            "user_id": "alice", "objective": "Find nobody", "input": "x",
        }))
        .send()
        .await
        .map_err(|e| format!("POST /v1/delegate: {e}"))?;
    assert!(refused.status().is_client_error(), "POST /v1/delegate to nobody: {}", refused.status());
    let js = format!(
        "[...document.querySelectorAll('#trees [data-request-id]')].filter(n => n.dataset.requestId === {})
           .map(n => [n.dataset.status, n.dataset.errorCode, n.querySelector('.objective').textContent])[0] ?? null",
        serde_json::to_string(&id).unwrap()
    );
    cdp.wait_for("the refused delegation", &js, |v| *v == json!(["refused", "AGENT_NOT_FOUND", "Find nobody"])).await?;

    // Objectives come from users: they must be shown as text, never parsed.
    let message = "Categorize <img id=injected src=x> please";
    http.post(format!("http://{addr}/v1/chat"))
        .bearer_auth(ALICE)
        .json(&json!({ "message": message, "input": "2025-10-01 Starbucks 4.50" }))
        .send()
        .await
        .map_err(|e| format!("POST /v1/chat: {e}"))?;
    let js = format!(
        "[...document.querySelectorAll('#trees .objective')].some(o => o.textContent === {})
           && document.getElementById('injected') === null",
        serde_json::to_string(message).unwrap()
    );
    cdp.wait_for("the second tree, escaped", &js, |v| v == true).await?;

    // After a reload the page has no events to replay: it restores recent trees from the server.
    cdp.eval("document.body.dataset.stale = 'yes'").await?;
    cdp.call("Page.reload", json!({})).await?;
    let fresh = "document.readyState === 'complete' && document.body.dataset.stale === undefined";
    cdp.wait_for("the reloaded page", fresh, |v| v == true).await?;
    cdp.wait_for("the tree restored after a reload", &page_tree_js(&root), |v| {
        v.as_array().is_some_and(|nodes| sorted(nodes.iter().map(without_text).collect()) == stored)
    })
    .await?;
    assert!(cdp.page_errors.is_empty(), "the page reported errors: {:?}", cdp.page_errors);

    cdp.session = None;
    // The browser may close the connection before it answers.
    let _ = cdp.call("Browser.close", json!({})).await;
    Ok(())
}

#[tokio::test]
async fn page_shows_a_live_delegation_tree_and_the_agents() {
    let Some(chromium) = chromium_or_skip("the web page test") else { return };
    let (mut h, addr) = start_server(false).await.unwrap_or_else(|e| panic!("{e}"));
    if let Err(e) = drive(&mut h, &addr, &chromium).await {
        panic!("{e}\n{}", h.logs());
    }
    close(h, None).await;
}
