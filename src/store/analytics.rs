//! Usage analytics from the store: who calls whom, how often, how well, how
//! long and at what cost; how deep chains go and how wide they fan out;
//! refusals and failures by code and agent; consults apart from
//! delegations; tokens and trees per user; what users thought of the
//! answers. `docs/ANALYTICS.md` says what each number means.
//!
//! The SQL stores answer from rollups (migration 0014), not from the
//! delegations themselves: a query over a million rows must not read a
//! million rows. Every write of a delegation marks its hour (a trigger); a
//! query first rolls up the marked hours of its range, and the past days
//! they belong to, then sums the rollups: whole days from the daily ones,
//! the hours at either end from the hourly ones. The memory store counts its
//! records directly. Both produce the same rows (calls, tree shapes and
//! [`UserTotals`]), and one fold turns them into the one [`Analytics`]:
//! the rules of what counts as what are written once, here.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;
use sqlx::{AnyPool, AssertSqlSafe, Row};

pub use super::ratings::LOWEST_RATED;
use super::ratings::{AgentRatings, RatedAnswer, Rating, Thumb};
use super::{DelegationRecord, StoreResult, backend_err};
use crate::protocol::{DelegationError, ErrorCode, RequestId, UserId};

/// An hour, the rollups' finest grain, in milliseconds.
pub const HOUR_MS: i64 = 3_600_000;
/// A day, the rollups' coarse grain, in milliseconds.
pub const DAY_MS: i64 = 86_400_000;
/// The upper bounds (inclusive) of the duration buckets the percentiles are
/// read from; a last bucket holds what is slower than the last bound.
pub const BOUNDS_MS: [u64; 15] =
    [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 15_000, 30_000, 60_000, 120_000];
/// Duration buckets: one per bound and one past the last.
pub const BUCKETS: usize = BOUNDS_MS.len() + 1;
/// The longest range one query covers.
pub const MAX_SPAN_MS: i64 = 366 * DAY_MS;
/// The earliest `since` taken (2000-01-01): anything before is a mistake.
pub const EARLIEST_MS: i64 = 946_684_800_000;
/// How far past now `until` may reach.
pub const FUTURE_MS: i64 = DAY_MS;
/// The range when none is given: the last seven days.
pub const DEFAULT_SPAN_MS: i64 = 7 * DAY_MS;
/// How many users an admin's table lists (the most tokens first).
pub const USERS_SHOWN: usize = 100;

/// The scope of the rollups that count everyone (no user id is `*`).
const EVERYONE: &str = "*";

/// What to count: the delegations that started in `[since, until)`, of one
/// user or of everyone. The range is counted by the hour: `since` is rounded
/// down and `until` up to whole hours, and the answer says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnalyticsQuery {
    /// Start, epoch milliseconds, on an hour.
    pub since: i64,
    /// End (exclusive), epoch milliseconds, on an hour.
    pub until: i64,
    /// Whose trees; None for everyone's.
    pub user: Option<UserId>,
}

fn invalid(message: String) -> DelegationError {
    DelegationError::new(ErrorCode::InvalidRequest, message)
}

impl AnalyticsQuery {
    /// A query for `[since, until)` as of `now`: the last seven days when
    /// neither is given, seven days before `until` when only it is. A range
    /// that is reversed, empty, starts before 2000, ends more than a day
    /// ahead or spans more than 366 days is `INVALID_REQUEST`, saying which.
    pub fn new(
        since: Option<i64>,
        until: Option<i64>,
        user: Option<UserId>,
        now: i64,
    ) -> Result<Self, DelegationError> {
        let until_raw = until.unwrap_or(now);
        let since_raw = since.unwrap_or(until_raw.saturating_sub(DEFAULT_SPAN_MS));
        if since_raw >= until_raw {
            return Err(invalid(format!(
                "since ({since_raw}) must be before until ({until_raw}): the range is reversed or empty"
            )));
        }
        if since_raw < EARLIEST_MS {
            return Err(invalid(format!(
                "since ({since_raw}) is before 2000-01-01: give epoch milliseconds or an RFC 3339 time"
            )));
        }
        if until_raw > now.saturating_add(FUTURE_MS) {
            return Err(invalid(format!("until ({until_raw}) is more than a day ahead of now ({now})")));
        }
        if until_raw - since_raw > MAX_SPAN_MS {
            return Err(invalid(format!(
                "the range spans {} days; ask for at most {} at a time",
                (until_raw - since_raw + DAY_MS - 1) / DAY_MS,
                MAX_SPAN_MS / DAY_MS
            )));
        }
        let since = since_raw.div_euclid(HOUR_MS) * HOUR_MS;
        let until = until_raw.saturating_add(HOUR_MS - 1).div_euclid(HOUR_MS) * HOUR_MS;
        Ok(Self { since, until, user })
    }

    fn scope(&self) -> String {
        self.user.as_ref().map_or_else(|| EVERYONE.to_string(), UserId::to_string)
    }

    /// Whether `user` is among those counted.
    fn counts(&self, user: &UserId) -> bool {
        self.user.as_ref().is_none_or(|u| u == user)
    }

    /// Whether a delegation that started at `at` is in the range.
    fn covers(&self, at: i64) -> bool {
        self.since <= at && at < self.until
    }
}

