//! The email tool agent: drafts an email from a Task Note. It is seeded: the
//! seed picks a variant (greeting, phrasing, structure, length, sign-off), so
//! that when a draft fails verification the runtime can retry with the next
//! seed. Every variant covers what the note asks for; they differ the way two
//! careful writers would, and the detailed ones run longer than a tight word
//! limit allows.
//!
//! Asked to send (`Send …`, `Email alex@… the October summary`) and given a
//! mail sink (a directory: `SWITCHBOARD_MAIL_SINK`), it sends the draft by
//! writing it there as one `.eml` file, once a person approves the action
//! `send_email` (`ctx.approve`; the agent's config lists it under
//! `requires_approval`). The file is named by the delegation's request id,
//! so a resumed send that already wrote its message does not write it again.
//! Without a sink it drafts only and says so. It writes what it sees: a
//! recipient's address stays a PII token (`<EMAIL_1>`) unless the agent has
//! `pii_access`.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde_json::json;

use super::shared::{invalid, read_task};
use crate::agent::{Agent, AgentContext, AgentOutput, Task};
use crate::protocol::{Artifact, DelegationError, ErrorCode};
use crate::verify::{TaskSpec, contains_phrase, element_present, text};

#[derive(Debug, Clone, Default)]
pub(crate) struct EmailAgent {
    /// Where sent messages go; None: it drafts only.
    sink: Option<PathBuf>,
}

/// The environment variable naming the mail sink directory.
pub(super) const MAIL_SINK_ENV: &str = "SWITCHBOARD_MAIL_SINK";

/// The approval a send waits for.
pub(super) const SEND_ACTION: &str = "send_email";

impl EmailAgent {
    #[cfg(test)]
    /// An email agent that drafts only.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    #[cfg(test)]
    /// An email agent that sends to the directory `sink` (created on the first send).
    pub(crate) fn with_sink(sink: impl Into<PathBuf>) -> Self {
        Self { sink: Some(sink.into()) }
    }

    /// The email agent with the sink `SWITCHBOARD_MAIL_SINK` names, if it is set and not empty.
    pub(crate) fn from_env() -> Self {
        Self { sink: std::env::var_os(MAIL_SINK_ENV).filter(|v| !v.is_empty()).map(PathBuf::from) }
    }
}

/// Whether the note's action is to send (`send`, `email`, `mail`, `message`), not to draft or write.
fn asks_to_send(spec: &TaskSpec) -> bool {
    matches!(spec.goal.action.to_lowercase().as_str(), "send" | "email" | "e-mail" | "mail" | "message")
}

/// `Email alex@… the October summary`: when the note names no topic, what
/// follows the address in its sentence does (`the October summary`).
fn topic_after_address(note: &str, address: &str) -> Option<String> {
    let rest = note.split_once(address)?.1;
    let clause = rest.split(['.', '\n', '!', '?', ';']).next()?.trim().trim_end_matches([',', ':']).trim();
    let clause = clause.strip_prefix("about ").unwrap_or(clause).trim();
    let words = clause.split_whitespace().count();
    (1..=12).contains(&words).then(|| clause.to_string())
}

