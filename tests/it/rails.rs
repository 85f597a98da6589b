//! The rails (docs/DESIGN.md#the-rails), pinned through the whole runtime.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::future::join_all;
use switchboard::Call;
use switchboard::Principal;
use switchboard::protocol::{DelegationResponse, ErrorCode, Status};
use switchboard::store::audit;
use switchboard::{AgentOutput, DelegationError};

use crate::support::*;

fn code(r: &DelegationResponse) -> Option<ErrorCode> {
    r.error_code()
}

/// An agent that delegates `objective` to `target` and reports the child's
/// error code (or "ok") as its result.
fn forwarder(target: &'static str, max_depth: Option<u32>) -> impl switchboard::Agent {
    agent(move |ctx, task| async move {
        let mut call = Call::to(target, task.objective.clone())?;
        if let Some(d) = max_depth {
            call = call.max_depth(d);
        }
        let r = ctx.delegator()?.delegate(call).await;
        let outcome = code(&r).map_or("ok".to_string(), |c| c.to_string());
        Ok(AgentOutput::new(outcome.clone(), outcome))
    })
}

// ── depth ────────────────────────────────────────────────────────────────

#[tokio::test]
async fn prime_to_byte_is_allowed_and_byte_to_tag_is_refused_at_default_depth() {
    let tag_calls = counter();
    let rt = builder(&[("prime-boss", &["byte-doc"], &[]), ("byte-doc", &["tag-ai"], &[]), ("tag-ai", &[], &[])])
        .agent("byte-doc", forwarder("tag-ai", None))
        .agent("tag-ai", echo(tag_calls.clone()))
        .build()
        .unwrap();
    let r = rt.delegate(&operator(), request("prime-boss", "byte-doc", "Extract receipt data")).await;
    assert_eq!(r.status, Status::Success, "{r:?}");
    assert_eq!(r.result, "DEPTH_LIMIT", "byte-doc → tag-ai must be refused at depth 2");
    assert_eq!(tag_calls.load(Ordering::SeqCst), 0);

    // a request whose origin already is at depth 2 is refused outright
    let mut deep = request("byte-doc", "tag-ai", "Categorize");
    deep.current_depth = 1;
    let r = rt.delegate(&operator(), deep).await;
    assert_eq!(code(&r), Some(ErrorCode::DepthLimit));
    assert!(r.error.unwrap().message.contains("Return results to parent"));
}

#[tokio::test]
async fn max_depth_three_allows_a_b_c_and_refuses_the_next_hop() {
    let rt = builder(&[("a", &["b"], &[]), ("b", &["c"], &[]), ("c", &["d"], &[]), ("d", &[], &[])])
        .agent("b", forwarder("c", None))
        .agent("c", forwarder("d", None))
        .agent("d", echo(counter()))
        .build()
        .unwrap();
    let mut req = request("a", "b", "go deep");
    req.constraints.max_depth = 3;
    let r = rt.delegate(&operator(), req).await;
    // b (1) → c (2) is allowed; c → d would run at 3 and is refused.
    assert_eq!(r.result, "ok", "a → b → c is allowed with max_depth 3");
    let tree = rt.tree(r.request_id).await.unwrap().unwrap();
    let c = &tree.children[0];
    assert_eq!(c.agent, "c");
    assert_eq!(c.children[0].error_code.as_deref(), Some("DEPTH_LIMIT"));
}

#[tokio::test]
async fn a_child_cannot_raise_the_depth_limit_above_its_parents() {
    let rt = builder(&[("a", &["b"], &[]), ("b", &["c"], &[]), ("c", &[], &[])])
        .agent("b", forwarder("c", Some(10)))
        .agent("c", echo(counter()))
        .build()
        .unwrap();
    let r = rt.delegate(&operator(), request("a", "b", "try to escape")).await;
    assert_eq!(r.result, "DEPTH_LIMIT");
}

// ── fan-out ──────────────────────────────────────────────────────────────

