//! The routing evaluation set (`tests/fixtures/routing/*.jsonl`) as the
//! tests read it: one labelled request a line, and a tally of the right
//! ones. One file for both readers: the library's planner-alone checks
//! (`heldout_tests.rs`) and the integration test `routing`, which includes
//! it by path (a test binary cannot reach the library's test code).

use serde::Deserialize;

/// One labelled request.
#[derive(Debug, Deserialize)]
pub(crate) struct Case {
    pub(crate) id: String,
    pub(crate) split: String,
    pub(crate) text: String,
    /// The specialists it should reach (empty: Prime answers or asks).
    pub(crate) expect: Vec<String>,
    /// Agents that may also be reached.
    #[serde(default)]
    pub(crate) also_ok: Vec<String>,
    pub(crate) style: String,
    /// A file of the repository sent as the turn's input.
    #[serde(default)]
    pub(crate) attach: Option<String>,
    /// The user's earlier messages in the same session.
    #[serde(default)]
    pub(crate) earlier: Vec<String>,
}

/// Every case of these files of `tests/fixtures/routing/`, in order.
pub(crate) fn cases(files: &[&str]) -> Vec<Case> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/routing");
    let mut all = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(format!("{dir}/{file}")).unwrap();
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            all.push(serde_json::from_str(line).unwrap_or_else(|e| panic!("{file}:{}: {e}", i + 1)));
        }
    }
    all
}

/// Right answers out of all.
#[derive(Default)]
pub(crate) struct Tally {
    right: usize,
    all: usize,
}

impl Tally {
    pub(crate) fn add(&mut self, ok: bool) {
        self.all += 1;
        self.right += usize::from(ok);
    }

    pub(crate) fn share(&self) -> f64 {
        if self.all == 0 { 1.0 } else { self.right as f64 / self.all as f64 }
    }

    pub(crate) fn line(&self) -> String {
        format!("{:5.1}% ({}/{})", 100.0 * self.share(), self.right, self.all)
    }
}
