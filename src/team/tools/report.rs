//! The report tool agent: a progress report from task counts, with the
//! completion rate (completed / total), bullet points and metrics. It is
//! seeded, with two layouts: the sectioned report (a prose
//! summary, status breakdown, metrics and next steps), which under a word
//! limit leaves out the optional sections (next steps, then the status
//! breakdown) rather than cut sentences short, but always keeps its summary
//! and metrics; and the brief, bullets only, which writes the completion
//! rate's calculation out (`12 / 17 tasks = 70.6%`) and fits limits the
//! sectioned report cannot.

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::shared::{invalid, plural, read_task, variant_index};
use crate::agent::{Agent, AgentContext, AgentOutput, Task};
use crate::protocol::{Artifact, DelegationError};
use crate::verify::TaskSpec;
use crate::verify::text::{self, capitalize};

pub(crate) struct ReportAgent;

/// The variants' seeds in default order: sectioned, brief.
pub(super) const SEEDS: [u64; 2] = [527781, 936604];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// Title, summary sentence, status, metrics and next steps.
    Sectioned,
    /// Title and bullets: the rate with its calculation, what is open, the first next step.
    Brief,
}

impl Layout {
    fn of(seed: Option<u64>) -> Self {
        // one variant per seed, so the index is always in range
        let all: [Self; SEEDS.len()] = [Self::Sectioned, Self::Brief];
        all[variant_index(&SEEDS, seed)]
    }

    fn name(self) -> &'static str {
        match self {
            Self::Sectioned => "sectioned",
            Self::Brief => "brief",
        }
    }
}

#[derive(Debug, Default)]
struct Tally {
    completed: u64,
    in_progress: u64,
    blocked: u64,
    not_started: u64,
    /// Labels outside the four buckets, as written.
    other: Vec<(String, u64)>,
}

impl Tally {
    fn of(counts: &[(String, u64)]) -> Self {
        let mut t = Tally::default();
        for (label, n) in counts {
            let l = label.as_str();
            let bucket = match () {
                _ if ["complet", "done", "finish", "closed", "shipped", "resolved"].iter().any(|w| l.contains(w)) => {
                    &mut t.completed
                }
                _ if ["progress", "ongoing", "wip", "active", "started"].iter().any(|w| l.contains(w))
                    && !l.contains("not started") =>
                {
                    &mut t.in_progress
                }
                _ if ["block", "stuck", "on hold"].iter().any(|w| l.contains(w)) => &mut t.blocked,
                _ if ["not started", "todo", "to do", "pending", "backlog", "open"].iter().any(|w| l.contains(w)) => {
                    &mut t.not_started
                }
                _ => {
                    t.other.push((label.clone(), *n));
                    continue;
                }
            };
            *bucket = bucket.saturating_add(*n);
        }
        t
    }

    /// Saturating, so that absurd counts give an absurd report rather than a panic.
    fn total(&self) -> u64 {
        [self.completed, self.in_progress, self.blocked, self.not_started]
            .into_iter()
            .chain(self.other.iter().map(|o| o.1))
            .fold(0, u64::saturating_add)
    }
}

fn percent(part: u64, total: u64) -> f64 {
    if total == 0 { 0.0 } else { (part as f64 * 1000.0 / total as f64).round() / 10.0 }
}

/// `weekly progress report` → (`Weekly Progress Report`, `this week`).
fn title_and_period(spec: &TaskSpec) -> (String, &'static str) {
    let object = spec.goal.object.to_lowercase();
    let object = ["my ", "our ", "the ", "a "].iter().fold(object.as_str(), |o, p| o.strip_prefix(p).unwrap_or(o));
    let title = if object.contains("report") || object.contains("summary") {
        object.split_whitespace().map(capitalize).collect::<Vec<_>>().join(" ")
    } else {
        "Progress Report".to_string()
    };
    let period =
        [("daily", "today"), ("weekly", "this week"), ("monthly", "this month"), ("quarterly", "this quarter")]
            .into_iter()
            .find(|(w, _)| object.contains(w))
            .map_or("this period", |(_, p)| p);
    (title, period)
}

