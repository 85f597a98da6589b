//! Ratings: a user's thumbs up or down on the answer of one of their trees,
//! with an optional comment. One per tree (a second replaces the first),
//! kept with the tree (keyed by its root id), and written only by the
//! tree's own user: the statement that writes a rating is the one that
//! checks the tree is that user's, so another user's tree, or a tree that
//! does not exist (or has not answered yet), is left as it was.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use sqlx::{AnyPool, FromRow};

use super::{DelegationRecord, StoreError, StoreResult, backend_err};
use crate::protocol::{RequestId, UserId};

/// The longest comment kept with a rating, in characters.
pub const MAX_COMMENT_CHARS: usize = 2000;

/// How many rated-down answers are listed.
pub const LOWEST_RATED: usize = 10;

/// Ratings counted per agent: the agent, trees rated up and down it took part in.
pub(super) type AgentRatings = Vec<(String, u64, u64)>;

/// A rated-down answer, with what to open it by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RatedAnswer {
    /// The tree.
    pub root_id: RequestId,
    /// Its user.
    pub user_id: UserId,
    /// The agent that answered (the tree's top target).
    pub agent: String,
    /// The task as stored (PII redacted).
    pub objective: String,
    /// `up` or `down`.
    pub rating: Thumb,
    /// What the user said, if anything.
    pub comment: Option<String>,
    /// When it was rated, epoch milliseconds.
    pub rated_at: i64,
    /// When the tree started.
    pub started_at: i64,
}

impl RatedAnswer {
    /// A rated-down answer: the rating, with the agent and task of its tree.
    pub(super) fn of(r: &Rating, agent: &str, objective: &str) -> Self {
        Self {
            root_id: r.root_id,
            user_id: r.user_id.clone(),
            agent: agent.to_string(),
            objective: objective.to_string(),
            rating: r.thumb,
            comment: r.comment.clone(),
            rated_at: r.updated_at,
            started_at: r.started_at,
        }
    }
}

/// 👍 or 👎.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Thumb {
    /// The answer was good.
    Up,
    /// The answer was not: it counts against the approach that made it.
    Down,
}

impl Thumb {
    /// The stored value: 1 or -1.
    pub fn value(self) -> i64 {
        match self {
            Self::Up => 1,
            Self::Down => -1,
        }
    }

    /// The thumb a stored value stands for.
    pub fn from_value(v: i64) -> Option<Self> {
        match v {
            1 => Some(Self::Up),
            -1 => Some(Self::Down),
            _ => None,
        }
    }

    /// Reads `up`/`down`, `+1`/`-1`, 👍/👎.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim() {
            "up" | "+1" | "1" | "👍" => Some(Self::Up),
            "down" | "-1" | "👎" => Some(Self::Down),
            _ => None,
        }
    }

    /// `up` or `down`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Up => "up",
            Self::Down => "down",
        }
    }
}

/// A tree's rating.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rating {
    /// The tree (its root delegation's id).
    pub root_id: RequestId,
    /// The tree's user, who rated it.
    pub user_id: UserId,
    /// Up or down.
    pub thumb: Thumb,
    /// What the user said, if anything.
    pub comment: Option<String>,
    /// When the tree started (ratings are counted with their tree).
    pub started_at: i64,
    /// When it was first rated.
    pub created_at: i64,
    /// When it was last rated.
    pub updated_at: i64,
}

/// What rating a tree did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rated {
    /// Kept; `previous` is the rating it replaced.
    Kept {
        /// The tree's rating before this one.
        previous: Option<Thumb>,
    },
    /// No finished tree has that root id.
    NotFound,
    /// The tree is another user's: nothing was written.
    NotYours,
}

