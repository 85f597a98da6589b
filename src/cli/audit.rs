//! `switchboard audit`: the audit log, and with `--verify` its check against
//! every anchor the store keeps (`audit_head`, and the anchor file when
//! `[audit] anchor_file` is set).

use clap::Args;
use serde_json::json;

use super::output::{EXIT_FAILED, EXIT_OK};
use crate::runtime::Runtime;

#[derive(Debug, Args)]
pub(super) struct AuditArgs {
    /// Verify the hash chain against its anchors (exit 4 if it is broken).
    #[arg(long)]
    verify: bool,
    /// Only the last N records.
    #[arg(long, value_name = "N")]
    last: Option<usize>,
}

pub(super) async fn run(runtime: &Runtime, args: AuditArgs, json: bool) -> u8 {
    let store = runtime.store();
    // the log is read once: it is shown and verified against its anchors
    let (entries, head) = match (store.audit_log().await, store.audit_head().await) {
        (Ok(e), Ok(h)) => (e, h),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("error: {e}");
            return EXIT_FAILED;
        }
    };
    let file = store.anchor_file();
    let report = crate::store::anchor::verify_anchors(&entries, head.as_ref(), file);
    let mut anchors = vec!["audit_head".to_string()];
    anchors.extend(file.map(|f| format!("anchor file {}", f.display())));
    let shown = &entries[entries.len().saturating_sub(args.last.unwrap_or(usize::MAX))..];
    if json {
        let mut v = json!({"records": shown});
        if args.verify {
            v["verify"] = json!(report);
            v["verify"]["anchors"] = json!(anchors);
        }
        outln!("{v}");
    } else {
        for e in shown {
            let r = &e.record;
            let when = chrono::DateTime::from_timestamp_millis(r.created_at)
                .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
                .unwrap_or_default();
            outln!(
                "{:>6} {when} {} {} → {} {}{} {} ms {} tok \"{}\" {}",
                e.seq,
                r.user_id,
                r.origin,
                r.target,
                r.outcome,
                r.error_code.as_deref().map(|c| format!(" {c}")).unwrap_or_default(),
                r.duration_ms,
                r.tokens,
                r.objective.chars().take(60).collect::<String>(),
                &e.hash[..12]
            );
        }
        if args.verify {
            let reason = report.reason.as_deref().unwrap_or("unknown");
            match (report.valid, report.broken_at) {
                (true, _) => outln!("audit chain verified: {} records", report.records),
                (false, Some(at)) => outln!("audit chain BROKEN at record {at}: {reason}"),
                (false, None) => outln!("audit chain BROKEN: {reason}"),
            }
            outln!("anchors checked: {}", anchors.join(", "));
        }
    }
    if args.verify && !report.valid { EXIT_FAILED } else { EXIT_OK }
}
