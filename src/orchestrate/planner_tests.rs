//! The rule planner's routing, as Prime uses it.

use super::*;
use crate::config::Config;

fn planner() -> RulePlanner {
    RulePlanner::new(&Config::builtin(), "prime-boss").unwrap()
}

fn agents(plan: &Plan) -> Vec<String> {
    match plan {
        Plan::Single(s) => vec![s.agent.to_string()],
        Plan::Chain(s) | Plan::Parallel(s) => s.iter().map(|s| s.agent.to_string()).collect(),
        Plan::Workflow(w) => w.steps.iter().map(|s| s.agent.to_string()).collect(),
        Plan::Direct { .. } => vec![],
    }
}

#[test]
fn receipt_and_categorize_is_a_byte_then_tag_chain() {
    let p = planner().plan("Upload this receipt and categorize it", &[]);
    assert!(matches!(p, Plan::Chain(_)));
    assert_eq!(agents(&p), ["byte-doc", "tag-ai"]);
}

#[test]
fn a_pasted_receipts_tax_line_is_not_a_question_about_taxes() {
    let p = planner();
    let pasted = "Here's my receipt: OFFICE DEPOT #1234 10/03/2026 Paper 12.99 Subtotal 72.98 Tax 8.05 TOTAL 81.03";
    assert_eq!(agents(&p.plan(pasted, &[])), ["byte-doc"]);
    assert_eq!(agents(&p.plan("Here are my receipts, which are tax deductible?", &[])), ["byte-doc", "ledger-tax"]);
    assert_eq!(agents(&p.plan("What are my biggest categories this year?", &[])), ["crystal-analytics"]);
    assert_eq!(agents(&p.plan("that Starbucks was a business lunch", &[])), ["tag-ai"]);
    assert_eq!(agents(&p.plan("What did I spend at Office Depot?", &[])), ["crystal-analytics"]);
    assert_eq!(agents(&p.plan("How much on dining last month?", &[])), ["crystal-analytics"]);
    assert_eq!(agents(&p.plan("Which of these can I deduct?", &[])), ["ledger-tax"]);
    assert_eq!(agents(&p.plan("Am I on track for my vacation goal?", &[])), ["goalie-goals"]);
}

/// A declared route's words inside what the message is about are not what
/// it asks: each of these went to the spending review (Byte, Tag, Crystal
/// and Ledger) for "expense report" before the router's sure pick of
/// another agent could set the route aside.
#[test]
fn a_routes_words_in_the_material_do_not_take_the_route() {
    let p = planner();
    for (text, agent) in [
        ("Could you make this sound less blunt? 'Your expense report is wrong again, fix it today.'", "format"),
        ("Email Dana in finance that my expense report will be two days late.", "email"),
    ] {
        assert_eq!(agents(&p.plan(text, &[])), [agent], "{text}");
    }
    // the route itself still holds when the router names one of its agents or none surely
    assert!(matches!(p.plan("Give me a spending review", &[]), Plan::Workflow(_)));
    assert!(matches!(p.plan("I'd like an expense report for the quarter", &[]), Plan::Workflow(_)));
}

#[test]
fn receipts_and_deductions_is_a_byte_then_ledger_chain() {
    let p = planner().plan("Analyze my receipts and suggest tax deductions", &[]);
    assert!(matches!(p, Plan::Chain(_)));
    assert_eq!(agents(&p), ["byte-doc", "ledger-tax"]);
}

#[test]
fn spending_improvements_fan_out_to_three() {
    let p = planner().plan("Analyze my spending and suggest improvements", &[]);
    assert!(matches!(p, Plan::Parallel(_)));
    assert_eq!(agents(&p), ["crystal-analytics", "tag-ai", "ledger-tax"]);
}

