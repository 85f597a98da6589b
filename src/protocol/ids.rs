//! Newtype identifiers: a request id is never confused with a session id.

use std::fmt;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            /// A fresh, time-ordered id (UUID v7).
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl std::str::FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s.trim())
                    .map(Self)
                    .map_err(|_| IdError(format!("'{}' is not a UUID (expected e.g. 550e8400-e29b-41d4-a716-446655440000)", truncate(s))))
            }
        }
    };
}

uuid_id!(
    /// Identifies one delegation (one envelope).
    RequestId
);
uuid_id!(
    /// Identifies one conversation session of one agent for one user.
    SessionId
);

/// A malformed identifier; the message says what a valid one looks like.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct IdError(pub String);

fn truncate(s: &str) -> String {
    let mut out: String = s.chars().take(40).collect();
    if s.chars().count() > 40 {
        out.push('…');
    }
    out
}

/// An agent's slug: `byte-doc`, `prime-boss`. Lowercase ASCII letters, digits and
/// single dashes, 1 to 64 characters, starting with a letter or digit.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct AgentSlug(String);

impl AgentSlug {
    /// The slug that asks the runtime to discover the target (`"auto"`).
    pub const AUTO: &'static str = "auto";

    /// Parses a slug, refusing anything but 1-64 lowercase letters, digits and single dashes.
    pub fn parse(s: impl Into<String>) -> Result<Self, IdError> {
        let s = s.into();
        let ok = !s.is_empty()
            && s.len() <= 64
            && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !s.starts_with('-')
            && !s.ends_with('-')
            && !s.contains("--");
        if ok {
            Ok(Self(s))
        } else {
            Err(IdError(format!(
                "'{}' is not an agent slug: use 1-64 lowercase letters, digits and single dashes, like 'byte-doc'",
                truncate(&s)
            )))
        }
    }

    /// The slug as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is `auto`: the runtime picks the target.
    pub fn is_auto(&self) -> bool {
        self.0 == Self::AUTO
    }
}

impl TryFrom<String> for AgentSlug {
    type Error = IdError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::parse(s)
    }
}

impl From<AgentSlug> for String {
    fn from(s: AgentSlug) -> Self {
        s.0
    }
}

impl std::str::FromStr for AgentSlug {
    type Err = IdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for AgentSlug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for AgentSlug {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for AgentSlug {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for AgentSlug {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// The user on whose behalf a delegation runs: 1 to 128 characters of letters,
/// digits and `._@:+-`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct UserId(String);

impl UserId {
    /// Parses a user id, refusing anything but 1-128 letters, digits and `._@:+-`.
    pub fn parse(s: impl Into<String>) -> Result<Self, IdError> {
        let s = s.into();
        let ok =
            !s.is_empty() && s.len() <= 128 && s.chars().all(|c| c.is_ascii_alphanumeric() || "._@:+-".contains(c));
        if ok {
            Ok(Self(s))
        } else {
            Err(IdError(format!("'{}' is not a user id: use 1-128 letters, digits or ._@:+-", truncate(&s))))
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for UserId {
    type Error = IdError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::parse(s)
    }
}

impl From<UserId> for String {
    fn from(s: UserId) -> Self {
        s.0
    }
}

impl std::str::FromStr for UserId {
    type Err = IdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for UserId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_accept_team_names_and_refuse_garbage() {
        for ok in ["byte-doc", "prime-boss", "a", "agent-2"] {
            assert!(AgentSlug::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Byte", "byte_doc", "-x", "x-", "a--b", "a b", &"x".repeat(65)] {
            let err = AgentSlug::parse(bad).unwrap_err();
            assert!(err.0.contains("agent slug"), "{bad}: {err}");
        }
    }

    #[test]
    fn user_ids_refuse_spaces_and_control_characters() {
        assert!(UserId::parse("anon-123456").is_ok());
        assert!(UserId::parse("alice@example.com").is_ok());
        assert!(UserId::parse("a b").is_err());
        assert!(UserId::parse("a\nb").is_err());
        assert!(UserId::parse("").is_err());
    }

    #[test]
    fn uuid_ids_parse_and_explain_failures() {
        let id: RequestId = "550e8400-e29b-41d4-a716-446655440000".parse().unwrap();
        assert_eq!(id.to_string(), "550e8400-e29b-41d4-a716-446655440000");
        let err = "nope".parse::<SessionId>().unwrap_err();
        assert!(err.0.contains("not a UUID"));
    }
}
