//! Prime, the orchestrator: it answers directly or plans work for
//! the specialists, runs the plan through its delegator and merges the
//! results into one answer that says who did what. The rule planner needs no
//! model: regex routes from the config, then keyword and capability
//! discovery, then a direct answer.

use std::fmt::Write as _;
use std::sync::LazyLock;

use async_trait::async_trait;
use regex::Regex;
use serde_json::json;

use crate::agent::{Agent, AgentContext, AgentOutput, Task};
use crate::config::{AgentSpec, Config, PlanKind, Route};
use crate::protocol::{Artifact, DelegationError, ErrorCode, Status};
use crate::route::discover;

use super::plan::{Plan, Step, StepResult, execute, overall};

/// Plans from rules alone.
pub struct RulePlanner {
    routes: Vec<(Regex, Route)>,
    workflows: Vec<crate::config::Workflow>,
    specialists: Vec<AgentSpec>,
}

/// The labelled figures of a pasted receipt or statement (`Subtotal 72.98`,
/// `Tax: $8.05`, `TOTAL 81.03`): part of the document, not of the request.
static RECEIPT_LINES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:sub[ -]?total|sales tax|tax|vat|gst|hst|pst|tip|gratuity|total|amount due|balance due|change|cash|visa|mastercard|amex|debit)\b\s*(?:\(\s*\d+(?:\.\d+)?\s*%\s*\))?\s*:?\s*(?:[$€£]\s*-?\d[\d,]*(?:\.\d{2})?|-?\d[\d,]*\.\d{2})")
        .expect("valid regex")
});

/// A few terms Prime can explain without a specialist.
const GLOSSARY: &[(&str, &str)] = &[
    (
        "emergency fund",
        "An emergency fund is cash set aside for unexpected costs such as a job loss or a car repair; a common target is three to six months of essential expenses, kept in an account you can reach quickly.",
    ),
    (
        "apr",
        "APR (annual percentage rate) is the yearly cost of borrowing, including interest and some fees; a card at 24% APR charges about 2% of the balance each month.",
    ),
    (
        "avalanche",
        "The debt avalanche pays minimums on every debt and puts every extra dollar on the highest-interest debt first; it costs the least interest overall.",
    ),
    (
        "snowball",
        "The debt snowball pays minimums on every debt and puts every extra dollar on the smallest balance first; it costs a little more interest but clears accounts sooner.",
    ),
    (
        "deduction",
        "A tax deduction lowers your taxable income; business expenses such as office supplies or software you use for work usually qualify when you keep the receipts.",
    ),
    (
        "budget",
        "A budget is a plan for your income: what goes to needs, wants and savings each month. The 50/30/20 rule is a simple start.",
    ),
    (
        "compound interest",
        "Compound interest is interest earned on interest: the balance grows faster the longer it stays invested.",
    ),
    (
        "credit score",
        "A credit score summarizes how reliably you repay debt; paying on time and keeping card balances low raise it.",
    ),
];

impl RulePlanner {
    /// Builds the planner for the agent `me` (excluded from its own plans).
    pub fn new(config: &Config, me: &str) -> Result<Self, DelegationError> {
        let routes = config
            .prime
            .routes
            .iter()
            .map(|r| {
                Regex::new(&r.pattern)
                    .map(|re| (re, r.clone()))
                    .map_err(|e| DelegationError::invalid(format!("route '{}': {e}", r.name)))
            })
            .collect::<Result<_, _>>()?;
        let specialists = config.agents.iter().filter(|a| a.slug.as_str() != me).cloned().collect();
        Ok(Self { routes, workflows: config.workflows.clone(), specialists })
    }

    fn spec(&self, slug: &str) -> Option<&AgentSpec> {
        self.specialists.iter().find(|s| s.slug.as_str() == slug)
    }

    /// The plan for a user's message.
    pub fn plan(&self, message: &str, hints: &[String]) -> Plan {
        let msg = message.trim();
        // a pasted receipt's "Tax 8.05" is not a question about taxes
        let said = RECEIPT_LINES.replace_all(msg, " ");
        let lower = said.to_lowercase();
        if msg.is_empty() {
            return Plan::Direct { answer: self.introduction("What can I help you with?") };
        }
        if let Some(answer) = definition(&lower) {
            return Plan::Direct { answer: answer.to_string() };
        }
        for (re, route) in &self.routes {
            if re.is_match(&said)
                && let Some(plan) = self.route_plan(route, msg)
            {
                return plan;
            }
        }
        if let Some(best) = discover(&self.specialists, &said, hints).first() {
            return Plan::Single(self.step(best.spec, objective_of(msg), msg));
        }
        if is_small_talk(&lower) {
            return Plan::Direct { answer: self.introduction("Hi! I'm Prime, your finance team's lead.") };
        }
        if ["finance", "finances", "money", "financial"]
            .iter()
            .any(|w| lower.split(|c: char| !c.is_alphanumeric()).any(|x| x == *w))
        {
            // Conditional delegation: too vague to hand to anyone yet.
            return Plan::Direct {
                answer: self.introduction("Happy to help with your finances. Which part should we start with?"),
            };
        }
        Plan::Direct {
            answer: format!(
                "I can answer that without a specialist only in general terms: none of my team's skills match \"{}\". {}",
                objective_of(msg),
                self.introduction("")
            ),
        }
    }