#[test]
fn greetings_and_general_questions_are_answered_directly() {
    for m in [
        "Hi!",
        "hello there",
        "Thanks",
        "What is an emergency fund?",
        "Tell me a joke about penguins",
        "Help me with my finances",
    ] {
        assert!(matches!(planner().plan(m, &[]), Plan::Direct { .. }), "{m}");
    }
    let Plan::Direct { answer } = planner().plan("What is APR?", &[]) else { panic!() };
    assert!(answer.contains("annual percentage rate"));
}

#[test]
fn a_task_note_goes_to_the_matching_tool_agent_as_a_note() {
    let note = "Draft apology email to alex.chan@company.com about missed project deadline. Mention new ETA of Oct 22. Max 120 words.";
    let Plan::Single(step) = planner().plan(note, &[]) else { panic!("not single") };
    assert_eq!(step.agent.as_str(), "email");
    assert_eq!(step.task_note.as_deref(), Some(note));
    assert_eq!(step.objective, "Draft apology email to alex.chan@company.com about missed project deadline");
}

#[test]
fn a_spending_review_runs_the_declared_workflow() {
    let p = planner().plan("Give me a spending review", &[]);
    assert!(matches!(p, Plan::Workflow(_)), "{p:?}");
}

#[test]
fn a_follow_up_that_points_back_first_and_says_why_after_goes_where_its_request_went() {
    let p = planner();
    let before = "Write an email to my landlord about the broken boiler, polite, under 100 words";
    for follow in [
        "could you make it shorter? nobody reads long emails",
        "make it warmer, she has always been kind to us",
        "can you make it firmer? they've ignored me for weeks",
    ] {
        let conversation = format!("{before}\n{follow}");
        assert_eq!(agents(&p.plan_reply(follow, &conversation, &[])), ["email"], "{follow}");
    }
}

#[test]
fn a_reply_is_read_with_the_question_it_answers_unless_it_changes_the_subject() {
    let p = planner();
    let asked = "I have 9000 on my car loan at 6% with a 250 minimum and 2500 on a card";
    let conversation = |m: &str| format!("{asked}\n{m}");
    // a fragment that answers Blitz's question goes back to Blitz with it
    let answer = "The card is 19.99% APR with a 50 minimum";
    let plan = p.plan_reply(answer, &conversation(answer), &[]);
    assert_eq!(agents(&plan), ["blitz-debt"]);
    let Plan::Single(step) = &plan else { panic!("{plan:?}") };
    assert!(step.message.as_deref().is_some_and(|m| m.contains("2500 on a card") && m.contains("19.99%")));
    // a definition, small talk or another agent's request stands alone
    assert!(matches!(p.plan_reply("What is APR?", &conversation("What is APR?"), &[]), Plan::Direct { .. }));
    assert!(matches!(p.plan_reply("thanks", &conversation("thanks"), &[]), Plan::Direct { .. }));
    let other = "Analyze my spending";
    assert_ne!(agents(&p.plan_reply(other, &conversation(other), &[])), ["blitz-debt"]);
}

#[test]
fn a_question_about_any_term_is_primes_whether_or_not_it_knows_the_term() {
    let p = planner();
    // in the glossary: explained, no question back
    let c = p.choose("define net worth", &[]);
    assert!(matches!(&c.plan, Plan::Direct { answer } if answer.contains("own minus what you owe")), "{c:?}");
    assert!(!c.asks);
    // not in it: Prime says so and asks, it does not hand a stray word to a specialist
    for m in ["what's a roth ira", "what does escrow mean", "define liquidity", "HELOC, what is that?", "whats a w2"] {
        let c = p.choose(m, &[]);
        assert!(matches!(c.plan, Plan::Direct { .. }) && c.asks && c.by == "definition", "{m}: {c:?}");
    }
    // about the user's own money, a document or a state: not a term
    for (m, to) in [
        ("what's still uncategorized", "tag-ai"),
        ("whats tax deductible", "ledger-tax"),
        ("what is my net worth", ""),
        ("what's 20 times 45", ""),
        ("what's the biggest expense this month", "crystal-analytics"),
    ] {
        let c = p.choose(m, &[]);
        assert_ne!(c.by, "definition", "{m}: {c:?}");
        if !to.is_empty() {
            assert_eq!(agents(&c.plan), [to], "{m}");
        }
    }
}

