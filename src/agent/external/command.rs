//! The exact command lines a session runs with. `docs/external-agents.md` shows them.
//!
//! Claude Code, a new session (its id chosen here, recorded before the session starts):
//! `claude -p --output-format stream-json --verbose --session-id <id> <settings> [--mcp-config
//! <json> --append-system-prompt <note>] -- <prompt>`; the same session continued after a
//! crash: `claude -p --output-format stream-json --verbose --resume <id> <settings> [mcp] --
//! <continue prompt>`.
//!
//! Codex, a new thread (its id is Codex's, recorded from `thread.started`): `codex exec --json
//! <settings> [-c mcp_servers.agentvisor.command=… -c mcp_servers.agentvisor.args=[…]] --
//! <prompt>`; continued: `codex exec resume <thread id> --json <settings> [mcp] -- <continue
//! prompt>`.
//!
//! The prompt comes last, after `--`, so a prompt that begins with `-` is never read as a flag.

use super::child::SessionCommand;
use crate::actors::Pid;
use crate::agent::config::{CliSettings, ExternalRuntime, MissingEnv};
use std::path::PathBuf;

/// The prompt a session continued after a crash is given: the conversation it continues holds
/// the task.
pub const CONTINUE_PROMPT: &str =
    "Your session was interrupted. Continue the task from where you stopped, and finish it.";

/// The name the agentvisor MCP server is configured under in a session.
pub const MCP_SERVER_NAME: &str = "agentvisor";

/// Where a session's MCP server comes from: `<program> mcp --state <state_dir> --as <pid>`,
/// acting as the session's own process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpLink {
    /// The `agentvisor` program.
    pub program: PathBuf,
    /// The state directory the process lives in.
    pub state_dir: PathBuf,
}

impl McpLink {
    /// The server's command line, acting as `pid`.
    pub fn args(&self, pid: Pid) -> Vec<String> {
        vec![
            "mcp".to_owned(),
            "--state".to_owned(),
            self.state_dir.display().to_string(),
            "--as".to_owned(),
            pid.to_string(),
        ]
    }
}

/// How a session starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Start {
    /// A new session; for Claude Code, under this id.
    Fresh {
        /// The id chosen for it (Claude Code); `None` for Codex, which chooses its own.
        session_id: Option<String>,
    },
    /// The session with this id, continued.
    Resume {
        /// Its id.
        session_id: String,
    },
}

/// Everything a command line is made from.
pub struct SessionSpec<'a> {
    /// The profile's settings.
    pub settings: &'a CliSettings,
    /// Fresh or continued.
    pub start: &'a Start,
    /// The process the session runs as.
    pub pid: Pid,
    /// Its MCP server, when the runtime has a state directory.
    pub mcp: Option<&'a McpLink>,
    /// What the session is told about its tools (appended to Claude Code's system prompt,
    /// put before Codex's prompt).
    pub note: Option<&'a str>,
    /// The task.
    pub prompt: &'a str,
    /// Its working directory.
    pub cwd: PathBuf,
}

/// The command line for `spec`, environment read now.
pub fn session_command(spec: &SessionSpec<'_>) -> Result<SessionCommand, MissingEnv> {
    let settings = spec.settings;
    let prompt = match spec.start {
        Start::Resume { .. } => CONTINUE_PROMPT.to_owned(),
        Start::Fresh { .. } => spec.prompt.to_owned(),
    };
    let mut args: Vec<String> = Vec::new();
    let push = |args: &mut Vec<String>, items: &[&str]| args.extend(items.iter().map(|s| (*s).to_owned()));
    match settings.runtime() {
        ExternalRuntime::ClaudeCode => {
            push(&mut args, &["-p", "--output-format", "stream-json", "--verbose"]);
            match spec.start {
                Start::Fresh { session_id: Some(id) } => push(&mut args, &["--session-id", id]),
                Start::Fresh { session_id: None } => {}
                Start::Resume { session_id } => push(&mut args, &["--resume", session_id]),
            }
            args.extend(settings.flags());
            if let Some(mcp) = spec.mcp {
                let config = serde_json::json!({"mcpServers": {MCP_SERVER_NAME: {
                    "command": mcp.program.display().to_string(),
                    "args": mcp.args(spec.pid),
                }}});
                push(&mut args, &["--mcp-config", &config.to_string()]);
            }
            if let Some(note) = spec.note {
                push(&mut args, &["--append-system-prompt", note]);
            }
            push(&mut args, &["--", &prompt]);
        }
        ExternalRuntime::Codex => {
            push(&mut args, &["exec"]);
            if let Start::Resume { session_id } = spec.start {
                push(&mut args, &["resume", session_id]);
            }
            push(&mut args, &["--json"]);
            args.extend(settings.flags());
            if let Some(mcp) = spec.mcp {
                let command = toml_string(&mcp.program.display().to_string());
                let list: Vec<String> = mcp.args(spec.pid).iter().map(|a| toml_string(a)).collect();
                push(&mut args, &["-c", &format!("mcp_servers.{MCP_SERVER_NAME}.command={command}")]);
                push(&mut args, &["-c", &format!("mcp_servers.{MCP_SERVER_NAME}.args=[{}]", list.join(","))]);
            }
            let prompt = match (spec.note, spec.start) {
                (Some(note), Start::Fresh { .. }) => format!("{note}\n\n{prompt}"),
                _ => prompt,
            };
            push(&mut args, &["--", &prompt]);
        }
    }
    Ok(SessionCommand {
        program: settings.program().to_owned(),
        args,
        cwd: spec.cwd.clone(),
        env: settings.environment()?,
    })
}

/// A TOML basic string: JSON's string escapes are TOML's.
fn toml_string(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}
