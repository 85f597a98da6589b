//! Declared workflows: a small DAG of steps run level by level.

use std::collections::BTreeSet;

use crate::config::Workflow;

/// The steps grouped into levels: every step's dependencies are in earlier
/// levels, so the steps of one level can run in parallel. None if the steps
/// have a cycle (or wait for a step that does not exist).
pub fn levels(workflow: &Workflow) -> Option<Vec<Vec<usize>>> {
    let mut done: BTreeSet<&str> = BTreeSet::new();
    let mut remaining: Vec<usize> = (0..workflow.steps.len()).collect();
    let mut levels = Vec::new();
    while !remaining.is_empty() {
        let (ready, blocked): (Vec<usize>, Vec<usize>) =
            remaining.iter().partition(|&&i| workflow.steps[i].after.iter().all(|d| done.contains(d.as_str())));
        if ready.is_empty() {
            return None;
        }
        for &i in &ready {
            done.insert(workflow.steps[i].id.as_str());
        }
        levels.push(ready);
        remaining = blocked;
    }
    Some(levels)
}