/// A time, in epoch milliseconds: a number, an RFC 3339 date-time or a
/// `YYYY-MM-DD` date (midnight UTC). Anything else is `INVALID_REQUEST` naming `field`.
pub fn parse_time(field: &str, text: &str) -> Result<i64, DelegationError> {
    let t = text.trim();
    if let Ok(ms) = t.parse::<i64>() {
        return Ok(ms);
    }
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(t) {
        return Ok(at.timestamp_millis());
    }
    if let Ok(day) = chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d")
        && let Some(midnight) = day.and_hms_opt(0, 0, 0)
    {
        return Ok(midnight.and_utc().timestamp_millis());
    }
    Err(invalid(format!(
        "{field} '{}' is not a time: give epoch milliseconds, an RFC 3339 time or a YYYY-MM-DD date",
        t.chars().take(40).collect::<String>()
    )))
}

/// The duration bucket of `ms` (an index into the histogram).
pub fn bucket_of(ms: u64) -> usize {
    BOUNDS_MS.iter().position(|b| ms <= *b).unwrap_or(BOUNDS_MS.len())
}

/// The `q` quantile (0 < q ≤ 1) of a histogram: the upper bound of the
/// bucket that holds it, or `max_ms` when that is lower (or the bucket is
/// the last, which has no bound). 0 for no calls.
pub fn quantile(hist: &[u64; BUCKETS], max_ms: u64, q: f64) -> u64 {
    let n: u64 = hist.iter().sum();
    if n == 0 {
        return 0;
    }
    let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
    let mut seen = 0;
    for (i, c) in hist.iter().enumerate() {
        seen += c;
        if seen >= rank {
            return BOUNDS_MS.get(i).map_or(max_ms, |b| (*b).min(max_ms));
        }
    }
    max_ms
}

/// How the range is read from the rollups: `(width, from, to)` pieces, whole
/// past days as days and the hours at either end as hours.
pub fn pieces(since: i64, until: i64, now: i64) -> Vec<(i64, i64, i64)> {
    let first_day = since.saturating_add(DAY_MS - 1).div_euclid(DAY_MS) * DAY_MS;
    // today is not a whole day yet: its hours are read as hours
    let last_day = until.div_euclid(DAY_MS).min(now.div_euclid(DAY_MS)) * DAY_MS;
    if first_day >= last_day {
        return vec![(HOUR_MS, since, until)];
    }
    [(HOUR_MS, since, first_day), (DAY_MS, first_day, last_day), (HOUR_MS, last_day, until)]
        .into_iter()
        .filter(|(_, from, to)| from < to)
        .collect()
}

/// The width of the points of the tokens-over-time series: a day when the
/// range holds a whole past day, else an hour.
fn series_width(pieces: &[(i64, i64, i64)]) -> i64 {
    if pieces.iter().any(|(w, ..)| *w == DAY_MS) { DAY_MS } else { HOUR_MS }
}

/// Calls with the same origin, target, status, error code, kind and place
/// (top of a tree or not), summed: what the rollups keep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Calls {
    pub origin: String,
    pub target: String,
    pub status: String,
    /// '' for none.
    pub error_code: String,
    pub consult: bool,
    pub root: bool,
    pub calls: u64,
    /// Tokens of the calls, their subtrees included (a record's tokens).
    pub tokens: u64,
    pub duration_ms: u64,
    pub max_ms: u64,
    pub hist: [u64; BUCKETS],
}

/// Trees by deepest depth (`depth`), or delegations by children made (`fan_out`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum ShapeKind {
    Depth,
    FanOut,
}

impl ShapeKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Depth => "depth",
            Self::FanOut => "fan_out",
        }
    }
}

/// How many trees (or delegations) have shape `n` of `kind`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Shape {
    pub kind: ShapeKind,
    pub n: u64,
    pub total: u64,
}

/// One user's totals.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct UserTotals {
    /// The user.
    pub user: String,
    /// Trees (their top delegations).
    pub trees: u64,
    /// Delegations, consults not included.
    pub delegations: u64,
    /// Consults.
    pub consults: u64,
    /// Tokens.
    pub tokens: u64,
}

/// One point of tokens over time.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SeriesPoint {
    /// The start of the point's hour or day, epoch milliseconds.
    pub at: i64,
    /// Tokens of the trees that started then.
    pub tokens: u64,
    /// Trees that started then.
    pub trees: u64,
    /// Calls (delegations and consults) that started then.
    pub calls: u64,
}

/// Counts of one shape: `n` (a depth, or a number of children) and how many.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShapeCount {
    /// The depth, or the number of children.
    pub n: u64,
    /// Trees with that deepest depth, or delegations that made that many children.
    pub count: u64,
}

/// The whole range's totals.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Trees (top delegations).
    pub trees: u64,
    /// Delegations, consults not included.
    pub delegations: u64,
    /// Consults (`ask_agent`, ephemeral).
    pub consults: u64,
    /// Calls that succeeded.
    pub success: u64,
    /// Calls that answered in part.
    pub partial: u64,
    /// Calls that failed after admission.
    pub failed: u64,
    /// Calls a rail refused.
    pub refused: u64,
    /// Calls that asked the user something or wait for an approval.
    pub other: u64,
    /// Tokens.
    pub tokens: u64,
    /// Trees rated up.
    pub rated_up: u64,
    /// Trees rated down.
    pub rated_down: u64,
}

/// One agent, as the target of calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AgentStats {
    /// The agent (a slug, or a tool's name for an action recorded in a tree).
    pub agent: String,
    /// Calls to it: delegations and consults.
    pub calls: u64,
    /// Of which consults.
    pub consults: u64,
    /// Calls that succeeded.
    pub success: u64,
    /// Calls that answered in part.
    pub partial: u64,
    /// Calls that failed.
    pub failed: u64,
    /// Calls refused.
    pub refused: u64,
    /// `success / calls`.
    pub success_rate: f64,
    /// `(failed + refused) / calls`.
    pub failure_rate: f64,
    /// Tokens of the calls to it, their subtrees included (what asking it cost).
    pub tokens: u64,
    /// Median duration, read from the duration buckets.
    pub p50_ms: u64,
    /// 95th percentile duration, read from the duration buckets.
    pub p95_ms: u64,
    /// Rated-up trees it took part in.
    pub rated_up: u64,
    /// Rated-down trees it took part in.
    pub rated_down: u64,
}

