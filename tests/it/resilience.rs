//! Verified outputs, seeded retries, retry policies, circuit breakers and
//! domain routing through the runtime, all on tokio's paused clock.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use switchboard::config::Config;
use switchboard::protocol::{ErrorCode, Priority, Status};
use switchboard::resilience::{BreakerConfig, BreakerState};
use switchboard::{Agent, AgentContext, AgentOutput, DelegationError, Runtime, Task};
use tokio::time::Instant;

use crate::support::*;

const TIGHT_EMAIL_NOTE: &str = "Draft apology email to alex.chan@company.com about missed project deadline. \
    Mention new ETA of Oct 22. Tone: warm-professional. Max 60 words. \
    Required: apologize, acknowledge impact, provide new timeline.";

fn email_request(note: &str) -> switchboard::DelegationRequest {
    let mut r = request("prime-boss", "email", "Draft apology email");
    r.task_note = Some(note.into());
    r
}

#[tokio::test]
async fn a_failed_verification_retries_with_the_next_seed_and_the_winner_is_tried_first_next_time() {
    let rt = Runtime::embedded();
    let mut events = rt.subscribe();
    let first = rt.delegate(&operator(), email_request(TIGHT_EMAIL_NOTE)).await;
    assert_eq!(first.status, Status::Success, "{first:?}");
    let exec = first.execution.clone().unwrap();
    assert_eq!(exec.seeds_tried, [981234, 442211, 776655], "the first two seeds' drafts are too long");
    assert_eq!(exec.attempts, 3);
    let verdict = first.verifier.clone().unwrap();
    assert!(verdict.passed && verdict.checks.iter().any(|c| c.name == "max_60_words"));
    assert!(first.result.split_whitespace().count() <= 60);
    let learned = first.learned.clone().unwrap();
    assert!(learned.seed_promoted && learned.new_seed);

    let mut retries = Vec::new();
    while let Ok(e) = events.try_recv() {
        if let switchboard::telemetry::Event::Retry { error_code, next_seed, .. } = e {
            retries.push((error_code, next_seed));
        }
    }
    assert_eq!(
        retries,
        [("VERIFICATION_FAILED".to_string(), Some(442211)), ("VERIFICATION_FAILED".to_string(), Some(776655))]
    );

    let second = rt.delegate(&operator(), email_request(TIGHT_EMAIL_NOTE)).await;
    let exec = second.execution.unwrap();
    assert_eq!((exec.attempts, exec.seeds_tried), (1, vec![776655]), "the promoted seed goes first");
    assert!(!second.learned.unwrap().new_seed);
}

#[tokio::test]
async fn when_every_seed_fails_the_response_recommends_a_fallback() {
    let rt = Runtime::embedded();
    let mut req = email_request(&TIGHT_EMAIL_NOTE.replace("Max 60 words", "Max 12 words"));
    req.priority = Priority::Low;
    let r = rt.delegate(&operator(), req).await;
    assert_eq!(r.error_code(), Some(ErrorCode::VerificationFailed));
    assert!(r.error.as_ref().unwrap().message.contains("max_12_words"));
    assert_eq!(r.execution.as_ref().unwrap().attempts, 2, "low priority: 2 attempts");
    let f = r.fallback.unwrap();
    assert_eq!(f.recommended, "handle_directly");
    assert!(!r.verifier.unwrap().passed);
}

#[tokio::test]
async fn a_task_note_that_cannot_be_parsed_goes_back_to_the_caller_without_an_attempt() {
    let rt = Runtime::embedded();
    let r = rt.delegate(&operator(), email_request("Email Alex about that thing we talked about earlier")).await;
    assert_eq!(r.error_code(), Some(ErrorCode::InvalidRequest));
    assert_eq!(r.execution.unwrap().attempts, 0);
    assert_eq!(r.fallback.unwrap().recommended, "clarify_task_note");
}

/// (attempt, seed) of each run.
type AttemptLog = Arc<Mutex<Vec<(u32, Option<u64>)>>>;

/// A seeded agent that records (attempt, seed) and fails as scripted.
struct Scripted {
    log: AttemptLog,
    behaviour: fn(u32) -> Result<Duration, DelegationError>,
}

#[async_trait]
impl Agent for Scripted {
    async fn run(&self, _ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        self.log.lock().unwrap().push((task.attempt, task.seed));
        let sleep = (self.behaviour)(task.attempt)?;
        tokio::time::sleep(sleep).await;
        Ok(AgentOutput::new("done", "done"))
    }

    fn seeds(&self) -> &[u64] {
        &[11, 22, 33]
    }
}