/// Writes `message` into `sink` as `<key>.eml` unless a message with that
/// key is there already: true when it wrote it, false when it was sent
/// before. The file appears whole or not at all (written aside, then
/// linked into place without replacing anything).
pub(super) fn deliver(sink: &Path, key: &str, message: &str) -> std::io::Result<bool> {
    let safe = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !safe {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("'{key}' cannot name a message")));
    }
    std::fs::create_dir_all(sink)?;
    let path = sink.join(format!("{key}.eml"));
    if path.exists() {
        return Ok(false);
    }
    let aside = sink.join(format!(".{key}.{}.tmp", std::process::id()));
    std::fs::write(&aside, message)?;
    let linked = std::fs::hard_link(&aside, &path);
    let _ = std::fs::remove_file(&aside);
    match linked {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// The message as an RFC 5322 text: headers, a blank line, the body.
fn message(key: &str, to: &str, subject: &str, body: &str) -> String {
    let one_line = |s: &str| s.replace(['\r', '\n'], " ");
    let body = body.replace("\r\n", "\n").replace('\n', "\r\n");
    format!(
        "Message-ID: <{key}@switchboard.local>\r\nX-Switchboard-Request: {key}\r\nFrom: switchboard@localhost\r\nTo: {}\r\nSubject: {}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n",
        one_line(to),
        one_line(subject),
    )
}

/// The variants' seeds in default order: standard, detailed, concise, ...
pub(super) const SEEDS: [u64; 6] = [981234, 442211, 776655, 318207, 905113, 127349];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Length {
    Concise,
    Standard,
    Detailed,
}

#[derive(Debug, Clone, Copy)]
struct Variant {
    greeting: usize,
    phrasing: usize,
    /// Say what the email is about before the apology or thanks.
    context_first: bool,
    length: Length,
    sign_off: &'static str,
}

const VARIANTS: [Variant; 6] = [
    Variant { greeting: 0, phrasing: 0, context_first: false, length: Length::Standard, sign_off: "Warm regards," },
    Variant { greeting: 1, phrasing: 1, context_first: true, length: Length::Detailed, sign_off: "Kind regards," },
    Variant { greeting: 2, phrasing: 2, context_first: false, length: Length::Concise, sign_off: "Best regards," },
    Variant { greeting: 0, phrasing: 1, context_first: true, length: Length::Standard, sign_off: "Best regards," },
    Variant { greeting: 1, phrasing: 2, context_first: false, length: Length::Detailed, sign_off: "Warm regards," },
    Variant { greeting: 2, phrasing: 0, context_first: false, length: Length::Concise, sign_off: "Kind regards," },
];

/// With a name, without one.
const GREETINGS: [(&str, &str); 3] =
    [("Hi {name},", "Hi there,"), ("Dear {name},", "Hello,"), ("Hello {name},", "Hello,")];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Apology,
    Thanks,
    Update,
}