/// One origin → target edge.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EdgeStats {
    /// Who called (`user` for a user's turn).
    pub origin: String,
    /// Who was called.
    pub target: String,
    /// Calls: delegations and consults.
    pub calls: u64,
    /// Of which consults.
    pub consults: u64,
    /// Calls that succeeded.
    pub success: u64,
    /// Calls that failed.
    pub failed: u64,
    /// Calls refused.
    pub refused: u64,
    /// `success / calls`.
    pub success_rate: f64,
    /// `(failed + refused) / calls`.
    pub failure_rate: f64,
    /// Median duration.
    pub p50_ms: u64,
    /// 95th percentile duration.
    pub p95_ms: u64,
    /// Tokens of the calls, their subtrees included.
    pub tokens: u64,
}

/// Calls that ended with one error code at one agent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ErrorStats {
    /// The stable error code.
    pub code: String,
    /// The agent called.
    pub agent: String,
    /// Refused by a rail.
    pub refused: u64,
    /// Failed (or answered in part) with the code.
    pub failed: u64,
    /// Both.
    pub total: u64,
}

/// Usage over a range: the answer of `GET /v1/analytics` and `switchboard stats`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analytics {
    /// Start of the range counted (on an hour).
    pub since: i64,
    /// End of the range counted (exclusive, on an hour).
    pub until: i64,
    /// Whose trees; None for everyone's.
    pub user: Option<UserId>,
    /// The range's totals.
    pub totals: Totals,
    /// Agents, the most called first.
    pub agents: Vec<AgentStats>,
    /// Edges, the busiest first.
    pub edges: Vec<EdgeStats>,
    /// Trees by their deepest delegation's depth.
    pub depth: Vec<ShapeCount>,
    /// Delegations that made children, by how many.
    pub fan_out: Vec<ShapeCount>,
    /// Refusals and failures by code and agent, the most first.
    pub errors: Vec<ErrorStats>,
    /// Users, the most tokens first (at most [`USERS_SHOWN`]).
    pub users: Vec<UserTotals>,
    /// The width of the series' points: an hour or a day, in milliseconds.
    pub series_width_ms: i64,
    /// Tokens, trees and calls over time, oldest first (points without calls left out).
    pub series: Vec<SeriesPoint>,
    /// Rated-down answers, the latest rating first (at most [`LOWEST_RATED`]).
    pub lowest_rated: Vec<RatedAnswer>,
}

/// What the rows say, whichever store read them.
pub(super) struct Counted {
    pub calls: Vec<Calls>,
    pub shapes: Vec<Shape>,
    pub users: Vec<UserTotals>,
    pub series: Vec<SeriesPoint>,
    pub agent_ratings: AgentRatings,
    /// Trees rated up and down.
    pub rated: (u64, u64),
    pub lowest: Vec<RatedAnswer>,
}

fn rate(part: u64, whole: u64) -> f64 {
    if whole == 0 { 0.0 } else { part as f64 / whole as f64 }
}

fn add_hist(into: &mut [u64; BUCKETS], from: &[u64; BUCKETS]) {
    into.iter_mut().zip(from).for_each(|(a, b)| *a += b);
}