/// What is still open: `3 in progress and 2 blocked`.
fn open_parts(t: &Tally) -> Vec<String> {
    let mut open = Vec::new();
    for (n, label) in [(t.in_progress, "in progress"), (t.blocked, "blocked"), (t.not_started, "not started")] {
        if n > 0 {
            open.push(format!("{n} {label}"));
        }
    }
    open.extend(t.other.iter().filter(|(_, n)| *n > 0).map(|(label, n)| format!("{n} {label}")));
    open
}

/// The brief: bullets only, the rate's calculation written out; under a
/// word limit the next step goes first.
fn brief(spec: &TaskSpec, t: &Tally) -> String {
    let total = t.total();
    let (title, period) = title_and_period(spec);
    let mut lines = vec![
        title,
        format!(
            "- Completion rate: {} / {} = {:.1}% {period}",
            t.completed,
            plural(total, "task"),
            percent(t.completed, total)
        ),
    ];
    let open = open_parts(t);
    let remaining = total.saturating_sub(t.completed);
    if open.is_empty() {
        lines.push("- Open: none".to_string());
    } else {
        lines.push(format!("- Open: {} ({})", plural(remaining, "task"), open.join(", ")));
    }
    let next = if t.blocked > 0 {
        format!("- Next: unblock the {} first", plural(t.blocked, "blocked task"))
    } else if t.in_progress > 0 {
        format!("- Next: finish the {} in progress", plural(t.in_progress, "task"))
    } else {
        "- Next: keep the current pace".to_string()
    };
    lines.push(next);
    if let Some(max) = spec.constraints.max_words
        && text::word_count(&lines.join("\n")) > max
    {
        lines.pop();
    }
    lines.join("\n")
}

fn compose(spec: &TaskSpec, t: &Tally, layout: Layout) -> String {
    if layout == Layout::Brief {
        return brief(spec, t);
    }
    let total = t.total();
    let rate = percent(t.completed, total);
    let (title, period) = title_and_period(spec);

    let mut open = Vec::new();
    if t.in_progress > 0 {
        open.push(format!("{} in progress", t.in_progress));
    }
    if t.blocked > 0 {
        open.push(format!("{} blocked", t.blocked));
    }
    if t.not_started > 0 {
        open.push(format!("{} not started", t.not_started));
    }
    let with = if open.is_empty() { String::new() } else { format!(", with {}", open.join(" and ")) };
    let summary = format!(
        "Summary: {} of {} completed {period}, a {rate:.1}% completion rate{with}.",
        t.completed,
        plural(total, "task")
    );

    let mut status = vec!["Status:".to_string(), format!("- Completed: {}", plural(t.completed, "task"))];
    for (label, n) in [("In progress", t.in_progress), ("Blocked", t.blocked), ("Not started", t.not_started)] {
        if n > 0 {
            status.push(format!("- {label}: {}", plural(n, "task")));
        }
    }
    status.extend(t.other.iter().map(|(label, n)| format!("- {}: {}", capitalize(label), plural(*n, "task"))));

    let remaining = total.saturating_sub(t.completed);
    let mut metrics = vec![
        "Metrics:".to_string(),
        format!("- Total tasks: {total}"),
        format!("- Completion rate: {rate:.1}% ({} of {total})", t.completed),
        format!("- Open tasks: {remaining} ({:.1}%)", percent(remaining, total)),
    ];
    if t.blocked > 0 {
        metrics.push(format!("- Blocked share: {:.1}%", percent(t.blocked, total)));
    }

    let mut next = vec!["Next steps:".to_string()];
    if t.blocked > 0 {
        next.push(format!("- Unblock the {} first.", plural(t.blocked, "blocked task")));
    }
    if t.in_progress > 0 {
        next.push(format!("- Finish the {} in progress.", plural(t.in_progress, "task")));
    }
    if t.not_started > 0 {
        next.push(format!("- Schedule the {} not yet started.", plural(t.not_started, "task")));
    }
    if next.len() == 1 {
        next.push("- Keep the current pace.".to_string());
    }

    // Optional sections go first when the limit is tight: next steps, then status.
    let mut sections = vec![
        (title, false),
        (summary, false),
        (status.join("\n"), true),
        (metrics.join("\n"), false),
        (next.join("\n"), true),
    ];
    let render = |s: &[(String, bool)]| s.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>().join("\n\n");
    if let Some(max) = spec.constraints.max_words {
        for drop in [4, 2] {
            if text::word_count(&render(&sections)) > max {
                sections.remove(drop);
            }
        }
    }
    render(&sections)
}