#[tokio::test]
async fn a_parallel_batch_of_four_is_refused_before_any_agent_runs() {
    let calls = counter();
    let rt = builder(&[
        ("p", &["*"], &[]),
        ("parent", &["w1", "w2", "w3", "w4"], &[]),
        ("w1", &[], &[]),
        ("w2", &[], &[]),
        ("w3", &[], &[]),
        ("w4", &[], &[]),
    ])
    .agent(
        "parent",
        agent(|ctx, _task| async move {
            let calls = ["w1", "w2", "w3", "w4"].iter().map(|w| Call::to(w, "work").unwrap()).collect();
            match ctx.delegator()?.delegate_parallel(calls).await {
                Ok(_) => Ok(AgentOutput::new("ran", "ran")),
                Err(e) => Ok(AgentOutput::new(e.code.to_string(), e.message)),
            }
        }),
    )
    .agent("w1", echo(calls.clone()))
    .agent("w2", echo(calls.clone()))
    .agent("w3", echo(calls.clone()))
    .agent("w4", echo(calls.clone()))
    .build()
    .unwrap();
    let r = rt.delegate(&operator(), nested_request("p", "parent", "fan out")).await;
    assert_eq!(r.summary, "FAN_OUT_LIMIT");
    assert!(r.result.contains("(4/3)"), "{}", r.result);
    assert_eq!(calls.load(Ordering::SeqCst), 0, "no agent may run");
    let tree = rt.tree(r.request_id).await.unwrap().unwrap();
    assert!(tree.children.is_empty(), "nothing was sent");
}

#[tokio::test(start_paused = true)]
async fn a_fourth_concurrent_child_of_one_parent_is_refused() {
    let slow = || {
        agent(|_ctx, task| async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok(AgentOutput::new("done", task.objective))
        })
    };
    let rt = builder(&[("p", &["*"], &[]), ("parent", &["w"], &[]), ("w", &[], &[])])
        .agent(
            "parent",
            agent(|ctx, _task| async move {
                let d = ctx.delegator()?;
                // four separate calls at once, each a different objective
                let rs = join_all((0..4).map(|i| d.delegate(Call::to("w", format!("part {i}")).unwrap()))).await;
                let codes: Vec<String> = rs.iter().map(|r| code(r).map_or("ok".into(), |c| c.to_string())).collect();
                Ok(AgentOutput::new("fanned", codes.join(",")))
            }),
        )
        .agent("w", slow())
        .build()
        .unwrap();
    let r = rt.delegate(&operator(), nested_request("p", "parent", "fan out")).await;
    let codes: Vec<&str> = r.result.split(',').collect();
    assert_eq!(codes.iter().filter(|c| **c == "ok").count(), 3, "{codes:?}");
    assert_eq!(codes.iter().filter(|c| **c == "FAN_OUT_LIMIT").count(), 1, "{codes:?}");
}

// ── cycle ────────────────────────────────────────────────────────────────

#[tokio::test(start_paused = true)]
async fn the_same_delegation_twice_in_one_tree_is_refused_unless_it_says_it_retries() {
    let slow = agent(|_ctx, _task| async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok(AgentOutput::new("done", "done"))
    });
    let rt = builder(&[("p", &["*"], &[]), ("prime", &["byte"], &[]), ("byte", &[], &[])])
        .agent(
            "prime",
            agent(|ctx, _task| async move {
                let d = ctx.delegator()?;
                let same = join_all((0..2).map(|_| d.delegate(Call::to("byte", "extract receipt").unwrap()))).await;
                let different = join_all(
                    ["extract receipt 2", "analyze document"].map(|o| d.delegate(Call::to("byte", o).unwrap())),
                )
                .await;
                let after = d.delegate(Call::to("byte", "extract receipt").unwrap()).await;
                let retried =
                    d.delegate(Call::to("byte", "extract receipt").unwrap().retry_of(same[0].request_id)).await;
                let show = |r: &DelegationResponse| code(r).map_or("ok".to_string(), |c| c.to_string());
                Ok(AgentOutput::new(
                    "cycles",
                    format!(
                        "{} {} | {} {} | {} {}",
                        show(&same[0]),
                        show(&same[1]),
                        show(&different[0]),
                        show(&different[1]),
                        show(&after),
                        show(&retried)
                    ),
                ))
            }),
        )
        .agent("byte", slow)
        .build()
        .unwrap();
    let r = rt.delegate(&operator(), nested_request("p", "prime", "cycles")).await;
    // same objective at once: refused; different objectives: allowed; again after
    // the first finished: refused too (issue 15: main allowed
    // it); an explicit retry of the first: allowed
    assert_eq!(r.result, "ok CYCLE_DETECTED | ok ok | CYCLE_DETECTED ok");
}