/// Turns the rows into the answer: the one place that says what counts as what.
pub(super) fn fold(q: &AnalyticsQuery, series_width_ms: i64, rows: Counted) -> Analytics {
    let mut totals = Totals { rated_up: rows.rated.0, rated_down: rows.rated.1, ..Totals::default() };
    let mut agents: BTreeMap<&str, (AgentStats, [u64; BUCKETS], u64)> = BTreeMap::new();
    let mut edges: BTreeMap<(&str, &str), (EdgeStats, [u64; BUCKETS], u64)> = BTreeMap::new();
    let mut errors: BTreeMap<(&str, &str), ErrorStats> = BTreeMap::new();
    for c in &rows.calls {
        if c.root {
            totals.trees += c.calls;
            // a tree's top record holds the tokens of the whole tree
            totals.tokens += c.tokens;
        }
        if c.consult {
            totals.consults += c.calls;
        } else {
            totals.delegations += c.calls;
        }
        let (success, partial, failed, refused) = match c.status.as_str() {
            "success" => (c.calls, 0, 0, 0),
            "partial" => (0, c.calls, 0, 0),
            "failed" => (0, 0, c.calls, 0),
            "refused" => (0, 0, 0, c.calls),
            _ => {
                totals.other += c.calls;
                (0, 0, 0, 0)
            }
        };
        totals.success += success;
        totals.partial += partial;
        totals.failed += failed;
        totals.refused += refused;
        let consults = if c.consult { c.calls } else { 0 };

        let (a, hist, max) = agents.entry(c.target.as_str()).or_default();
        a.calls += c.calls;
        a.consults += consults;
        a.success += success;
        a.partial += partial;
        a.failed += failed;
        a.refused += refused;
        a.tokens += c.tokens;
        add_hist(hist, &c.hist);
        *max = (*max).max(c.max_ms);

        let (e, hist, max) = edges.entry((c.origin.as_str(), c.target.as_str())).or_default();
        e.calls += c.calls;
        e.consults += consults;
        e.success += success;
        e.failed += failed;
        e.refused += refused;
        e.tokens += c.tokens;
        add_hist(hist, &c.hist);
        *max = (*max).max(c.max_ms);

        if !c.error_code.is_empty() {
            let e = errors.entry((c.error_code.as_str(), c.target.as_str())).or_default();
            if refused > 0 {
                e.refused += refused;
            } else {
                e.failed += c.calls;
            }
            e.total += c.calls;
        }
    }
    let ratings: HashMap<&str, (u64, u64)> =
        rows.agent_ratings.iter().map(|(a, up, down)| (a.as_str(), (*up, *down))).collect();
    let mut agents: Vec<AgentStats> = agents
        .into_iter()
        .map(|(name, (mut a, hist, max))| {
            a.agent = name.to_string();
            a.success_rate = rate(a.success, a.calls);
            a.failure_rate = rate(a.failed + a.refused, a.calls);
            a.p50_ms = quantile(&hist, max, 0.5);
            a.p95_ms = quantile(&hist, max, 0.95);
            (a.rated_up, a.rated_down) = ratings.get(name).copied().unwrap_or_default();
            a
        })
        .collect();
    agents.sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| a.agent.cmp(&b.agent)));
    let mut edges: Vec<EdgeStats> = edges
        .into_iter()
        .map(|((origin, target), (mut e, hist, max))| {
            (e.origin, e.target) = (origin.to_string(), target.to_string());
            e.success_rate = rate(e.success, e.calls);
            e.failure_rate = rate(e.failed + e.refused, e.calls);
            e.p50_ms = quantile(&hist, max, 0.5);
            e.p95_ms = quantile(&hist, max, 0.95);
            e
        })
        .collect();
    edges.sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| (&a.origin, &a.target).cmp(&(&b.origin, &b.target))));
    let mut errors: Vec<ErrorStats> = errors
        .into_iter()
        .map(|((code, agent), mut e)| {
            (e.code, e.agent) = (code.to_string(), agent.to_string());
            e
        })
        .collect();
    errors.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| (&a.code, &a.agent).cmp(&(&b.code, &b.agent))));

    let mut shapes: BTreeMap<(ShapeKind, u64), u64> = BTreeMap::new();
    for s in &rows.shapes {
        *shapes.entry((s.kind, s.n)).or_default() += s.total;
    }
    let of = |kind| -> Vec<ShapeCount> {
        shapes
            .iter()
            .filter(|((k, _), c)| *k == kind && **c > 0)
            .map(|((_, n), c)| ShapeCount { n: *n, count: *c })
            .collect()
    };

    let mut users: BTreeMap<&str, UserTotals> = BTreeMap::new();
    for u in &rows.users {
        let t =
            users.entry(u.user.as_str()).or_insert_with(|| UserTotals { user: u.user.clone(), ..Default::default() });
        t.trees += u.trees;
        t.delegations += u.delegations;
        t.consults += u.consults;
        t.tokens += u.tokens;
    }
    let mut users: Vec<UserTotals> = users.into_values().collect();
    users.sort_by(|a, b| b.tokens.cmp(&a.tokens).then(b.trees.cmp(&a.trees)).then_with(|| a.user.cmp(&b.user)));
    users.truncate(USERS_SHOWN);

    let mut series: BTreeMap<i64, SeriesPoint> = BTreeMap::new();
    for p in &rows.series {
        let at = p.at.div_euclid(series_width_ms) * series_width_ms;
        let s = series.entry(at).or_insert_with(|| SeriesPoint { at, ..Default::default() });
        s.tokens += p.tokens;
        s.trees += p.trees;
        s.calls += p.calls;
    }

    let mut lowest = rows.lowest;
    lowest.sort_by(|a, b| b.rated_at.cmp(&a.rated_at).then_with(|| a.root_id.cmp(&b.root_id)));
    lowest.truncate(LOWEST_RATED);

    Analytics {
        since: q.since,
        until: q.until,
        user: q.user.clone(),
        totals,
        agents,
        edges,
        depth: of(ShapeKind::Depth),
        fan_out: of(ShapeKind::FanOut),
        errors,
        users,
        series_width_ms,
        series: series.into_values().filter(|p| p.calls > 0).collect(),
        lowest_rated: lowest,
    }
}

// ---- the memory store: its records, counted directly ----