#[async_trait]
impl Agent for ReportAgent {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        ctx.use_tool("progress_report")?;
        let (spec, _) = read_task(task)?;
        if spec.context.counts.is_empty() {
            return Err(invalid("no task counts: add e.g. 'Input: 12 tasks completed, 3 in progress, 2 blocked'"));
        }
        let t = Tally::of(&spec.context.counts);
        let total = t.total();
        if total == 0 {
            return Err(invalid("every count is zero: there is nothing to report"));
        }
        let layout = Layout::of(task.seed);
        let report = compose(&spec, &t, layout);
        let rate = percent(t.completed, total);
        let other: Map<String, Value> = t.other.iter().map(|(l, n)| (l.clone(), json!(n))).collect();
        let metrics = json!({
            "total": total,
            "completed": t.completed,
            "in_progress": t.in_progress,
            "blocked": t.blocked,
            "not_started": t.not_started,
            "other": other,
            "completion_rate": rate,
            "completion_rate_text": format!("{rate:.1}%"),
            "word_count": text::word_count(&report),
            "layout": layout.name(),
            "seed": task.seed.unwrap_or(SEEDS[0]),
        });
        Ok(AgentOutput::new(
            format!("Progress report ({}): {} of {total} tasks completed ({rate:.1}%)", layout.name(), t.completed),
            report,
        )
        .with_artifact(Artifact::json("metrics", metrics))
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

    #[tokio::test]
    async fn seed_001_report_note_computes_the_completion_rate() {
        let out = run(&ReportAgent, "progress_report", &noted(REPORT_NOTE)).await.unwrap();
        let v = verdict(REPORT_NOTE, &out);
        assert!(v.passed, "{v:#?}\n{}", out.result);
        let names: Vec<&str> = v.checks.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["has_bullet_points", "has_percentage", "max_300_words", "contains_completion_rate"]);
        let m = artifact(&out, "metrics");
        assert_eq!((m["total"].as_u64(), m["completed"].as_u64()), (Some(17), Some(12)));
        assert_eq!(m["completion_rate"], json!(70.6));
        assert!(out.result.starts_with("Weekly Progress Report\n\nSummary: 12 of 17 tasks completed this week, a 70.6% completion rate, with 3 in progress and 2 blocked."), "{}", out.result);
        assert!(
            out.result.contains("- Blocked: 2 tasks") && out.result.contains("- Unblock the 2 blocked tasks first.")
        );
    }

    #[tokio::test]
    async fn tight_limit_drops_optional_sections_not_the_metrics() {
        let note = REPORT_NOTE.replace("Max 300 words", "Max 45 words");
        let out = run(&ReportAgent, "progress_report", &noted(&note)).await.unwrap();
        assert!(text::word_count(&out.result) <= 45, "{}", out.result);
        assert!(!out.result.contains("Next steps") && !out.result.contains("Status:"), "{}", out.result);
        assert!(out.result.contains("Completion rate: 70.6% (12 of 17)"));
        assert!(verdict(&note, &out).passed);
    }

    #[tokio::test]
    async fn other_labels_and_counts_after_the_label_are_kept() {
        let note = "Generate monthly status report. Input: completed: 4, not started: 1, in review: 2. Max 200 words.";
        let out = run(&ReportAgent, "progress_report", &noted(note)).await.unwrap();
        assert!(out.result.contains("4 of 7 tasks completed this month, a 57.1% completion rate"), "{}", out.result);
        assert!(out.result.contains("- In review: 2 tasks"));
        assert_eq!(artifact(&out, "metrics")["other"], json!({"in review": 2}));
    }

    #[tokio::test]
    async fn missing_or_zero_counts_are_invalid_requests() {
        for note in [
            "Generate weekly progress report. Max 100 words.",
            "Generate weekly report. Input: 0 completed, 0 blocked.",
        ] {
            let err = run(&ReportAgent, "progress_report", &noted(note)).await.unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidRequest, "{note}");
        }
    }
}
