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
