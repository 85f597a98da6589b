//! The deterministic tool agents: email, format, data, calendar and
//! report. Each reads a Task Note (the request's `task_note`, else the task's
//! text), uses its one tool, and answers with a result and JSON artifacts that
//! the verifier can check. A note they cannot use is `INVALID_REQUEST` with
//! what is missing.

mod calendar;
mod data;
mod email;
mod format;
mod report;
#[cfg(test)]
mod seeded_tests;
mod shared;

use std::sync::Arc;

pub(crate) use calendar::CalendarAgent;
pub(crate) use data::DataAgent;
pub(crate) use email::EmailAgent;
pub(crate) use format::FormatAgent;
pub(crate) use report::ReportAgent;

use crate::agent::Agent;

/// The tool agent called `name`, if there is one.
pub(crate) fn lookup(name: &str) -> Option<Arc<dyn Agent>> {
    match name {
        "email" => Some(Arc::new(EmailAgent::from_env())),
        "format" => Some(Arc::new(FormatAgent)),
        "data" => Some(Arc::new(DataAgent)),
        "calendar" => Some(Arc::new(CalendarAgent)),
        "report" => Some(Arc::new(ReportAgent)),
        _ => None,
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use crate::agent::{Agent, AgentContext, AgentOutput, Task};
    use crate::protocol::{DelegationError, Verdict};
    use crate::verify;

    pub(crate) const EMAIL_NOTE: &str = "Draft apology email to alex.chan@company.com about missed project deadline.\nMention new ETA of Oct 22.\nTone: warm-professional.\nLength: max 120 words.\nRequired: apologize, acknowledge impact, provide new timeline.\nSubject hint: \"Apology for delay\"";
    pub(crate) const FORMAT_NOTE: &str = "Format this text to professional business style:\n\"hey can u send me the report thx\"\n\nTarget: formal email greeting.\nPreserve intent, improve clarity.\nNo abbreviations, proper capitalization.";
    pub(crate) const DATA_NOTE: &str = "Transform CSV data to JSON format.\nInput columns: name, email, role.\nOutput structure: array of objects with camelCase keys.\nValidate: all emails match pattern, no duplicates.";
    pub(crate) const CALENDAR_NOTE: &str = "Block calendar for 2 hours from now.\nEvent title: 'Deep Work Session'\nDescription: 'Focus time - no interruptions'\nStatus: Busy\nReminders: off";
    pub(crate) const REPORT_NOTE: &str = "Format weekly progress report.\nInput: 12 tasks completed, 3 in progress, 2 blocked.\nOutput: Professional summary, bullet points, metrics.\nInclude completion rate calculation.\nMax 300 words.";

    pub(crate) fn noted(note: &str) -> Task {
        let mut task = Task::new("", "");
        task.task_note = Some(note.to_string());
        task
    }

    pub(crate) async fn run(agent: &dyn Agent, tool: &str, task: &Task) -> Result<AgentOutput, DelegationError> {
        agent.run(&AgentContext::detached([tool]), task).await
    }

    /// What the runtime does: checks from the note, then the verdict on the output.
    pub(crate) fn verdict(note: &str, out: &AgentOutput) -> Verdict {
        let checks = verify::checks_for(Some(note), &[]).unwrap_or_else(|e| panic!("{e}"));
        verify::verify(&out.result, &out.artifacts, &checks)
    }

    pub(crate) fn artifact<'a>(out: &'a AgentOutput, label: &str) -> &'a serde_json::Value {
        out.artifacts
            .iter()
            .find(|a| a.label.as_deref() == Some(label))
            .map(|a| &a.value)
            .unwrap_or_else(|| panic!("no artifact {label}"))
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;
    use crate::agent::AgentContext;
    use crate::protocol::ErrorCode;

    #[test]
    fn lookup_knows_the_five_tool_agents() {
        for slug in ["email", "format", "data", "calendar", "report"] {
            assert!(lookup(slug).is_some(), "{slug}");
        }
        assert!(lookup("nope").is_none());
        assert_eq!(lookup("email").map(|a| a.seeds().len()), Some(6));
    }

    #[tokio::test]
    async fn every_agent_without_its_tool_gets_tool_not_allowed() {
        for (slug, note) in [
            ("email", EMAIL_NOTE),
            ("format", FORMAT_NOTE),
            ("data", DATA_NOTE),
            ("calendar", CALENDAR_NOTE),
            ("report", REPORT_NOTE),
        ] {
            let agent = lookup(slug).unwrap();
            let err = agent.run(&AgentContext::detached(["some_other_tool"]), &noted(note)).await.unwrap_err();
            assert_eq!(err.code, ErrorCode::ToolNotAllowed, "{slug}");
        }
    }

    #[tokio::test]
    async fn every_agent_refuses_the_bad_note_as_invalid_request() {
        let tools = ["draft_email", "format_text", "transform_data", "calendar_block", "progress_report"];
        for (slug, tool) in ["email", "format", "data", "calendar", "report"].into_iter().zip(tools) {
            let agent = lookup(slug).unwrap();
            let err = run(agent.as_ref(), tool, &noted("Email Alex about that thing we talked about earlier"))
                .await
                .unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidRequest, "{slug}");
            assert!(err.message.contains("that thing"), "{slug}: {}", err.message);
        }
    }
}

