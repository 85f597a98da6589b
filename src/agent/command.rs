//! The `command` backend: agents in any language. The subprocess gets the
//! request envelope as JSON on stdin and writes a response as JSON on stdout
//! (a `DelegationResponse`, or at least `{"summary", "result"}`). It is
//! killed when the delegation's deadline passes or its caller goes away.

use std::collections::BTreeMap;
use std::process::Stdio;

use async_trait::async_trait;
use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{Agent, AgentContext, AgentOutput, Task};
use crate::protocol::{
    AgentSlug, Artifact, DelegationError, DelegationRequest, ErrorCode, NewFact, Status, TokenUsage, UsedSource,
};

/// Largest reply read from a command.
const MAX_REPLY: u64 = 8 * 1024 * 1024;

/// An agent run as a subprocess: the request as JSON on stdin, the response as JSON on stdout.
pub struct CommandAgent {
    command: String,
    args: Vec<String>,
    env: BTreeMap<String, String>,
}

impl std::fmt::Debug for CommandAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandAgent").finish_non_exhaustive()
    }
}

impl CommandAgent {
    /// A backend running `command` with `args` and extra `env`; an empty command is refused.
    pub fn new(command: &str, args: &[String], env: &BTreeMap<String, String>) -> Result<Self, DelegationError> {
        if command.trim().is_empty() {
            return Err(DelegationError::invalid("a command backend needs a command"));
        }
        Ok(Self { command: command.to_string(), args: args.to_vec(), env: env.clone() })
    }
}

