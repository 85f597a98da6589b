//! The regex patterns the Task Note parser derives checks from, each with the
//! readable name its check result carries (`has_greeting`, `is_icalendar`, ...).

pub(crate) const CAPITALIZED: &str = r"^[^\p{L}]*\p{Lu}";
pub(crate) const GREETING: &str = r"(?i)^\s*(?:dear|hello|hi|good (?:morning|afternoon|evening)|greetings)\b";
pub(crate) const BULLETS: &str = r"(?m)^\s*(?:[-*•]|\d+[.)])\s+\S";
pub(crate) const PERCENTAGE: &str = r"\d+(?:\.\d+)?\s?%";
pub(crate) const ICALENDAR: &str =
    r"(?s)\ABEGIN:VCALENDAR\r\n.*\r\nBEGIN:VEVENT\r\n.*\r\nEND:VEVENT\r\n(?:.*\r\n)?END:VCALENDAR(?:\r\n)?\z";

pub(super) const NAMED: &[(&str, &str)] = &[
    (CAPITALIZED, "starts_capitalized"),
    (GREETING, "has_greeting"),
    (BULLETS, "has_bullet_points"),
    (PERCENTAGE, "has_percentage"),
    (ICALENDAR, "is_icalendar"),
];
