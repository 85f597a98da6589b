//! Goalie: savings goals, how far along they are and whether the monthly pace
//! reaches them in time.

use std::sync::LazyLock;

use async_trait::async_trait;
use chrono::Datelike;
use regex::Regex;
use serde_json::{Value, json};

use super::dates;
use super::money::{self, Cents, Labelled};
use super::reply::needs_input;
use crate::agent::{Agent, AgentContext, AgentOutput, Task};
use crate::protocol::{Artifact, DelegationError, NewFact};

pub const TOOL: &str = "track_goals";
const MAX_GOALS: usize = 50;
/// Projections further out than a century are not dates worth printing.
const MAX_PROJECTED_MONTHS: i64 = 1200;

static AS_OF: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(as of|today is|current date:?)\s+").expect("valid regex"));
static DEADLINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(by|before|until|deadline:?|due|target date:?)\s+(?:the\s+)?(?:end\s+of\s+)?")
        .expect("valid regex")
});
static RELATIVE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(?:in|within)\s+(\d{1,3})\s+(months?|years?)\b").expect("valid regex"));
static BULLET: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+").expect("valid regex"));
static YEAR_ONLY: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(\d{4})\b").expect("valid regex"));

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoalStatus {
    Done,
    OnTrack,
    Behind,
    /// No target date: only the projection applies.
    NoDeadline,
}

impl GoalStatus {
    fn as_str(self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::OnTrack => "on_track",
            Self::Behind => "behind",
            Self::NoDeadline => "no_deadline",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Goal {
    pub name: String,
    pub target: Cents,
    pub saved: Cents,
    /// Current contribution per month.
    pub monthly: Cents,
    pub deadline: Option<(i32, u32)>,
}

/// A goal measured against a month.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub goal: Goal,
    pub as_of: (i32, u32),
    pub remaining: Cents,
    pub percent: f64,
    /// Months to the target at the current pace; None when nothing is put aside.
    pub months_to_go: Option<i64>,
    pub projected: Option<(i32, u32)>,
    /// Months until the deadline (0 or less when it has passed).
    pub months_left: Option<i64>,
    /// The monthly amount that reaches the target by the deadline.
    pub required_monthly: Option<Cents>,
    pub status: GoalStatus,
}

impl Progress {
    pub fn new(goal: Goal, as_of: (i32, u32)) -> Self {
        let remaining = (goal.target - goal.saved).max(0);
        let months_to_go = money::div_ceil(remaining, goal.monthly).or((remaining == 0).then_some(0));
        let months_left = goal.deadline.map(|d| dates::months_between(as_of, d));
        let required_monthly = months_left.map(|left| money::div_ceil(remaining, left).unwrap_or(remaining));
        let status = match (remaining, months_left) {
            (0, _) => GoalStatus::Done,
            (_, None) => GoalStatus::NoDeadline,
            (_, Some(left)) if left > 0 && i128::from(goal.monthly) * i128::from(left) >= i128::from(remaining) => {
                GoalStatus::OnTrack
            }
            _ => GoalStatus::Behind,
        };
        Self {
            percent: money::percent(goal.saved, goal.target),
            projected: months_to_go.filter(|m| *m <= MAX_PROJECTED_MONTHS).map(|m| dates::add_months(as_of, m)),
            goal,
            as_of,
            remaining,
            months_to_go,
            months_left,
            required_monthly,
            status,
        }
    }

    pub fn to_json(&self) -> Value {
        let c = money::to_value;
        json!({
            "name": self.goal.name,
            "target": c(self.goal.target),
            "saved": c(self.goal.saved),
            "monthly": c(self.goal.monthly),
            "deadline": self.goal.deadline.map(dates::month_label),
            "as_of": dates::month_label(self.as_of),
            "percent_complete": self.percent,
            "remaining": c(self.remaining),
            "months_to_go": self.months_to_go,
            "projected_completion": self.projected.map(dates::month_label),
            "months_left": self.months_left,
            "required_monthly": self.required_monthly.map(c),
            "on_track": match self.status {
                GoalStatus::Done | GoalStatus::OnTrack => Some(true),
                GoalStatus::Behind => Some(false),
                GoalStatus::NoDeadline => None,
            },
            "status": self.status.as_str(),
        })
    }