/// Rates `root` in the memory store (its records and ratings).
pub(super) fn rate_in(
    ratings: &mut HashMap<RequestId, Rating>,
    delegations: &HashMap<RequestId, DelegationRecord>,
    user: &UserId,
    root: RequestId,
    thumb: Thumb,
    comment: Option<&str>,
    now: i64,
) -> Rated {
    let Some(top) = delegations.get(&root).filter(|r| r.root_id == root) else { return Rated::NotFound };
    if &top.user_id != user {
        return Rated::NotYours;
    }
    let previous = ratings.get(&root).map(|r| r.thumb);
    let created_at = ratings.get(&root).map_or(now, |r| r.created_at);
    let rating = Rating {
        root_id: root,
        user_id: user.clone(),
        thumb,
        comment: comment.map(str::to_string),
        started_at: top.started_at,
        created_at,
        updated_at: now,
    };
    ratings.insert(root, rating);
    Rated::Kept { previous }
}

/// Rates `root` in SQL: the insert takes its row from the tree's root
/// record of `user` (none: nothing is written), and a rating kept already
/// is replaced only for the same user, remembering the one it replaced.
pub(super) async fn rate(
    pool: &AnyPool,
    user: &UserId,
    root: RequestId,
    thumb: Thumb,
    comment: Option<&str>,
    now: i64,
) -> StoreResult<Rated> {
    let kept: Option<Option<i64>> = sqlx::query_scalar(
        "INSERT INTO ratings (root_id, user_id, rating, comment, previous, started_at, created_at, updated_at) \
         SELECT d.request_id, d.user_id, $3, $4, NULL, d.started_at, $5, $5 FROM delegations d \
         WHERE d.request_id = $1 AND d.root_id = $1 AND d.user_id = $2 \
         ON CONFLICT (root_id) DO UPDATE SET previous = ratings.rating, rating = excluded.rating, \
         comment = excluded.comment, updated_at = excluded.updated_at WHERE ratings.user_id = excluded.user_id \
         RETURNING previous",
    )
    .bind(root.to_string())
    .bind(user.to_string())
    .bind(thumb.value())
    .bind(comment.map(str::to_string))
    .bind(now)
    .fetch_optional(pool)
    .await
    .map_err(backend_err)?;
    if let Some(previous) = kept {
        return Ok(Rated::Kept { previous: previous.and_then(Thumb::from_value) });
    }
    // refused: say why (a read; nothing was written)
    let owner: Option<String> =
        sqlx::query_scalar("SELECT user_id FROM delegations WHERE request_id = $1 AND root_id = $1")
            .bind(root.to_string())
            .fetch_optional(pool)
            .await
            .map_err(backend_err)?;
    Ok(if owner.is_some() { Rated::NotYours } else { Rated::NotFound })
}

#[derive(FromRow)]
struct RatingRow {
    root_id: String,
    user_id: String,
    rating: i64,
    comment: Option<String>,
    started_at: i64,
    created_at: i64,
    updated_at: i64,
}

const RATING_COLUMNS: &str = "r.root_id, r.user_id, r.rating, r.comment, r.started_at, r.created_at, r.updated_at";

impl TryFrom<RatingRow> for Rating {
    type Error = StoreError;
    fn try_from(r: RatingRow) -> StoreResult<Self> {
        let corrupt = |what: &str, v: &str| StoreError::Backend(format!("corrupt {what} '{v}' in ratings"));
        Ok(Rating {
            root_id: r.root_id.parse().map_err(|_| corrupt("root id", &r.root_id))?,
            user_id: UserId::parse(r.user_id.clone()).map_err(|_| corrupt("user", &r.user_id))?,
            thumb: Thumb::from_value(r.rating).ok_or_else(|| corrupt("rating", &r.rating.to_string()))?,
            comment: r.comment,
            started_at: r.started_at,
            created_at: r.created_at,
            updated_at: r.updated_at,
        })
    }
}

/// The rating of tree `root`.
pub(super) async fn rating(pool: &AnyPool, root: RequestId) -> StoreResult<Option<Rating>> {
    let row: Option<RatingRow> =
        sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {RATING_COLUMNS} FROM ratings r WHERE r.root_id = $1")))
            .bind(root.to_string())
            .fetch_optional(pool)
            .await
            .map_err(backend_err)?;
    row.map(Rating::try_from).transpose()
}

