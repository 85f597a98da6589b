//! Prime's rule planner: what to do with a user's message without a model.
//! In order: a term Prime can define, a route declared in the config (a
//! chain or a workflow the operator wrote down), then the router learned
//! from every agent's configured examples ([`crate::route::Router`]): each
//! clause of the message goes to the specialist it resembles, and the
//! delegation decision ([`crate::verify::decision::decide`]) says whether
//! to delegate at all. What no specialist serves gets Prime's own answer
//! (small talk) or one clarifying question, never the team's list as a
//! success. A short follow-up that is not sure of itself goes where the
//! conversation was (docs/ROUTING.md).

use std::sync::{Arc, LazyLock, OnceLock};

use regex::Regex;
use serde_json::{Value, json};

use crate::config::{AgentSpec, Backend, Config, PlanKind, Route};
use crate::protocol::DelegationError;
use crate::route::classifier::{PIECE, STRONG, THRESHOLD};
use crate::route::{Match, Routed, Router, discover};
use crate::verify::decision::{self, Routing};
use crate::verify::{Constraints, DecisionScore, TaskSpec};

use super::plan::{Plan, Step};
use super::words::{
    Definition, asks_about_prime, asks_to_call_or_text, asks_what_to_buy, definition, introduction, is_small_talk,
    objective_of, offer,
};

/// Plans from rules alone.
pub(crate) struct RulePlanner {
    routes: Vec<(Regex, Route)>,
    workflows: Vec<crate::config::Workflow>,
    specialists: Vec<AgentSpec>,
    /// The agent the planner plans for; its examples are what it answers itself.
    me: Option<AgentSpec>,
    /// Learned on first use (a runtime that never plans never learns).
    router: OnceLock<Arc<Router>>,
    /// Who reads an attached document, found on first use.
    reader: OnceLock<Option<String>>,
    fan_out: usize,
}

/// The labelled figures of a pasted receipt or statement (`Subtotal 72.98`,
/// `Tax: $8.05`, `TOTAL 81.03`): part of the document, not of the request.
static RECEIPT_LINES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:sub[ -]?total|sales tax|tax|vat|gst|hst|pst|tip|gratuity|total|amount due|balance due|change|cash|visa|mastercard|amex|debit)\b\s*(?:\(\s*\d+(?:\.\d+)?\s*%\s*\))?\s*:?\s*(?:[$€£]\s*-?\d[\d,]*(?:\.\d{2})?|-?\d[\d,]*\.\d{2})")
        .expect("valid regex")
});

/// What a document asks of the team when the words around it say nothing:
/// whoever it routes to reads documents.
const READ_DOCUMENT: &str = "Read the attached document";

/// What Prime chose for a message, and why.
#[derive(Debug, Clone)]
pub(crate) struct Choice {
    /// What to do.
    pub plan: Plan,
    /// The direct answer is a question for the user (status `needs_input`).
    pub asks: bool,
    /// How the plan was found: `definition`, `small talk`, `route:<name>`,
    /// `task note`, `examples`, `follow-up`, `reply`, `hints` or `none`.
    pub by: String,
    /// What the router found.
    pub routed: Routed,
    /// The delegation decision the choice follows.
    pub decision: DecisionScore,
}

impl Choice {
    /// The decision as Prime's response shows it (its `decision` artifact).
    pub(crate) fn to_json(&self) -> Value {
        let m = |m: &Match| json!({"agent": m.agent, "score": m.score, "clause": m.clause, "example": m.example});
        json!({
            "delegate": self.decision.delegate,
            "score": self.decision.score,
            "threshold": decision::THRESHOLD,
            "reasoning": self.decision.reasoning,
            "factors": {
                "deterministic": self.decision.deterministic,
                "verifiable": self.decision.verifiable,
                "repeatable": self.decision.repeatable,
                "self_contained": self.decision.self_contained,
            },
            "by": self.by,
            "matches": self.routed.picks.iter().map(m).collect::<Vec<_>>(),
            "best": self.routed.best.as_ref().map(m),
            "router_threshold": THRESHOLD,
        })
    }

    fn direct(answer: String, asks: bool, by: &str, routed: Routed, decision: DecisionScore) -> Self {
        Self { plan: Plan::Direct { answer }, asks, by: by.to_string(), routed, decision }
    }