    fn sentence(&self, currency: &str) -> String {
        let fmt = |c: Cents| money::format(c, currency);
        let g = &self.goal;
        let mut s = format!("{}: {} of {} ({}%)", g.name, fmt(g.saved), fmt(g.target), self.percent);
        if self.status == GoalStatus::Done {
            s.push_str(", reached.");
            return s;
        }
        match (self.months_to_go, self.projected) {
            (Some(m), Some(p)) => s.push_str(&format!(
                "; at {}/month it takes {m} more months ({})",
                fmt(g.monthly),
                dates::month_label(p)
            )),
            (Some(_), None) => s.push_str(&format!(
                "; at {}/month it would take over {} years",
                fmt(g.monthly),
                MAX_PROJECTED_MONTHS / 12
            )),
            _ => s.push_str("; nothing is being put aside yet"),
        }
        if let (Some(deadline), Some(required)) = (g.deadline, self.required_monthly) {
            let by = dates::month_label(deadline);
            match self.status {
                GoalStatus::OnTrack => s.push_str(&format!("; on track for {by} (needs {}/month)", fmt(required))),
                _ if self.months_left.is_some_and(|l| l <= 0) => {
                    s.push_str(&format!("; the {by} deadline has passed with {} to go", fmt(self.remaining)));
                }
                _ => s.push_str(&format!(
                    "; behind: reaching it by {by} needs {}/month ({} more per month)",
                    fmt(required),
                    fmt(required - g.monthly)
                )),
            }
        }
        s.push('.');
        s
    }
}

/// The month a text says it is (`as of 2025-10`), if it says.
fn stated_month(text: &str) -> Option<(i32, u32)> {
    let m = AS_OF.find(text)?;
    dates::find_month(text.get(m.end()..)?).filter(|(_, r)| r.start == 0).map(|(ym, _)| ym)
}

/// The deadline in a line and the byte range to blank out before reading amounts.
fn deadline(line: &str, as_of: (i32, u32)) -> Option<((i32, u32), std::ops::Range<usize>)> {
    for kw in DEADLINE.find_iter(line) {
        let rest = line.get(kw.end()..)?;
        if let Some((ym, r)) = dates::find_month(rest).filter(|(_, r)| r.start == 0) {
            return Some((ym, kw.start()..kw.end() + r.end));
        }
        if let Some(c) = YEAR_ONLY.captures(rest) {
            let year: i32 = c[1].parse().ok()?;
            return Some(((year, 12), kw.start()..kw.end() + c[0].len()));
        }
    }
    let c = RELATIVE.captures(line)?;
    let n: i64 = c[1].parse().ok()?;
    let months = if c[2].to_lowercase().starts_with('y') { n * 12 } else { n };
    Some((dates::add_months(as_of, months), c.get(0)?.range()))
}

/// A contribution per month, converted from weekly or yearly amounts.
fn monthly_amount(l: &Labelled) -> Option<Cents> {
    let v = l.figure.value;
    if l.after_starts(&["/month", "/mo", "per month", "a month", "monthly", "each month", "every month", "/m"])
        || l.before_has(&["monthly", "per month", "each month", "every month"])
    {
        Some(v)
    } else if l.after_starts(&["/week", "per week", "a week", "weekly", "each week", "every week", "/wk"]) {
        Some(v * 52 / 12)
    } else if l.after_starts(&["/year", "per year", "a year", "yearly", "annually", "/yr"]) {
        Some(v / 12)
    } else {
        None
    }
}

/// One goal from a line such as `Emergency fund: target $10,000, saved $2,500,
/// saving $500/month, by 2026-12` or `Vacation $3,000 - have $1,200 - $200 a
/// month - in 9 months`. None without a target.
pub fn parse_goal(line: &str, as_of: (i32, u32)) -> Option<Goal> {
    let line = BULLET.find(line).map_or(line, |m| &line[m.end()..]).trim();
    let found = deadline(line, as_of);
    let mut text = line.to_string();
    if let Some((_, r)) = &found {
        text.replace_range(r.clone(), &" ".repeat(r.len()));
    }
    let labelled: Vec<Labelled> = money::labelled_figures(&text).into_iter().filter(|l| !l.figure.is_percent).collect();
    let (mut target, mut saved, mut monthly) = (None, None, None);
    let mut unlabelled = Vec::new();
    for (i, l) in labelled.iter().enumerate() {
        let next_is_of = labelled.get(i + 1).is_some_and(|n| n.before.trim() == "of");
        if let Some(m) = monthly_amount(l) {
            monthly = monthly.or(Some(m));
        } else if l.before.trim() == "of" || l.before.trim_end().ends_with(" of") {
            target = target.or(Some(l.figure.value));
        } else if l.before_has(&["saved", "have", "current", "so far", "already", "put aside", "balance"])
            || l.after_starts(&["saved", "so far", "already"])
            || next_is_of
        {
            saved = saved.or(Some(l.figure.value));
        } else if l.before_has(&["target", "goal", "need", "want", "reach", "cost", "total"])
            || l.after_starts(&["target", "goal"])
        {
            target = target.or(Some(l.figure.value));
        } else {
            unlabelled.push(l.figure.value);
        }
    }
    // Unlabelled amounts fill the gaps in order: target, then saved, then monthly.
    let mut rest = unlabelled.into_iter();
    let target = target.or_else(|| rest.next()).filter(|t| *t > 0)?;
    let saved = saved.or_else(|| rest.next()).unwrap_or(0).max(0);
    let monthly = monthly.or_else(|| rest.next()).unwrap_or(0).max(0);
    let name = goal_name(&text, labelled.first().map(|l| l.figure.start));
    Some(Goal { name, target, saved, monthly, deadline: found.map(|(d, _)| d) })
}

/// The words before a colon or the first amount, without filler.
fn goal_name(text: &str, first_figure: Option<usize>) -> String {
    let end = first_figure.unwrap_or(text.len());
    let head = text.get(..end).unwrap_or(text);
    let head = head.split(':').next().unwrap_or(head);
    const FILLER: &[&str] = &[
        "my", "goal", "goals", "save", "saving", "for", "a", "an", "the", "to", "i", "want", "need", "target", "of",
        "have", "saved", "-", "is",
    ];
    let words: Vec<&str> = head
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\''))
        .filter(|w| !w.is_empty() && !FILLER.contains(&w.to_lowercase().as_str()))
        .collect();
    let name = words.join(" ");
    let mut chars = name.chars();
    chars.next().map(|f| f.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// Every goal in a text, one per line, measured against `as of <month>` in the
/// text or else the current month.
pub fn parse_goals(text: &str) -> (Vec<Progress>, (i32, u32)) {
    let today = chrono::Utc::now().date_naive();
    let as_of = stated_month(text).unwrap_or((today.year(), today.month()));
    let goals = text
        .lines()
        .take(1000)
        .filter(|l| !AS_OF.is_match(l) || money::figures(l).len() > 1)
        .filter_map(|l| parse_goal(l, as_of))
        .take(MAX_GOALS)
        .enumerate()
        .map(|(i, mut g)| {
            if g.name.is_empty() {
                g.name = format!("Goal {}", i + 1);
            }
            Progress::new(g, as_of)
        })
        .collect();
    (goals, as_of)
}

/// Goalie (`goalie-goals`): goals in text in, a `goals` artifact out.
pub struct GoalieGoals;

#[async_trait]
impl Agent for GoalieGoals {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        ctx.use_tool(TOOL)?;
        let text = format!("{}\n{}", task.objective, task.input);
        let (goals, _) = parse_goals(&text);
        if goals.is_empty() {
            return Err(needs_input(
                "Which savings goal should I track? Tell me its target, what you have saved and, if you like, \
                 what you save each month and by when, e.g. 'Emergency fund: target $10,000, saved $2,500, \
                 saving $500/month, by 2026-12'.",
            ));
        }
        let currency = money::detect_currency(&text).unwrap_or("USD");
        let fmt = |c: Cents| money::format(c, currency);
        let count = |s: GoalStatus| goals.iter().filter(|g| g.status == s).count();
        let behind: Vec<&Progress> = goals.iter().filter(|g| g.status == GoalStatus::Behind).collect();
        let summary = match goals.as_slice() {
            [one] => one.sentence(currency),
            many => {
                let mut s = format!(
                    "Tracked {} goals: {} on track, {} behind",
                    many.len(),
                    count(GoalStatus::OnTrack) + count(GoalStatus::Done),
                    behind.len()
                );
                if let Some(worst) = behind.iter().max_by_key(|g| g.required_monthly.unwrap_or(0) - g.goal.monthly) {
                    s.push_str(&format!(
                        " ({} needs {}/month, saving {})",
                        worst.goal.name,
                        fmt(worst.required_monthly.unwrap_or(0)),
                        fmt(worst.goal.monthly)
                    ));
                }
                if count(GoalStatus::NoDeadline) > 0 {
                    s.push_str(&format!(", {} without a deadline", count(GoalStatus::NoDeadline)));
                }
                s
            }
        };
        let result = goals.iter().map(|g| format!("- {}", g.sentence(currency))).collect::<Vec<_>>().join("\n");
        let mut output = AgentOutput::new(summary, result)
            .with_artifact(Artifact::json("goals", Value::Array(goals.iter().map(Progress::to_json).collect())))
            .with_confidence(90);
        output.requires_followup = !behind.is_empty();
        for g in goals.iter().take(3) {
            let by = g.goal.deadline.map(|d| format!(" by {}", dates::month_label(d))).unwrap_or_default();
            output = output.with_fact(NewFact::new(format!(
                "User is saving for {} (target {}{by})",
                g.goal.name,
                fmt(g.goal.target)
            )));
        }
        Ok(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ErrorCode;

    async fn run(input: &str) -> Result<AgentOutput, DelegationError> {
        GoalieGoals.run(&AgentContext::detached([TOOL]), &Task::new("Track my savings goals", input)).await
    }

    #[test]
    fn goalie_parses_goal_lines() {
        let g = parse_goal("Emergency fund: target $10,000, saved $2,500, saving $500/month, by 2026-12", (2025, 10));
        assert_eq!(
            g,
            Some(Goal {
                name: "Emergency fund".into(),
                target: 1_000_000,
                saved: 250_000,
                monthly: 50_000,
                deadline: Some((2026, 12))
            })
        );
        let g = parse_goal("- Save for a car: $2,000 of $8,000 saved, $100 a week, within 2 years", (2025, 10))
            .expect("goal");
        assert_eq!(
            (g.name.as_str(), g.target, g.saved, g.monthly, g.deadline),
            ("Car", 800_000, 200_000, 43_333, Some((2027, 10)))
        );
        let g = parse_goal("Vacation 3000, have 1200, 200/month by June 2026", (2025, 10)).expect("goal");
        assert_eq!((g.target, g.saved, g.monthly, g.deadline), (300_000, 120_000, 20_000, Some((2026, 6))));
        assert_eq!(parse_goal("I like saving money", (2025, 10)), None);
    }

    #[tokio::test]
    async fn goalie_flags_a_goal_behind_schedule() {
        let out = run("As of 2025-10:\nEmergency fund: target $10,000, saved $2,500, saving $500/month, by 2026-12")
            .await
            .expect("ok");
        assert_eq!(
            out.summary,
            "Emergency fund: $2,500.00 of $10,000.00 (25%); at $500.00/month it takes 15 more months (2027-01); \
             behind: reaching it by 2026-12 needs $535.72/month ($35.72 more per month)."
        );
        let g = &out.artifacts[0].value[0];
        assert_eq!(
            (g["on_track"].clone(), g["months_left"].clone(), g["status"].clone()),
            (json!(false), json!(14), json!("behind"))
        );
        assert!(out.requires_followup);
    }

    #[tokio::test]
    async fn goalie_tracks_several_goals() {
        let text = "as of 2025-10\n1. Vacation: $3,000 target, $1,200 saved, $200/month, by 2026-06\n\
                    2. House down payment: target $60,000, saved $60,000\n3. New laptop $2,400, $100 monthly";
        let out = run(text).await.expect("ok");
        assert_eq!(
            out.summary,
            "Tracked 3 goals: 1 on track, 1 behind (Vacation needs $225.00/month, saving $200.00), 1 without a deadline"
        );
        let goals = out.artifacts[0].value.as_array().expect("goals").clone();
        assert_eq!((goals[0]["required_monthly"].clone(), goals[0]["on_track"].clone()), (json!(225.0), json!(false)));
        assert_eq!(goals[2]["name"], "New laptop");
        assert_eq!(goals[1]["status"], "done");
        assert_eq!(
            (goals[2]["months_to_go"].clone(), goals[2]["projected_completion"].clone()),
            (json!(24), json!("2027-10"))
        );
    }

    #[tokio::test]
    async fn goalie_says_when_a_pace_never_gets_there() {
        let out = run("as of 2025-10\nHouse: target $500,000, saved $0, saving $10/month").await.expect("ok");
        assert_eq!(out.summary, "House: $0.00 of $500,000.00 (0%); at $10.00/month it would take over 100 years.");
        let out = run("as of 2025-10\nBike: target $900").await.expect("ok");
        assert_eq!(out.summary, "Bike: $0.00 of $900.00 (0%); nothing is being put aside yet.");
    }

    #[tokio::test]
    async fn goalie_asks_for_a_goal_and_refuses_without_its_tool() {
        let err = run("what's the weather?").await.expect_err("no goals");
        assert_eq!(err.code, ErrorCode::NeedsInput);
        assert!(err.message.contains("Emergency fund"));
        let err = GoalieGoals.run(&AgentContext::detached(["plan_debt"]), &Task::new("x", "Car $5,000")).await;
        assert_eq!(err.expect_err("refused").code, ErrorCode::ToolNotAllowed);
    }
}
