//! The calendar tool agent: turns a Task Note into an iCalendar (RFC 5545)
//! event. Times are UTC: a note carries no time zone, and UTC is what the
//! `Z` form of DTSTART/DTEND states unambiguously. `from now` is the current
//! time; explicit starts (`tomorrow at 9am`, `Oct 22 at 14:00`,
//! `2025-10-22 14:00`) are read against it. A busy block is `TRANSP:OPAQUE`;
//! a VALARM is added only when reminders are on.
//!
//! It is seeded, with two ways to place a block that starts
//! now: the first seed starts it at this second; the second starts it at the
//! next half hour (10:07 → 10:30, 10:30 stays), which leaves the minutes
//! before it free and lines the block up with the grid other meetings use.
//! An explicit start (`tomorrow at 9am`) is kept by both.

use std::sync::LazyLock;

use async_trait::async_trait;
use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveTime, Utc};
use regex::Regex;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::shared::{invalid, read_task, variant_index};
use crate::agent::{Agent, AgentContext, AgentOutput, Task};
use crate::protocol::{Artifact, DelegationError};
use crate::verify::TaskSpec;
use crate::verify::text::{self, re};

pub(crate) struct CalendarAgent;

/// The variants' seeds in default order: start now, start at the next half hour.
pub(super) const SEEDS: [u64; 2] = [650138, 184467];

/// How each seed places a block that starts now (whether it waits for the half hour).
const PLACEMENTS: [(&str, bool); SEEDS.len()] = [("now", false), ("next_half_hour", true)];

/// The next :00 or :30 at or after `t`.
pub(super) fn next_half_hour(t: DateTime<Utc>) -> DateTime<Utc> {
    let secs = t.timestamp();
    let up = (1800 - secs.rem_euclid(1800)) % 1800;
    DateTime::from_timestamp(secs.saturating_add(up), 0).unwrap_or(t)
}

const DEFAULT_REMINDER_MINUTES: u32 = 15;
/// When a day is named without a time (`tomorrow`).
const DEFAULT_HOUR: u32 = 9;

static TIME: LazyLock<Regex> = LazyLock::new(|| re(r"^(\d{1,2})(?:[:.](\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?$"));
static ISO: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(\d{4})-(\d{2})-(\d{2})(?:[ t](\d{1,2}):(\d{2})(?::(\d{2}))?)?\s*(?:z|utc)?$"));
static DAY: LazyLock<Regex> = LazyLock::new(|| re(r"^(today|tomorrow)(?:\s+at\s+(.+))?$"));
static MONTH_FIRST: LazyLock<Regex> =
    LazyLock::new(|| re(r"^([a-z]{3})[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?(?:,?\s+(\d{4}))?(?:\s+at\s+(.+))?$"));
static DAY_FIRST: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?([a-z]{3})[a-z]*(?:\s+(\d{4}))?(?:\s+at\s+(.+))?$"));
const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

fn parse_time(s: &str) -> Option<NaiveTime> {
    match s.trim() {
        "noon" => return NaiveTime::from_hms_opt(12, 0, 0),
        "midnight" => return NaiveTime::from_hms_opt(0, 0, 0),
        _ => {}
    }
    let c = TIME.captures(s.trim())?;
    let mut hour: u32 = c.get(1)?.as_str().parse().ok()?;
    let minute: u32 = c.get(2).map_or(Some(0), |m| m.as_str().parse().ok())?;
    match c.get(3).map(|m| m.as_str().starts_with('p')) {
        Some(true) if hour < 12 => hour += 12,
        Some(false) if hour == 12 => hour = 0,
        Some(_) if hour > 12 => return None,
        _ => {}
    }
    NaiveTime::from_hms_opt(hour, minute, 0)
}

fn at(date: NaiveDate, time: Option<&str>) -> Option<DateTime<Utc>> {
    let time = match time {
        Some(t) => parse_time(t)?,
        None => NaiveTime::from_hms_opt(DEFAULT_HOUR, 0, 0)?,
    };
    Some(date.and_time(time).and_utc())
}

/// A date without a year is the next one to come.
fn month_day(month: &str, day: &str, year: Option<&str>, now: DateTime<Utc>) -> Option<NaiveDate> {
    let month = MONTHS.iter().position(|m| *m == month)? as u32 + 1;
    let day: u32 = day.parse().ok()?;
    match year {
        Some(y) => NaiveDate::from_ymd_opt(y.parse().ok()?, month, day),
        None => {
            let today = now.date_naive();
            let this_year = NaiveDate::from_ymd_opt(today.year(), month, day)?;
            if this_year < today { NaiveDate::from_ymd_opt(today.year() + 1, month, day) } else { Some(this_year) }
        }
    }
}

