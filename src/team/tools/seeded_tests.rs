//! The seeded tool agents: format, data, calendar and
//! report each have at least two approaches picked by `task.seed`. Every
//! seed gives a different, valid output for the same note; through the
//! runtime, a note whose checks the first approach fails is answered by the
//! second, which is promoted while the first is penalized.

use chrono::{DateTime, Utc};
use serde_json::json;

use super::testing::*;
use super::{CalendarAgent, DataAgent, FormatAgent, ReportAgent, lookup};
use crate::agent::{Agent, AgentOutput};
use crate::verify::text;

const FORMAT: [u64; 2] = super::format::SEEDS;
const DATA: [u64; 2] = super::data::SEEDS;
const CALENDAR: [u64; 2] = super::calendar::SEEDS;
const REPORT: [u64; 2] = super::report::SEEDS;

async fn seeded(agent: &dyn Agent, tool: &str, note: &str, seed: u64) -> AgentOutput {
    let mut task = noted(note);
    task.seed = Some(seed);
    run(agent, tool, &task).await.unwrap_or_else(|e| panic!("seed {seed}: {e}"))
}

fn passes(note: &str, out: &AgentOutput) {
    let v = verdict(note, out);
    assert!(v.passed, "{v:#?}\n{}", out.result);
}

#[test]
fn each_agent_exposes_its_seeds_in_default_order() {
    for (slug, seeds) in [("format", FORMAT), ("data", DATA), ("calendar", CALENDAR), ("report", REPORT)] {
        let agent = lookup(slug).unwrap_or_else(|| panic!("{slug}"));
        assert_eq!(agent.seeds(), seeds, "{slug}");
        assert_ne!(seeds[0], seeds[1], "{slug}");
    }
    // and the runtime's wrapper passes them on
    assert_eq!(crate::team::lookup("report").map(|a| a.seeds().to_vec()), Some(REPORT.to_vec()));
}

#[tokio::test]
async fn format_seeds_rewrite_conservatively_or_restructure_into_a_letter() {
    let [a, b] = [
        seeded(&FormatAgent, "format_text", FORMAT_NOTE, FORMAT[0]).await,
        seeded(&FormatAgent, "format_text", FORMAT_NOTE, FORMAT[1]).await,
    ];
    assert_eq!(a.result, "Hello,\n\nCould you please send me the report?\n\nThank you.");
    assert_eq!(
        b.result,
        "Hello,\n\nI would be grateful if you could send me the report.\n\nThank you for your help.\n\nKind regards,"
    );
    passes(FORMAT_NOTE, &a);
    passes(FORMAT_NOTE, &b);
    assert_eq!(
        (artifact(&a, "formatted")["approach"].as_str(), artifact(&b, "formatted")["approach"].as_str()),
        (Some("conservative"), Some("restructured"))
    );

    // without a greeting asked for, only the restructuring adds one
    let note = "Format this text to professional business style: \"pls send ur notes asap. the files r late\". No abbreviations.";
    let a = seeded(&FormatAgent, "format_text", note, FORMAT[0]).await;
    let b = seeded(&FormatAgent, "format_text", note, FORMAT[1]).await;
    assert_eq!(a.result, "Please send your notes as soon as possible. The files are late.");
    assert_eq!(
        b.result,
        "Hello,\n\nI would be grateful if you could send your notes as soon as possible. The files are late.\n\nThank you for your help.\n\nKind regards,"
    );
    passes(note, &a);
    passes(note, &b);
}

const MIXED_CSV: &str = "name,email,role\nBo,bo@x,dev\nCy,cy@x.io,\nDi,di@x.io,ops\nDi again,DI@x.io,ops";

#[tokio::test]
async fn data_seeds_keep_and_report_or_reject_rows_they_cannot_vouch_for() {
    let note =
        format!("Transform CSV data to JSON format.\nOutput: array of objects with camelCase keys.\n{MIXED_CSV}");
    let lenient = seeded(&DataAgent, "transform_data", &note, DATA[0]).await;
    let strict = seeded(&DataAgent, "transform_data", &note, DATA[1]).await;
    passes(&note, &lenient);
    passes(&note, &strict);
    assert_eq!(
        artifact(&lenient, "records"),
        &json!([
            {"name": "Bo", "email": "bo@x", "role": "dev"},
            {"name": "Cy", "email": "cy@x.io", "role": ""},
            {"name": "Di", "email": "di@x.io", "role": "ops"}
        ])
    );
    assert_eq!(artifact(&strict, "records"), &json!([{"name": "Di", "email": "di@x.io", "role": "ops"}]));
    let (lv, sv) = (artifact(&lenient, "validation"), artifact(&strict, "validation"));
    assert_eq!(lv["rejected_rows"], json!([]));
    assert_eq!(
        sv["rejected_rows"],
        json!([{"row": 1, "reason": "invalid email 'bo@x'"}, {"row": 2, "reason": "empty role"}])
    );
    // both report the invalid email and the duplicate
    for v in [lv, sv] {
        assert_eq!(v["invalid_emails"], json!([{"row": 1, "value": "bo@x"}]));
        assert_eq!(v["duplicates"], json!([{"row": 4, "duplicate_of": 3, "value": "DI@x.io"}]));
    }
    assert_eq!((lv["reading"].as_str(), sv["reading"].as_str()), (Some("lenient"), Some("strict")));
    assert!(strict.summary.contains("2 rejected rows"), "{}", strict.summary);
}

#[tokio::test]
async fn data_lenient_seed_fails_validate_emails_and_strict_seed_passes() {
    let note = format!("{DATA_NOTE}\n{MIXED_CSV}");
    let v = verdict(&note, &seeded(&DataAgent, "transform_data", &note, DATA[0]).await);
    assert_eq!(v.failed(), ["valid_email"]);
    passes(&note, &seeded(&DataAgent, "transform_data", &note, DATA[1]).await);
}

