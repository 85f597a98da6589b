//! Faults between the runtime and a remote agent, injected by a proxy on
//! 127.0.0.1 written for these tests: delay, stall, connection reset before
//! or after the request reached the agent, and close after N bytes of the
//! answer, chosen per request from a seed. Retries stay inside the deadline,
//! the breaker opens, half-opens and closes as configured, and across more
//! than 1 000 injected faults the agent never does the same work twice for
//! one idempotency key.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::join_all;
use switchboard::config::Config;
use switchboard::protocol::{ErrorCode, Priority};
use switchboard::resilience::{BreakerConfig, BreakerState};
use switchboard::server::{AppState, app};
use switchboard::{AgentOutput, Runtime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::support::*;

const HEALTHY: u8 = 0;
const FAULTY: u8 = 1;
const ALL_RESET: u8 = 2;

/// The proxy's knobs and counters.
struct Proxy {
    url: String,
    mode: Arc<AtomicU8>,
    faults: Arc<AtomicUsize>,
    requests: Arc<AtomicUsize>,
}

#[derive(Debug, Clone, Copy)]
enum Fault {
    None,
    Delay(u64),
    Stall,
    ResetBefore,
    ResetAfter,
    CloseAfter(usize),
}

fn pick(seed: &Mutex<u64>) -> Fault {
    let mut s = seed.lock().unwrap();
    *s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let r = (*s >> 33) % 100;
    match r {
        0..40 => Fault::None,
        40..52 => Fault::Delay(5 + r % 40),
        52..60 => Fault::Stall,
        60..74 => Fault::ResetBefore,
        74..88 => Fault::ResetAfter,
        _ => Fault::CloseAfter((r as usize % 7) * 17),
    }
}

/// One HTTP/1.1 request from the client (headers and a Content-Length body).
async fn read_request(client: &mut TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let n = client.read(&mut chunk).await.ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            return Some(buf);
        }
        let n = client.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Sends one request upstream on a connection of its own and reads the whole answer.
async fn exchange(upstream: &str, request: &[u8]) -> Option<Vec<u8>> {
    let mut conn = TcpStream::connect(upstream).await.ok()?;
    // one exchange per upstream connection, so the answer ends with the connection
    let text = String::from_utf8_lossy(request);
    let head_end = text.find("\r\n\r\n")?;
    let head: String = text[..head_end]
        .lines()
        .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
        .collect::<Vec<_>>()
        .join("\r\n");
    conn.write_all(format!("{head}\r\nconnection: close\r\n\r\n").as_bytes()).await.ok()?;
    conn.write_all(&request[head_end + 4..]).await.ok()?;
    let mut answer = Vec::new();
    conn.read_to_end(&mut answer).await.ok()?;
    Some(answer)
}

fn reset(stream: TcpStream) {
    // linger 0: the close is a reset, not an orderly goodbye
    let _ = stream.set_zero_linger();
    drop(stream);
}

async fn start_proxy(upstream: String, seed: u64) -> Proxy {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (mode, faults, requests) =
        (Arc::new(AtomicU8::new(HEALTHY)), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let seed = Arc::new(Mutex::new(seed));
    let (m, f, q) = (mode.clone(), faults.clone(), requests.clone());
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let (m, f, q, seed, upstream) = (m.clone(), f.clone(), q.clone(), seed.clone(), upstream.clone());
            tokio::spawn(async move {
                // each request on the client's connection gets its own fate
                while let Some(request) = read_request(&mut client).await {
                    q.fetch_add(1, Ordering::Relaxed);
                    let fault = match m.load(Ordering::Relaxed) {
                        HEALTHY => Fault::None,
                        ALL_RESET => Fault::ResetBefore,
                        _ => pick(&seed),
                    };
                    if !matches!(fault, Fault::None | Fault::Delay(_)) {
                        f.fetch_add(1, Ordering::Relaxed);
                    }
                    match fault {
                        Fault::None | Fault::Delay(_) => {
                            if let Fault::Delay(ms) = fault {
                                f.fetch_add(1, Ordering::Relaxed);
                                tokio::time::sleep(Duration::from_millis(ms)).await;
                            }
                            let Some(answer) = exchange(&upstream, &request).await else { return };
                            if client.write_all(&answer).await.is_err() {
                                return;
                            }
                        }
                        Fault::Stall => {
                            // hold the connection until the client gives up
                            let _ = client.read(&mut [0u8; 1]).await;
                            return;
                        }
                        Fault::ResetBefore => return reset(client),
                        Fault::ResetAfter => {
                            // the agent does the work; its answer is lost
                            let _ = exchange(&upstream, &request).await;
                            return reset(client);
                        }
                        Fault::CloseAfter(n) => {
                            if let Some(answer) = exchange(&upstream, &request).await {
                                let _ = client.write_all(&answer[..n.min(answer.len())]).await;
                            }
                            return;
                        }
                    }
                }
            });
        }
    });
    Proxy { url, mode, faults, requests }
}

