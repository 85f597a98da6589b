//! `switchboard keys`: this runtime's lineage signing keys (issue 16). The
//! first call makes the key directory and a first Ed25519 key; `--rotate`
//! makes a new signing key and keeps the old one verifying for
//! `[lineage] keep_rotated_keys_hours`; `--stage` makes the next key ahead,
//! for peers to trust before `--rotate` signs with it. The public keys are
//! printed as the `[[trust]]` entries a peer adds to its configuration.

use std::time::Duration;

use clap::Args;
use serde_json::json;

use super::output::{EXIT_FAILED, EXIT_OK};
use crate::config::Config;
use crate::lineage::KeyRing;

#[derive(Debug, Args)]
pub(super) struct KeysArgs {
    /// `rotate` or `stage`, as the flags below (`switchboard keys rotate`).
    #[arg(value_enum)]
    action: Option<Action>,
    /// Make a new signing key; the old one keeps verifying for a while.
    #[arg(long, conflicts_with = "action")]
    rotate: bool,
    /// Make the next signing key now, to give to peers before `--rotate`
    /// signs with it (a rotation that loses no request).
    #[arg(long, conflicts_with_all = ["rotate", "action"])]
    stage: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Action {
    /// The staged (or a new) key signs; the old one verifies until it expires.
    Rotate,
    /// Make the next key now, for peers to trust first.
    Stage,
}

pub(super) fn run(config: &Config, args: &KeysArgs, json: bool) -> u8 {
    let lineage = &config.lineage;
    let now = crate::lineage::now_ms();
    let opened = KeyRing::open(&lineage.key_dir, lineage.name.clone(), now);
    let mut ring = match opened {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: lineage.key_dir '{}': {e}", lineage.key_dir.display());
            return EXIT_FAILED;
        }
    };
    let (rotate, stage) =
        (args.rotate || args.action == Some(Action::Rotate), args.stage || args.action == Some(Action::Stage));
    if rotate {
        let keep = Duration::from_secs(lineage.keep_rotated_keys_hours.saturating_mul(3600));
        if let Err(e) = ring.rotate(now, keep) {
            eprintln!("error: rotating the key in '{}': {e}", lineage.key_dir.display());
            return EXIT_FAILED;
        }
    }
    if stage && let Err(e) = ring.stage() {
        eprintln!("error: staging the next key in '{}': {e}", lineage.key_dir.display());
        return EXIT_FAILED;
    }
    let keys = ring.public_keys();
    if json {
        let keys: Vec<_> = keys
            .iter()
            .map(|k| {
                json!({"id": k.id.to_string(), "public_key": k.public_key, "expires_ms": k.expires_ms, "staged": k.staged})
            })
            .collect();
        let current = ring.current_id().map(|id| id.to_string());
        outln!("{}", json!({"name": ring.name(), "current": current, "keys": keys}));
        return EXIT_OK;
    }
    outln!("Lineage keys of '{}' in {}:", ring.name(), lineage.key_dir.display());
    for k in &keys {
        let state = match k.expires_ms {
            _ if k.staged => "staged: signs after the next --rotate; give it to peers now".to_string(),
            None => "signs".to_string(),
            Some(ms) => format!("verifies until {}", chrono_ms(ms)),
        };
        outln!("  {}  {state}", k.id);
    }
    outln!("\nFor a peer's configuration, to trust this runtime:");
    for k in &keys {
        outln!("\n[[trust]]\nname = \"{}\"\npublic_key = \"{}\"", ring.name(), k.public_key);
        if let Some(ms) = k.expires_ms {
            outln!("expires_ms = {ms}");
        }
        outln!("may_call = []  # the peer's agents this runtime may call, or [\"*\"]");
    }
    EXIT_OK
}

/// `1700000000000` → `2023-11-14 22:13 UTC`.
fn chrono_ms(ms: u64) -> String {
    i64::try_from(ms)
        .ok()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map_or_else(|| format!("{ms} ms"), |t| t.format("%Y-%m-%d %H:%M UTC").to_string())
}