#[test]
fn calendar_seeds_start_now_or_at_the_next_half_hour() {
    use super::calendar::{Event, next_half_hour};
    let now = DateTime::parse_from_rfc3339("2025-10-18T21:07:13Z").unwrap().with_timezone(&Utc);
    let at = |s: &str| DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc);
    let spec = crate::verify::TaskSpec::parse(CALENDAR_NOTE).unwrap();
    let a = Event::from_spec(&spec, now, false).unwrap();
    let b = Event::from_spec(&spec, now, true).unwrap();
    assert_eq!((a.start, a.end), (now, at("2025-10-18T23:07:13Z")));
    assert_eq!((b.start, b.end), (at("2025-10-18T21:30:00Z"), at("2025-10-18T23:30:00Z")));
    assert_eq!((a.title.as_str(), a.busy, a.reminder_minutes), (b.title.as_str(), b.busy, b.reminder_minutes));
    assert_ne!(a.uid(), b.uid(), "a different block");
    assert_eq!(next_half_hour(at("2025-10-18T21:30:00Z")), at("2025-10-18T21:30:00Z"), "on the grid already");
    assert_eq!(next_half_hour(at("2025-10-18T23:59:59Z")), at("2025-10-19T00:00:00Z"));

    // an explicit start is kept by both; an end the aligned start would pass keeps the block at now
    let spec = crate::verify::TaskSpec::parse("Block calendar tomorrow at 9am. Duration: 1 hour. Title: X").unwrap();
    let starts = [false, true].map(|align| Event::from_spec(&spec, now, align).unwrap().start);
    assert_eq!(starts, [at("2025-10-19T09:00:00Z"); 2]);
    let spec = crate::verify::TaskSpec::parse("Block calendar now. End: 21:15. Title: X").unwrap();
    assert_eq!(Event::from_spec(&spec, now, true).unwrap().start, now);
}

#[tokio::test]
async fn calendar_seeds_both_pass_the_seed_001_note_with_different_starts() {
    let before = Utc::now().timestamp();
    let a = seeded(&CalendarAgent, "calendar_block", CALENDAR_NOTE, CALENDAR[0]).await;
    let b = seeded(&CalendarAgent, "calendar_block", CALENDAR_NOTE, CALENDAR[1]).await;
    let after = Utc::now().timestamp();
    passes(CALENDAR_NOTE, &a);
    passes(CALENDAR_NOTE, &b);
    let start = |o: &AgentOutput| {
        let e = artifact(o, "event");
        (
            DateTime::parse_from_rfc3339(e["start"].as_str().unwrap_or("")).map(|t| t.timestamp()).unwrap_or(-1),
            e["placement"].clone(),
        )
    };
    let ((sa, pa), (sb, pb)) = (start(&a), start(&b));
    assert!((before..=after).contains(&sa), "{sa}");
    assert_eq!(sb % 1800, 0, "{sb} on the half-hour grid");
    assert!((before..before + 1800 + (after - before)).contains(&sb), "{sb}");
    assert_eq!((pa, pb), (json!("now"), json!("next_half_hour")));
    for o in [&a, &b] {
        assert_eq!(artifact(o, "event")["duration_minutes"], 120);
    }
}

#[tokio::test]
async fn report_seeds_write_a_sectioned_report_or_a_brief_with_the_calculation() {
    let a = seeded(&ReportAgent, "progress_report", REPORT_NOTE, REPORT[0]).await;
    let b = seeded(&ReportAgent, "progress_report", REPORT_NOTE, REPORT[1]).await;
    passes(REPORT_NOTE, &a);
    passes(REPORT_NOTE, &b);
    assert!(a.result.contains("Summary: 12 of 17 tasks completed this week") && a.result.contains("Next steps:"));
    assert_eq!(
        b.result,
        "Weekly Progress Report\n- Completion rate: 12 / 17 tasks = 70.6% this week\n- Open: 5 tasks (3 in progress, 2 blocked)\n- Next: unblock the 2 blocked tasks first"
    );
    assert_eq!(
        (artifact(&a, "metrics")["layout"].as_str(), artifact(&b, "metrics")["layout"].as_str()),
        (Some("sectioned"), Some("brief"))
    );
    assert_eq!(artifact(&a, "metrics")["completion_rate"], artifact(&b, "metrics")["completion_rate"]);

    // under 30 words the sectioned report keeps its summary and metrics and fails; the brief fits
    let note = REPORT_NOTE.replace("Max 300 words", "Max 30 words");
    let a = seeded(&ReportAgent, "progress_report", &note, REPORT[0]).await;
    assert_eq!(verdict(&note, &a).failed(), ["max_30_words"]);
    let b = seeded(&ReportAgent, "progress_report", &note, REPORT[1]).await;
    passes(&note, &b);
    assert!(text::word_count(&b.result) <= 30);
}

#[tokio::test]
async fn unknown_seeds_map_onto_a_variant() {
    for seed in [0, 1, 7, u64::MAX] {
        for (agent, tool, note) in [
            (lookup("format"), "format_text", FORMAT_NOTE.to_string()),
            (lookup("data"), "transform_data", format!("{DATA_NOTE}\n{MIXED_CSV}")),
            (lookup("calendar"), "calendar_block", CALENDAR_NOTE.to_string()),
            (lookup("report"), "progress_report", REPORT_NOTE.to_string()),
        ] {
            let agent = agent.unwrap_or_else(|| panic!("{tool}"));
            let out = seeded(agent.as_ref(), tool, &note, seed).await;
            assert!(!out.result.is_empty(), "{tool} seed {seed}");
        }
    }
}