/// The analytics of `records` (every record the store holds) and `ratings`.
pub(super) fn of_records<'a>(
    q: &AnalyticsQuery,
    records: impl Iterator<Item = &'a DelegationRecord> + Clone,
    ratings: impl Iterator<Item = &'a Rating>,
    now: i64,
) -> Analytics {
    let mut by_root: HashMap<RequestId, Vec<&DelegationRecord>> = HashMap::new();
    for r in records.clone() {
        by_root.entry(r.root_id).or_default().push(r);
    }
    let width = series_width(&pieces(q.since, q.until, now));
    let mut calls: HashMap<(String, String, String, String, bool, bool), Calls> = HashMap::new();
    let mut users: HashMap<&UserId, UserTotals> = HashMap::new();
    let mut series: BTreeMap<i64, SeriesPoint> = BTreeMap::new();
    let mut shapes: BTreeMap<(ShapeKind, u64), u64> = BTreeMap::new();
    for r in records.filter(|r| q.covers(r.started_at) && q.counts(&r.user_id)) {
        let root = r.request_id == r.root_id;
        let tokens = u64::from(r.tokens.total);
        let code = r.error_code.clone().unwrap_or_default();
        let key = (r.origin.clone(), r.target.clone(), r.status.clone(), code, r.consult, root);
        let c = calls.entry(key.clone()).or_insert_with(|| Calls {
            origin: key.0,
            target: key.1,
            status: key.2,
            error_code: key.3,
            consult: r.consult,
            root,
            ..Default::default()
        });
        c.calls += 1;
        c.tokens += tokens;
        c.duration_ms += r.duration_ms;
        c.max_ms = c.max_ms.max(r.duration_ms);
        c.hist[bucket_of(r.duration_ms)] += 1;

        let u =
            users.entry(&r.user_id).or_insert_with(|| UserTotals { user: r.user_id.to_string(), ..Default::default() });
        let p = series.entry(r.started_at.div_euclid(HOUR_MS) * HOUR_MS).or_default();
        p.at = r.started_at.div_euclid(HOUR_MS) * HOUR_MS;
        p.calls += 1;
        if r.consult {
            u.consults += 1;
        } else {
            u.delegations += 1;
        }
        if root {
            u.trees += 1;
            u.tokens += tokens;
            p.trees += 1;
            p.tokens += tokens;
            let tree = by_root.get(&r.request_id).map(Vec::as_slice).unwrap_or_default();
            let deepest = tree.iter().map(|n| u64::from(n.depth)).max().unwrap_or(0);
            *shapes.entry((ShapeKind::Depth, deepest)).or_default() += 1;
            let mut children: HashMap<RequestId, u64> = HashMap::new();
            for n in tree {
                if let Some(p) = n.parent_id {
                    *children.entry(p).or_default() += 1;
                }
            }
            for n in children.into_values() {
                *shapes.entry((ShapeKind::FanOut, n)).or_default() += 1;
            }
        }
    }

    let mut agent_ratings: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let (mut rated, mut lowest) = ((0, 0), Vec::new());
    for rating in ratings.filter(|r| q.covers(r.started_at) && q.counts(&r.user_id)) {
        let tree = by_root.get(&rating.root_id).map(Vec::as_slice).unwrap_or_default();
        let down = rating.thumb == Thumb::Down;
        if down {
            rated.1 += 1;
        } else {
            rated.0 += 1;
        }
        let agents: HashSet<&str> = tree.iter().map(|n| n.target.as_str()).collect();
        for a in agents {
            let e = agent_ratings.entry(a.to_string()).or_default();
            if down { e.1 += 1 } else { e.0 += 1 }
        }
        if down && let Some(top) = tree.iter().find(|n| n.request_id == rating.root_id) {
            lowest.push(RatedAnswer::of(rating, &top.target, &top.objective));
        }
    }
    let counted = Counted {
        calls: calls.into_values().collect(),
        shapes: shapes.into_iter().map(|((kind, n), total)| Shape { kind, n, total }).collect(),
        users: users.into_values().collect(),
        series: series.into_values().collect(),
        agent_ratings: agent_ratings.into_iter().map(|(a, (up, down))| (a, up, down)).collect(),
        rated,
        lowest,
    };
    fold(q, width, counted)
}

// ---- the SQL stores: rollups ----

fn hist_columns() -> String {
    (0..BUCKETS).map(|i| format!("h{i:02}")).collect::<Vec<_>>().join(", ")
}

/// The bucket of a duration column, as SQL: [`bucket_of`] again.
fn bucket_case(col: &str) -> String {
    let arms: String = BOUNDS_MS.iter().enumerate().map(|(i, b)| format!(" WHEN {col} <= {b} THEN {i}")).collect();
    format!("CASE{arms} ELSE {} END", BOUNDS_MS.len())
}

fn hist_sums(of: impl Fn(usize) -> String) -> String {
    (0..BUCKETS).map(|i| format!("CAST(SUM({}) AS BIGINT)", of(i))).collect::<Vec<_>>().join(", ")
}

const CALL_KEY: &str = "origin, target, status, error_code, consult, root";

/// The hour (or day) of a time column, as SQL.
fn bucket_expr(col: &str, width: i64) -> String {
    format!("({col} / {width} * {width})")
}