fn scripted(behaviour: fn(u32) -> Result<Duration, DelegationError>, timeout_ms: Option<u64>) -> (Runtime, AttemptLog) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut cfg = config(&[("a", &["b"], &[]), ("b", &[], &[])]);
    cfg.agents[1].limits.attempt_timeout_ms = timeout_ms;
    // a breaker that stays closed, so the retry policy alone is observed
    let patient = BreakerConfig { consecutive_failures: 100, min_calls: 100, ..BreakerConfig::default() };
    let rt = Runtime::builder()
        .config(cfg)
        .breaker(patient)
        .agent("a", echo(counter()))
        .agent("b", Scripted { log: log.clone(), behaviour })
        .build()
        .unwrap();
    (rt, log)
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_attempt_retries_the_same_seed_with_a_longer_timeout() {
    // 150 ms of work: too slow for the 100 ms attempt timeout, fine for 200 ms
    let (rt, log) = scripted(|_| Ok(Duration::from_millis(150)), Some(100));
    let t = Instant::now();
    let r = rt.delegate(&operator(), request("a", "b", "slowish")).await;
    assert!(r.is_success(), "{r:?}");
    assert_eq!(*log.lock().unwrap(), [(1, Some(11)), (2, Some(11))]);
    assert_eq!(t.elapsed(), Duration::from_millis(250));
}

#[tokio::test(start_paused = true)]
async fn an_unavailable_agent_is_waited_for_and_retried() {
    let (rt, log) = scripted(
        |attempt| {
            if attempt == 1 {
                Err(DelegationError::new(ErrorCode::AgentUnavailable, "warming up"))
            } else {
                Ok(Duration::ZERO)
            }
        },
        None,
    );
    let t = Instant::now();
    let r = rt.delegate(&operator(), request("a", "b", "wait for me")).await;
    assert!(r.is_success());
    assert_eq!(log.lock().unwrap().len(), 2);
    assert!(t.elapsed() >= Duration::from_millis(50), "backed off {:?}", t.elapsed());
}

