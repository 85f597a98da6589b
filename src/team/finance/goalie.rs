//! Goalie: savings goals, how far along they are and whether the monthly pace
//! reaches them in time.
//!
//! Seeds: the deadline as stated (on track when the pace reaches the target
//! by the deadline), then a month to spare (`goalie_cushion.rs`: reached a
//! month early, the monthly amount in whole dollars).

use std::sync::LazyLock;

use async_trait::async_trait;
use chrono::Datelike;
use regex::Regex;
use serde_json::{Value, json};

use super::goal as kept;
use super::money::{self, Cents};
use super::reply::needs_input;
use super::{book, dates, seeding};
use crate::agent::{Agent, AgentContext, AgentOutput, Task};
use crate::protocol::{Artifact, DelegationError, NewFact};
use lines::{Partial, read_line};

pub(crate) const TOOL: &str = "track_goals";
/// The deadline as stated, then a month to spare.
pub(crate) const SEEDS: [u64; 2] = [950_774, 481_206];
const MAX_GOALS: usize = 50;
/// Projections further out than a century are not dates worth printing.
const MAX_PROJECTED_MONTHS: i64 = 1200;

static AS_OF: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(as of|today is|current date:?)\s+").expect("valid regex"));
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GoalStatus {
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

pub(crate) use super::goal::Goal;

/// A goal measured against a month.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Progress {
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
    pub(crate) fn new(goal: Goal, as_of: (i32, u32)) -> Self {
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

    pub(crate) fn to_json(&self) -> Value {
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

#[cfg(test)]
/// One goal from a line such as `Emergency fund: target $10,000, saved $2,500,
/// saving $500/month, by 2026-12` or `Vacation $3,000 - have $1,200 - $200 a
/// month - in 9 months`. None without a target or when the line is unclear.
pub(crate) fn parse_goal(line: &str, as_of: (i32, u32)) -> Option<Goal> {
    let p = read_line(line, as_of).ok()??;
    let target = p.target.filter(|t| *t > 0)?;
    Some(Goal {
        name: p.name,
        target,
        saved: p.saved.unwrap_or(0).max(0),
        monthly: p.monthly.unwrap_or(0).max(0),
        deadline: p.deadline,
    })
}

/// Every goal in a text, measured against `as of <month>` in the text or else
/// `today`. A goal is a line with a target; a line with only a saved amount,
/// a monthly amount or a deadline belongs to the text's one goal (`I've got
/// 2k saved toward a 10k fund` then `putting away 250 a month`). Amounts whose
/// role is unclear, and a deadline without what is saved so far (on track
/// or not depends on it), are a question instead.
fn parse_goals_at(text: &str, today: (i32, u32)) -> Result<(Vec<Progress>, (i32, u32)), String> {
    let as_of = stated_month(text).unwrap_or(today);
    let currency = money::detect_currency(text).unwrap_or("USD");
    let mut goals: Vec<Partial> = Vec::new();
    let mut orphan: Option<(Partial, String)> = None;
    for line in text.lines().take(1000).filter(|l| !AS_OF.is_match(l) || money::figures(l).len() > 1) {
        let Some(mut p) = read_line(line, as_of)? else { continue };
        if p.target.is_some() {
            if let Some((o, l)) = orphan.take() {
                p.merge(o, &l, currency)?;
            }
            goals.push(p);
            if goals.len() >= MAX_GOALS {
                break;
            }
            continue;
        }
        match (goals.as_mut_slice(), &mut orphan) {
            ([one], _) => one.merge(p, line, currency)?,
            ([], Some((o, _))) => o.merge(p, line, currency)?,
            ([], None) => orphan = Some((p, line.trim().to_string())),
            _ => return Err(format!("Which of your goals is '{}' for?", line.trim())),
        }
    }
    if let Some((o, line)) = orphan {
        let name = if o.name.is_empty() { "this goal".to_string() } else { o.name };
        return Err(format!(
            "What is the target amount for {name} ('{line}')? e.g. 'Emergency fund: target $10,000, saved $2,500'."
        ));
    }
    let mut out = Vec::new();
    for (i, p) in goals.into_iter().enumerate() {
        let name = if p.name.is_empty() { format!("Goal {}", i + 1) } else { p.name };
        if let (Some(by), None) = (p.deadline, p.saved) {
            return Err(format!(
                "How much have you already saved toward {name}? Whether you're on track for {} depends on it: \
                 e.g. '{name}: saved $800' (or 'nothing saved yet').",
                dates::month_label(by)
            ));
        }
        let Some(target) = p.target.filter(|t| *t > 0) else { continue };
        let goal = Goal {
            name,
            target,
            saved: p.saved.unwrap_or(0).max(0),
            monthly: p.monthly.unwrap_or(0).max(0),
            deadline: p.deadline,
        };
        out.push(Progress::new(goal, as_of));
    }
    Ok((out, as_of))
}

#[cfg(test)]
/// Every goal in a text, measured against `as of <month>` in the text or
/// else the current month; the question to ask when the text is unclear.
pub(crate) fn parse_goals(text: &str) -> Result<(Vec<Progress>, (i32, u32)), String> {
    let today = chrono::Utc::now().date_naive();
    parse_goals_at(text, (today.year(), today.month()))
}

/// Goalie (`goalie-goals`): goals in text in, a `goals` artifact out.
pub(crate) struct GoalieGoals;

#[async_trait]
impl Agent for GoalieGoals {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        ctx.use_tool(TOOL)?;
        if !seeding::second(&SEEDS, task.seed) {
            return self.measure(ctx, task, false).await;
        }
        self.measure(ctx, task, true).await.map(cushion::marked)
    }

    fn seeds(&self) -> &[u64] {
        &SEEDS
    }
}

impl GoalieGoals {
    /// The goals stated in the task, or else those kept, measured; with a
    /// month to spare when `cushion`.
    async fn measure(&self, ctx: &AgentContext, task: &Task, cushion: bool) -> Result<AgentOutput, DelegationError> {
        let answer_for = |goals: Vec<Progress>, currency: &str| {
            let goals = if cushion { goals.into_iter().map(cushion::cushioned).collect() } else { goals };
            answer_for(goals, currency)
        };
        let today = book::today(ctx);
        let text = task.conversation_text();
        let currency = money::detect_currency(&text).unwrap_or("USD");
        let stated = parse_goals_at(&text, (today.year(), today.month()));
        if let Ok((goals, _)) = &stated
            && !goals.is_empty()
        {
            // "how long will it take to save 6000 at 300 a month?" is a projection, not a goal to keep
            let (asked, named): (Vec<Progress>, Vec<Progress>) = goals.iter().cloned().partition(is_what_if);
            let named_goals: Vec<Goal> = named.iter().map(|p| p.goal.clone()).collect();
            kept::save(ctx, &named_goals, currency).await?;
            let asked = asked.into_iter().map(|mut p| {
                p.goal.name = format!("Saving {}", money::format(p.goal.target, currency));
                p
            });
            return answer_for(named.into_iter().chain(asked).collect(), currency);
        }
        // nothing stated now: the goals stated before, with what went to them since
        if let Some((goals, currency, notes)) = kept::load(ctx, &text).await? {
            let month = (today.year(), today.month());
            let mut out = answer_for(goals.into_iter().map(|g| Progress::new(g, month)).collect(), &currency)?;
            if !notes.is_empty() {
                out.result = format!("{}\n{}", out.result, notes.join("\n"));
            }
            return Ok(out);
        }
        stated.map_err(needs_input)?;
        answer_for(Vec::new(), currency)
    }
}

/// A goal read from a question rather than named (`How long will take`):
/// a what-if to answer, not a goal to keep.
fn is_what_if(p: &Progress) -> bool {
    const ASKING: [&str; 12] =
        ["how", "when", "what", "if", "can", "could", "will", "would", "should", "is", "am", "do"];
    let first = p.goal.name.split_whitespace().next().unwrap_or_default().to_lowercase();
    ASKING.contains(&first.as_str())
}

/// Goalie's answer to a text, `today` being the month it is.
#[cfg(test)]
fn answer(text: &str, today: (i32, u32)) -> Result<AgentOutput, DelegationError> {
    let (goals, _) = parse_goals_at(text, today).map_err(needs_input)?;
    answer_for(goals, money::detect_currency(text).unwrap_or("USD"))
}

/// Goalie's answer for the goals measured.
fn answer_for(goals: Vec<Progress>, currency: &str) -> Result<AgentOutput, DelegationError> {
    if goals.is_empty() {
        return Err(needs_input(
            "Which savings goal should I track? Tell me its target, what you have saved and, if you like, \
                 what you save each month and by when, e.g. 'Emergency fund: target $10,000, saved $2,500, \
                 saving $500/month, by 2026-12'.",
        ));
    }
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

#[path = "goalie_lines.rs"]
mod lines;

#[path = "goalie_cushion.rs"]
pub(super) mod cushion;

#[cfg(test)]
#[path = "phrasings_goalie.rs"]
mod phrasings;

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
    async fn a_what_if_question_is_answered_and_not_kept_as_a_goal() {
        let out = run("How long will it take to save 6000 if I put away 300 a month?").await.expect("answered");
        assert!(
            out.summary
                .starts_with("Saving $6,000.00: $0.00 of $6,000.00 (0%); at $300.00/month it takes 20 more months"),
            "{}",
            out.summary
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