#[test]
fn an_email_of_another_agents_result_reaches_both_in_order() {
    let p = planner();
    let plan = p.plan("email my accountant a list of my deductions", &[]);
    assert!(matches!(plan, Plan::Chain(_)), "{plan:?}");
    assert_eq!(agents(&plan), ["ledger-tax", "email"]);
    if let Plan::Chain(steps) = &plan {
        // the email's note is the whole request, not the word "email"
        assert_eq!(steps[1].task_note.as_deref(), Some("email my accountant a list of my deductions"));
    }
    // what follows "that"/"about"/"to" is what the email says, not someone's work
    for m in ["email my client that the invoice is attached", "email my doctor to reschedule my appointment"] {
        assert_eq!(agents(&p.plan(m, &[])), ["email"], "{m}");
    }
}

#[test]
fn an_attached_document_goes_to_its_reader_when_the_words_around_it_are_unclear() {
    let p = planner();
    // words that alone would go elsewhere, unsure: the document's reader alone
    let c = p.choose_with("which store and what day was that", Earlier::None, &[], true);
    assert_eq!(agents(&c.plan), ["byte-doc"], "{c:?}");
    // without one, the same words are a question about the stored months
    let c = p.choose_with("which store and what day was that", Earlier::None, &[], false);
    assert_ne!(agents(&c.plan), ["byte-doc"], "{c:?}");
    // words that say who, clearly, keep their agent: it reads its own input
    let c = p.choose_with("categorize my transactions", Earlier::None, &[], true);
    assert_eq!(agents(&c.plan), ["tag-ai"], "{c:?}");
    // a declared route keeps its plan
    let c = p.choose_with("Analyze my spending and suggest improvements", Earlier::None, &[], true);
    assert!(c.by.starts_with("route:"), "{c:?}");
}

#[test]
fn a_question_to_prime_about_itself_is_small_talk() {
    let p = planner();
    for m in ["what are your skills", "what kind of things do you handle", "how's your day going"] {
        let c = p.choose(m, &[]);
        assert_eq!(c.by, "small talk", "{m}: {c:?}");
    }
    // "you" with the user's own money is a request
    assert_eq!(agents(&p.plan("can you tell me what I spent on groceries", &[])), ["crystal-analytics"]);
}

#[test]
fn a_short_request_before_a_pasted_purchase_is_about_the_purchase() {
    let p = planner();
    for m in ["note this expense: Trader Joe's 11/02/2025 54.10", "store this one: Lyft 10/12/2025 $23.75"] {
        assert_eq!(agents(&p.plan(m, &[])), ["byte-doc"], "{m}");
    }
    // a request that says more than that is read on its own
    let m = "which category should this go in: Lyft 10/12/2025 $23.75";
    assert_eq!(agents(&p.plan(m, &[])), ["tag-ai"], "{m}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Whatever a user types (letters whose lowercase is longer, as `İ`,
    /// colons, figures, a document or none), Prime plans without panicking.
    #[test]
    fn any_message_is_planned_without_a_panic(
        text in "(İ|ẞ|email|what's a|define|: |\\$|10/2|k|,| not |into |[a-zA-Z0-9 ]{0,12}){0,12}",
        material in proptest::bool::ANY,
    ) {
        let p = planner();
        let _ = p.choose_with(&text, Earlier::None, &[], material);
        let _ = p.choose_with(&text, Earlier::Said("how much did I spend on food"), &[], material);
    }
}

/// Two terms the glossary lacks are named as two terms, each quoted.
#[test]
fn two_unknown_terms_compared_are_each_named() {
    let Plan::Direct { answer } = planner().plan("what's the difference between a stock and a bond?", &[]) else {
        panic!("not Prime's own answer")
    };
    assert!(answer.starts_with("I don't have an explanation of \"stock\" or \"bond\" at hand"), "{answer}");
}