/// The statements that roll up the hours in `list` (all in `[$1, $2)`) for
/// everyone and for each user, grouping by hour.
pub(super) fn roll_hours_sql(list: &str) -> Vec<String> {
    let hist = hist_columns();
    let at = bucket_expr("d.started_at", HOUR_MS);
    let inner = format!(
        "SELECT {at} AS bucket, d.user_id, d.origin, d.target, d.status, COALESCE(d.error_code, '') AS error_code, \
         d.consult, CASE WHEN d.request_id = d.root_id THEN 1 ELSE 0 END AS root, d.duration_ms, d.total_tokens, \
         {} AS b FROM delegations d WHERE d.started_at >= $1 AND d.started_at < $2 AND {at} IN ({list})",
        bucket_case("d.duration_ms")
    );
    let sums = hist_sums(|i| format!("CASE WHEN b = {i} THEN 1 ELSE 0 END"));
    let calls = |scope: &str, group: &str| {
        format!(
            "INSERT INTO stats_calls (width, bucket, scope, {CALL_KEY}, calls, tokens, duration_ms, max_ms, {hist}) \
             SELECT {HOUR_MS}, bucket, {scope}, {CALL_KEY}, COUNT(*), CAST(SUM(total_tokens) AS BIGINT), \
             CAST(SUM(duration_ms) AS BIGINT), MAX(duration_ms), {sums} FROM ({inner}) x \
             GROUP BY bucket, {group}{CALL_KEY}"
        )
    };
    let root_at = bucket_expr("r.started_at", HOUR_MS);
    let roots = format!(
        "FROM delegations r WHERE r.started_at >= $1 AND r.started_at < $2 AND {root_at} IN ({list}) \
         AND r.request_id = r.root_id"
    );
    // r is a root: its tree is r and the rows below it (trees.rs)
    let below = super::trees::below_root("c", "r.request_id");
    let depth = format!(
        "SELECT {root_at} AS bucket, r.user_id, \
         COALESCE((SELECT MAX(c.depth) FROM delegations c WHERE {below} AND c.depth > r.depth), r.depth) AS n {roots}"
    );
    let fan_out = format!(
        "SELECT bucket, user_id, parent_id, COUNT(*) AS n FROM (\
         SELECT {root_at} AS bucket, r.user_id, c.parent_id FROM delegations r JOIN delegations c ON {below} \
         WHERE r.started_at >= $1 AND r.started_at < $2 AND {root_at} IN ({list}) AND r.request_id = r.root_id \
         AND c.parent_id IS NOT NULL \
         UNION ALL SELECT {root_at} AS bucket, r.user_id, r.parent_id {roots} AND r.parent_id IS NOT NULL\
         ) f GROUP BY bucket, user_id, parent_id"
    );
    let shape = |kind: ShapeKind, from: &str, scope: &str, group: &str| {
        format!(
            "INSERT INTO stats_shapes (width, bucket, scope, kind, n, total) \
             SELECT {HOUR_MS}, bucket, {scope}, '{}', n, COUNT(*) FROM ({from}) t GROUP BY bucket, {group}n",
            kind.as_str()
        )
    };
    let everyone = format!("'{EVERYONE}'");
    vec![
        calls(&everyone, ""),
        calls("user_id", "user_id, "),
        shape(ShapeKind::Depth, &depth, &everyone, ""),
        shape(ShapeKind::Depth, &depth, "user_id", "user_id, "),
        shape(ShapeKind::FanOut, &fan_out, &everyone, ""),
        shape(ShapeKind::FanOut, &fan_out, "user_id", "user_id, "),
        format!(
            "INSERT INTO stats_users (width, bucket, user_id, trees, calls, consults, tokens) \
             SELECT {HOUR_MS}, bucket, scope, CAST(SUM(CASE WHEN root = 1 THEN calls ELSE 0 END) AS BIGINT), \
             CAST(SUM(CASE WHEN consult = 0 THEN calls ELSE 0 END) AS BIGINT), \
             CAST(SUM(CASE WHEN consult = 1 THEN calls ELSE 0 END) AS BIGINT), \
             CAST(SUM(CASE WHEN root = 1 THEN tokens ELSE 0 END) AS BIGINT) FROM stats_calls \
             WHERE width = {HOUR_MS} AND bucket >= $1 AND bucket < $2 AND bucket IN ({list}) AND scope <> '{EVERYONE}' \
             GROUP BY bucket, scope"
        ),
    ]
}

/// The statements that roll up the days in `list` (all in `[$1, $2)`) from their hours.
fn roll_days_sql(list: &str) -> Vec<String> {
    let hist = hist_columns();
    let sums = hist_sums(|i| format!("h{i:02}"));
    let day = bucket_expr("bucket", DAY_MS);
    let hours = format!("width = {HOUR_MS} AND bucket >= $1 AND bucket < $2 AND {day} IN ({list})");
    vec![
        format!(
            "INSERT INTO stats_calls (width, bucket, scope, {CALL_KEY}, calls, tokens, duration_ms, max_ms, {hist}) \
             SELECT {DAY_MS}, {day}, scope, {CALL_KEY}, CAST(SUM(calls) AS BIGINT), CAST(SUM(tokens) AS BIGINT), \
             CAST(SUM(duration_ms) AS BIGINT), MAX(max_ms), {sums} FROM stats_calls WHERE {hours} \
             GROUP BY {day}, scope, {CALL_KEY}"
        ),
        format!(
            "INSERT INTO stats_shapes (width, bucket, scope, kind, n, total) \
             SELECT {DAY_MS}, {day}, scope, kind, n, CAST(SUM(total) AS BIGINT) FROM stats_shapes WHERE {hours} \
             GROUP BY {day}, scope, kind, n"
        ),
        format!(
            "INSERT INTO stats_users (width, bucket, user_id, trees, calls, consults, tokens) \
             SELECT {DAY_MS}, {day}, user_id, CAST(SUM(trees) AS BIGINT), CAST(SUM(calls) AS BIGINT), \
             CAST(SUM(consults) AS BIGINT), CAST(SUM(tokens) AS BIGINT) FROM stats_users WHERE {hours} \
             GROUP BY {day}, user_id"
        ),
    ]
}

/// Buckets rolled in one transaction: a backlog (the first query after an
/// upgrade or a bulk load) is rolled a day at a time, each commit short.
const ROLL_CHUNK: usize = 24;

/// Rolls marked buckets up (hours from the delegations, days from their
/// hours), `buckets` (of `width`, sorted) at most: in a transaction that
/// starts by taking the marks of their span away, and rolls what it took.
/// Of two processes rolling the same hours, the second finds no marks and
/// leaves them; a write marked after its mark was taken is rolled next time.
async fn roll(pool: &AnyPool, width: i64, buckets: &[i64]) -> StoreResult<()> {
    let (Some(first), Some(last)) = (buckets.first(), buckets.last()) else { return Ok(()) };
    let (lo, hi) = (*first, last + width);
    let mut tx = pool.begin().await.map_err(backend_err)?;
    let taken: Vec<i64> = sqlx::query_scalar(
        "DELETE FROM stats_dirty WHERE width = $1 AND bucket >= $2 AND bucket < $3 RETURNING bucket",
    )
    .bind(width)
    .bind(lo)
    .bind(hi)
    .fetch_all(&mut *tx)
    .await
    .map_err(backend_err)?;
    if taken.is_empty() {
        return tx.rollback().await.map_err(backend_err);
    }
    // numbers the store made: safe to write into the statement
    let list = taken.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
    for table in ["stats_calls", "stats_shapes", "stats_users"] {
        sqlx::query(AssertSqlSafe(format!("DELETE FROM {table} WHERE width = $1 AND bucket IN ({list})")))
            .bind(width)
            .execute(&mut *tx)
            .await
            .map_err(backend_err)?;
    }
    let statements = if width == HOUR_MS { roll_hours_sql(&list) } else { roll_days_sql(&list) };
    for sql in statements {
        sqlx::query(AssertSqlSafe(sql)).bind(lo).bind(hi).execute(&mut *tx).await.map_err(backend_err)?;
    }
    if width == HOUR_MS {
        // their days, rolled once past (the same upsert as the trigger's on PostgreSQL)
        let mut days: Vec<i64> = taken.iter().map(|h| h.div_euclid(DAY_MS) * DAY_MS).collect();
        days.sort_unstable();
        days.dedup();
        let values = days.iter().map(|d| format!("({DAY_MS}, {d})")).collect::<Vec<_>>().join(", ");
        sqlx::query(AssertSqlSafe(format!(
            "INSERT INTO stats_dirty (width, bucket) VALUES {values} \
             ON CONFLICT (width, bucket) DO UPDATE SET bucket = excluded.bucket"
        )))
        .execute(&mut *tx)
        .await
        .map_err(backend_err)?;
    }
    tx.commit().await.map_err(backend_err)
}

