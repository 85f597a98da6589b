//! The kind of a task, for learning which agent does which task well: the
//! store keys history and seed scores by it, routing and attempts look it up.

/// A coarse signature of a task's kind: the objective's first six
/// significant words, lowercased, digits and punctuation dropped.
pub fn task_signature(objective: &str) -> String {
    const STOP: [&str; 12] =
        ["the", "and", "for", "with", "about", "from", "into", "this", "that", "your", "our", "their"];
    objective
        .split(|c: char| !c.is_alphabetic())
        .map(str::to_lowercase)
        .filter(|w| w.len() > 2 && !STOP.contains(&w.as_str()))
        .take(6)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_ignore_numbers_case_and_filler() {
        assert_eq!(task_signature("Extract the receipt data from receipt #42"), "extract receipt data receipt");
        assert_eq!(task_signature("EXTRACT receipt DATA"), task_signature("extract receipt data"));
    }

    #[test]
    fn only_the_first_six_words_count() {
        assert_eq!(task_signature("one two three four five six seven eight"), "one two three four five six");
        assert_eq!(task_signature("?? 42 !!"), "");
    }
}
