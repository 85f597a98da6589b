//! Approximate token counting for agents that are not models. Model backends
//! count with a real tokenizer; built-in agents use this estimate, which for
//! English text is close to BPE tokenizers' counts (about 4 bytes a token).

use super::Task;

/// The completion an agent without a tokenizer is expected to produce.
pub const EXPECTED_COMPLETION: u32 = 128;

/// Approximately how many tokens `text` is: one per 4 bytes, rounded up, and
/// never fewer than the number of words.
pub fn approx(text: &str) -> u32 {
    let by_bytes = text.len().div_ceil(4);
    let words = text.split_whitespace().count();
    u32::try_from(by_bytes.max(words)).unwrap_or(u32::MAX)
}

/// The prompt a task amounts to: objective, input, facts, history and handoff data.
pub fn task_prompt_tokens(task: &Task) -> u32 {
    let mut total = approx(&task.objective).saturating_add(approx(&task.input));
    for f in &task.facts {
        total = total.saturating_add(approx(f));
    }
    for m in &task.history {
        total = total.saturating_add(approx(&m.content));
    }
    if !task.handoff.is_empty() {
        let handoff = serde_json::to_string(&task.handoff).unwrap_or_default();
        total = total.saturating_add(approx(&handoff));
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approx_counts_bytes_and_words() {
        assert_eq!(approx(""), 0);
        assert_eq!(approx("abcd"), 1);
        assert_eq!(approx("abcde"), 2);
        assert_eq!(approx("a b c d e f"), 6);
    }
}