    /// The plan for `message` when it may answer an earlier question:
    /// `conversation` is the message after the ones it answers. The message
    /// is planned alone when it stands on its own (a definition, small talk,
    /// a request for other agents: the user changed the subject), else the
    /// whole conversation is.
    pub fn plan_reply(&self, message: &str, conversation: &str, hints: &[String]) -> Plan {
        let lower = message.trim().to_lowercase();
        if conversation == message || definition(&lower).is_some() || is_small_talk(&lower) {
            return self.plan(message, hints);
        }
        let (alone, together) = (self.plan(message, hints), self.plan(conversation, hints));
        let reached = together.agents();
        let others = alone.agents().iter().any(|a| !reached.contains(a));
        if others { alone } else { together }
    }

    fn step(&self, spec: &AgentSpec, objective: String, message: &str) -> Step {
        let says_more = !spec.task_notes && objective.trim() != message.trim();
        Step {
            agent: spec.slug.clone(),
            task_note: spec.task_notes.then(|| message.to_string()),
            message: says_more.then(|| message.to_string()),
            objective,
        }
    }

    fn route_plan(&self, route: &Route, msg: &str) -> Option<Plan> {
        if route.plan == PlanKind::Workflow {
            let name = route.workflow.as_deref()?;
            return self.workflows.iter().find(|w| w.name == name).cloned().map(Plan::Workflow);
        }
        let steps: Vec<Step> = route
            .agents
            .iter()
            .zip(&route.objectives)
            .filter_map(|(a, o)| self.spec(a.as_str()).map(|s| self.step(s, o.clone(), msg)))
            .collect();
        if steps.is_empty() {
            return None;
        }
        Some(match route.plan {
            PlanKind::Parallel => Plan::Parallel(steps),
            PlanKind::Chain => Plan::Chain(steps),
            _ => Plan::Single(steps.into_iter().next()?),
        })
    }

    fn introduction(&self, lead: &str) -> String {
        let mut s = String::from(lead);
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str("My team can help with:\n");
        for a in &self.specialists {
            let _ = writeln!(s, "• {} ({}): {}", a.name, a.slug, a.description);
        }
        s.push_str("Tell me what you need, and attach a receipt or statement with --file when there is one.");
        s
    }

    /// The display name of an agent ("Byte").
    pub fn name_of<'a>(&'a self, slug: &'a str) -> &'a str {
        self.spec(slug).map_or(slug, |s| s.name.as_str())
    }
}

fn definition(lower: &str) -> Option<&'static str> {
    let asks = ["what is", "what's", "what are", "define", "explain", "what does", "meaning of"];
    if !asks.iter().any(|a| lower.starts_with(a)) {
        return None;
    }
    GLOSSARY
        .iter()
        .find(|(term, _)| {
            let t = *term;
            lower.split(|c: char| !c.is_alphanumeric()).any(|w| w == t || w.strip_suffix('s') == Some(t))
                || (t.contains(' ') && lower.contains(t))
        })
        .map(|(_, d)| *d)
}

fn is_small_talk(lower: &str) -> bool {
    const OPENERS: [&str; 12] = [
        "hi",
        "hello",
        "hey",
        "yo",
        "good morning",
        "good afternoon",
        "good evening",
        "thanks",
        "thank you",
        "how are you",
        "who are you",
        "what can you do",
    ];
    OPENERS.iter().any(|o| lower.starts_with(o) && lower[o.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric()))
}

/// A short objective from a message: its first sentence, at most 120 characters.
fn objective_of(msg: &str) -> String {
    // A sentence ends at a line break, or at . ? ! before a space or the end
    // (so "alex.chan@company.com" stays whole).
    let mut end = msg.len();
    let mut chars = msg.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next_is_space = chars.peek().is_none_or(|(_, n)| n.is_whitespace());
        if c == '\n' || (matches!(c, '.' | '?' | '!') && next_is_space && i > 0) {
            end = i;
            break;
        }
    }
    let first = msg[..end].trim();
    let first = if first.is_empty() { msg.trim() } else { first };
    let mut out: String = first.chars().take(120).collect();
    if first.chars().count() > 120 {
        out.push('…');
    }
    out
}

/// The orchestrator agent.
pub struct PrimeAgent {
    planner: RulePlanner,
}

impl PrimeAgent {
    /// Prime's planner for the agent `me` (any slug may run as a Prime-style
    /// orchestrator of the configured routes).
    pub fn new(config: &Config, me: &str) -> Result<Self, DelegationError> {
        Ok(Self { planner: RulePlanner::new(config, me)? })
    }

    pub fn planner(&self) -> &RulePlanner {
        &self.planner
    }

