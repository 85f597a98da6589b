//! Discovery: which agent fits a task. Keyword matches count 1 each (a
//! multi-word keyword 2), capabilities named in the context hints 2 each; the
//! highest score wins, ties go to the agent declared first.

use crate::config::AgentSpec;

/// A scored candidate.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Candidate<'a> {
    pub spec: &'a AgentSpec,
    pub score: u32,
}

/// Scores one agent against a lowercased text and the context hints.
pub(crate) fn score(spec: &AgentSpec, text_lower: &str, hints: &[String]) -> u32 {
    let words: Vec<&str> =
        text_lower.split(|c: char| !c.is_alphanumeric() && c != '-').filter(|w| !w.is_empty()).collect();
    let mut score = 0;
    for kw in &spec.keywords {
        let kw = kw.to_lowercase();
        if kw.contains(' ') {
            if text_lower.contains(&kw) {
                score += 2;
            }
        } else if words.contains(&kw.as_str()) {
            score += 1;
        }
    }
    for cap in &spec.capabilities {
        if hints.iter().any(|h| h.eq_ignore_ascii_case(cap) || spec.keywords.iter().any(|k| k.eq_ignore_ascii_case(h)))
        {
            score += 2;
        }
    }
    score
}

/// The best candidates among `specs` for `text`, best first, score > 0 only.
pub(crate) fn discover<'a>(
    specs: impl IntoIterator<Item = &'a AgentSpec>,
    text: &str,
    hints: &[String],
) -> Vec<Candidate<'a>> {
    let lower = text.to_lowercase();
    let mut found: Vec<Candidate<'a>> = specs
        .into_iter()
        .map(|spec| Candidate { spec, score: score(spec, &lower, hints) })
        .filter(|c| c.score > 0)
        .collect();
    // stable sort keeps declaration order among equals
    found.sort_by_key(|c| std::cmp::Reverse(c.score));
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn best(text: &str) -> Option<String> {
        let c = Config::builtin();
        let specs = c.agents.iter().filter(|a| a.slug.as_str() != "prime-boss");
        discover(specs, text, &[]).first().map(|c| c.spec.slug.to_string())
    }

    #[test]
    fn keywords_route_to_the_seed_tool_agents() {
        assert_eq!(best("Draft apology email to alex about the delay").as_deref(), Some("email"));
        assert_eq!(best("Transform CSV data to JSON format").as_deref(), Some("data"));
        assert_eq!(best("Block calendar for 2 hours, deep work").as_deref(), Some("calendar"));
        assert_eq!(best("How do I pay off my credit card debt faster?").as_deref(), Some("blitz-debt"));
        assert_eq!(best("Am I on track for my savings goal?").as_deref(), Some("goalie-goals"));
        assert_eq!(best("the weather is nice"), None);
    }

    #[test]
    fn context_hints_add_capabilities() {
        let c = Config::builtin();
        let hints = vec!["tax".to_string()];
        let found = discover(c.agents.iter(), "look at this", &hints);
        assert_eq!(found[0].spec.slug.as_str(), "ledger-tax");
    }
}