#[tokio::test]
async fn a_to_b_to_a_with_the_same_objective_is_refused_and_another_objective_is_not() {
    let rt = builder(&[("root", &["a"], &[]), ("a", &["b"], &[]), ("b", &["a"], &[])])
        .agent(
            "a",
            agent(|ctx, task| async move {
                if task.objective == "reconcile" {
                    let r = ctx.delegator()?.delegate(Call::to("b", "reconcile")?).await;
                    return Ok(AgentOutput::new("a", r.result));
                }
                Ok(AgentOutput::new("a answered", "a answered"))
            }),
        )
        .agent(
            "b",
            agent(|ctx, _task| async move {
                let d = ctx.delegator()?;
                let back = d.delegate(Call::to("a", "reconcile")?).await;
                let other = d.delegate(Call::to("a", "look up a rate")?).await;
                let show = |r: &DelegationResponse| code(r).map_or("ok".to_string(), |c| c.to_string());
                Ok(AgentOutput::new("b", format!("{} {}", show(&back), show(&other))))
            }),
        )
        .build()
        .unwrap();
    let mut req = request("root", "a", "reconcile");
    req.constraints.max_depth = 5;
    let r = rt.delegate(&operator(), req).await;
    assert_eq!(r.result, "CYCLE_DETECTED ok");
}

// ── deadline ─────────────────────────────────────────────────────────────