    /// Whether the message stood on its own: a definition, small talk, a
    /// declared route or a strong likeness to a specialist's examples.
    fn sure(&self) -> bool {
        matches!(self.by.as_str(), "definition" | "small talk") || self.by.starts_with("route:") || self.routed.strong()
    }
}

/// What came before a message in its session.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Earlier<'a> {
    /// Nothing: a new conversation.
    None,
    /// The messages Prime's last answer asked about (one per line): the
    /// message may be the answer.
    Asked(&'a str),
    /// The user's previous request, answered: the message may follow it up.
    Said(&'a str),
}

impl RulePlanner {
    /// Builds the planner for the agent `me` (excluded from its own plans):
    /// the config's routes, and the router learned from every agent's examples.
    pub(crate) fn new(config: &Config, me: &str) -> Result<Self, DelegationError> {
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
        let specialists: Vec<AgentSpec> = config.agents.iter().filter(|a| a.slug.as_str() != me).cloned().collect();
        Ok(Self {
            routes,
            workflows: config.workflows.clone(),
            router: OnceLock::new(),
            reader: OnceLock::new(),
            me: config.agent(me).cloned(),
            specialists,
            fan_out: config.limits.fan_out.max(1) as usize,
        })
    }

    fn spec(&self, slug: &str) -> Option<&AgentSpec> {
        self.specialists.iter().find(|s| s.slug.as_str() == slug)
    }

    /// The plan for a user's message (for `testing::Planner` and the tests).
    #[cfg(any(test, feature = "test-util"))]
    pub(crate) fn plan(&self, message: &str, hints: &[String]) -> Plan {
        self.choose(message, hints).plan
    }

    #[cfg(test)]
    /// The plan for `message` when it may answer an earlier question:
    /// `conversation` is the message after the ones it answers.
    pub(crate) fn plan_reply(&self, message: &str, conversation: &str, hints: &[String]) -> Plan {
        let earlier = conversation.strip_suffix(message).map(str::trim_end).unwrap_or(conversation);
        let earlier = if conversation == message { Earlier::None } else { Earlier::Asked(earlier) };
        self.choose_turn(message, earlier, hints).plan
    }

    /// What to do with `message`, read with what came before it: an answer
    /// to Prime's question goes back, with the question, to whoever asked it
    /// (unless it names someone else); a follow-up that is not sure of
    /// itself goes where the previous request went, with it.
    pub(crate) fn choose_turn(&self, message: &str, earlier: Earlier<'_>, hints: &[String]) -> Choice {
        let alone = self.choose(message, hints);
        let (before_text, asked) = match earlier {
            Earlier::None => return alone,
            Earlier::Asked(t) => (t, true),
            Earlier::Said(t) => (t, false),
        };
        if matches!(alone.by.as_str(), "definition" | "small talk") || before_text.trim().is_empty() {
            return alone;
        }
        let before = self.choose(before_text, hints);
        let went: Vec<String> = before.plan.agents().iter().map(|a| a.to_string()).collect();
        if went.is_empty() {
            return alone;
        }
        let same = alone.plan.agents().iter().all(|a| went.contains(&a.to_string()));
        let follows = (asked && same) || !alone.sure() || refers_back(message);
        if !follows {
            return alone;
        }
        let conversation = format!("{}\n{}", before_text.trim_end(), message.trim());
        Choice {
            plan: with_message(before.plan, &conversation),
            by: if asked { "reply" } else { "follow-up" }.to_string(),
            ..before
        }
    }

    /// What to do with a turn that came with a document (`material`): the
    /// words around a document say who is to work on it, and each agent
    /// reads its own input (Tag categorizes the transactions it is given,
    /// Data converts the CSV). When the words are unclear (no agent at
    /// least 0.9 sure of them: "parse these", "new statement, september to
    /// october"), the document is the clearer signal: whoever reads
    /// documents (the agent the team routes "Read the attached document"
    /// to) takes it. A declared route or a Task Note keeps its plan.
    pub(crate) fn choose_with(&self, message: &str, earlier: Earlier<'_>, hints: &[String], material: bool) -> Choice {
        let choice = self.choose_turn(message, earlier, hints);
        if !material {
            return choice;
        }
        if matches!(choice.plan, Plan::Direct { .. }) {
            // "Here's my bank statement" with the statement attached: whoever reads documents starts
            let read = self.choose(&format!("{message}\n{READ_DOCUMENT}"), hints);
            return if matches!(read.plan, Plan::Direct { .. }) { choice } else { read };
        }
        let unclear = choice.by == "examples" && choice.routed.picks.iter().all(|m| m.score < 0.9);
        if !unclear {
            return choice;
        }
        let reader =
            self.reader.get_or_init(|| self.choose(READ_DOCUMENT, &[]).plan.agents().first().map(|a| a.to_string()));
        let Some(spec) = reader.as_deref().and_then(|r| self.spec(r)) else { return choice };
        let plan = Plan::Single(self.step(spec, objective_of(message), message));
        let decision = self.decide(message, &choice.routed, spec.slug.as_str());
        Choice { plan, asks: false, by: "document".into(), decision, ..choice }
    }

    /// What to do with `message` on its own.
    pub(crate) fn choose(&self, message: &str, hints: &[String]) -> Choice {
        let msg = message.trim();
        // a pasted receipt's "Tax 8.05" is not a question about taxes
        let said = RECEIPT_LINES.replace_all(msg, " ");
        let lower = said.to_lowercase();
        if msg.is_empty() {
            let answer = introduction(&self.specialists, "What can I help you with?");
            return Choice::direct(answer, true, "none", Routed::default(), decision::decide("", None, 0));
        }
        match definition(&lower) {
            Some(Definition::Known(answer)) => {
                let decision = decision::decide(msg, None, 0);
                return Choice::direct(answer, false, "definition", Routed::default(), decision);
            }
            Some(Definition::Unknown(terms)) => {
                let terms: Vec<String> = terms.iter().map(|t| format!("\"{t}\"")).collect();
                let answer = format!(
                    "I don't have an explanation of {} at hand, and my team works on your own money, not on terms. {}",
                    terms.join(" or "),
                    offer(&self.specialists)
                );
                let decision = decision::decide(msg, None, 0);
                return Choice::direct(answer, true, "definition", Routed::default(), decision);
            }
            None => {}
        }
        let routed = self.router().route(&said);
        for (re, route) in &self.routes {
            if re.is_match(&said)
                && let Some(plan) = self.route_plan(route, msg)
                && !elsewhere(&routed, &plan)
            {
                let first = plan.agents().first().map(|a| a.to_string()).unwrap_or_default();
                let decision = self.decide(msg, &routed, &first);
                return Choice { plan, asks: false, by: format!("route:{}", route.name), routed, decision };
            }
        }
        // "hey there, good morning" is small talk; "hi! how much did I spend on coffee?" is not
        let more = routed.strong() || crate::route::text::content(&said).len() > 3;
        let about_me = asks_about_prime(&lower) && routed.picks.iter().all(|m| m.score < 0.9);
        if about_me || is_small_talk(&lower) && (routed.picks.is_empty() || !more) {
            let answer = introduction(&self.specialists, "Hi! I'm Prime, your finance team's lead.");
            return Choice::direct(answer, false, "small talk", routed, decision::decide(msg, None, 0));
        }
        if is_vague(&lower) {
            let answer = format!("Happy to help. {}", offer(&self.specialists));
            return Choice::direct(answer, true, "none", routed, decision::decide(msg, None, 0));
        }
        // advice on what to buy, a call or a text: no one on the team does it, whatever words it shares
        let unserved = if asks_what_to_buy(&lower) {
            Some("tell you what to buy or invest in")
        } else if asks_to_call_or_text(&lower) {
            Some("call or text anyone")
        } else {
            None
        };
        if let Some(what) = unserved {
            let answer = format!("I can't {what}, and no one on my team does that. {}", offer(&self.specialists));
            return Choice::direct(answer, true, "none", routed, decision::decide(msg, None, 0));
        }
        if let Some((spec, plan)) = self.note_plan(msg, &routed) {
            let decision = self.decide(msg, &routed, spec);
            return Choice { plan, asks: false, by: "task note".into(), routed, decision };
        }
        if let Some(first) = routed.picks.first() {
            let decision = self.decide(msg, &routed, &first.agent);
            if decision.delegate
                && let Some(plan) = self.pick_plan(&routed.picks, msg)
            {
                return Choice { plan, asks: false, by: "examples".into(), routed, decision };
            }
            let answer = format!(
                "That is something I'd rather not hand to a specialist ({}). {}",
                decision.reasoning.split(" → ").next().unwrap_or_default(),
                offer(&self.specialists)
            );
            return Choice::direct(answer, true, "examples", routed, decision);
        }
        if let Some(best) = discover(&self.specialists, &said, hints).first().filter(|_| !hints.is_empty()) {
            let plan = Plan::Single(self.step(best.spec, objective_of(msg), msg));
            let decision = self.decide(msg, &routed, best.spec.slug.as_str());
            return Choice { plan, asks: false, by: "hints".into(), routed, decision };
        }
        let decision = decision::decide(msg, None, 0);
        // nothing any agent was shown resembles it ("ok", "hmm")
        let vague = routed.best.as_ref().is_none_or(|b| b.score <= 0.0);
        let lead = if vague {
            "Happy to help.".to_string()
        } else {
            format!("I can't do \"{}\" myself, and no one on my team does that.", objective_of(msg))
        };
        Choice::direct(format!("{lead} {}", offer(&self.specialists)), true, "none", routed, decision)
    }

    /// A Task Note for one of the tool agents (a goal and its constraints,
    /// over several sentences: `Draft apology email to … Max 120 words.`)
    /// is one task, not a sentence for each agent.
    fn note_plan(&self, msg: &str, routed: &Routed) -> Option<(&str, Plan)> {
        if clauses_of_sentences(msg) < 2 {
            return None; // one sentence: its joining words are the router's to read
        }
        let (note, _) = TaskSpec::parse_lenient(msg);
        let slug = note.kind.slug()?;
        // another specialist clearly named is a second request, unless what named it is one of
        // the note's own lines ("Tone: friendly." is the email's tone, not a request to Format)
        if routed
            .picks
            .iter()
            .any(|m| m.agent != slug && m.score >= STRONG && !TaskSpec::reads_as_constraint(&m.clause))
        {
            return None;
        }
        let spec = self.spec(slug).filter(|s| s.task_notes)?;
        if note.constraints == Constraints::default() {
            return None;
        }
        Some((spec.slug.as_str(), Plan::Single(self.step(spec, objective_of(msg), msg))))
    }

    /// The decision for delegating `msg` to `agent`, with what the router found.
    fn decide(&self, msg: &str, routed: &Routed, agent: &str) -> DecisionScore {
        let found =
            routed.picks.iter().find(|m| m.agent == agent).or(routed.best.as_ref().filter(|b| b.agent == agent));
        let spec = self.spec(agent);
        let routing = spec.map(|spec| Routing {
            agent,
            similarity: found.map_or(0.0, |m| m.score),
            example: found.map_or("", |m| m.example.as_str()),
            resembles: found.is_some_and(|m| m.score >= THRESHOLD),
            close: found.is_some_and(|m| m.score >= STRONG),
            deterministic: matches!(spec.backend, Backend::Builtin { .. }),
            task_notes: spec.task_notes,
        });
        decision::decide(msg, routing.as_ref(), 0)
    }

    /// One specialist: the message; several: each its own clause, side by
    /// side, or one after another in the order the message names them when
    /// a later part works on an earlier one's result ("read this receipt
    /// and put it in the right category", "categorize everything, then
    /// tell me my biggest category").
    fn pick_plan(&self, picks: &[Match], msg: &str) -> Option<Plan> {
        let specs: Vec<(&AgentSpec, &Match)> =
            picks.iter().filter_map(|m| self.spec(&m.agent).map(|s| (s, m))).take(self.fan_out).collect();
        match specs.as_slice() {
            [] => None,
            [(spec, _)] => Some(Plan::Single(self.step(spec, objective_of(msg), msg))),
            _ => {
                let steps = specs.iter().map(|(spec, m)| self.clause_step(spec, &m.clause, msg)).collect();
                // a tool agent's draft is for the user: what follows it runs beside it
                let feeds = !specs[0].0.task_notes;
                Some(if feeds && (builds_on_earlier(specs[0].1, &specs[1..]) || said_then(msg)) {
                    Plan::Chain(steps)
                } else {
                    Plan::Parallel(steps)
                })
            }
        }
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

    /// A step for one clause of a message that asks for several things: a
    /// tool agent's Task Note is its clause, the others read the whole message.
    fn clause_step(&self, spec: &AgentSpec, clause: &str, message: &str) -> Step {
        let text = if spec.task_notes { clause } else { message };
        self.step(spec, objective_of(clause), text)
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

    /// The display name of an agent ("Byte").
    pub(crate) fn name_of<'a>(&'a self, slug: &'a str) -> &'a str {
        self.spec(slug).map_or(slug, |s| s.name.as_str())
    }

    /// The router learned from the team's examples.
    pub(crate) fn router(&self) -> &Router {
        self.router.get_or_init(|| Router::shared(&self.specialists, self.me.as_ref()))
    }
}

/// Whether the router is sure the message is for others than `plan`'s
/// agents, and names none of them: a declared route's words were then
/// part of what the message is about, not what it asks ("make this more
/// professional: 'I not finish the expense report …'" is Format's, not the
/// spending review's).
fn elsewhere(routed: &Routed, plan: &Plan) -> bool {
    let agents = plan.agents();
    let ours = |m: &Match| agents.iter().any(|a| a.as_str() == m.agent);
    routed.picks.iter().any(|m| m.score >= PIECE && !ours(m)) && !routed.picks.iter().any(ours)
}

/// A later clause points at what an earlier one produced (`put it in the
/// right category`, `which of them are deductible`).
/// A later part that holds an earlier one (`email my sister the summary of
/// my october spending` after `the summary of my october spending`) acts on
/// its result too.
fn builds_on_earlier(earlier: &Match, later: &[(&AgentSpec, &Match)]) -> bool {
    const RESULTS: [&str; 6] = ["it", "its", "them", "these", "those", "they"];
    later.iter().any(|(_, m)| {
        m.clause.contains(earlier.clause.trim())
            || crate::route::text::words(&m.clause).iter().any(|w| RESULTS.contains(&w.as_str()))
    })
}

/// The message orders its parts (`…, then …`).
fn said_then(msg: &str) -> bool {
    crate::route::text::words(msg).iter().any(|w| w == "then")
}

/// How many sentences (or lines) a message has.
fn clauses_of_sentences(msg: &str) -> usize {
    static END: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[.?!]+\s+|\n+").expect("valid regex"));
    END.split(msg.trim()).filter(|s| !s.trim().is_empty()).count()
}

/// A short message that points back at what came before (`make it 45
/// minutes instead`, `what about just groceries?`, `and in September?`):
/// a follow-up, however sure its words alone seem. A message whose first
/// sentence or clause does so, before it says why ("can you make it
/// firmer? they've done this twice now", "make it firmer, this is the
/// third time"), is one too.
fn refers_back(message: &str) -> bool {
    static FIRST: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[.?!;,]+(\s+|$)|\n+").expect("valid regex"));
    let first = FIRST.split(message.trim()).next().unwrap_or_default();
    points_back(message) || (first.len() < message.trim().len() && points_back(first))
}

/// [`refers_back`] for one piece of a message.
fn points_back(message: &str) -> bool {
    // not "this" or "that": "this year", "that Starbucks was…" stand on their own
    const POINTERS: [&str; 4] = ["it", "them", "one", "instead"];
    const OPENERS: [&str; 5] = ["and", "also", "what about", "how about", "ok and"];
    let words = crate::route::text::words(message);
    let opens = OPENERS.iter().any(|o| {
        let n = o.split(' ').count();
        words.len() > n && words[..n].join(" ") == *o
    });
    crate::route::text::content(message).len() <= 3 && (opens || words.iter().any(|w| POINTERS.contains(&w.as_str())))
}

/// A request for help that says nothing of what with.
fn is_vague(lower: &str) -> bool {
    crate::route::text::content(lower).iter().all(|w| {
        [
            "help",
            "question",
            "finance",
            "finances",
            "money",
            "financial",
            "need",
            "something",
            "thing",
            "things",
            "stuff",
            "done",
            "want",
            "task",
            "anything",
        ]
        .contains(&w.as_str())
    })
}

/// `plan` with every step reading `conversation` instead of the message alone.
fn with_message(plan: Plan, conversation: &str) -> Plan {
    let each = |mut s: Step| {
        if s.task_note.is_some() {
            s.task_note = Some(conversation.to_string());
        } else if s.objective.trim() != conversation.trim() {
            s.message = Some(conversation.to_string());
        }
        s.objective = objective_of(conversation);
        s
    };
    match plan {
        Plan::Single(s) => Plan::Single(each(s)),
        Plan::Chain(steps) => Plan::Chain(steps.into_iter().map(each).collect()),
        Plan::Parallel(steps) => Plan::Parallel(steps.into_iter().map(each).collect()),
        other => other,
    }
}

#[cfg(test)]
#[path = "planner_tests.rs"]
mod tests;