/// What a command may answer: a full response or just its essentials.
#[derive(Deserialize)]
struct Reply {
    #[serde(default)]
    status: Option<Status>,
    #[serde(default)]
    summary: String,
    #[serde(default)]
    result: String,
    #[serde(default)]
    artifacts: Vec<Artifact>,
    #[serde(default)]
    new_facts: Vec<NewFact>,
    #[serde(default)]
    used_sources: Vec<UsedSource>,
    #[serde(default)]
    token_usage: Option<TokenUsage>,
    #[serde(default)]
    confidence: Option<u8>,
    #[serde(default)]
    requires_followup: bool,
    #[serde(default)]
    error: Option<ReplyError>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ReplyError {
    Coded(DelegationError),
    Text(String),
}

fn failed(message: String) -> DelegationError {
    DelegationError::new(ErrorCode::AgentFailed, message)
}

fn snippet(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let t = text.trim();
    if t.chars().count() > 200 { format!("{}…", t.chars().take(200).collect::<String>()) } else { t.to_string() }
}

/// Parses a command's stdout into an output, or says clearly what is wrong.
pub fn parse_reply(command: &str, stdout: &[u8]) -> Result<AgentOutput, DelegationError> {
    let reply: Reply = serde_json::from_slice(stdout).map_err(|e| {
        failed(format!(
            "agent command '{command}' did not write a JSON response on stdout ({e}); it wrote: {:?}",
            snippet(stdout)
        ))
    })?;
    if let Some(e) = reply.error {
        return Err(match e {
            ReplyError::Coded(e) => e,
            ReplyError::Text(t) => failed(t),
        });
    }
    if reply.status == Some(Status::Failed) {
        return Err(failed(format!("agent command '{command}' reported status failed: {}", reply.summary)));
    }
    if reply.result.is_empty() && reply.summary.is_empty() && reply.artifacts.is_empty() {
        return Err(failed(format!(
            "agent command '{command}' answered with neither a summary, a result nor artifacts"
        )));
    }
    Ok(AgentOutput {
        summary: reply.summary,
        result: reply.result,
        artifacts: reply.artifacts,
        new_facts: reply.new_facts,
        used_sources: reply.used_sources,
        token_usage: reply.token_usage,
        confidence: reply.confidence.map(|c| c.min(100)),
        requires_followup: reply.requires_followup,
        status: reply.status,
    })
}

/// Kills the command's process group unless it has finished: dropped when
/// the delegation ends, in time or not.
struct ProcessGroup(Option<u32>);

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(pid) = self.0.and_then(|p| i32::try_from(p).ok()) {
            // ESRCH (already gone) is the usual, happy case
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

#[async_trait]
impl Agent for CommandAgent {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        let envelope = match ctx.delegator() {
            Ok(d) => {
                let lineage = d.lineage();
                lineage.forward(lineage.agent.clone(), task)
            }
            Err(_) => {
                // run on its own (tests): a minimal envelope
                let me = task.agent.clone().unwrap_or_else(|| AgentSlug::parse("command").expect("valid slug"));
                let user =
                    task.user_id.clone().unwrap_or_else(|| crate::protocol::UserId::parse("local").expect("valid"));
                DelegationRequest::new(me.clone(), me, user, task.objective.clone(), task.input.clone())
            }
        };
        let stdin_json =
            serde_json::to_vec(&envelope).map_err(|e| failed(format!("cannot encode the request: {e}")))?;
        let mut command = tokio::process::Command::new(&self.command);
        command
            .args(&self.args)
            .envs(&self.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // the deadline drops this future: the process goes with it
            .kill_on_drop(true);
        // its own process group, so that what it starts goes too
        #[cfg(unix)]
        command.process_group(0);
        // and it dies with the process that started it: a server or worker
        // killed with SIGKILL leaves no command behind to finish its work
        // after another replica took the delegation over and ran it again
        // SAFETY: the closure runs in the child between fork and exec and only
        // calls prctl(2), which is async-signal-safe; it touches no memory of the parent
        #[cfg(target_os = "linux")]
        #[allow(unsafe_code)]
        unsafe {
            command.pre_exec(|| {
                nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL).map_err(std::io::Error::from)
            });
        }
        let mut child = command.spawn().map_err(|e| {
            DelegationError::new(
                ErrorCode::AgentUnavailable,
                format!("cannot start agent command '{}': {e}", self.command),
            )
        })?;
        let _group = ProcessGroup(child.id());
        let mut stdin = child.stdin.take().ok_or_else(|| failed("no stdin pipe".into()))?;
        let stdout = child.stdout.take().ok_or_else(|| failed("no stdout pipe".into()))?;
        let stderr = child.stderr.take().ok_or_else(|| failed("no stderr pipe".into()))?;
        let write = async move {
            // a command that does not read its input is allowed to ignore it
            let _ = stdin.write_all(&stdin_json).await;
            let _ = stdin.shutdown().await;
        };
        let mut out = Vec::new();
        let mut err = Vec::new();
        let (mut stdout, mut stderr) = (stdout.take(MAX_REPLY + 1), stderr.take(64 * 1024));
        let ((), r_out, _) = tokio::join!(write, stdout.read_to_end(&mut out), stderr.read_to_end(&mut err));
        r_out.map_err(|e| failed(format!("cannot read agent command '{}' output: {e}", self.command)))?;
        let status = child.wait().await.map_err(|e| failed(format!("agent command '{}': {e}", self.command)))?;
        if out.len() as u64 > MAX_REPLY {
            return Err(failed(format!("agent command '{}' wrote more than {MAX_REPLY} bytes", self.command)));
        }
        if !status.success() {
            return Err(failed(format!("agent command '{}' exited with {status}: {}", self.command, snippet(&err))));
        }
        parse_reply(&self.command, &out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> CommandAgent {
        CommandAgent::new("sh", &["-c".to_string(), script.to_string()], &BTreeMap::new()).unwrap()
    }

    #[tokio::test]
    async fn a_command_reads_the_request_and_answers_in_json() {
        // echo back the objective the envelope carried
        let agent = sh(
            r#"python3 -c 'import json,sys; r=json.load(sys.stdin); print(json.dumps({"summary":"ok","result":r["objective"].upper()}))'"#,
        );
        let out = agent.run(&AgentContext::detached(Vec::<String>::new()), &Task::new("shout this", "")).await.unwrap();
        assert_eq!(out.result, "SHOUT THIS");
    }

    #[tokio::test]
    async fn a_non_json_reply_is_agent_failed_with_what_it_wrote() {
        let err = sh("echo hello there")
            .run(&AgentContext::detached(Vec::<String>::new()), &Task::new("x", ""))
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::AgentFailed);
        assert!(
            err.message.contains("did not write a JSON response") && err.message.contains("hello there"),
            "{}",
            err.message
        );
    }

    #[tokio::test]
    async fn a_failing_command_says_how_it_failed() {
        let err = sh("echo broken >&2; exit 3")
            .run(&AgentContext::detached(Vec::<String>::new()), &Task::new("x", ""))
            .await
            .unwrap_err();
        assert!(err.message.contains("exit status: 3") && err.message.contains("broken"), "{}", err.message);
        let err = CommandAgent::new("/nonexistent/agent", &[], &BTreeMap::new())
            .unwrap()
            .run(&AgentContext::detached(Vec::<String>::new()), &Task::new("x", ""))
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::AgentUnavailable);
    }

    #[test]
    fn replies_may_carry_coded_errors() {
        let err = parse_reply("c", br#"{"error":{"code":"TOOL_NOT_ALLOWED","message":"no shell"}}"#).unwrap_err();
        assert_eq!(err.code, ErrorCode::ToolNotAllowed);
        assert_eq!(parse_reply("c", br#"{"error":"plain"}"#).unwrap_err().message, "plain");
        assert!(parse_reply("c", b"{}").is_err());
    }
}
