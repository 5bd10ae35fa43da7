//! External agent profiles: a profile whose agents are Claude Code or Codex sessions run
//! headlessly by the runtime, instead of a turn loop over a brain. The profile's `cli` table
//! says how the command-line tool is started; `docs/external-agents.md` has every field and
//! the exact command lines.

use super::budget::AgentBudget;
use super::capability::CapabilitySet;
use super::ids::{ProfileId, Target};
use crate::actors::kernel::restart::{RestartPolicy, Supervision};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// What the agents of a profile run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProfileRuntime {
    /// `native` (default): agentvisor's own turn loop over the profile's brain.
    #[default]
    Native,
    /// `claude-code`: one headless Claude Code session (`claude -p`).
    ClaudeCode,
    /// `codex`: one headless Codex session (`codex exec`).
    Codex,
}

impl ProfileRuntime {
    /// The runtime as written.
    pub fn as_str(self) -> &'static str {
        match self {
            ProfileRuntime::Native => "native",
            ProfileRuntime::ClaudeCode => "claude-code",
            ProfileRuntime::Codex => "codex",
        }
    }

    /// The external runtime this is, if it is one.
    pub fn external(self) -> Option<ExternalRuntime> {
        match self {
            ProfileRuntime::Native => None,
            ProfileRuntime::ClaudeCode => Some(ExternalRuntime::ClaudeCode),
            ProfileRuntime::Codex => Some(ExternalRuntime::Codex),
        }
    }
}

/// A command-line agent runtime agentvisor runs as a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExternalRuntime {
    /// Claude Code.
    ClaudeCode,
    /// Codex.
    Codex,
}

impl ExternalRuntime {
    /// The runtime as written (`claude-code`, `codex`).
    pub fn as_str(self) -> &'static str {
        match self {
            ExternalRuntime::ClaudeCode => "claude-code",
            ExternalRuntime::Codex => "codex",
        }
    }

    /// The program run when the profile names none.
    pub fn default_program(self) -> &'static str {
        match self {
            ExternalRuntime::ClaudeCode => "claude",
            ExternalRuntime::Codex => "codex",
        }
    }

    /// The runtime's product name, for messages.
    pub fn product(self) -> &'static str {
        match self {
            ExternalRuntime::ClaudeCode => "Claude Code",
            ExternalRuntime::Codex => "Codex",
        }
    }
}

impl fmt::Display for ExternalRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A profile's `cli` table as written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCli {
    /// The program: a path, or a name looked up on `PATH` (default `claude` / `codex`).
    pub program: Option<String>,
    /// The model (`--model`).
    pub model: Option<String>,
    /// `claude-code` only: the permission mode (`--permission-mode`).
    pub permission_mode: Option<String>,
    /// `codex` only: the sandbox (`--sandbox`).
    pub sandbox: Option<String>,
    /// `codex` only: the approval policy (`-c approval_policy=…`).
    pub approval_policy: Option<String>,
    /// `claude-code` only: tools the session may use without asking (`--allowedTools`).
    #[serde(default)]
    pub allowed_tools: Vec<String>,
    /// `claude-code` only: tools the session may not use (`--disallowedTools`).
    #[serde(default)]
    pub disallowed_tools: Vec<String>,
    /// `claude-code` only: the bound on the session's agentic turns (`--max-turns`).
    pub max_turns: Option<u64>,
    /// Variables set for the session: a literal value, or `{from_env: NAME}` to pass on the
    /// value the runtime's own environment holds (for secrets: the value is read when the
    /// session starts and never written anywhere).
    #[serde(default)]
    pub env: BTreeMap<String, RawEnvValue>,
    /// The bound on one session, in milliseconds (default: none).
    pub timeout_ms: Option<u64>,
    /// Arguments added after agentvisor's own, before the prompt.
    #[serde(default)]
    pub extra_args: Vec<String>,
}

/// One `env` value as written.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum RawEnvValue {
    /// The value itself.
    Literal(String),
    /// `{from_env: NAME}`: the value of the runtime's variable `NAME`.
    FromEnv {
        /// The variable to read.
        from_env: String,
    },
}

/// A checked `env` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnvValue {
    /// The value itself.
    Literal(String),
    /// The value of the runtime's variable with this name, read when a session starts.
    FromEnv(String),
}

/// A checked `cli` table: every value valid for its runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CliSettings {
    pub(super) runtime: ExternalRuntime,
    pub(super) program: String,
    pub(super) model: Option<String>,
    pub(super) permission_mode: Option<String>,
    pub(super) sandbox: Option<String>,
    pub(super) approval_policy: Option<String>,
    pub(super) allowed_tools: Vec<String>,
    pub(super) disallowed_tools: Vec<String>,
    pub(super) max_turns: Option<u32>,
    pub(super) env: Vec<(String, EnvValue)>,
    pub(super) timeout: Option<Duration>,
    pub(super) extra_args: Vec<String>,
}

/// Claude Code's permission modes (`--permission-mode`).
pub const CLAUDE_PERMISSION_MODES: [&str; 5] =
    ["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk"];

/// Codex's sandboxes (`--sandbox`).
pub const CODEX_SANDBOXES: [&str; 3] = ["read-only", "workspace-write", "danger-full-access"];

