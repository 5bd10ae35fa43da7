//! The agent calls a model makes (beyond its modules' calls): their JSON schemas and
//! arguments, and which of them a profile is offered.
//!
//! | call | offered when |
//! |---|---|
//! | `finish` | always: it ends the session |
//! | `spawn_subagent`, `wait_for_subagents`, `send_message` | `subagents` |
//! | `fork` | `fork` (the launch check requires `subagents` with it) |
//! | `exec` | `exec`, and the agent does not stand in a machine state |
//! | `transition_state` | `transition_state`, and the agent stands in a machine state |

use super::error::Refusal;
use crate::agent::brain::ToolSpec;
use crate::agent::config::{Capability, Profile};
use crate::agent::modules::ModuleTool;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// An agent call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AgentTool {
    /// `finish(result?)`.
    Finish,
    /// `spawn_subagent(agent, prompt)`.
    SpawnSubagent,
    /// `wait_for_subagents(ids?)`.
    WaitForSubagents,
    /// `send_message(to, text)`.
    SendMessage,
    /// `fork(prompt)`.
    Fork,
    /// `exec(agent, prompt?)`.
    Exec,
    /// `transition_state(state, prompt?)`.
    TransitionState,
}

impl AgentTool {
    /// Every agent call.
    pub const ALL: [AgentTool; 7] = [
        AgentTool::Finish,
        AgentTool::SpawnSubagent,
        AgentTool::WaitForSubagents,
        AgentTool::SendMessage,
        AgentTool::Fork,
        AgentTool::Exec,
        AgentTool::TransitionState,
    ];

    /// The call's name.
    pub fn name(self) -> &'static str {
        match self {
            AgentTool::Finish => "finish",
            AgentTool::SpawnSubagent => "spawn_subagent",
            AgentTool::WaitForSubagents => "wait_for_subagents",
            AgentTool::SendMessage => "send_message",
            AgentTool::Fork => "fork",
            AgentTool::Exec => "exec",
            AgentTool::TransitionState => "transition_state",
        }
    }

    /// The call with this name.
    pub fn parse(name: &str) -> Option<AgentTool> {
        AgentTool::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Whether an agent running `profile` (standing in a machine state or not) is offered it.
    pub fn offered(self, profile: &Profile, in_machine: bool) -> bool {
        let caps = profile.capabilities();
        match self {
            AgentTool::Finish => true,
            AgentTool::SpawnSubagent | AgentTool::WaitForSubagents | AgentTool::SendMessage => {
                caps.contains(Capability::Subagents)
            }
            AgentTool::Fork => caps.contains(Capability::Fork),
            AgentTool::Exec => caps.contains(Capability::Exec) && !in_machine,
            AgentTool::TransitionState => caps.contains(Capability::TransitionState) && in_machine,
        }
    }

    /// The JSON schema and description a model is shown.
    pub fn spec(self) -> ToolSpec {
        let (description, parameters) = match self {
            AgentTool::Finish => (
                "End your session. `result` is what whoever put you to work receives. An ending \
                 beats an exec or transition_state declared in the same turn; forks declared in \
                 the same turn still run, and finish waits for them before your process ends.",
                object(json!({"result": {"description": "Your result: any JSON value."}}), &[]),
            ),
            AgentTool::SpawnSubagent => (
                "Start a subagent running one of the profiles or machines on your roster, with a \
                 fresh conversation that opens on `prompt`. Returns its id; collect it with \
                 wait_for_subagents.",
                object(
                    json!({
                        "agent": {"type": "string", "description": "A profile or machine id on your roster."},
                        "prompt": {"type": "string", "description": "The brief it starts from."}
                    }),
                    &["agent", "prompt"],
                ),
            ),
            AgentTool::WaitForSubagents => (
                "Wait until the given subagents (all uncollected ones if `ids` is omitted) have \
                 ended, and return each one's status and result. A fork cannot be waited on in \
                 the turn that created it: its id is real when fork returns, and it becomes your \
                 child once the turn ends. Collect it on a later turn. With `merge`, each \
                 subagent's objects become yours once it has ended.",
                object(
                    json!({
                        "ids": {"type": "array", "items": {"type": "string"}, "description": "Subagent ids."},
                        "merge": {"type": "boolean", "default": false,
                                  "description": "Also take each subagent's objects (its notebook, task list, results) into your memory."}
                    }),
                    &[],
                ),
            ),
            AgentTool::SendMessage => (
                "Send a durable message to your parent (`to`: \"parent\") or to one of your \
                 subagents (its id). Set `interrupt` to have it noticed before the recipient's \
                 next tool call rather than after.",
                object(
                    json!({
                        "to": {"type": "string", "description": "\"parent\" or a subagent id."},
                        "text": {"type": "string"},
                        "interrupt": {"type": "boolean", "default": false}
                    }),
                    &["to", "text"],
                ),
            ),
            AgentTool::Fork => (
                "Run a copy of yourself: same profile, same tools, a private copy of this whole \
                 conversation, working a second line in parallel. `prompt` says what the copy \
                 should do that you will not. Returns the copy's id, which becomes your child \
                 when this turn ends: wait for it on a later turn. Forks are additive: every \
                 fork in a turn runs, even if the turn also ends your session.",
                object(json!({"prompt": {"type": "string"}}), &["prompt"]),
            ),
            AgentTool::Exec => (
                "Become another agent: `agent` is a profile or machine on your roster. Your \
                 conversation and every module both profiles have move across; the successor \
                 opens on a note saying what moved and on `prompt`. One succession per turn: \
                 the first exec or transition_state stands and a second is refused; an ending \
                 in the same turn beats it.",
                object(
                    json!({
                        "agent": {"type": "string", "description": "A profile or machine id on your roster."},
                        "prompt": {"type": "string", "description": "The successor's opening message."}
                    }),
                    &["agent"],
                ),
            ),
            AgentTool::TransitionState => (
                "Move the machine you stand in to another of its states; the state's profile \
                 takes over this conversation. One succession per turn: the first stands and a \
                 second is refused; an ending in the same turn beats it.",
                object(
                    json!({
                        "state": {"type": "string", "description": "A state the current one may move to."},
                        "prompt": {"type": "string", "description": "The next state's opening message."}
                    }),
                    &["state"],
                ),
            ),
        };
        ToolSpec { name: self.name().to_string(), description: description.to_string(), parameters }
    }
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
}