/// A point in time as notes write it; a bare time falls on `base`.
fn parse_when(phrase: &str, now: DateTime<Utc>, base: NaiveDate) -> Option<DateTime<Utc>> {
    let mut s = phrase.trim().trim_end_matches('.').to_lowercase();
    if matches!(s.as_str(), "" | "now" | "from now" | "right now" | "immediately" | "right away" | "asap") {
        return Some(now);
    }
    while let Some(rest) = ["starting ", "beginning ", "from ", "at ", "on "].iter().find_map(|p| s.strip_prefix(p)) {
        s = rest.trim().to_string();
    }
    if let Some(rest) = s.strip_prefix("in ") {
        let minutes = crate::verify::task_note::parse_duration(rest)?;
        return Some(now + Duration::minutes(i64::from(minutes)));
    }
    if let Some(c) = ISO.captures(&s) {
        let n = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u32>().ok());
        let date = NaiveDate::from_ymd_opt(c.get(1)?.as_str().parse().ok()?, n(2)?, n(3)?)?;
        let time = NaiveTime::from_hms_opt(n(4).unwrap_or(DEFAULT_HOUR), n(5).unwrap_or(0), n(6).unwrap_or(0))?;
        return Some(date.and_time(time).and_utc());
    }
    if let Some(c) = DAY.captures(&s) {
        let today = now.date_naive();
        let date = if c.get(1)?.as_str() == "today" { today } else { today.succ_opt()? };
        return at(date, c.get(2).map(|m| m.as_str()));
    }
    if let Some(c) = MONTH_FIRST.captures(&s) {
        let date = month_day(c.get(1)?.as_str(), c.get(2)?.as_str(), c.get(3).map(|m| m.as_str()), now)?;
        return at(date, c.get(4).map(|m| m.as_str()));
    }
    if let Some(c) = DAY_FIRST.captures(&s) {
        let date = month_day(c.get(2)?.as_str(), c.get(1)?.as_str(), c.get(3).map(|m| m.as_str()), now)?;
        return at(date, c.get(4).map(|m| m.as_str()));
    }
    parse_time(&s).map(|t| base.and_time(t).and_utc())
}

/// RFC 5545 §3.3.11 TEXT escaping, for any text: a line break (CRLF, LF or
/// a lone CR) as `\n`; a control character TEXT may not hold (all but HTAB)
/// as U+FFFD, so no text can end its line early or start a property.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push_str("\\\\"),
            ';' => out.push_str("\\;"),
            ',' => out.push_str("\\,"),
            '\n' => out.push_str("\\n"),
            '\r' => {
                chars.next_if_eq(&'\n');
                out.push_str("\\n");
            }
            '\t' => out.push('\t'),
            '\u{0}'..='\u{1F}' | '\u{7F}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// RFC 5545 §3.1: lines longer than 75 octets continue on lines that start
/// with a space, split between characters, never inside one.
fn fold(line: &str) -> String {
    let mut out = String::new();
    let mut width = 0;
    for c in line.chars() {
        if width + c.len_utf8() > 75 {
            out.push_str("\r\n ");
            width = 1;
        }
        out.push(c);
        width += c.len_utf8();
    }
    out
}