/// Ratings up and down per agent that took part in the rated trees in
/// `range` (a condition on `r`): each tree counted once per agent in it.
pub(super) fn per_agent_sql(range: &str) -> String {
    format!(
        "SELECT t.target, t.rating, COUNT(DISTINCT t.root_id) FROM (\
         SELECT d.target, r.rating, r.root_id FROM ratings r JOIN delegations d \
         ON d.request_id = r.root_id AND d.root_id = r.root_id WHERE {range} \
         UNION ALL SELECT d.target, r.rating, r.root_id FROM ratings r JOIN delegations d ON {below} WHERE {range}\
         ) t GROUP BY t.target, t.rating",
        below = super::trees::below_root("d", "r.root_id")
    )
}

/// The ratings of the trees that started in `q`'s range: per agent that
/// took part, up and down in all, and the rated-down answers.
pub(super) async fn counted(
    pool: &AnyPool,
    since: i64,
    until: i64,
    user: Option<&UserId>,
) -> StoreResult<(AgentRatings, (u64, u64), Vec<RatedAnswer>)> {
    let who = if user.is_some() { "r.user_id = $3" } else { "$3 = $3" };
    let range = format!("r.started_at >= $1 AND r.started_at < $2 AND {who}");
    let user = user.map_or_else(String::new, UserId::to_string);
    let per_agent: Vec<(String, i64, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(per_agent_sql(&range)))
        .bind(since)
        .bind(until)
        .bind(user.clone())
        .fetch_all(pool)
        .await
        .map_err(backend_err)?;
    let mut agents: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    for (agent, rating, n) in per_agent {
        let e = agents.entry(agent).or_default();
        let n = u64::try_from(n).unwrap_or(0);
        if rating < 0 { e.1 += n } else { e.0 += n }
    }
    let totals: Vec<(i64, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT r.rating, COUNT(*) FROM ratings r WHERE {range} GROUP BY r.rating"
    )))
    .bind(since)
    .bind(until)
    .bind(user.clone())
    .fetch_all(pool)
    .await
    .map_err(backend_err)?;
    let count = |down: bool| {
        totals.iter().filter(|(r, _)| (*r < 0) == down).map(|(_, n)| u64::try_from(*n).unwrap_or(0)).sum::<u64>()
    };
    #[derive(FromRow)]
    struct Lowest {
        #[sqlx(flatten)]
        rating: RatingRow,
        target: String,
        objective: String,
    }
    let rows: Vec<Lowest> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {RATING_COLUMNS}, d.target, d.objective FROM ratings r JOIN delegations d ON d.request_id = r.root_id \
         WHERE {range} AND r.rating < 0 ORDER BY r.updated_at DESC, r.root_id LIMIT {LOWEST_RATED}"
    )))
    .bind(since)
    .bind(until)
    .bind(user)
    .fetch_all(pool)
    .await
    .map_err(backend_err)?;
    let lowest = rows
        .into_iter()
        .map(|l| Ok(RatedAnswer::of(&Rating::try_from(l.rating)?, &l.target, &l.objective)))
        .collect::<StoreResult<Vec<_>>>()?;
    let agents = agents.into_iter().map(|(a, (up, down))| (a, up, down)).collect();
    Ok((agents, (count(false), count(true)), lowest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thumbs_read_words_signs_and_emoji() {
        for (s, want) in
            [("up", Thumb::Up), ("👍", Thumb::Up), ("+1", Thumb::Up), ("down", Thumb::Down), ("👎", Thumb::Down)]
        {
            assert_eq!(Thumb::parse(s), Some(want), "{s}");
        }
        assert_eq!(Thumb::parse("meh"), None);
        assert_eq!(Thumb::from_value(Thumb::Down.value()), Some(Thumb::Down));
        assert_eq!(Thumb::from_value(0), None);
    }
}