#[cfg(test)]
mod robustness {
    use proptest::prelude::*;

    use super::testing::*;
    use super::*;
    use crate::protocol::ErrorCode;

    /// Pieces of notes, well-formed and not, including the edges each agent reads.
    const FRAGMENTS: &[&str] = &[
        EMAIL_NOTE,
        FORMAT_NOTE,
        DATA_NOTE,
        CALENDAR_NOTE,
        REPORT_NOTE,
        "Draft apology email to é@x.com about ü",
        "Draft email to <EMAIL_7> about aé",
        "Max 0 words",
        "Length: 90-10 words",
        "Block calendar for 99999 hours from now",
        "Block calendar for 1 hour starting Feb 30",
        "End: 1am",
        "Start: 2025-02-29 25:61",
        "Duration: 0.1 minutes",
        "Reminders: on",
        "Input: 18446744073709551615 completed, 18446744073709551615 blocked",
        "Input: 0 completed",
        "Title: ''",
        "Required: ,,, and",
        "Tone: ",
        "Mention \"\"",
        "\"",
        "'",
        "```",
        "```csv\nname,email\n\"x",
        "Data:",
        "a,b\n1,2",
        "name,email,role\n,,\n\"\",\"\",\"\"",
        "Fórmat thís tëxt: \"hèy ü thx\"",
        "Transform CSV data to JSON format. Output: array with kebab-case keys.",
        "Email Alex about that thing we talked about earlier",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn agents_never_panic_and_fail_only_with_codes(
            parts in prop::collection::vec(prop::sample::select(FRAGMENTS), 0..5),
            noise in "\\PC{0,30}",
        ) {
            let note = format!("{}\n{noise}", parts.join("\n"));
            let tools = ["draft_email", "format_text", "transform_data", "calendar_block", "progress_report"];
            for (slug, tool) in ["email", "format", "data", "calendar", "report"].into_iter().zip(tools) {
                let agent = lookup(slug).unwrap();
                let mut task = noted(&note);
                task.input = noise.clone();
                task.seed = Some(noise.len() as u64);
                match futures::executor::block_on(run(agent.as_ref(), tool, &task)) {
                    Ok(out) => prop_assert!(!out.result.is_empty(), "{slug} returned nothing for {note:?}"),
                    Err(e) => prop_assert!(
                        matches!(e.code, ErrorCode::InvalidRequest | ErrorCode::AgentFailed),
                        "{slug}: {e}"
                    ),
                }
            }
        }
    }
}
