//! The skip summary of `scripts/test`: what `support::skip` records, read
//! back by `scripts/skips.py` as the summary a newcomer sees after
//! `cargo test`.

use std::process::Command;

use crate::support::record_skip;

/// Runs `scripts/skips.py` with `args`; None (a skip) without python3.
fn skips_py(args: &[&str]) -> Option<String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/skips.py");
    match Command::new("python3").arg(script).args(args).output() {
        Ok(o) => {
            assert!(o.status.success(), "skips.py {args:?}: {}", String::from_utf8_lossy(&o.stderr));
            Some(String::from_utf8_lossy(&o.stdout).into_owned())
        }
        Err(e) => {
            crate::support::skip("the skip summary's test", &format!("python3 cannot run ({e})"), "install python3");
            None
        }
    }
}

#[test]
fn the_summarizer_passes_its_own_checks() {
    if let Some(out) = skips_py(&["--test"]) {
        assert_eq!(out.trim(), "skips.py: ok");
    }
}

#[test]
fn skips_recorded_from_many_threads_come_back_as_one_summary_line_per_cause() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("skips");
    std::thread::scope(|s| {
        for t in 0..8 {
            let file = &file;
            s.spawn(move || {
                for i in 0..50 {
                    let test = format!("mod{t}::test_{i}");
                    // a reason with a tab and a line break, as an error's text may have
                    record_skip(file, &test, "the PostgreSQL half", "refused\tby\n127.0.0.1", "start PostgreSQL")
                        .unwrap();
                }
                record_skip(file, &format!("queue::q{t}"), "the queue test", "no NATS", "start NATS").unwrap();
            });
        }
    });
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.lines().count(), 8 * 51);
    assert!(text.lines().all(|l| l.split('\t').count() == 4), "{text}");
    let Some(out) = skips_py(&[file.to_str().unwrap()]) else { return };
    assert!(out.starts_with("== skips: 408 tests passed without running all of their parts"), "{out}");
    assert!(
        out.contains("- the PostgreSQL half: 400 tests (mod0::test_0, mod0::test_1, mod0::test_10, and 397 more)"),
        "{out}"
    );
    assert!(out.contains("    why: refused by 127.0.0.1\n"), "{out}");
    assert!(out.contains("    then: scripts/test --test it -- mod0:: mod1::"), "{out}");
    assert!(out.contains("- the queue test: 8 tests"), "{out}");
}

#[test]
fn no_skips_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let Some(out) = skips_py(&[dir.path().join("absent").to_str().unwrap()]) else { return };
    assert_eq!(out.trim(), "== skips: none (no test skipped a part of its work)");
}