fn stamp(t: DateTime<Utc>) -> String {
    t.format("%Y%m%dT%H%M%SZ").to_string()
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Event {
    pub(super) title: String,
    pub(super) description: Option<String>,
    pub(super) start: DateTime<Utc>,
    pub(super) end: DateTime<Utc>,
    pub(super) busy: bool,
    pub(super) reminder_minutes: Option<u32>,
}

impl Event {
    pub(super) fn from_spec(spec: &TaskSpec, now: DateTime<Utc>, to_half_hour: bool) -> Result<Self, DelegationError> {
        let e = &spec.context.event;
        let mut start = match e.start.as_deref() {
            None => now,
            Some(phrase) => parse_when(phrase, now, now.date_naive()).ok_or_else(|| {
                invalid(format!(
                    "cannot read the start time '{phrase}': write e.g. 'from now', 'tomorrow at 9am' or '2025-10-22 14:00' (UTC)"
                ))
            })?,
        };
        if to_half_hour && start == now {
            let aligned = next_half_hour(now);
            // an end it would pass keeps the block at now
            let fits = e
                .end
                .as_deref()
                .is_none_or(|p| parse_when(p, now, aligned.date_naive()).is_some_and(|end| end > aligned));
            if fits {
                start = aligned;
            }
        }
        let end = match (e.end.as_deref(), e.duration_minutes) {
            (Some(phrase), _) => parse_when(phrase, now, start.date_naive())
                .ok_or_else(|| invalid(format!("cannot read the end time '{phrase}'")))?,
            (None, Some(minutes)) => start + Duration::minutes(i64::from(minutes)),
            (None, None) => {
                return Err(invalid("no duration: say how long, e.g. 'Block calendar for 2 hours from now'"));
            }
        };
        if end <= start {
            return Err(invalid(format!("the event would end ({end}) before it starts ({start})")));
        }
        let object = spec.goal.object.to_lowercase();
        let generic = ["calendar", "my calendar", "the calendar", "time", "some time", ""];
        let title = e.title.clone().unwrap_or_else(|| {
            if generic.contains(&object.as_str()) { "Blocked time".into() } else { text::capitalize(&spec.goal.object) }
        });
        let reminders = e.reminders.unwrap_or(false);
        Ok(Self {
            title,
            description: e.description.clone(),
            start,
            end,
            busy: e.busy.unwrap_or(true),
            reminder_minutes: reminders.then(|| e.reminder_minutes.unwrap_or(DEFAULT_REMINDER_MINUTES)),
        })
    }

    /// The same block gets the same UID, so sending it twice updates rather than duplicates.
    pub(super) fn uid(&self) -> String {
        let digest = Sha256::digest(format!("{}|{}|{}", self.title, stamp(self.start), stamp(self.end)).as_bytes());
        format!("{}@switchboard", &hex::encode(digest)[..32])
    }

    fn ics(&self, now: DateTime<Utc>) -> String {
        let mut lines = vec![
            "BEGIN:VCALENDAR".to_string(),
            "VERSION:2.0".into(),
            "PRODID:-//Switchboard//Calendar Tool Agent//EN".into(),
            "CALSCALE:GREGORIAN".into(),
            "METHOD:PUBLISH".into(),
            "BEGIN:VEVENT".into(),
            format!("UID:{}", self.uid()),
            format!("DTSTAMP:{}", stamp(now)),
            format!("DTSTART:{}", stamp(self.start)),
            format!("DTEND:{}", stamp(self.end)),
            format!("SUMMARY:{}", escape(&self.title)),
        ];
        if let Some(d) = &self.description {
            lines.push(format!("DESCRIPTION:{}", escape(d)));
        }
        lines.push(format!("TRANSP:{}", if self.busy { "OPAQUE" } else { "TRANSPARENT" }));
        lines.push("STATUS:CONFIRMED".into());
        if let Some(minutes) = self.reminder_minutes {
            lines.extend([
                "BEGIN:VALARM".to_string(),
                "ACTION:DISPLAY".into(),
                format!("DESCRIPTION:{}", escape(&format!("Reminder: {}", self.title))),
                format!("TRIGGER:-PT{minutes}M"),
                "END:VALARM".into(),
            ]);
        }
        lines.extend(["END:VEVENT".to_string(), "END:VCALENDAR".into()]);
        lines.iter().map(|l| fold(l) + "\r\n").collect()
    }
}

#[async_trait]
impl Agent for CalendarAgent {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        ctx.use_tool("calendar_block")?;
        let (spec, _) = read_task(task)?;
        let now = Utc::now();
        // iCalendar times have whole seconds.
        let now = DateTime::from_timestamp(now.timestamp(), 0).unwrap_or(now);
        let (placement, to_half_hour) = PLACEMENTS[variant_index(&SEEDS, task.seed)];
        let event = Event::from_spec(&spec, now, to_half_hour)?;
        let minutes = (event.end - event.start).num_minutes();
        let artifact = json!({
            "title": event.title,
            "description": event.description,
            "start": event.start.to_rfc3339(),
            "end": event.end.to_rfc3339(),
            "duration_minutes": minutes,
            "busy": event.busy,
            "reminders": event.reminder_minutes.is_some(),
            "reminder_minutes": event.reminder_minutes,
            "uid": event.uid(),
            "placement": placement,
            "seed": task.seed.unwrap_or(SEEDS[0]),
        });
        let summary = format!(
            "Blocked '{}' for {minutes} minutes from {} as {}",
            event.title,
            event.start.format("%Y-%m-%d %H:%M UTC"),
            if event.busy { "busy" } else { "free" }
        );
        Ok(AgentOutput::new(summary, event.ics(now))
            .with_artifact(Artifact::json("event", artifact))
            .with_confidence(95))
    }

    fn seeds(&self) -> &[u64] {
        &SEEDS
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::protocol::ErrorCode;

    fn unfold(ics: &str) -> String {
        ics.replace("\r\n ", "")
    }

    #[tokio::test]
    async fn seed_001_calendar_note_blocks_two_busy_hours_from_now() {
        let before = Utc::now().timestamp();
        let out = run(&CalendarAgent, "calendar_block", &noted(CALENDAR_NOTE)).await.unwrap();
        let after = Utc::now().timestamp();
        let v = verdict(CALENDAR_NOTE, &out);
        assert!(v.passed, "{v:#?}\n{}", out.result);
        let names: Vec<&str> = v.checks.iter().map(|c| c.name.as_str()).collect();
        assert!(names.contains(&"is_icalendar") && names.contains(&"not_contains_begin_valarm"), "{names:?}");

        let ics = &out.result;
        assert!(!ics.replace("\r\n", "").contains('\n'), "only CRLF line endings");
        for line in ["SUMMARY:Deep Work Session", "DESCRIPTION:Focus time - no interruptions", "TRANSP:OPAQUE"] {
            assert!(ics.contains(&format!("{line}\r\n")), "{line} in {ics}");
        }
        for field in ["UID:", "DTSTAMP:", "DTSTART:", "DTEND:"] {
            assert!(ics.contains(&format!("\r\n{field}")), "{field}");
        }
        let e = artifact(&out, "event");
        assert_eq!(
            (e["duration_minutes"].as_i64(), e["busy"].as_bool(), e["reminders"].as_bool()),
            (Some(120), Some(true), Some(false))
        );
        let start = DateTime::parse_from_rfc3339(e["start"].as_str().unwrap()).unwrap().timestamp();
        let end = DateTime::parse_from_rfc3339(e["end"].as_str().unwrap()).unwrap().timestamp();
        assert!((before..=after).contains(&start), "{before} <= {start} <= {after}");
        assert_eq!(end - start, 2 * 3600);
        let dtstart = DateTime::from_timestamp(start, 0).unwrap();
        assert!(ics.contains(&format!("DTSTART:{}\r\n", stamp(dtstart))));
    }

    #[tokio::test]
    async fn explicit_start_and_reminders_are_honoured() {
        let note =
            "Schedule a focus session for 90 minutes tomorrow at 9am. Title: Review. Reminders: 10 minutes before";
        let out = run(&CalendarAgent, "calendar_block", &noted(note)).await.unwrap();
        let tomorrow = Utc::now().date_naive().succ_opt().unwrap();
        assert!(out.result.contains(&format!("DTSTART:{}T090000Z\r\n", tomorrow.format("%Y%m%d"))), "{}", out.result);
        assert!(out.result.contains(&format!("DTEND:{}T103000Z\r\n", tomorrow.format("%Y%m%d"))));
        assert!(out.result.contains("BEGIN:VALARM\r\nACTION:DISPLAY\r\n") && out.result.contains("TRIGGER:-PT10M\r\n"));
        assert!(verdict(note, &out).passed);

        let note =
            "Block calendar on 2025-10-22 14:00. Duration: 1.5 hours. Title: Planning, Q4; offsite. Status: free";
        let out = run(&CalendarAgent, "calendar_block", &noted(note)).await.unwrap();
        for line in [
            "DTSTART:20251022T140000Z",
            "DTEND:20251022T153000Z",
            "SUMMARY:Planning\\, Q4\\; offsite",
            "TRANSP:TRANSPARENT",
        ] {
            assert!(out.result.contains(&format!("{line}\r\n")), "{line} in {}", out.result);
        }
    }

    #[test]
    fn start_phrases_are_read_against_now() {
        let now = DateTime::parse_from_rfc3339("2025-10-18T21:00:00Z").unwrap().with_timezone(&Utc);
        let base = now.date_naive();
        let when = |s: &str| parse_when(s, now, base).map(|t| t.to_rfc3339());
        assert_eq!(when("from now").as_deref(), Some("2025-10-18T21:00:00+00:00"));
        assert_eq!(when("in 30 minutes").as_deref(), Some("2025-10-18T21:30:00+00:00"));
        assert_eq!(when("tomorrow at 9am").as_deref(), Some("2025-10-19T09:00:00+00:00"));
        assert_eq!(when("Oct 22 at 2:30pm").as_deref(), Some("2025-10-22T14:30:00+00:00"));
        assert_eq!(when("22nd October").as_deref(), Some("2025-10-22T09:00:00+00:00"));
        assert_eq!(when("Jan 5").as_deref(), Some("2026-01-05T09:00:00+00:00"), "a past date means next year");
        assert_eq!(when("at 12am").as_deref(), Some("2025-10-18T00:00:00+00:00"));
        assert_eq!(when("2025-10-22T14:00Z").as_deref(), Some("2025-10-22T14:00:00+00:00"));
        for bad in ["whenever", "25:00", "13pm", "Feb 30"] {
            assert_eq!(when(bad), None, "{bad}");
        }
    }

    #[test]
    fn long_lines_fold_at_75_octets_without_splitting_characters() {
        let line = format!("SUMMARY:{}", "Ünïcödé ".repeat(20));
        let folded = fold(&line);
        assert!(folded.split("\r\n").all(|l| l.len() <= 75), "{folded}");
        assert_eq!(unfold(&folded), line);
    }

    #[tokio::test]
    async fn missing_duration_or_unreadable_start_is_an_invalid_request() {
        for (note, why) in [
            ("Block calendar tomorrow at 9am. Title: X", "no duration"),
            ("Block calendar for 1 hour starting whenever. Title: X", "cannot read the start time"),
        ] {
            let err = run(&CalendarAgent, "calendar_block", &noted(note)).await.unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidRequest);
            assert!(err.message.contains(why), "{}", err.message);
        }
    }

    /// RFC 5545's CONTROL: what a TEXT value may not hold (HTAB it may).
    fn control(c: char) -> bool {
        matches!(c, '\u{0}'..='\u{8}' | '\u{A}'..='\u{1F}' | '\u{7F}')
    }

    /// A TEXT value read back: `\n`, `\,`, `\;` and `\\` undone.
    fn unescape(value: &str) -> String {
        let mut out = String::new();
        let mut chars = value.chars();
        while let Some(c) = chars.next() {
            match (c, c == '\\') {
                (_, true) => match chars.next() {
                    Some('n' | 'N') => out.push('\n'),
                    Some(other) => out.push(other),
                    None => out.push('\\'),
                },
                (c, false) => out.push(c),
            }
        }
        out
    }

    fn awkward_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let hard = prop_oneof![
            (0u32..0x20).prop_filter_map("a C0 control", char::from_u32),
            proptest::sample::select(vec!['\u{7F}', '\\', ';', ',', ':', '\r', '\n', 'N']),
            any::<char>(),
        ];
        prop_oneof![any::<String>(), proptest::collection::vec(hard, 0..30).prop_map(String::from_iter)]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

        #[test]
        fn any_title_or_description_makes_well_formed_icalendar(title in awkward_text(), description in awkward_text()) {
            let now = DateTime::from_timestamp(1_760_000_000, 0).unwrap();
            let event = Event {
                title: title.clone(),
                description: Some(description.clone()),
                start: now,
                end: now + Duration::hours(1),
                busy: true,
                reminder_minutes: Some(10),
            };
            let ics = event.ics(now);
            proptest::prop_assert!(ics.ends_with("\r\n"));
            let lines: Vec<&str> = ics.trim_end_matches("\r\n").split("\r\n").collect();
            for line in &lines {
                proptest::prop_assert!(!line.chars().any(control), "a control character in {:?}", line);
            }
            // a line break in the text is an escaped one; others are refused characters, replaced
            let kept = |text: &str| -> String {
                text.replace("\r\n", "\n").replace('\r', "\n").chars().map(|c| if c != '\n' && control(c) { '\u{FFFD}' } else { c }).collect()
            };
            let unfolded = unfold(&ics);
            let value = |name: &str| -> Vec<String> {
                unfolded.split("\r\n").filter_map(|l| l.strip_prefix(name)).map(unescape).collect()
            };
            proptest::prop_assert_eq!(value("SUMMARY:"), vec![kept(&title)]);
            proptest::prop_assert_eq!(
                value("DESCRIPTION:"),
                vec![kept(&description), kept(&format!("Reminder: {title}"))]
            );
        }
    }
}