/// Phrases by kind, three phrasings each; `{topic}` and `{eta}` are filled in.
struct Phrases {
    opening: [&'static str; 3],
    /// What it meant for the reader; an apology says it, others only when asked.
    impact: [&'static str; 3],
    timeline: [&'static str; 3],
    detail: &'static str,
    closing: [&'static str; 3],
    subject: &'static str,
}

const APOLOGY: Phrases = Phrases {
    opening: [
        "I sincerely apologize for {topic}.",
        "Please accept my apologies for {topic}.",
        "I am sorry for {topic}.",
    ],
    impact: [
        "I know this has affected your plans, and I regret the inconvenience it has caused.",
        "I understand the impact this has had on your work and your schedule.",
        "I realize this has disrupted your planning.",
    ],
    timeline: [
        "We now have a new timeline: the work will be delivered by {eta}.",
        "Our new ETA is {eta}, and we are on track to meet it.",
        "The new timeline is delivery by {eta}.",
    ],
    detail: "We have looked closely at what went wrong and put extra checks in place so that it does not happen again.",
    closing: [
        "Thank you for your patience and understanding.",
        "Thank you for bearing with us.",
        "I appreciate your patience.",
    ],
    subject: "Apology for {topic}",
};

const THANKS: Phrases = Phrases {
    opening: ["Thank you for {topic}.", "I wanted to say thank you for {topic}.", "Many thanks for {topic}."],
    impact: [
        "It made a real difference to the team.",
        "It had a real impact on our progress.",
        "It helped us more than you know.",
    ],
    timeline: ["The next date to keep in mind is {eta}.", "Our next milestone is {eta}.", "Next up is {eta}."],
    detail: "Your help did not go unnoticed, and I wanted you to hear that directly.",
    closing: ["I look forward to working with you again.", "It is a pleasure working with you.", "Thanks again."],
    subject: "Thank you for {topic}",
};

const UPDATE: Phrases = Phrases {
    opening: [
        "I am writing with an update on {topic}.",
        "I wanted to follow up on {topic}.",
        "Here is a quick update on {topic}.",
    ],
    impact: [
        "I know this affects your plans.",
        "I understand the impact this has on your work.",
        "I realize this changes your schedule.",
    ],
    timeline: [
        "We now have a new timeline: the work will be delivered by {eta}.",
        "The new date is {eta}, and we are on track for it.",
        "We expect to wrap this up by {eta}.",
    ],
    detail: "Everything else remains on track, and I will flag any change as soon as I know of it.",
    closing: [
        "Please let me know if you have any questions.",
        "Let me know if anything is unclear.",
        "I am happy to answer any questions.",
    ],
    subject: "Update on {topic}",
};

/// Sentences that supply a required element the draft does not yet have.
const FILL_INS: &[(&[&str], &str)] = &[
    (&["apolog", "sorry", "regret"], "I apologize for the inconvenience."),
    (&["impact", "inconvenien", "disrupt"], "I understand the impact this has on you."),
    (&["timeline", "eta", "date", "deadline", "schedule"], "I will share a new timeline shortly."),
    (&["thank", "gratitude", "appreciat"], "Thank you for your time."),
    (&["next step", "follow"], "As a next step, I will follow up with the details."),
    (&["call to action", "request", "ask"], "Please let me know if you have any questions."),
    (&["reassur", "prevent", "commit"], "We are taking steps to prevent this from happening again."),
];

const OFFER: &str = "I am happy to walk you through the details if that would help.";
const UPDATES: &str = "I will keep you updated on progress until then, and I am happy to walk you through the details if that would help.";

/// `missed project deadline` → `the missed project deadline`.
fn with_article(topic: &str) -> String {
    let t = topic.trim().trim_end_matches(['.', '!']);
    let first = t.split_whitespace().next().unwrap_or("").to_lowercase();
    let determiners = ["the", "a", "an", "my", "our", "your", "this", "that", "these", "those", "his", "her", "their"];
    if determiners.contains(&first.as_str()) { t.to_string() } else { format!("the {t}") }
}

fn kind_of(spec: &TaskSpec) -> Kind {
    let about =
        format!("{} {} {}", spec.goal.object, spec.topic.as_deref().unwrap_or(""), spec.constraints.required.join(" "))
            .to_lowercase();
    if ["apolog", "sorry"].iter().any(|w| about.contains(w)) {
        Kind::Apology
    } else if ["thank", "gratitude", "appreciation"].iter().any(|w| about.contains(w)) {
        Kind::Thanks
    } else {
        Kind::Update
    }
}

fn variant_index(seed: u64) -> usize {
    crate::team::seeds::variant(&SEEDS, Some(seed))
}

struct Draft {
    subject: String,
    body: String,
}

fn compose(spec: &TaskSpec, seed: u64) -> Draft {
    let v = VARIANTS[variant_index(seed)];
    let kind = kind_of(spec);
    let p = match kind {
        Kind::Apology => &APOLOGY,
        Kind::Thanks => &THANKS,
        Kind::Update => &UPDATE,
    };
    let c = &spec.constraints;
    let tone = c.tone.as_deref().unwrap_or("");
    // A formal tone wants `Dear`, a casual one `Hi`, whatever the variant says.
    let greeting = if tone.contains("formal") {
        1
    } else if tone.contains("casual") {
        0
    } else {
        v.greeting
    };
    let name = spec.recipient.as_ref().and_then(|r| r.name.clone());
    let greeting = match &name {
        Some(name) => GREETINGS[greeting].0.replace("{name}", name),
        None => GREETINGS[greeting].1.to_string(),
    };
    let topic = spec.topic.as_deref().map_or_else(|| "this matter".to_string(), with_article);
    let eta = spec.context.eta.clone();
    let fill = |s: &str, topic: &str| s.replace("{topic}", topic).replace("{eta}", eta.as_deref().unwrap_or(""));
    let required = |words: &[&str]| c.required.iter().any(|r| words.iter().any(|w| r.to_lowercase().contains(w)));

    let mut first = Vec::new();
    if v.context_first && spec.topic.is_some() {
        first.push(format!("I am writing about {topic}."));
        first.push(fill(p.opening[v.phrasing], "this"));
    } else {
        first.push(fill(p.opening[v.phrasing], &topic));
    }
    let says_impact = kind == Kind::Apology && v.length != Length::Concise;
    if says_impact || required(&["impact", "inconvenien", "disrupt"]) {
        first.push(p.impact[v.phrasing].to_string());
    }
    if v.length == Length::Detailed {
        first.push(p.detail.to_string());
    }

    let mut second = Vec::new();
    if eta.is_some() {
        second.push(fill(p.timeline[v.phrasing], &topic));
    }
    if v.length != Length::Concise && kind != Kind::Thanks {
        second.push(if eta.is_some() { UPDATES } else { OFFER }.to_string());
    }
    let so_far = |first: &[String], second: &[String]| format!("{} {}", first.join(" "), second.join(" "));
    for phrase in &c.must_mention {
        if !contains_phrase(&so_far(&first, &second), phrase) {
            // Notes drop the article (`Mention the Friday demo` → `Friday demo`); put it back.
            let possessive = phrase.contains("'s") || phrase.contains("’s");
            let phrase = if possessive || phrase.starts_with(|c: char| c.is_ascii_digit()) {
                phrase.clone()
            } else {
                with_article(phrase)
            };
            second.push(format!("I also wanted to mention {phrase}."));
        }
    }
    for element in &c.required {
        if element_present(&so_far(&first, &second), element) {
            continue;
        }
        let lower = element.to_lowercase();
        let sentence = FILL_INS
            .iter()
            .find(|(words, _)| words.iter().any(|w| lower.contains(w)))
            .map_or_else(|| format!("I also wanted to cover {element}."), |(_, s)| s.to_string());
        second.push(sentence);
    }

    let closing = p.closing[v.phrasing].to_string();
    let paragraphs = [greeting, first.join(" "), second.join(" "), closing, v.sign_off.to_string()];
    let body = paragraphs.into_iter().filter(|p| !p.is_empty()).collect::<Vec<_>>().join("\n\n");
    let subject = match (&c.subject_hint, &spec.topic) {
        (Some(hint), _) => hint.clone(),
        (None, Some(_)) => text::capitalize(&fill(p.subject, &topic)),
        (None, None) => {
            text::capitalize(p.subject.trim_end_matches(" {topic}").trim_end_matches(" for").trim_end_matches(" on"))
        }
    };
    Draft { subject, body }
}

#[async_trait]
impl Agent for EmailAgent {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        ctx.use_tool("draft_email")?;
        let (mut spec, _) = read_task(task)?;
        let to = spec.address().map(str::to_string).ok_or_else(|| {
            invalid("no recipient email address: name one, e.g. 'Draft apology email to alex@company.com about …'")
        })?;
        if spec.topic.is_none() && asks_to_send(&spec) {
            let note = task.task_note.as_deref().filter(|n| !n.trim().is_empty()).unwrap_or(task.text());
            spec.topic = topic_after_address(note, &to);
        }
        let seed = task.seed.unwrap_or(SEEDS[0]);
        let draft = compose(&spec, seed);
        let words = text::word_count(&draft.body);
        let tone = spec.constraints.tone.clone().unwrap_or_else(|| "professional".into());
        let artifact = json!({
            "subject": draft.subject,
            "body": draft.body,
            "to": to,
            "tone": tone,
            "word_count": words,
            "seed": seed,
        });
        let object = if spec.goal.object.is_empty() { "email" } else { spec.goal.object.as_str() };
        let drafted = format!("Drafted {object} to {to} ({words} words, seed {seed})");
        let out = |summary: String| {
            AgentOutput::new(summary, draft.body.clone())
                .with_artifact(Artifact::json("email_draft", artifact.clone()))
                .with_confidence(85)
        };
        if !asks_to_send(&spec) {
            return Ok(out(drafted));
        }
        let (Some(sink), Ok(delegator)) = (&self.sink, ctx.delegator()) else {
            return Ok(out(format!("{drafted}; not sent: no mail sink is configured ({MAIL_SINK_ENV})")));
        };
        // the key of the send: a resumed delegation runs again under its old id
        let key = delegator.request_id().to_string();
        ctx.approve(SEND_ACTION, &format!("send the email \"{}\" to {to}", draft.subject)).await?;
        let text = message(&key, &to, &draft.subject, &draft.body);
        let wrote = deliver(sink, &key, &text).map_err(|e| {
            DelegationError::new(
                ErrorCode::AgentFailed,
                format!("cannot write to the mail sink {}: {e}", sink.display()),
            )
        })?;
        let sent = json!({"to": to, "subject": draft.subject, "message_id": key, "sink": sink.display().to_string()});
        let how = if wrote { "Sent" } else { "Already sent" };
        Ok(out(format!("{how} {object} to {to} ({words} words, message {key})"))
            .with_artifact(Artifact::json("email_sent", sent)))
    }

    fn seeds(&self) -> &[u64] {
        &SEEDS
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::super::testing::*;
    use super::*;
    use crate::agent::AgentContext;
    use crate::protocol::ErrorCode;

    async fn draft(note: &str, seed: Option<u64>) -> AgentOutput {
        let mut task = noted(note);
        task.seed = seed;
        run(&EmailAgent::new(), "draft_email", &task).await.unwrap_or_else(|e| panic!("{e}"))
    }

    #[tokio::test]
    async fn email_first_seed_passes_seed_001_checks() {
        let out = draft(EMAIL_NOTE, None).await;
        let v = verdict(EMAIL_NOTE, &out);
        assert!(v.passed, "{v:#?}\n{}", out.result);
        assert_eq!(v.score, 1.0);
        let names: Vec<&str> = v.checks.iter().map(|c| c.name.as_str()).collect();
        for name in ["max_120_words", "contains_oct_22", "tone_warm_professional", "required_apologize"] {
            assert!(names.contains(&name), "{names:?}");
        }
        let a = artifact(&out, "email_draft");
        assert_eq!(a["to"], "alex.chan@company.com");
        assert_eq!(a["subject"], "Apology for delay");
        assert_eq!(a["body"], out.result.as_str());
        assert_eq!(a["word_count"], text::word_count(&out.result));
        assert_eq!(a["seed"], SEEDS[0]);
        assert!(out.result.starts_with("Hi Alex,"), "{}", out.result);
    }

    #[tokio::test]
    async fn every_seed_is_an_honest_attempt_at_the_seed_001_note() {
        for seed in SEEDS {
            let out = draft(EMAIL_NOTE, Some(seed)).await;
            let v = verdict(EMAIL_NOTE, &out);
            let failed: Vec<&str> = v.failed().into_iter().filter(|n| !n.starts_with("max_")).collect();
            assert!(failed.is_empty(), "seed {seed} failed {failed:?}:\n{}", out.result);
        }
    }

    #[tokio::test]
    async fn different_seeds_give_different_drafts_and_each_is_deterministic() {
        let mut bodies = BTreeSet::new();
        for seed in SEEDS {
            let a = draft(EMAIL_NOTE, Some(seed)).await;
            let b = draft(EMAIL_NOTE, Some(seed)).await;
            assert_eq!(a, b, "seed {seed} is not deterministic");
            bodies.insert(a.result);
        }
        assert_eq!(bodies.len(), SEEDS.len());
        assert_eq!(EmailAgent::new().seeds(), SEEDS);
    }

    #[tokio::test]
    async fn tight_limit_fails_some_seeds_and_passes_others() {
        let note = EMAIL_NOTE.replace("Length: max 120 words.", "Max 60 words.");
        let mut outcomes = Vec::new();
        for seed in SEEDS {
            let v = verdict(&note, &draft(&note, Some(seed)).await);
            outcomes.push((seed, v.passed, v.failed().into_iter().map(String::from).collect::<Vec<_>>()));
        }
        // The default order fails twice on length, then the concise variant fits.
        assert!(!outcomes[0].1 && outcomes[0].2 == ["max_60_words"], "{outcomes:?}");
        assert!(!outcomes[1].1, "{outcomes:?}");
        assert!(outcomes[2].1, "{outcomes:?}");
    }

    #[tokio::test]
    async fn a_redacted_address_is_kept_and_greeted_by_the_token_of_its_name() {
        let note = EMAIL_NOTE.replace("alex.chan@company.com", "<EMAIL_1>");
        let out = draft(&note, None).await;
        assert_eq!(artifact(&out, "email_draft")["to"], "<EMAIL_1>");
        // the user's vault turns it into the name (pipeline::pii's tests)
        assert!(out.result.starts_with("Hi <EMAIL_1:name>,"), "{}", out.result);
        assert!(verdict(&note, &out).passed);
        let named = "Draft apology email to <EMAIL_1> about the outage. Recipient name: Sam. Max 120 words.";
        assert!(draft(named, None).await.result.starts_with("Hi Sam,"));
        let named = "Draft apology email to Alex Chan <EMAIL_1> about the outage. Max 120 words.";
        assert!(draft(named, None).await.result.starts_with("Hi Alex Chan,"));
    }

    #[tokio::test]
    async fn other_kinds_of_email_cover_their_mentions_and_requirements() {
        let note = "Write a thank-you email to sam@corp.io for the quick code review. Mention the Friday demo. Required: next steps. Tone: friendly. Max 90 words.";
        let out = draft(note, None).await;
        let v = verdict(note, &out);
        assert!(v.passed, "{v:#?}\n{}", out.result);
        assert!(out.result.starts_with("Hi Sam,"));
        assert_eq!(artifact(&out, "email_draft")["subject"], "Thank you for the quick code review");
        let note = "Send a status email to <EMAIL_2> about the Q3 migration. New deadline: Nov 3. Tone: formal. Max 100 words.";
        let out = draft(note, Some(SEEDS[2])).await;
        assert!(out.result.starts_with("Dear <EMAIL_2:name>,") && out.result.contains("Nov 3"), "{}", out.result);
        assert!(verdict(note, &out).passed, "{}", out.result);
    }

    #[tokio::test]
    async fn bad_or_addressless_notes_are_invalid_requests() {
        let err = run(&EmailAgent::new(), "draft_email", &noted("Email Alex about that thing we talked about earlier"))
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidRequest);
        assert!(err.message.contains("no recipient email address"), "{}", err.message);
        let err = run(&EmailAgent::new(), "draft_email", &noted("Format weekly progress report. Max 50 words."))
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidRequest);
    }

    #[test]
    fn a_message_is_delivered_once_per_key_and_whole() {
        let dir = tempfile::tempdir().unwrap();
        let sink = dir.path().join("mail-sink");
        let text = message("k-1", "<EMAIL_1>", "Hello\nthere", "Hi,\n\nA line.");
        assert!(text.contains("To: <EMAIL_1>\r\nSubject: Hello there\r\n"), "{text}");
        assert!(text.ends_with("\r\n\r\nHi,\r\n\r\nA line.\r\n"), "{text}");
        assert!(deliver(&sink, "k-1", &text).unwrap());
        assert!(!deliver(&sink, "k-1", "another text").unwrap(), "a second send with the key writes nothing");
        assert!(deliver(&sink, "k-2", "second").unwrap());
        let mut names: Vec<String> =
            std::fs::read_dir(&sink).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        assert_eq!(names, ["k-1.eml", "k-2.eml"], "no files left aside");
        assert_eq!(std::fs::read_to_string(sink.join("k-1.eml")).unwrap(), text);
        for bad in ["", "../escape", "a/b", "x.eml"] {
            let e = deliver(&sink, bad, "x").unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{bad}");
        }
    }

    #[tokio::test]
    async fn a_send_without_a_sink_or_a_runtime_only_drafts_and_says_so() {
        let note = "Send a status email to sam@corp.io about the Q3 migration. Max 100 words.";
        let spec = crate::verify::TaskSpec::parse(note).unwrap();
        assert!(asks_to_send(&spec));
        assert!(!asks_to_send(&crate::verify::TaskSpec::parse(EMAIL_NOTE).unwrap()));
        let out = draft(note, None).await;
        assert!(out.summary.contains("not sent: no mail sink"), "{}", out.summary);
        // a sink but no runtime to ask for approval (or to key the send): nothing is written
        let dir = tempfile::tempdir().unwrap();
        let agent = EmailAgent::with_sink(dir.path().join("sink"));
        let out = run(&agent, "draft_email", &noted(note)).await.unwrap();
        assert!(out.summary.contains("not sent"), "{}", out.summary);
        assert!(!dir.path().join("sink").exists());
        assert!(artifact(&out, "email_draft")["to"] == "sam@corp.io");
    }

    #[tokio::test]
    async fn a_send_without_a_topic_takes_it_from_after_the_address() {
        let out = draft("Email <EMAIL_1> the October summary", None).await;
        assert_eq!(artifact(&out, "email_draft")["subject"], "Update on the October summary");
        assert!(out.result.contains("the October summary"), "{}", out.result);
        assert_eq!(
            topic_after_address("Email a@b.io about the plan. Max 50 words.", "a@b.io").as_deref(),
            Some("the plan")
        );
        assert_eq!(topic_after_address("Email a@b.io", "a@b.io"), None);
        assert_eq!(topic_after_address("Email a@b.io the plan", "c@d.io"), None);
    }

    #[tokio::test]
    async fn plain_objective_works_without_a_task_note() {
        let task = Task::new(
            "Draft apology email to alex.chan@company.com about the delay. Mention new ETA Oct 22. Max 120 words.",
            "",
        );
        let out = EmailAgent::new().run(&AgentContext::detached(["draft_email"]), &task).await.unwrap();
        assert!(out.result.contains("Oct 22"));
    }
}
