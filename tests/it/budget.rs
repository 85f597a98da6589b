//! The token budget across random trees, through the whole runtime.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use switchboard::AgentOutput;
use switchboard::delegator::Call;

use crate::support::*;

/// A node of a random tree: the budget it asks for (None: the default share)
/// and its children.
#[derive(Debug, Clone)]
struct Shape {
    want: Option<u32>,
    children: Vec<Shape>,
}

fn shape(depth: u32) -> BoxedStrategy<Shape> {
    let want = prop::option::of(1u32..2_000);
    if depth == 0 {
        return want.prop_map(|want| Shape { want, children: vec![] }).boxed();
    }
    (want, prop::collection::vec(shape(depth - 1), 0..=3)).prop_map(|(want, children)| Shape { want, children }).boxed()
}

/// Flattens the tree: id → (agent depth, wanted budget, child ids).
fn flatten(s: &Shape, depth: usize, out: &mut Vec<(usize, Option<u32>, Vec<usize>)>) -> usize {
    let id = out.len();
    out.push((depth, s.want, vec![]));
    let kids: Vec<usize> = s.children.iter().map(|c| flatten(c, depth + 1, out)).collect();
    out[id].2 = kids;
    id
}

type Grants = Arc<Mutex<HashMap<usize, u32>>>;

fn run_tree(root_budget: u32, tree: Shape) -> Result<(), TestCaseError> {
    let mut nodes = Vec::new();
    flatten(&tree, 1, &mut nodes);
    let nodes = Arc::new(nodes);
    let grants: Grants = Arc::default();
    // agents t1..t4 by depth, each allowed to call the next
    let mut b = builder(&[
        ("t0", &["t1"], &[]),
        ("t1", &["t2"], &[]),
        ("t2", &["t3"], &[]),
        ("t3", &["t4"], &[]),
        ("t4", &["t5"], &[]),
        ("t5", &[], &[]),
    ]);
    for d in 1..=4 {
        let (nodes, grants) = (nodes.clone(), grants.clone());
        b = b.agent(
            &format!("t{d}"),
            agent(move |ctx, task| {
                let (nodes, grants) = (nodes.clone(), grants.clone());
                async move {
                    let id: usize = task.objective.trim_start_matches('n').parse().unwrap();
                    let d = ctx.delegator()?;
                    grants.lock().unwrap().insert(id, d.remaining_tokens());
                    // stay in flight so that siblings hold their reservations together
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    let (depth, _, kids) = &nodes[id];
                    let calls = kids
                        .iter()
                        .map(|k| {
                            let c = Call::to(&format!("t{}", depth + 1), format!("n{k}")).unwrap();
                            match nodes[*k].1 {
                                Some(w) => c.max_tokens(w),
                                None => c,
                            }
                        })
                        .collect();
                    d.delegate_parallel(calls).await?;
                    Ok(AgentOutput::new("ok", "ok"))
                }
            }),
        );
    }
    let rt = b.build().unwrap();
    let tokio = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
    let response = tokio.block_on(async {
        let mut req = request("t0", "t1", "n0");
        req.constraints.max_tokens = root_budget;
        req.constraints.max_depth = 6;
        rt.delegate(&operator(), req).await
    });
    let grants = grants.lock().unwrap();
    for (id, (_, want, kids)) in nodes.iter().enumerate() {
        let Some(grant) = grants.get(&id) else { continue };
        let wanted = if id == 0 { Some(root_budget) } else { *want };
        if let Some(w) = wanted {
            prop_assert!(*grant <= w, "node {id} got {grant} > wanted {w}");
        }
        let children: u32 = kids.iter().filter_map(|k| grants.get(k)).sum();
        prop_assert!(children <= *grant, "children of {id} reserved {children} > its {grant}");
    }
    prop_assert!(response.token_usage.total <= root_budget, "{} > {root_budget}", response.token_usage.total);
    prop_assert_eq!(rt.live_trees(), 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn childrens_reservations_never_exceed_the_parents_budget_in_random_trees(root_budget in 50u32..5_000, tree in shape(3)) {
        run_tree(root_budget, tree)?;
    }
}