/// Rolls up the marked hours of `[since, until)`, then the marked days of the day pieces.
async fn roll_range(pool: &AnyPool, since: i64, until: i64, pieces: &[(i64, i64, i64)]) -> StoreResult<()> {
    let marked = |width: i64, from: i64, to: i64| async move {
        sqlx::query_scalar::<_, i64>(
            "SELECT bucket FROM stats_dirty WHERE width = $1 AND bucket >= $2 AND bucket < $3 ORDER BY bucket",
        )
        .bind(width)
        .bind(from)
        .bind(to)
        .fetch_all(pool)
        .await
        .map_err(backend_err)
    };
    for hours in marked(HOUR_MS, since, until).await?.chunks(ROLL_CHUNK) {
        roll(pool, HOUR_MS, hours).await?;
    }
    for &(_, from, to) in pieces.iter().filter(|(w, ..)| *w == DAY_MS) {
        for days in marked(DAY_MS, from, to).await?.chunks(ROLL_CHUNK) {
            roll(pool, DAY_MS, days).await?;
        }
    }
    Ok(())
}

fn int(row: &sqlx::any::AnyRow, i: usize) -> StoreResult<u64> {
    let v: Option<i64> = row.try_get(i).map_err(backend_err)?;
    Ok(u64::try_from(v.unwrap_or(0)).unwrap_or(0))
}

fn text(row: &sqlx::any::AnyRow, i: usize) -> StoreResult<String> {
    row.try_get(i).map_err(backend_err)
}