/// Codex's approval policies (`approval_policy`).
pub const CODEX_APPROVAL_POLICIES: [&str; 4] = ["untrusted", "on-failure", "on-request", "never"];

impl CliSettings {
    /// The settings a profile without a `cli` table gets: the runtime's program, nothing else.
    pub fn defaults(runtime: ExternalRuntime) -> CliSettings {
        CliSettings {
            runtime,
            program: runtime.default_program().to_owned(),
            model: None,
            permission_mode: None,
            sandbox: None,
            approval_policy: None,
            allowed_tools: Vec::new(),
            disallowed_tools: Vec::new(),
            max_turns: None,
            env: Vec::new(),
            timeout: None,
            extra_args: Vec::new(),
        }
    }

    /// The runtime these settings start.
    pub fn runtime(&self) -> ExternalRuntime {
        self.runtime
    }

    /// The program to run.
    pub fn program(&self) -> &str {
        &self.program
    }

    /// The bound on one session, if any.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The flags these settings add to the runtime's command line, in a fixed order, before
    /// the caller's own arguments and the prompt: for Claude Code `--model`,
    /// `--permission-mode`, `--allowedTools`, `--disallowedTools`, `--max-turns`; for Codex
    /// `--model`, `--sandbox`, `-c approval_policy="…"`; then `extra_args` as written.
    pub fn flags(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut flag = |name: &str, value: &str| {
            out.push(name.to_owned());
            out.push(value.to_owned());
        };
        if let Some(model) = &self.model {
            flag("--model", model);
        }
        match self.runtime {
            ExternalRuntime::ClaudeCode => {
                if let Some(mode) = &self.permission_mode {
                    flag("--permission-mode", mode);
                }
                if !self.allowed_tools.is_empty() {
                    flag("--allowedTools", &self.allowed_tools.join(","));
                }
                if !self.disallowed_tools.is_empty() {
                    flag("--disallowedTools", &self.disallowed_tools.join(","));
                }
                if let Some(turns) = self.max_turns {
                    flag("--max-turns", &turns.to_string());
                }
            }
            ExternalRuntime::Codex => {
                if let Some(sandbox) = &self.sandbox {
                    flag("--sandbox", sandbox);
                }
                if let Some(policy) = &self.approval_policy {
                    flag("-c", &format!("approval_policy=\"{policy}\""));
                }
            }
        }
        out.extend(self.extra_args.iter().cloned());
        out
    }

    /// The variables a session gets on top of the inherited environment, `from_env` values
    /// read now. A `from_env` variable the environment does not hold is refused by name, so a
    /// session never starts without the secret it was configured with.
    pub fn environment(&self) -> Result<Vec<(String, String)>, MissingEnv> {
        self.env
            .iter()
            .map(|(name, value)| match value {
                EnvValue::Literal(text) => Ok((name.clone(), text.clone())),
                EnvValue::FromEnv(source) => std::env::var(source)
                    .map(|v| (name.clone(), v))
                    .map_err(|_| MissingEnv { name: name.clone(), from_env: source.clone() }),
            })
            .collect()
    }

    /// The names of the runtime variables `from_env` values read: what events never carry.
    pub fn secret_sources(&self) -> impl Iterator<Item = &str> {
        self.env.iter().filter_map(|(_, v)| match v {
            EnvValue::FromEnv(source) => Some(source.as_str()),
            EnvValue::Literal(_) => None,
        })
    }
}

/// A `from_env` value whose variable is not set.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the session's variable {name} is to come from the environment variable {from_env}, which is \
     not set; set {from_env} where agentvisor runs, or drop {name} from the profile's cli.env"
)]
pub struct MissingEnv {
    /// The session's variable.
    pub name: String,
    /// The runtime's variable it reads.
    pub from_env: String,
}

/// A checked external profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalProfile {
    pub(super) id: ProfileId,
    pub(super) description: Option<String>,
    pub(super) cli: CliSettings,
    pub(super) roster: Vec<Target>,
    pub(super) capabilities: CapabilitySet,
    pub(super) budget: AgentBudget,
    pub(super) restart: RestartPolicy,
    pub(super) supervision: Option<Supervision>,
}

impl ExternalProfile {
    /// The profile's id.
    pub fn id(&self) -> &ProfileId {
        &self.id
    }

    /// Its description, if it has one.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The runtime its agents run on.
    pub fn runtime(&self) -> ExternalRuntime {
        self.cli.runtime
    }

    /// How its sessions are started.
    pub fn cli(&self) -> &CliSettings {
        &self.cli
    }

    /// The profiles and machines its sessions may start as children.
    pub fn roster(&self) -> &[Target] {
        &self.roster
    }

    /// The capability set: what its children and its tools through MCP may be.
    pub fn capabilities(&self) -> &CapabilitySet {
        &self.capabilities
    }

    /// Its budget.
    pub fn budget(&self) -> &AgentBudget {
        &self.budget
    }

    /// Its restart policy when launched as a child.
    pub fn restart(&self) -> RestartPolicy {
        self.restart
    }

    /// How it supervises its children.
    pub fn supervision(&self) -> Option<Supervision> {
        self.supervision
    }
}