    /// One answer from the steps' results, saying who did what; the
    /// questions the specialists need answered are asked once each.
    fn merge(&self, plan: &Plan, results: &[StepResult]) -> AgentOutput {
        let status = overall(results);
        let name = |r: &StepResult| self.planner.name_of(r.agent.as_str()).to_string();
        let ok: Vec<&StepResult> = results.iter().filter(|r| r.succeeded()).collect();
        let asking: Vec<&StepResult> = results.iter().filter(|r| r.needs_input()).collect();
        let failed: Vec<&StepResult> = results.iter().filter(|r| !r.succeeded() && !r.needs_input()).collect();
        let mut text = String::new();
        let names: Vec<String> = ok.iter().map(|r| name(r)).collect();
        match (status, plan) {
            (Status::NeedsInput, _) => text.push_str("I need a bit more from you before the team can do this.\n"),
            (Status::Failed, _) => text.push_str("I couldn't get this done.\n"),
            (_, Plan::Single(_)) => {
                let _ = write!(text, "I had {} take this. ", names.join(""));
            }
            (Status::Partial, _) => {
                let _ = writeln!(
                    text,
                    "Here's what I could get: {} finished, {} did not.",
                    list(&names),
                    failed.len() + asking.len()
                );
            }
            _ => {
                let _ = writeln!(text, "Done! I had {} work on this ({}):", list(&names), plan.kind());
            }
        }
        if let (Plan::Single(_), [only]) = (plan, ok.as_slice()) {
            let _ = write!(text, "{}\n\n{}", only.response.summary, only.response.result);
        } else {
            for r in &ok {
                let _ = writeln!(text, "• {}: {}", name(r), r.response.summary);
            }
        }
        for r in &failed {
            let (code, msg) = r
                .response
                .error
                .as_ref()
                .map_or(("AGENT_FAILED".to_string(), String::new()), |e| (e.code.to_string(), e.message.clone()));
            let _ = writeln!(text, "• {} could not finish ({code}): {msg}", name(r));
        }
        // the same question from several specialists is asked once, naming them all
        let mut questions: Vec<(String, Vec<String>)> = Vec::new();
        for r in &asking {
            let q = r.question().unwrap_or_default();
            match questions.iter_mut().find(|(known, _)| *known == q) {
                Some((_, who)) => who.push(name(r)),
                None => questions.push((q, vec![name(r)])),
            }
        }
        for (q, who) in &questions {
            let _ = writeln!(text, "• {} {}: {q}", list(who), if who.len() == 1 { "asks" } else { "ask" });
        }
        let summary = match status {
            Status::Success => format!("{} via {}", plan.kind(), list(&names)),
            Status::Partial => format!("partial: {} of {} steps succeeded", ok.len(), results.len()),
            Status::NeedsInput => "asked the user for what the team needs".to_string(),
            _ => "no step succeeded".to_string(),
        };
        let mut out = AgentOutput::new(summary, text.trim_end().to_string());
        out.status = Some(status);
        out.requires_followup = !asking.is_empty();
        out.confidence = ok.iter().filter_map(|r| r.response.confidence).min();
        out.artifacts.push(Artifact::json(
            "plan",
            json!({
                "kind": plan.kind(),
                "steps": results.iter().map(|r| json!({"agent": r.agent, "objective": r.objective, "status": r.response.status})).collect::<Vec<_>>(),
            }),
        ));
        for r in &ok {
            for a in &r.response.artifacts {
                let mut a = a.clone();
                a.label = Some(format!("{}:{}", r.agent, a.label.as_deref().unwrap_or("artifact")));
                out.artifacts.push(a);
            }
        }
        out
    }
}

fn list(names: &[String]) -> String {
    match names {
        [] => "nobody".into(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[async_trait]
impl Agent for PrimeAgent {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        // an answer to Prime's question is read with the message it answers
        let conversation = task.with_earlier_asks(&task.objective);
        let mut plan = self.planner.plan_reply(&task.objective, &conversation, &task.context_hints);
        if matches!(plan, Plan::Direct { .. }) && !task.input.trim().is_empty() {
            // "Here's my bank statement" with the statement attached: whoever reads documents starts
            let read =
                self.planner.plan(&format!("{}\nRead the attached document", task.objective), &task.context_hints);
            if !matches!(read, Plan::Direct { .. }) {
                plan = read;
            }
        }
        if let Plan::Direct { answer } = &plan {
            let mut out = AgentOutput::new("Answered directly", answer.clone());
            out.artifacts.push(Artifact::json("plan", json!({"kind": "direct", "steps": []})));
            return Ok(out);
        }
        ctx.use_tool("delegate")?;
        let results = execute(&plan, ctx.delegator()?, &task.input).await?;
        let out = self.merge(&plan, &results);
        if out.status == Some(Status::Failed) {
            // when every step failed the same way (a rail below, a timeout),
            // say so: the caller's retry policy and breaker treat it rightly
            let mut codes = results.iter().filter_map(|r| r.response.error_code());
            let first = codes.next().unwrap_or(ErrorCode::AgentFailed);
            let code = if codes.all(|c| c == first) { first } else { ErrorCode::AgentFailed };
            return Err(DelegationError::new(code, out.result));
        }
        Ok(out)
    }

    fn default_attempts(&self) -> Option<u32> {
        Some(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