/// The analytics of `q` from the rollups (rolling up what is marked first).
pub(super) async fn from_rollups(pool: &AnyPool, q: &AnalyticsQuery, now: i64) -> StoreResult<Analytics> {
    let pieces = pieces(q.since, q.until, now);
    roll_range(pool, q.since, q.until, &pieces).await?;
    let scope = q.scope();
    let hist = hist_sums(|i| format!("h{i:02}"));
    let (mut calls, mut shapes, mut users, mut series) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for &(width, from, to) in &pieces {
        let range = "width = $1 AND scope = $2 AND bucket >= $3 AND bucket < $4";
        let bind = |sql: String| sqlx::query(AssertSqlSafe(sql)).bind(width).bind(scope.clone()).bind(from).bind(to);
        for row in bind(format!(
            "SELECT {CALL_KEY}, CAST(SUM(calls) AS BIGINT), CAST(SUM(tokens) AS BIGINT), \
             CAST(SUM(duration_ms) AS BIGINT), MAX(max_ms), {hist} FROM stats_calls WHERE {range} GROUP BY {CALL_KEY}"
        ))
        .fetch_all(pool)
        .await
        .map_err(backend_err)?
        {
            let mut c = Calls {
                origin: text(&row, 0)?,
                target: text(&row, 1)?,
                status: text(&row, 2)?,
                error_code: text(&row, 3)?,
                consult: int(&row, 4)? != 0,
                root: int(&row, 5)? != 0,
                calls: int(&row, 6)?,
                tokens: int(&row, 7)?,
                duration_ms: int(&row, 8)?,
                max_ms: int(&row, 9)?,
                hist: [0; BUCKETS],
            };
            for (i, h) in c.hist.iter_mut().enumerate() {
                *h = int(&row, 10 + i)?;
            }
            calls.push(c);
        }
        for row in bind(format!(
            "SELECT bucket, CAST(SUM(CASE WHEN root = 1 THEN tokens ELSE 0 END) AS BIGINT), \
             CAST(SUM(CASE WHEN root = 1 THEN calls ELSE 0 END) AS BIGINT), CAST(SUM(calls) AS BIGINT) \
             FROM stats_calls WHERE {range} GROUP BY bucket"
        ))
        .fetch_all(pool)
        .await
        .map_err(backend_err)?
        {
            let at: i64 = row.try_get(0).map_err(backend_err)?;
            series.push(SeriesPoint { at, tokens: int(&row, 1)?, trees: int(&row, 2)?, calls: int(&row, 3)? });
        }
        for row in
            bind(format!("SELECT kind, n, CAST(SUM(total) AS BIGINT) FROM stats_shapes WHERE {range} GROUP BY kind, n"))
                .fetch_all(pool)
                .await
                .map_err(backend_err)?
        {
            let kind = if text(&row, 0)? == ShapeKind::Depth.as_str() { ShapeKind::Depth } else { ShapeKind::FanOut };
            shapes.push(Shape { kind, n: int(&row, 1)?, total: int(&row, 2)? });
        }
        // everyone's users, or the one user's
        let who = if q.user.is_some() { "user_id = $2" } else { "$2 = $2" };
        for row in bind(format!(
            "SELECT user_id, CAST(SUM(trees) AS BIGINT), CAST(SUM(calls) AS BIGINT), CAST(SUM(consults) AS BIGINT), \
             CAST(SUM(tokens) AS BIGINT) FROM stats_users WHERE width = $1 AND {who} AND bucket >= $3 AND bucket < $4 \
             GROUP BY user_id"
        ))
        .fetch_all(pool)
        .await
        .map_err(backend_err)?
        {
            users.push(UserTotals {
                user: text(&row, 0)?,
                trees: int(&row, 1)?,
                delegations: int(&row, 2)?,
                consults: int(&row, 3)?,
                tokens: int(&row, 4)?,
            });
        }
    }
    let (agent_ratings, rated, lowest) = super::ratings::counted(pool, q.since, q.until, q.user.as_ref()).await?;
    let counted = Counted { calls, shapes, users, series, agent_ratings, rated, lowest };
    Ok(fold(q, series_width(&pieces), counted))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_760_000_000_000;

    #[test]
    fn a_range_is_checked_and_counted_by_whole_hours() {
        let q = AnalyticsQuery::new(Some(NOW - 10 * HOUR_MS - 5), Some(NOW), None, NOW).unwrap();
        assert_eq!((q.since % HOUR_MS, q.until % HOUR_MS), (0, 0));
        assert!(q.since <= NOW - 10 * HOUR_MS - 5 && q.until >= NOW && q.until - NOW < HOUR_MS);
        let d = AnalyticsQuery::new(None, None, None, NOW).unwrap();
        assert!(d.until - d.since >= DEFAULT_SPAN_MS && d.until - d.since <= DEFAULT_SPAN_MS + 2 * HOUR_MS);
        for (since, until, says) in [
            (NOW, NOW - 1, "reversed"),
            (NOW, NOW, "reversed or empty"),
            (5, NOW, "before 2000"),
            (NOW, NOW + 2 * DAY_MS, "a day ahead"),
            (NOW - 400 * DAY_MS, NOW, "at most 366"),
        ] {
            let e = AnalyticsQuery::new(Some(since), Some(until), None, NOW).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidRequest);
            assert!(e.message.contains(says), "{since}..{until}: {}", e.message);
        }
    }

    #[test]
    fn times_are_numbers_rfc3339_or_dates() {
        assert_eq!(parse_time("since", "1760000000000").unwrap(), 1_760_000_000_000);
        assert_eq!(parse_time("since", "2025-10-09T08:53:20Z").unwrap(), 1_760_000_000_000);
        assert_eq!(parse_time("since", "2025-10-09T10:53:20+02:00").unwrap(), 1_760_000_000_000);
        assert_eq!(parse_time("until", "2025-10-09").unwrap(), 1_759_968_000_000);
        let e = parse_time("until", "yesterday").unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidRequest);
        assert!(e.message.contains("until 'yesterday'"), "{}", e.message);
    }

    #[test]
    fn whole_past_days_are_read_as_days_and_the_ends_as_hours() {
        let day = NOW.div_euclid(DAY_MS) * DAY_MS;
        let since = day - 3 * DAY_MS + 5 * HOUR_MS;
        assert_eq!(
            pieces(since, day + 2 * HOUR_MS, NOW),
            [(HOUR_MS, since, day - 2 * DAY_MS), (DAY_MS, day - 2 * DAY_MS, day), (HOUR_MS, day, day + 2 * HOUR_MS)]
        );
        assert_eq!(pieces(day - 3 * HOUR_MS, day + HOUR_MS, NOW), [(HOUR_MS, day - 3 * HOUR_MS, day + HOUR_MS)]);
        // today, even whole, is read by the hour until it is past
        assert_eq!(pieces(day, day + DAY_MS, NOW), [(HOUR_MS, day, day + DAY_MS)]);
        assert_eq!(pieces(day - DAY_MS, day, NOW), [(DAY_MS, day - DAY_MS, day)]);
    }

    #[test]
    fn percentiles_are_read_from_the_buckets_and_capped_by_the_slowest() {
        let mut hist = [0; BUCKETS];
        for ms in [3, 7, 7, 40, 40, 40, 90, 200, 900, 4000] {
            hist[bucket_of(ms)] += 1;
        }
        assert_eq!(quantile(&hist, 4000, 0.5), 50, "the 5th of 10 is in the ≤50 ms bucket");
        assert_eq!(quantile(&hist, 4000, 0.95), 4000, "the 10th: its bucket's bound is 5000, the slowest 4000");
        assert_eq!(quantile(&[0; BUCKETS], 0, 0.5), 0);
        let mut slow = [0; BUCKETS];
        slow[BUCKETS - 1] = 2;
        assert_eq!(quantile(&slow, 400_000, 0.5), 400_000, "past the last bound: the slowest");
        assert_eq!((bucket_of(5), bucket_of(6), bucket_of(120_001)), (0, 1, BUCKETS - 1));
    }

    #[test]
    fn the_sql_buckets_are_the_rust_buckets() {
        let sql = bucket_case("d");
        assert!(sql.starts_with("CASE WHEN d <= 5 THEN 0 WHEN d <= 10 THEN 1"), "{sql}");
        assert!(sql.ends_with(&format!("WHEN d <= 120000 THEN 14 ELSE {} END", BUCKETS - 1)), "{sql}");
        let migration = include_str!("migrations/0014_analytics.sql");
        assert!(migration.contains(&format!("h{:02}", BUCKETS - 1)) && !migration.contains(&format!("h{BUCKETS:02}")));
    }
}
