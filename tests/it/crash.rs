//! Audit durability: `switchboard` is SIGKILLed at random points while it
//! delegates; after every restart each acknowledged delegation has its audit
//! record and the hash chain verifies.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

const ROUNDS: usize = 12;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_switchboard"));
    c.env_remove("SWITCHBOARD_CONFIG").env_remove("RUST_LOG");
    c
}

#[test]
fn sigkill_while_delegating_loses_no_acknowledged_audit_record() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("crash.db").display());
    let mut acknowledged: HashSet<String> = HashSet::new();
    let mut seed: u64 = 0x5eed;
    let mut next = |n: u64| {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    for round in 0..ROUNDS {
        let mut child = bin()
            .args(["--database-url", &url, "delegate", "--json", "--repeat", "100000", "--to", "tag-ai"])
            .args(["--objective", "Categorize", "--input", "2025-10-01 Starbucks 4.50"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let wanted = 1 + next(15) as usize;
        for _ in 0..wanted {
            let line = lines.next().expect("a response line").unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(v["status"], "success", "{line}");
            acknowledged.insert(v["request_id"].as_str().unwrap().to_string());
        }
        // land the kill somewhere inside the next delegations
        std::thread::sleep(Duration::from_micros(next(3_000)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        // a line completed before the kill was acknowledged too
        for line in lines.map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                acknowledged.insert(v["request_id"].as_str().unwrap().to_string());
            }
        }

        let o = bin().args(["--database-url", &url, "audit", "--json", "--verify"]).output().unwrap();
        assert!(o.status.success(), "round {round}: {}", String::from_utf8_lossy(&o.stderr));
        let log: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(log["verify"]["valid"], true, "round {round}: {}", log["verify"]);
        let recorded: HashSet<&str> =
            log["records"].as_array().unwrap().iter().map(|r| r["request_id"].as_str().unwrap()).collect();
        let missing: Vec<&String> = acknowledged.iter().filter(|id| !recorded.contains(id.as_str())).collect();
        assert!(missing.is_empty(), "round {round}: acknowledged but not audited: {missing:?}");
    }
    assert!(acknowledged.len() >= ROUNDS);
}

/// `switchboard serve` SIGKILLed at random moments while four clients send
/// delegations, restarted after each kill, until at least 200 delegations were
/// acknowledged: each has its audit record, the chain verifies after every
/// restart, and no torn record is left behind.
#[tokio::test]
async fn sigkill_of_the_server_loses_no_acknowledged_delegation() {
    use std::sync::{Arc, Mutex};
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("serve.db").display());
    let config = format!(
        "{}\n[auth]\nservice_tokens = {{ \"prime-boss\" = \"crash-prime\" }}\n",
        switchboard::config::DEFAULT_TOML
    );
    let acknowledged: Arc<Mutex<HashSet<String>>> = Arc::default();
    let client = switchboard::util::http_client().unwrap();
    let mut seed: u64 = 0xdead_beef;
    let mut next = move |n: u64| {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let mut rounds = 0;
    while acknowledged.lock().unwrap().len() < 200 {
        rounds += 1;
        assert!(rounds <= 40, "too few delegations got through");
        let server = crate::service::Server::start(Some(&config), Some(&url), "127.0.0.1:0", &[], 1000);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let senders: Vec<_> = (0..4)
            .map(|_| {
                let (client, base, acked, stop) =
                    (client.clone(), server.url.clone(), acknowledged.clone(), stop.clone());
                tokio::spawn(async move {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let env =
                            crate::service::envelope("prime-boss", "tag-ai", "Categorize", "2025-10-01 Starbucks 4.50");
                        let id = env["request_id"].as_str().unwrap().to_string();
                        let sent = client
                            .post(format!("{base}/v1/delegate"))
                            .bearer_auth("crash-prime")
                            .header("X-Agent-Request-ID", &id)
                            .header("X-Agent-Origin", "prime-boss")
                            .json(&env)
                            .send()
                            .await;
                        match sent {
                            Ok(res) if res.status().is_success() => {
                                if res.bytes().await.is_ok() {
                                    acked.lock().unwrap().insert(id);
                                }
                            }
                            _ => return, // the server is gone
                        }
                    }
                })
            })
            .collect();
        // kill it at a random moment while the four clients are busy, once
        // this round has made some progress (a loaded machine starts slowly)
        let wanted = acknowledged.lock().unwrap().len() + 5 + next(10) as usize;
        let started = std::time::Instant::now();
        while acknowledged.lock().unwrap().len() < wanted {
            assert!(started.elapsed() < Duration::from_secs(60), "round {rounds}: the server made no progress");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_micros(next(20_000))).await;
        drop(server); // SIGKILL, then reap
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for s in senders {
            let _ = s.await;
        }

        let o = bin().args(["--database-url", &url, "audit", "--json", "--verify"]).output().unwrap();
        assert!(o.status.success(), "round {rounds}: {}", String::from_utf8_lossy(&o.stderr));
        let log: Value = serde_json::from_slice(&o.stdout).expect("every stored record reads back whole");
        assert_eq!(log["verify"]["valid"], true, "round {rounds}: {}", log["verify"]);
        let recorded: HashSet<&str> =
            log["records"].as_array().unwrap().iter().map(|r| r["request_id"].as_str().unwrap()).collect();
        let acked = acknowledged.lock().unwrap();
        let missing: Vec<&String> = acked.iter().filter(|id| !recorded.contains(id.as_str())).collect();
        assert!(missing.is_empty(), "round {rounds}: acknowledged but not audited: {missing:?}");
    }
    eprintln!(
        "server SIGKILLed {rounds} times; {} acknowledged delegations, all audited",
        acknowledged.lock().unwrap().len()
    );
}