/// Issue 15, reproduced on main: a 3,000-row CSV to `data` with a 5 ms
/// deadline came back a success after 321 ms; the built-in agents computed
/// on the async worker, where the deadline could not interrupt them. Over
/// random sizes: an answer in time, or DEADLINE_EXCEEDED at the deadline
/// (plus a margin for a shared machine), never a late success.
#[test]
fn deadlines_bind_the_built_in_agents_over_random_sizes() {
    use proptest::prelude::*;
    const NOTE: &str = "Transform CSV data to JSON format.\nInput columns: name, email, role.\n\
        Output structure: array of objects with camelCase keys.\nValidate: all emails match pattern, no duplicates.";
    fn csv_request(rows: usize, deadline_ms: u64) -> switchboard::DelegationRequest {
        let mut csv = String::from("name,email,role\n");
        for i in 0..rows {
            csv.push_str(&format!("Person {i},person{i}@example.com,role{}\n", i % 7));
        }
        let mut req = request("prime-boss", "data", "Transform CSV data to JSON");
        req.task_note = Some(NOTE.into());
        req.input = csv;
        req.constraints.deadline_ms = deadline_ms;
        req.constraints.max_tokens = 200_000; // the budget is not what this test is about
        req
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    // a breaker that stays closed: most cases here time out on purpose
    let lenient =
        switchboard::resilience::BreakerConfig { consecutive_failures: 1_000, min_calls: 1_000, ..Default::default() };
    let runtime = switchboard::Runtime::builder().breaker(lenient).build().unwrap();
    // the path works: a small table in plenty of time
    let r = rt.block_on(runtime.delegate(&operator(), csv_request(10, 10_000)));
    assert_eq!(r.status, Status::Success, "{:?}", r.error);
    let config = ProptestConfig { cases: 8, failure_persistence: None, ..ProptestConfig::default() };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    runner
        .run(&(500usize..6000, 5u64..40), |(rows, deadline_ms)| {
            let started = std::time::Instant::now();
            let r = rt.block_on(runtime.delegate(&operator(), csv_request(rows, deadline_ms)));
            let took = started.elapsed();
            // an answer ready in time may come back later, after its PII is
            // restored; a refusal must not wait for the work it gave up on
            if r.status != Status::Success {
                prop_assert_eq!(r.error_code(), Some(ErrorCode::DeadlineExceeded), "{} rows: {:?}", rows, r.error);
                // the margin is the shared 2-core machine's (the whole suite runs
                // beside this; 363 ms was seen under load)
                prop_assert!(took <= Duration::from_millis(deadline_ms + 600), "{rows} rows: told after {took:?}");
            }
            Ok(())
        })
        .unwrap();
    // the reproduction: 3,000 rows at 5 ms
    let r = rt.block_on(runtime.delegate(&operator(), csv_request(3000, 5)));
    assert_eq!(r.error_code(), Some(ErrorCode::DeadlineExceeded), "{:?}", r.status);
}

#[tokio::test(start_paused = true)]
async fn a_childs_deadline_is_the_smaller_of_requested_and_parents_remaining_minus_margin() {
    let rt = builder(&[("p", &["*"], &[]), ("parent", &["child"], &[]), ("child", &[], &[])])
        .agent(
            "parent",
            agent(|ctx, _task| async move {
                let d = ctx.delegator()?;
                let long = d.delegate(Call::to("child", "long")?.deadline_ms(5_000)).await;
                let short = d.delegate(Call::to("child", "short")?.deadline_ms(300)).await;
                Ok(AgentOutput::new("deadlines", format!("{} {}", long.result, short.result)))
            }),
        )
        .agent(
            "child",
            agent(|ctx, _task| async move { Ok(AgentOutput::new("t", ctx.remaining().as_millis().to_string())) }),
        )
        .build()
        .unwrap();
    let mut req = nested_request("p", "parent", "deadlines");
    req.constraints.deadline_ms = 1_000;
    let r = rt.delegate(&operator(), req).await;
    // the clock is paused: no time passes between the hops
    assert_eq!(r.result, "950 300", "min(5000, 1000 - 50 margin) and min(300, 950)");
}

#[tokio::test(start_paused = true)]
async fn a_slow_agent_times_out_and_its_work_is_cancelled_not_left_running() {
    let finished = Arc::new(AtomicBool::new(false));
    let saw_cancel = Arc::new(AtomicBool::new(false));
    let (f, c) = (finished.clone(), saw_cancel.clone());
    let rt = builder(&[("p", &["*"], &[]), ("slow", &[], &[])])
        .agent(
            "slow",
            agent(move |ctx, _task| {
                let (f, c) = (f.clone(), c.clone());
                async move {
                    // background work tied to the delegation's cancellation
                    let token = ctx.cancellation().clone();
                    let c2 = c.clone();
                    tokio::spawn(async move {
                        token.cancelled().await;
                        c2.store(true, Ordering::SeqCst);
                    });
                    tokio::time::sleep(Duration::from_secs(20)).await;
                    f.store(true, Ordering::SeqCst);
                    Ok(AgentOutput::new("late", "late"))
                }
            }),
        )
        .build()
        .unwrap();
    let mut req = request("p", "slow", "take forever");
    req.constraints.deadline_ms = 5_000;
    let r = rt.delegate(&operator(), req).await;
    assert_eq!(code(&r), Some(ErrorCode::DeadlineExceeded));
    assert_eq!(r.error.as_ref().unwrap().message, "Delegation timeout after 5000ms");
    assert_eq!(r.execution.as_ref().unwrap().attempts, 1, "no retry past the deadline");
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(!finished.load(Ordering::SeqCst), "the agent's work must not complete after the timeout");
    assert!(saw_cancel.load(Ordering::SeqCst), "work spawned by the agent is told to stop");
}

#[tokio::test(start_paused = true)]
async fn no_child_call_is_sent_when_only_the_margin_is_left() {
    let calls = counter();
    let rt = builder(&[("p", &["*"], &[]), ("parent", &["child"], &[]), ("child", &[], &[])])
        .agent(
            "parent",
            agent(|ctx, _task| async move {
                tokio::time::sleep(Duration::from_millis(960)).await;
                let r = ctx.delegator()?.delegate(Call::to("child", "too late")?).await;
                Ok(AgentOutput::new("late", code(&r).map_or("ok".into(), |c| c.to_string())))
            }),
        )
        .agent("child", echo(calls.clone()))
        .build()
        .unwrap();
    let mut req = nested_request("p", "parent", "late");
    req.constraints.deadline_ms = 1_000;
    let r = rt.delegate(&operator(), req).await;
    assert_eq!(r.result, "DEADLINE_EXCEEDED");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

// ── token budget ─────────────────────────────────────────────────────────

#[tokio::test]
async fn an_estimate_over_max_tokens_is_refused_before_dispatch() {
    let calls = counter();
    let rt = builder(&[("p", &["*"], &[]), ("t", &[], &[])]).agent("t", echo(calls.clone())).build().unwrap();
    let mut req = request("p", "t", "summarize");
    req.input = "word ".repeat(2_000);
    req.constraints.max_tokens = 500;
    let r = rt.delegate(&operator(), req).await;
    assert_eq!(code(&r), Some(ErrorCode::TokenBudgetExceeded));
    assert!(r.error.unwrap().message.contains("exceeds budget (500)"));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn concurrent_children_share_what_the_parent_has_left() {
    let rt = builder(&[("p", &["*"], &[]), ("parent", &["child"], &[]), ("child", &[], &[])])
        .agent(
            "parent",
            agent(|ctx, _task| async move {
                let d = ctx.delegator()?;
                let rs = join_all(
                    ["one", "two", "three"].map(|o| d.delegate(Call::to("child", o).unwrap().max_tokens(700))),
                )
                .await;
                Ok(AgentOutput::new("budgets", rs.iter().map(|r| r.result.clone()).collect::<Vec<_>>().join(" ")))
            }),
        )
        .agent(
            "child",
            agent(|ctx, _task| async move {
                let budget = ctx.delegator()?.remaining_tokens();
                tokio::time::sleep(Duration::from_millis(10)).await;
                Ok(AgentOutput::new("b", budget.to_string()))
            }),
        )
        .build()
        .unwrap();
    let mut req = nested_request("p", "parent", "budgets");
    req.constraints.max_tokens = 1_000;
    let r = rt.delegate(&operator(), req).await;
    let grants: Vec<&str> = r.result.split(' ').collect();
    // 700 + 300, and nothing is left for the third while the two run
    assert_eq!(grants[..2], ["700", "300"]);
    assert_eq!(grants[2], "", "the third child is refused: {r:?}");
    let tree = rt.tree(r.request_id).await.unwrap().unwrap();
    assert_eq!(tree.children.iter().filter(|c| c.error_code.as_deref() == Some("TOKEN_BUDGET_EXCEEDED")).count(), 1);
}

// ── authorization ────────────────────────────────────────────────────────

#[tokio::test]
async fn may_delegate_to_is_enforced_and_the_target_never_runs() {
    let calls = counter();
    let rt = builder(&[("a", &["b"], &[]), ("b", &[], &[]), ("c", &[], &[])])
        .agent("b", echo(counter()))
        .agent("c", echo(calls.clone()))
        .build()
        .unwrap();
    assert!(rt.delegate(&operator(), request("a", "b", "ok")).await.is_success());
    let r = rt.delegate(&operator(), request("a", "c", "not allowed")).await;
    assert_eq!(code(&r), Some(ErrorCode::DelegationNotAllowed));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_user_without_permission_for_the_target_is_refused() {
    let mut cfg = config(&[("a", &["b"], &[]), ("b", &[], &[])]);
    cfg.agents[1].allowed_users = ["bob".to_string()].into();
    let rt = switchboard::Runtime::builder()
        .config(cfg)
        .agent("a", echo(counter()))
        .agent("b", echo(counter()))
        .build()
        .unwrap();
    let r = rt.delegate(&operator(), request("a", "b", "x")).await; // alice
    assert_eq!(code(&r), Some(ErrorCode::PermissionDenied));
    let mut as_bob = request("a", "b", "x");
    as_bob.user_id = user("bob");
    assert!(rt.delegate(&operator(), as_bob).await.is_success());
}

#[tokio::test]
async fn a_tool_outside_the_effective_set_is_refused() {
    let rt = builder(&[("a", &["b"], &["read", "write"]), ("b", &[], &["read"])])
        .agent(
            "b",
            agent(|ctx, _task| async move {
                ctx.use_tool("read")?;
                ctx.use_tool("write")?;
                Ok(AgentOutput::new("wrote", "wrote"))
            }),
        )
        .build()
        .unwrap();
    let r = rt.delegate(&operator(), request("a", "b", "write it")).await;
    assert_eq!(code(&r), Some(ErrorCode::ToolNotAllowed));
    assert_eq!(r.execution.unwrap().attempts, 1, "a refusal is not retried");
}

#[tokio::test]
async fn effective_tools_shrink_along_a_chain_and_grants_cannot_widen_them() {
    let rt = builder(&[("a", &["b"], &["x", "y", "z"]), ("b", &["c"], &["y", "z", "w"]), ("c", &[], &["z", "w", "v"])])
        .agent(
            "b",
            agent(|ctx, _task| async move {
                let d = ctx.delegator()?;
                let plain = d.delegate(Call::to("c", "what tools")?).await;
                let widened = d.delegate(Call::to("c", "widen")?.tools(vec!["w".into(), "v".into()])).await;
                Ok(AgentOutput::new(
                    "b",
                    format!("b={:?} c={} widen={}", ctx.effective_tools(), plain.result, code(&widened).unwrap()),
                ))
            }),
        )
        .agent(
            "c",
            agent(|ctx, _task| async move { Ok(AgentOutput::new("c", format!("{:?}", ctx.effective_tools()))) }),
        )
        .build()
        .unwrap();
    let mut req = request("a", "b", "tools");
    req.constraints.max_depth = 3;
    let r = rt.delegate(&operator(), req).await;
    assert_eq!(r.result, r#"b={"y", "z"} c={"z"} widen=TOOL_NOT_ALLOWED"#);
}

#[tokio::test]
async fn the_origin_must_be_the_calling_agent() {
    let calls = counter();
    let agents: &[(&str, &[&str], &[&str])] = &[("a", &["c"], &[]), ("b", &["c"], &[]), ("c", &[], &[])];
    let mut team = config(agents);
    // an agent's own envelope without lineage is taken only from a tree root for its user
    team.auth.service_roots = Some([("a".to_string(), vec!["alice".to_string()])].into());
    let rt = builder(agents).config(team).agent("c", echo(calls.clone())).build().unwrap();
    let r = rt.delegate(&Principal::Agent(slug("b")), request("a", "c", "pretend to be a")).await;
    assert_eq!(code(&r), Some(ErrorCode::Unauthenticated));
    let r = rt.delegate(&Principal::User(user("alice")), request("a", "c", "a user cannot send envelopes")).await;
    assert_eq!(code(&r), Some(ErrorCode::Unauthenticated));
    assert!(rt.delegate(&Principal::Agent(slug("a")), request("a", "c", "as itself")).await.is_success());
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // b is no tree root: as itself, for alice, without lineage, it is refused whatever its edges allow
    let r = rt.delegate(&Principal::Agent(slug("b")), request("b", "c", "b's word about alice")).await;
    assert_eq!(code(&r), Some(ErrorCode::LineageInvalid));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

// ── user isolation ───────────────────────────────────────────────────────

#[tokio::test]
async fn a_session_of_user_a_in_user_bs_request_is_refused_and_leaks_nothing() {
    let rt =
        builder(&[("a", &["b"], &[]), ("b", &[], &[])])
            .agent(
                "b",
                agent(|_ctx, task| async move {
                    Ok(AgentOutput::new("secret summary", format!("history={:?}", task.history)))
                }),
            )
            .build()
            .unwrap();
    let mut alice = request("a", "b", "remember my salary");
    alice.input = "alice's private numbers".into();
    let first = rt.delegate(&operator(), alice).await;
    let alice_session = first.child_session_id.unwrap();

    let mut bob = request("a", "b", "show me the history");
    bob.user_id = user("bob");
    bob.child_session_id = Some(alice_session);
    let r = rt.delegate(&operator(), bob.clone()).await;
    assert_eq!(code(&r), Some(ErrorCode::UserMismatch));
    let body = serde_json::to_string(&r).unwrap();
    assert!(
        !body.contains("alice") && !body.contains("private") && !body.contains(&alice_session.to_string()),
        "{body}"
    );

    bob.child_session_id = None;
    bob.parent_session_id = Some(alice_session);
    bob.request_id = Default::default();
    assert_eq!(code(&rt.delegate(&operator(), bob).await), Some(ErrorCode::UserMismatch));
}

// ── the delegator carries the lineage ────────────────────────────────────

#[tokio::test]
async fn nested_calls_carry_root_parent_depth_and_chain_automatically() {
    let rt = builder(&[("a", &["b"], &[]), ("b", &["c"], &[]), ("c", &[], &[])])
        .agent("b", forwarder("c", None))
        .agent("c", echo(counter()))
        .build()
        .unwrap();
    let mut req = request("a", "b", "lineage");
    req.constraints.max_depth = 3;
    let r = rt.delegate(&operator(), req.clone()).await;
    assert!(r.is_success());
    let records = rt.store().delegation_tree(req.request_id).await.unwrap();
    let b = records.iter().find(|x| x.target == "b").unwrap();
    let c = records.iter().find(|x| x.target == "c").unwrap();
    assert_eq!((b.root_id, b.parent_id, b.depth), (req.request_id, None, 1));
    assert_eq!((c.root_id, c.parent_id, c.depth), (req.request_id, Some(b.request_id), 2));
    assert_eq!(c.origin, "b");
    assert_eq!(rt.live_trees(), 0, "tree state is released after the delegation");
}

// ── audit ────────────────────────────────────────────────────────────────

#[tokio::test]
async fn every_delegation_including_refusals_is_audited_in_a_verifying_chain() {
    let rt = builder(&[("a", &["b"], &[]), ("b", &[], &[]), ("c", &[], &[])])
        .agent("b", echo(counter()))
        .agent("c", echo(counter()))
        .build()
        .unwrap();
    let ok = rt.delegate(&operator(), request("a", "b", "fine")).await;
    let refused = rt.delegate(&operator(), request("a", "c", "not allowed")).await;
    let log = rt.store().audit_log().await.unwrap();
    assert_eq!(log.len(), 2);
    assert_eq!((log[0].record.request_id, log[0].record.outcome.as_str()), (ok.request_id, "success"));
    assert_eq!((log[1].record.request_id, log[1].record.outcome.as_str()), (refused.request_id, "refused"));
    assert_eq!(log[1].record.error_code.as_deref(), Some("DELEGATION_NOT_ALLOWED"));
    assert!(audit::verify(&log).valid);
}

// ── retries and the breaker, through the runtime ─────────────────────────

#[tokio::test(start_paused = true)]
async fn a_flaky_agent_is_retried_with_backoff_and_then_succeeds() {
    let calls = counter();
    let c = calls.clone();
    let rt = builder(&[("a", &["b"], &[]), ("b", &[], &[])])
        .agent(
            "b",
            agent(move |_ctx, _task| {
                let c = c.clone();
                async move {
                    if c.fetch_add(1, Ordering::SeqCst) < 2 {
                        return Err(DelegationError::new(ErrorCode::AgentFailed, "transient"));
                    }
                    Ok(AgentOutput::new("ok", "ok"))
                }
            }),
        )
        .build()
        .unwrap();
    let mut events = rt.subscribe();
    let started = tokio::time::Instant::now();
    let r = rt.delegate(&operator(), request("a", "b", "flaky")).await;
    assert!(r.is_success(), "{r:?}");
    assert_eq!(r.execution.unwrap().attempts, 3);
    assert!(started.elapsed() >= Duration::from_millis(50 + 100), "backoff waited: {:?}", started.elapsed());
    let mut retries = 0;
    while let Ok(e) = events.try_recv() {
        if matches!(e, switchboard::telemetry::Event::Retry { .. }) {
            retries += 1;
        }
    }
    assert_eq!(retries, 2, "observers see each retry");
}

// ── cancellation ─────────────────────────────────────────────────────────

#[tokio::test(start_paused = true)]
async fn cancelling_a_delegation_cancels_its_children_in_flight() {
    let finished = Arc::new(AtomicBool::new(false));
    let f = finished.clone();
    let rt = builder(&[("p", &["*"], &[]), ("parent", &["child"], &[]), ("child", &[], &[])])
        .agent(
            "parent",
            agent(|ctx, _task| async move {
                let r = ctx.delegator()?.delegate(Call::to("child", "work a long time")?).await;
                Ok(AgentOutput::new("parent", code(&r).map_or("ok".into(), |c| c.to_string())))
            }),
        )
        .agent(
            "child",
            agent(move |_ctx, _task| {
                let f = f.clone();
                async move {
                    tokio::time::sleep(Duration::from_secs(10)).await;
                    f.store(true, Ordering::SeqCst);
                    Ok(AgentOutput::new("late", "late"))
                }
            }),
        )
        .build()
        .unwrap();
    let req = nested_request("p", "parent", "cancel me");
    let id = req.request_id;
    let running = tokio::spawn({
        let rt = rt.clone();
        async move { rt.delegate(&operator(), req).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(rt.cancel(id), "the delegation is running");
    let r = running.await.unwrap();
    assert_eq!(code(&r), Some(ErrorCode::Cancelled));
    tokio::time::sleep(Duration::from_secs(20)).await;
    assert!(!finished.load(Ordering::SeqCst), "the child's work was cancelled too");
    let tree = rt.tree(id).await.unwrap().unwrap();
    assert_eq!(tree.children[0].error_code.as_deref(), Some("CANCELLED"));
    assert!(!rt.cancel(id), "nothing left to cancel");
}