type Executions = Arc<Mutex<HashMap<String, usize>>>;

/// The remote Switchboard, in this process: its worker counts its runs per idempotency key.
async fn remote(token: &str) -> (String, Executions) {
    let executions: Executions = Arc::default();
    let e = executions.clone();
    let config = Config::from_toml(&format!(
        r#"
[[agents]]
slug = "prime-boss"
name = "Caller"
may_delegate_to = ["worker"]
[[agents]]
slug = "worker"
name = "Worker"
[auth]
service_tokens = {{ "prime-boss" = "{token}" }}
"#
    ))
    .unwrap();
    let auth = config.auth.clone();
    let rt = Runtime::builder()
        .config(config)
        .agent("prime-boss", echo(counter()))
        .agent(
            "worker",
            agent(move |ctx, task| {
                let e = e.clone();
                async move {
                    let key = ctx.delegator()?.lineage().idempotency_key.unwrap_or_default();
                    *e.lock().unwrap().entry(key).or_default() += 1;
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    Ok(AgentOutput::new("worked", task.objective))
                }
            }),
        )
        .build()
        .unwrap();
    let state = Arc::new(AppState::new(rt));
    state.tokens.load_config(&auth).await.unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, app(state)).await });
    (addr, executions)
}

/// The local runtime whose agent `worker` is served through the proxy.
fn local(proxy: &str, breaker: BreakerConfig) -> Runtime {
    let config = Config::from_toml(&format!(
        r#"
[[agents]]
slug = "prime-boss"
name = "Prime"
may_delegate_to = ["worker"]
[[agents]]
slug = "worker"
name = "Remote worker"
# any variable that is surely set stands in for the token (tests cannot set variables)
backend = {{ kind = "http", url = "{proxy}", token_env = "PATH" }}
limits = {{ attempt_timeout_ms = 250 }}
"#
    ))
    .unwrap();
    Runtime::builder().config(config).breaker(breaker).agent("prime-boss", echo(counter())).build().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_injected_faults_cause_no_duplicate_work_and_retries_stay_in_the_deadline() {
    let token = std::env::var("PATH").unwrap();
    let (upstream, executions) = remote(&token).await;
    let proxy = start_proxy(upstream, 0x5eed_f417).await;
    proxy.mode.store(FAULTY, Ordering::Relaxed);
    // a breaker that stays closed here: this part is about retries
    let lenient = BreakerConfig { consecutive_failures: 1_000_000, min_calls: 1_000_000, ..BreakerConfig::default() };
    let rt = local(&proxy.url, lenient);
    const DEADLINE_MS: u64 = 10_000;
    // a hundred clients, each sending one delegation after another, until
    // the proxy has injected a thousand faults
    let workers = (0..100).map(|w| {
        let (rt, faults) = (rt.clone(), proxy.faults.clone());
        tokio::spawn(async move {
            let mut out = Vec::new();
            let mut n = 0;
            while faults.load(Ordering::Relaxed) < 1_000 && n < 100 {
                n += 1;
                let mut req = request("prime-boss", "worker", &format!("job {w}-{n}"));
                req.priority = Priority::Urgent;
                req.constraints.deadline_ms = DEADLINE_MS;
                let started = Instant::now();
                let r = rt.delegate(&operator(), req).await;
                out.push((r, started.elapsed()));
            }
            out
        })
    });
    let results: Vec<_> = join_all(workers).await.into_iter().flat_map(|r| r.unwrap()).collect();
    let faults = proxy.faults.load(Ordering::Relaxed);
    let ok = results.iter().filter(|(r, _)| r.is_success()).count();
    let executions = executions.lock().unwrap();
    let twice: Vec<(&String, &usize)> = executions.iter().filter(|(_, n)| **n > 1).collect();
    eprintln!(
        "{} delegations, {} succeeded, {faults} faults injected over {} requests, {} keys executed, {} executed twice",
        results.len(),
        ok,
        proxy.requests.load(Ordering::Relaxed),
        executions.len(),
        twice.len()
    );
    assert!(faults >= 1_000);
    assert!(twice.is_empty(), "work done twice for one idempotency key: {twice:?}");
    for (r, took) in &results {
        // a margin for a shared 2-core machine running the suite beside 100 clients
        assert!(*took <= Duration::from_millis(DEADLINE_MS + 1_000), "a delegation outlived its deadline: {took:?}");
        if !r.is_success() {
            // giving up is allowed; losing track is not
            assert!(
                matches!(
                    r.error_code(),
                    Some(ErrorCode::DeadlineExceeded | ErrorCode::AgentUnavailable | ErrorCode::AgentFailed)
                ),
                "{r:?}"
            );
        }
    }
    assert!(ok * 10 >= results.len() * 9, "retries carried at least 90% through: {ok}/{}", results.len());
}

#[tokio::test]
async fn the_breaker_opens_half_opens_and_closes_as_configured() {
    let token = std::env::var("PATH").unwrap();
    let (upstream, _executions) = remote(&token).await;
    let proxy = start_proxy(upstream, 7).await;
    let strict = BreakerConfig { consecutive_failures: 3, cool_down_ms: 400, probes: 2, ..BreakerConfig::default() };
    let rt = local(&proxy.url, strict);
    let worker = slug("worker");
    let one = |name: &str| {
        let mut r = request("prime-boss", "worker", name);
        r.priority = Priority::Low; // two attempts each
        r
    };

    proxy.mode.store(ALL_RESET, Ordering::Relaxed);
    let _ = rt.delegate(&operator(), one("a")).await;
    let _ = rt.delegate(&operator(), one("b")).await;
    assert_eq!(rt.breaker_state(&worker), BreakerState::Open, "3 failures in a row open it");
    let seen = proxy.requests.load(Ordering::Relaxed);
    let r = rt.delegate(&operator(), one("c")).await;
    assert_eq!(r.error_code(), Some(ErrorCode::AgentUnavailable));
    assert_eq!(proxy.requests.load(Ordering::Relaxed), seen, "while open, nothing is sent");

    tokio::time::sleep(Duration::from_millis(450)).await;
    assert_eq!(rt.breaker_state(&worker), BreakerState::HalfOpen);
    // a failed probe opens it again
    let _ = rt.delegate(&operator(), one("d")).await;
    assert_eq!(rt.breaker_state(&worker), BreakerState::Open);

    proxy.mode.store(HEALTHY, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(450)).await;
    assert!(rt.delegate(&operator(), one("e")).await.is_success());
    assert_eq!(rt.breaker_state(&worker), BreakerState::HalfOpen, "one successful probe of two");
    assert!(rt.delegate(&operator(), one("f")).await.is_success());
    assert_eq!(rt.breaker_state(&worker), BreakerState::Closed);
}
