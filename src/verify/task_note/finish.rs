//! Settling a note once every clause is read: its kind, a tone implied by the
//! style asked for, an address found anywhere, and JSON output for keyed data.

use std::sync::LazyLock;

use regex::Regex;

use super::goal::FORMAT_VERBS;
use super::spec::{Recipient, TaskKind, TaskSpec};
use crate::verify::text::{self, re};

static TONE_WORD: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(professional|formal|friendly|casual|warm|neutral|concise)\b"));
static REPORT_OBJECT: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\b(?:report|summary|status update)\b"));
static DATA_WORDS: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\b(?:csv|json|data|records|rows|spreadsheet)\b"));

/// Settles the kind and the derived fields once every clause is read.
pub(super) fn finish(spec: &mut TaskSpec, instructions: &str) {
    let goal_text = format!("{} {}", spec.goal.object, spec.goal.target.as_deref().unwrap_or(""));
    if spec.kind == TaskKind::Other {
        spec.kind = if !spec.context.event.is_empty() {
            TaskKind::Calendar
        } else if !spec.context.counts.is_empty() || REPORT_OBJECT.is_match(&spec.goal.object) {
            TaskKind::Report
        } else if !spec.context.columns.is_empty() || DATA_WORDS.is_match(&goal_text) {
            TaskKind::Data
        } else if FORMAT_VERBS.contains(&spec.goal.action.as_str()) || spec.constraints.style_target.is_some() {
            TaskKind::Format
        } else {
            TaskKind::Other
        };
    }
    if spec.constraints.tone.is_none() {
        let object = (spec.kind == TaskKind::Format).then_some(spec.goal.object.as_str());
        let style = [spec.goal.target.as_deref(), spec.constraints.style_target.as_deref(), object];
        if let Some(m) = style.into_iter().flatten().find_map(|t| TONE_WORD.find(t)) {
            spec.constraints.tone = Some(m.as_str().to_ascii_lowercase());
        }
    }
    if spec.kind == TaskKind::Email
        && spec.address().is_none()
        && let Some(address) = text::emails_in(instructions).into_iter().next()
    {
        let recipient = spec.recipient.get_or_insert_with(Recipient::default);
        if recipient.name.is_none() {
            recipient.name = text::name_from_email(&address);
        }
        recipient.address = Some(address);
    }
    if spec.kind == TaskKind::Data && spec.constraints.key_case.is_some() {
        spec.verification.json_array = true;
    }
}