/// Every tool name an agent process may call (what the agent image offers).
pub fn all_tool_names() -> impl Iterator<Item = &'static str> {
    AgentTool::ALL.into_iter().map(AgentTool::name).chain(ModuleTool::ALL.into_iter().map(|t| t.name()))
}

/// The tools offered to an agent running `profile`, agent calls first, then module calls.
pub fn offered_tools(profile: &Profile, in_machine: bool) -> Vec<ToolSpec> {
    let mut specs: Vec<ToolSpec> =
        AgentTool::ALL.into_iter().filter(|t| t.offered(profile, in_machine)).map(AgentTool::spec).collect();
    specs.extend(ModuleTool::specs_for(profile.capabilities()));
    specs
}

/// `finish`'s arguments.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FinishArgs {
    /// The result.
    #[serde(default)]
    pub(crate) result: Option<Value>,
}

/// `spawn_subagent`'s and `exec`'s arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AgentArgs {
    /// A profile or machine id.
    pub(crate) agent: String,
    /// The prompt.
    #[serde(default)]
    pub(crate) prompt: Option<String>,
}

/// `wait_for_subagents`'s arguments.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WaitArgs {
    /// Subagent ids; all uncollected ones if omitted.
    #[serde(default)]
    pub(crate) ids: Option<Vec<String>>,
    /// Also take each ended subagent's objects into this agent's memory (kernel merge).
    #[serde(default)]
    pub(crate) merge: bool,
}

/// `send_message`'s arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SendArgs {
    /// `parent` or a subagent id.
    pub(crate) to: String,
    /// The text.
    pub(crate) text: String,
    /// Noticed before the recipient's next tool call.
    #[serde(default)]
    pub(crate) interrupt: bool,
}

/// `fork`'s arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ForkArgs {
    /// What the copy should do.
    pub(crate) prompt: String,
}

/// `transition_state`'s arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TransitionArgs {
    /// The state to move to.
    pub(crate) state: String,
    /// The next state's opening message.
    #[serde(default)]
    pub(crate) prompt: Option<String>,
}

/// Reads a call's arguments; a missing object is `{}`. The refusal names the field.
pub(crate) fn parse_args<T: DeserializeOwned>(tool: AgentTool, arguments: &Value) -> Result<T, Refusal> {
    let empty = json!({});
    let arguments = if arguments.is_null() { &empty } else { arguments };
    serde_path_to_error::deserialize(arguments).map_err(|e| {
        let path = e.path().to_string();
        Refusal::new(
            "bad_arguments",
            format!("{} arguments are invalid at {path}: {}", tool.name(), e.into_inner()),
        )
    })
}