#[tokio::test(start_paused = true)]
async fn attempts_follow_priority_and_refusals_get_exactly_one() {
    for (priority, attempts) in [(Priority::Low, 2), (Priority::Normal, 3), (Priority::High, 5), (Priority::Urgent, 8)]
    {
        let (rt, log) = scripted(|_| Err(DelegationError::new(ErrorCode::AgentFailed, "broken")), None);
        let mut req = request("a", "b", "always fails");
        req.priority = priority;
        req.constraints.deadline_ms = 60_000;
        let r = rt.delegate(&operator(), req).await;
        assert_eq!(r.error_code(), Some(ErrorCode::AgentFailed));
        assert_eq!(log.lock().unwrap().len(), attempts, "{priority:?}");
        assert_eq!(r.execution.unwrap().attempts, attempts as u32);
    }
    let (rt, log) = scripted(|_| Err(DelegationError::new(ErrorCode::PermissionDenied, "no")), None);
    let mut req = request("a", "b", "refused inside");
    req.priority = Priority::Urgent;
    rt.delegate(&operator(), req).await;
    assert_eq!(log.lock().unwrap().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn backoff_never_reaches_past_the_deadline() {
    let (rt, log) = scripted(|_| Err(DelegationError::new(ErrorCode::AgentFailed, "broken")), None);
    let mut req = request("a", "b", "always fails, short deadline");
    req.priority = Priority::Urgent;
    req.constraints.deadline_ms = 500;
    let t = Instant::now();
    let r = rt.delegate(&operator(), req).await;
    assert_eq!(r.error_code(), Some(ErrorCode::AgentFailed));
    assert!(t.elapsed() <= Duration::from_millis(500), "{:?}", t.elapsed());
    let n = log.lock().unwrap().len();
    assert!((2..8).contains(&n), "{n} attempts");
}

#[tokio::test(start_paused = true)]
async fn the_breaker_opens_fails_fast_half_opens_and_closes() {
    let healthy = Arc::new(AtomicU32::new(0));
    let calls = Arc::new(AtomicUsize::new(0));
    let (h, c) = (healthy.clone(), calls.clone());
    let cfg = config(&[("a", &["b"], &[]), ("b", &[], &[])]);
    let rt = Runtime::builder()
        .config(cfg)
        // min_users 1: this breaker opens on one user's failures (the default
        // asks for three users, or faults; see the issue-15 tests below)
        .breaker(BreakerConfig {
            consecutive_failures: 3,
            cool_down_ms: 10_000,
            probes: 1,
            min_users: 1,
            ..BreakerConfig::default()
        })
        .agent("a", echo(counter()))
        .agent(
            "b",
            agent(move |_ctx, _task| {
                let (h, c) = (h.clone(), c.clone());
                async move {
                    c.fetch_add(1, Ordering::SeqCst);
                    if h.load(Ordering::SeqCst) == 0 {
                        Err(DelegationError::new(ErrorCode::AgentFailed, "down"))
                    } else {
                        Ok(AgentOutput::new("up", "up"))
                    }
                }
            }),
        )
        .build()
        .unwrap();
    let b = slug("b");
    let r = rt.delegate(&operator(), request("a", "b", "one")).await; // 3 failed attempts
    assert_eq!(r.error_code(), Some(ErrorCode::AgentFailed));
    assert_eq!(rt.breaker_state(&b), BreakerState::Open);

    let before = calls.load(Ordering::SeqCst);
    let r = rt.delegate(&operator(), request("a", "b", "two")).await;
    assert_eq!(r.error_code(), Some(ErrorCode::AgentUnavailable));
    assert_eq!(calls.load(Ordering::SeqCst), before, "an open breaker does not touch the agent");

    tokio::time::advance(Duration::from_secs(10)).await;
    assert_eq!(rt.breaker_state(&b), BreakerState::HalfOpen);
    let r = rt.delegate(&operator(), request("a", "b", "probe fails")).await;
    assert!(!r.is_success());
    assert_eq!(rt.breaker_state(&b), BreakerState::Open, "a failed probe reopens");

    healthy.store(1, Ordering::SeqCst);
    tokio::time::advance(Duration::from_secs(10)).await;
    assert!(rt.delegate(&operator(), request("a", "b", "probe works")).await.is_success());
    assert_eq!(rt.breaker_state(&b), BreakerState::Closed);
}

const DOMAINS: &str = r#"
[[agents]]
slug = "asker"
name = "Asker"
may_delegate_to = ["*"]
domain = "tax"
[[agents]]
slug = "client"
name = "Client"
may_delegate_to = ["*"]
[[agents]]
slug = "tax-1"
name = "Tax 1"
domain = "tax"
[[agents]]
slug = "tax-2"
name = "Tax 2"
domain = "tax"
[[agents]]
slug = "numbers"
name = "Numbers"
domain = "analytics"

[[domains]]
name = "tax"
agents = ["tax-1", "tax-2"]
alternatives = ["analytics"]
"#;

fn domain_runtime() -> Runtime {
    let mut b = Runtime::builder().config(Config::from_toml(DOMAINS).unwrap());
    for s in ["asker", "client", "tax-1", "tax-2", "numbers"] {
        b = b.agent(s, echo(counter()));
    }
    b.build().unwrap()
}

fn to_domain(from: &str, domain: &str, objective: &str) -> switchboard::DelegationRequest {
    let mut r = request(from, "auto", objective);
    r.target_domain = Some(domain.into());
    r
}

#[tokio::test]
async fn domain_queries_are_balanced_over_replicas_and_own_domain_queries_go_to_an_alternative() {
    let rt = domain_runtime();
    let mut targets = Vec::new();
    for i in 0..4 {
        let r = rt.delegate(&operator(), to_domain("client", "tax", &format!("q{i}"))).await;
        targets.push(r.target_employee.to_string());
    }
    assert_eq!(targets, ["tax-1", "tax-2", "tax-1", "tax-2"]);
    let r = rt.delegate(&operator(), to_domain("asker", "tax", "second opinion")).await;
    assert!(r.is_success());
    assert_eq!(r.target_employee.as_str(), "numbers", "never the caller's own domain");
    let r = rt.delegate(&operator(), to_domain("client", "astrology", "q")).await;
    assert_eq!(r.error_code(), Some(ErrorCode::AgentNotFound));
}

#[tokio::test(start_paused = true)]
async fn metrics_count_outcomes_attempts_fallbacks_and_show_the_breaker() {
    let (rt, _log) = scripted(|_| Err(DelegationError::new(ErrorCode::AgentFailed, "broken")), None);
    let _ = rt.delegate(&operator(), request("a", "b", "fails")).await;
    let _ = rt.delegate(&operator(), request("b", "a", "refused: b may not call a")).await;
    let text = rt.metrics_text();
    for line in [
        r#"switchboard_delegations_total{target="b",outcome="failed"} 1"#,
        r#"switchboard_delegations_total{target="a",outcome="refused"} 1"#,
        r#"switchboard_attempts_total{target="b"} 3"#,
        r#"switchboard_fallbacks_total{target="b"} 1"#,
        r#"switchboard_first_attempt_successes_total{target="b"} 0"#,
        r#"switchboard_breaker_state{agent="b"} 0"#,
        r#"switchboard_delegation_duration_seconds_count{target="b"} 1"#,
    ] {
        assert!(text.contains(line), "{line} missing in\n{text}");
    }

    let rt = Runtime::builder()
        .config(config(&[("a", &["b"], &[]), ("b", &[], &[])]))
        .breaker(BreakerConfig { consecutive_failures: 2, min_users: 1, ..BreakerConfig::default() })
        .agent("a", echo(counter()))
        .agent("b", agent(|_c, _t| async { Err(DelegationError::new(ErrorCode::AgentFailed, "down")) }))
        .build()
        .unwrap();
    let _ = rt.delegate(&operator(), request("a", "b", "trip it")).await;
    assert!(rt.metrics_text().contains(r#"switchboard_breaker_state{agent="b"} 2"#), "{}", rt.metrics_text());
}

/// Issue 15, reproduced on main: unanswerable savings questions from alice
/// opened goalie-goals's breaker and then prime-boss's, and bob's "What is
/// APR?" was refused with "circuit breaker for 'prime-boss' is open".
#[tokio::test(start_paused = true)]
async fn one_users_bad_requests_cannot_switch_an_agent_off_for_everyone() {
    use switchboard::protocol::{AgentSlug, UserId};
    let rt = Runtime::embedded();
    let (alice, bob) = (UserId::parse("alice").unwrap(), UserId::parse("bob").unwrap());
    for _ in 0..50 {
        // no goal on file: each fails for alice
        let r = rt.ask(&alice, "Am I on track with my savings goal?", Default::default()).await;
        assert!(r.map_or(true, |r| r.status != Status::Success));
    }
    for agent in ["prime-boss", "goalie-goals"] {
        let slug = AgentSlug::parse(agent).unwrap();
        assert_eq!(rt.breaker_state(&slug), BreakerState::Closed, "{agent}: alice alone can't switch it off");
    }
    let r = rt.ask(&bob, "What is APR?", Default::default()).await.unwrap();
    assert_eq!(r.status, Status::Success, "{}", r.answer);
    // goalie itself still serves bob, with his goal in the input
    let mut req = request("prime-boss", "goalie-goals", "Am I on track with my savings goal?");
    req.user_id = bob.clone();
    req.input = "Emergency fund: target $10,000, saved $2,500, saving $500/month, by 2026-12".into();
    let r = rt.delegate(&operator(), req).await;
    assert_eq!(r.status, Status::Success, "{:?}", r.error);
}

/// ...while a genuinely broken agent still opens its breaker for everyone.
#[tokio::test(start_paused = true)]
async fn a_broken_agent_opens_its_breaker_for_everyone_by_the_tenth_failure() {
    use switchboard::protocol::{AgentSlug, UserId};
    struct Broken(Arc<AtomicU32>);
    #[async_trait]
    impl Agent for Broken {
        async fn run(&self, _ctx: &AgentContext, _task: &Task) -> Result<AgentOutput, DelegationError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Err(DelegationError::new(ErrorCode::AgentFailed, "internal error"))
        }
    }
    let calls = Arc::new(AtomicU32::new(0));
    let rt = switchboard::RuntimeBuilder::default()
        .spec(switchboard::AgentSpec::new("caller", "Caller").unwrap().delegating_to(["broken"]))
        .spec(switchboard::AgentSpec::new("broken", "Broken").unwrap())
        .agent("caller", Broken(Arc::default()))
        .agent("broken", Broken(calls.clone()))
        .build()
        .unwrap();
    let slug = AgentSlug::parse("broken").unwrap();
    for i in 0..10 {
        let mut req = request("caller", "broken", "Do the thing");
        req.user_id = UserId::parse(format!("user-{i}")).unwrap();
        assert_eq!(rt.delegate(&operator(), req).await.status, Status::Failed);
        if rt.breaker_state(&slug) == BreakerState::Open {
            break;
        }
    }
    let failures = calls.load(Ordering::SeqCst);
    assert_eq!(rt.breaker_state(&slug), BreakerState::Open, "after {failures} failures");
    assert!(failures <= 10, "{failures}");
    let mut req = request("caller", "broken", "Do the thing");
    req.user_id = UserId::parse("someone-new").unwrap();
    let r = rt.delegate(&operator(), req).await;
    assert_eq!(r.error.unwrap().code, ErrorCode::AgentUnavailable);
    assert_eq!(calls.load(Ordering::SeqCst), failures, "an open breaker does not touch the agent");
}
