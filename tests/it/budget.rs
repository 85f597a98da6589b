//! Budgets and deadlines across 10 000 random trees, through the whole
//! runtime on tokio's paused clock: every child's deadline is at most its
//! parent's remaining time less the margin, the children's budgets together
//! never exceed what their parent was granted, and the tokens reported at the
//! root never exceed the root's budget.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use switchboard::AgentOutput;
use switchboard::Call;

use crate::support::*;

const CASES: u32 = 10_000;
const MARGIN_MS: u128 = 50;

/// A node of a random tree: the budget and deadline it asks for (None: the
/// defaults), how long it works before delegating, and its children.
#[derive(Debug, Clone)]
struct Shape {
    want: Option<u32>,
    deadline: Option<u64>,
    work_ms: u64,
    children: Vec<Shape>,
}

fn shape(depth: u32) -> BoxedStrategy<Shape> {
    // at least 1 ms of work: siblings are in flight, holding their reservations, together
    let own = (prop::option::of(1u32..2_000), prop::option::of(1u64..20_000), 1u64..3_000);
    if depth == 0 {
        return own.prop_map(|(want, deadline, work_ms)| Shape { want, deadline, work_ms, children: vec![] }).boxed();
    }
    (own, prop::collection::vec(shape(depth - 1), 0..=3))
        .prop_map(|((want, deadline, work_ms), children)| Shape { want, deadline, work_ms, children })
        .boxed()
}

struct Flat {
    depth: usize,
    want: Option<u32>,
    deadline: Option<u64>,
    work_ms: u64,
    children: Vec<usize>,
}

fn flatten(s: &Shape, depth: usize, out: &mut Vec<Flat>) -> usize {
    let id = out.len();
    out.push(Flat { depth, want: s.want, deadline: s.deadline, work_ms: s.work_ms, children: vec![] });
    let kids: Vec<usize> = s.children.iter().map(|c| flatten(c, depth + 1, out)).collect();
    out[id].children = kids;
    id
}

/// What each node saw: its grant and remaining time when it started, and its
/// remaining time when it delegated.
#[derive(Default, Clone, Copy)]
struct Seen {
    grant: u32,
    started_with: Duration,
    delegated_with: Duration,
}

type Log = Arc<Mutex<HashMap<usize, Seen>>>;

fn run_tree(root_budget: u32, root_deadline: u64, tree: Shape) -> Result<(), TestCaseError> {
    let mut nodes = Vec::new();
    flatten(&tree, 1, &mut nodes);
    let nodes = Arc::new(nodes);
    let log: Log = Arc::default();
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
        let (nodes, log) = (nodes.clone(), log.clone());
        b = b.agent(
            &format!("t{d}"),
            agent(move |ctx, task| {
                let (nodes, log) = (nodes.clone(), log.clone());
                async move {
                    let id: usize = task.objective.trim_start_matches('n').parse().unwrap();
                    let d = ctx.delegator()?;
                    let node = &nodes[id];
                    let mut seen =
                        Seen { grant: d.remaining_tokens(), started_with: ctx.remaining(), ..Seen::default() };
                    tokio::time::sleep(Duration::from_millis(node.work_ms)).await;
                    seen.delegated_with = ctx.remaining();
                    log.lock().unwrap().insert(id, seen);
                    let calls = node
                        .children
                        .iter()
                        .map(|k| {
                            let mut c = Call::to(&format!("t{}", node.depth + 1), format!("n{k}")).unwrap();
                            if let Some(w) = nodes[*k].want {
                                c = c.max_tokens(w);
                            }
                            if let Some(ms) = nodes[*k].deadline {
                                c = c.deadline_ms(ms);
                            }
                            c
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
        req.constraints.deadline_ms = root_deadline;
        rt.delegate(&operator(), req).await
    });
    let log = log.lock().unwrap();
    for (id, node) in nodes.iter().enumerate() {
        let Some(me) = log.get(&id) else { continue };
        let wanted = if id == 0 { Some(root_budget) } else { node.want };
        if let Some(w) = wanted {
            prop_assert!(me.grant <= w, "node {id} got {} > wanted {w}", me.grant);
        }
        let children: Vec<&Seen> = node.children.iter().filter_map(|k| log.get(k)).collect();
        let reserved: u32 = children.iter().map(|c| c.grant).sum();
        prop_assert!(reserved <= me.grant, "children of {id} reserved {reserved} > its {}", me.grant);
        for (k, c) in node.children.iter().filter_map(|k| log.get(k).map(|c| (k, c))) {
            // the clock is paused: a child starts at the instant its parent delegates
            prop_assert!(
                c.started_with.as_millis() + MARGIN_MS <= me.delegated_with.as_millis(),
                "child {k} starts with {:?}, parent {id} had {:?} left",
                c.started_with,
                me.delegated_with
            );
            if let Some(ms) = nodes[*k].deadline {
                prop_assert!(c.started_with <= Duration::from_millis(ms), "child {k} got more time than it asked for");
            }
        }
    }
    prop_assert!(response.token_usage.total <= root_budget, "{} > {root_budget}", response.token_usage.total);
    prop_assert_eq!(rt.live_trees(), 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn deadlines_and_budgets_hold_in_ten_thousand_random_trees(
        root_budget in 50u32..5_000,
        root_deadline in 100u64..30_000,
        tree in shape(3),
    ) {
        run_tree(root_budget, root_deadline, tree)?;
    }
}
