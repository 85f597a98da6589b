//! The routing evaluation set (`tests/fixtures/routing/`) held against
//! Prime's planner alone, with no runtime: that the held-out half stays held
//! out, and the leave-one-round-out score the router's changes were chosen
//! by (docs/ROUTING.md). The set itself is scored through the whole runtime
//! by the integration test `routing`.

use super::plan::Plan;
use super::planner::{Earlier, RulePlanner};
use super::routing_set::{Case, Tally, cases};
use crate::config::Config;
use crate::route::text::words;

/// The held-out half stays held out: no example an agent is configured
/// with is one of its requests (the same words, case, punctuation and
/// figures aside). A request written independently may still resemble an example:
/// people ask for the same things in similar words.
#[test]
fn no_configured_example_is_a_held_out_request() {
    // small talk and definitions are Prime's own rules, not the router's examples
    let routed = |c: &Case| !["small-talk", "definition"].contains(&c.style.as_str());
    let held_out: Vec<Case> = cases(&["heldout.jsonl", "seen.jsonl", "tune.jsonl", "sealed.jsonl"])
        .into_iter()
        .filter(|c| matches!(c.split.as_str(), "heldout" | "sealed") && routed(c))
        .collect();
    let config = Config::builtin();
    let mut copies = Vec::new();
    for agent in &config.agents {
        for example in &agent.examples {
            let e = words(example);
            for case in &held_out {
                let h = words(&case.text);
                if !e.is_empty() && e == h {
                    copies.push(format!("{}: {example:?} ~ {} {:?}", agent.slug, case.id, case.text));
                }
            }
        }
    }
    assert!(copies.is_empty(), "{}", copies.join("\n"));
}

/// The specialists Prime's planner alone reaches for `c`, and whether that is right.
fn reached(p: &RulePlanner, c: &Case) -> (Vec<String>, bool) {
    let mut earlier = Earlier::None;
    for e in &c.earlier {
        let asked = p.choose_turn(e, Earlier::None, &[]).asks;
        earlier = if asked { Earlier::Asked(e) } else { Earlier::Said(e.lines().next().unwrap_or_default()) };
    }
    let choice = p.choose_with(&c.text, earlier, &[], c.attach.is_some());
    let mut got: Vec<String> = choice.plan.agents().iter().map(|a| a.to_string()).collect();
    got.sort();
    got.dedup();
    let missing = c.expect.iter().any(|a| !got.contains(a));
    let extra = got.iter().any(|a| !c.expect.contains(a) && !c.also_ok.contains(a));
    let team_list =
        matches!(&choice.plan, Plan::Direct { answer } if !choice.asks && answer.contains("My team can help with"));
    let unserved = c.expect.is_empty() && team_list && ["unserved", "vague"].contains(&c.style.as_str());
    (got, !(missing || extra || unserved))
}

/// Leave-one-round-out over the seen rounds, with Prime's planner alone (no
/// runtime): each round is scored by a planner whose agents' examples leave
/// out that round's requests. What the router's changes were chosen by
/// (docs/ROUTING.md); the held-out half is not scored here.
#[test]
#[ignore = "a tuning aid: prints the cross-validated accuracy, asserts nothing"]
fn leave_one_round_out() {
    use std::collections::HashSet;

    let all = cases(&["heldout.jsonl", "seen.jsonl", "tune.jsonl"]);
    let base = Config::builtin();
    let mut total = Tally::default();
    // each seen round's half, named by its ids' letters ("q…", "aa…"), in the order the rounds joined
    let round_of = |c: &Case| c.id.trim_end_matches(|d: char| d.is_ascii_digit()).to_string();
    let mut rounds: Vec<String> = Vec::new();
    for round in all.iter().filter(|c| c.split == "seen").map(round_of) {
        if !rounds.contains(&round) {
            rounds.push(round);
        }
    }
    for round in rounds {
        let held: Vec<&Case> = all.iter().filter(|c| c.split == "seen" && round_of(c) == round).collect();
        let texts: HashSet<Vec<String>> = held.iter().map(|c| words(&c.text)).collect();
        let mut config = base.clone();
        for a in &mut config.agents {
            a.examples.retain(|e| !texts.contains(&words(e)));
        }
        let p = RulePlanner::new(&config, "prime-boss").unwrap();
        let mut t = Tally::default();
        for c in held {
            let (got, ok) = reached(&p, c);
            t.add(ok);
            total.add(ok);
            if !ok {
                println!("  {} [{}] {:?}: expected {:?}, reached {got:?}", c.id, c.style, c.text, c.expect);
            }
        }
        println!("round {round}: {}", t.line());
    }
    println!("leave-one-round-out: {}", total.line());
}

/// The held-out half with Prime's planner alone (no runtime), for comparing
/// two routers on it once a change is chosen (the embedding trial against
/// the default: scripts/embedding-trial.sh). The integration test `routing`
/// is the half's score; this one leaves out the runtime around the planner.
#[test]
#[ignore = "a comparison aid: prints the held-out half's accuracy, asserts nothing"]
fn held_out_half_with_the_planner_alone() {
    let p = RulePlanner::new(&Config::builtin(), "prime-boss").unwrap();
    let mut held = Tally::default();
    for c in cases(&["heldout.jsonl"]) {
        let (got, ok) = reached(&p, &c);
        held.add(ok);
        if !ok {
            println!("  {} [{}] {:?}: expected {:?}, reached {got:?}", c.id, c.style, c.text, c.expect);
        }
    }
    println!("held-out half, the planner alone: {}", held.line());
}
