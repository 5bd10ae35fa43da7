//! The agent calls of the agent layer (`finish`, `spawn_subagent`, `wait_for_subagents`,
//! `send_message`, `fork`, `exec`, `transition_state`, `run_code`, `run_program`,
//! `archive_thread`, `read_archive`): their names, descriptions and typed arguments. Which of them a profile is offered, and what they do, is the agent layer's
//! (`crate::agent::run`).

use super::args::invalid;
use super::dispatch::from_args;
use super::spec::{ToolSpec, parameters_of};
use crate::actors::runtime::calls::ToolError;
use crate::agent::limits::{ARCHIVE_SUMMARY_BYTES_MAX, CODE_SOURCE_BYTES_MAX};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// An agent call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AgentTool {
    /// `finish(result?)`.
    Finish,
    /// `spawn_subagent(agent, prompt)`.
    SpawnSubagent,
    /// `wait_for_subagents(ids?, merge?)`.
    WaitForSubagents,
    /// `send_message(to, text, interrupt?)`.
    SendMessage,
    /// `fork(prompt)`.
    Fork,
    /// `exec(agent, prompt?)`.
    Exec,
    /// `transition_state(state, prompt?)`.
    TransitionState,
    /// `run_code(code)`: a program, the second execution path.
    RunCode,
    /// `run_program(id, args?)`: a saved program of the library, on the same path.
    RunProgram,
    /// `archive_thread(from_turn, to_turn, summary?)`: model-called compaction.
    ArchiveThread,
    /// `read_archive(turn)`: an archived turn, by number.
    ReadArchive,
}

impl AgentTool {
    /// Every agent call.
    pub const ALL: [AgentTool; 11] = [
        AgentTool::Finish,
        AgentTool::SpawnSubagent,
        AgentTool::WaitForSubagents,
        AgentTool::SendMessage,
        AgentTool::Fork,
        AgentTool::Exec,
        AgentTool::TransitionState,
        AgentTool::RunCode,
        AgentTool::RunProgram,
        AgentTool::ArchiveThread,
        AgentTool::ReadArchive,
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
            AgentTool::RunCode => "run_code",
            AgentTool::RunProgram => "run_program",
            AgentTool::ArchiveThread => "archive_thread",
            AgentTool::ReadArchive => "read_archive",
        }
    }

    /// The call with this name.
    pub fn parse(name: &str) -> Option<AgentTool> {
        AgentTool::ALL.into_iter().find(|t| t.name() == name)
    }

    /// What the model reads about the call.
    pub fn description(self) -> &'static str {
        match self {
            AgentTool::Finish => {
                "End your session. `result` is what whoever put you to work receives. An ending \
                 beats an exec or transition_state declared in the same turn; forks declared in \
                 the same turn still run, and finish waits for them before your process ends."
            }
            AgentTool::SpawnSubagent => {
                "Start a subagent running one of the profiles or machines on your roster, with a \
                 fresh conversation that opens on `prompt`. Returns its id; collect it with \
                 wait_for_subagents."
            }
            AgentTool::WaitForSubagents => {
                "Wait until the given subagents (all uncollected ones if `ids` is omitted) have \
                 ended, and return each one's status and result. A fork cannot be waited on in \
                 the turn that created it: its id is real when fork returns, and it becomes your \
                 child once the turn ends. Collect it on a later turn. With `merge`, each \
                 subagent's objects become yours once it has ended."
            }
            AgentTool::SendMessage => {
                "Send a durable message to your parent (`to`: \"parent\") or to one of your \
                 subagents (its id). Set `interrupt` to have it noticed before the recipient's \
                 next tool call rather than after."
            }
            AgentTool::Fork => {
                "Run a copy of yourself: same profile, same tools, a private copy of this whole \
                 conversation, working a second line in parallel. `prompt` says what the copy \
                 should do that you will not. Returns the copy's id, which becomes your child \
                 when this turn ends: wait for it on a later turn. Forks are additive: every \
                 fork in a turn runs, even if the turn also ends your session."
            }
            AgentTool::Exec => {
                "Become another agent: `agent` is a profile or machine on your roster. Your \
                 conversation and every module both profiles have move across; the successor \
                 opens on a note saying what moved and on `prompt`. One succession per turn: \
                 the first exec or transition_state stands and a second is refused; an ending \
                 in the same turn beats it."
            }
            AgentTool::TransitionState => {
                "Move the machine you stand in to another of its states; the state's profile \
                 takes over this conversation. One succession per turn: the first stands and a \
                 second is refused; an ending in the same turn beats it."
            }
            AgentTool::RunCode => {
                "Run a JavaScript program as part of this turn. The program is the body of an \
                 async function: `return` gives its value, `await` works at the top level. Each of \
                 your other tools is an async function of the same name taking its arguments \
                 object (`const id = (await fork({prompt: \"...\"})).id`), also reachable as \
                 `tools.<name>`; a refused call throws an Error whose `code` is the refusal's code. \
                 `console.log` writes output. Calls run one at a time in the order made, with the \
                 same rules as calls of the turn: a fork cannot be waited on in the turn that made \
                 it, the first exec or transition_state stands, an ending beats both. There is no \
                 clock, file system or network. Returns `result`, `output` and the calls made, or \
                 an `error` naming the line; fuel, memory, compute time and output are limited."
            }
            AgentTool::RunProgram => {
                "Run a program saved in your program library, by id, exactly as run_code runs a \
                 program; `args` is available to it as `args`. A program can fetch_program another \
                 one's source."
            }
            AgentTool::ArchiveThread => {
                "Archive the turns `from_turn` to `to_turn` (both included, all before this turn): \
                 when this turn ends they leave your window and a note with `summary` takes their \
                 place (leave `summary` out to have your profile's summarizer write it). Archived \
                 turns stay readable by number with read_archive. Applied before any exec, \
                 transition_state or fork of the same turn, so a successor or a copy starts from \
                 the archived window."
            }
            AgentTool::ReadArchive => {
                "Read an archived turn by its number: every message of that turn as it was."
            }
        }
    }

    /// The JSON Schema of the call's arguments, derived from its argument type.
    pub fn parameters(self) -> Value {
        match self {
            AgentTool::Finish => parameters_of::<FinishArgs>(),
            AgentTool::SpawnSubagent => parameters_of::<SpawnSubagentArgs>(),
            AgentTool::WaitForSubagents => parameters_of::<WaitForSubagentsArgs>(),
            AgentTool::SendMessage => parameters_of::<SendMessageArgs>(),
            AgentTool::Fork => parameters_of::<ForkSelfArgs>(),
            AgentTool::Exec => parameters_of::<ExecArgs>(),
            AgentTool::TransitionState => parameters_of::<TransitionArgs>(),
            AgentTool::RunCode => parameters_of::<RunCodeArgs>(),
            AgentTool::RunProgram => parameters_of::<RunProgramArgs>(),
            AgentTool::ArchiveThread => parameters_of::<ArchiveThreadArgs>(),
            AgentTool::ReadArchive => parameters_of::<ReadArchiveArgs>(),
        }
    }

    /// The call as a model is shown it.
    pub fn spec(self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_string(),
            description: self.description().to_string(),
            parameters: self.parameters(),
        }
    }

    /// Reads the call's arguments (an object, or `null` for none) into a typed [`AgentCall`].
    /// A refusal is `invalid_arguments` and names the field.
    pub fn parse_args(self, args: Value) -> Result<AgentCall, ToolError> {
        Ok(match self {
            AgentTool::Finish => AgentCall::Finish(from_args(args)?),
            AgentTool::SpawnSubagent => {
                let args: SpawnSubagentArgs = from_args(args)?;
                required_prompt(&args.prompt, "the brief the subagent starts from")?;
                AgentCall::SpawnSubagent(args)
            }
            AgentTool::WaitForSubagents => AgentCall::WaitForSubagents(from_args(args)?),
            AgentTool::SendMessage => AgentCall::SendMessage(from_args(args)?),
            AgentTool::Fork => {
                let args: ForkSelfArgs = from_args(args)?;
                required_prompt(&args.prompt, "what the copy should do that you will not")?;
                AgentCall::Fork(args)
            }
            AgentTool::Exec => AgentCall::Exec(from_args(args)?),
            AgentTool::TransitionState => AgentCall::TransitionState(from_args(args)?),
            AgentTool::RunCode => AgentCall::RunCode(from_args(args)?),
            AgentTool::RunProgram => AgentCall::RunProgram(from_args(args)?),
            AgentTool::ArchiveThread => AgentCall::ArchiveThread(from_args(args)?),
            AgentTool::ReadArchive => AgentCall::ReadArchive(from_args(args)?),
        })
    }
}

/// Refuses a required `prompt` that says nothing (empty or only whitespace): a child
/// launched on it would start from no brief at all. `what` says what it should hold.
fn required_prompt(prompt: &str, what: &str) -> Result<(), ToolError> {
    if prompt.trim().is_empty() {
        return Err(invalid("prompt", format!("it is empty; write {what}")));
    }
    Ok(())
}

impl std::fmt::Display for AgentTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An agent call with its typed arguments.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentCall {
    /// `finish`.
    Finish(FinishArgs),
    /// `spawn_subagent`.
    SpawnSubagent(SpawnSubagentArgs),
    /// `wait_for_subagents`.
    WaitForSubagents(WaitForSubagentsArgs),
    /// `send_message`.
    SendMessage(SendMessageArgs),
    /// `fork`.
    Fork(ForkSelfArgs),
    /// `exec`.
    Exec(ExecArgs),
    /// `transition_state`.
    TransitionState(TransitionArgs),
    /// `run_code`.
    RunCode(RunCodeArgs),
    /// `run_program`.
    RunProgram(RunProgramArgs),
    /// `archive_thread`.
    ArchiveThread(ArchiveThreadArgs),
    /// `read_archive`.
    ReadArchive(ReadArchiveArgs),
}

/// `finish`'s arguments.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FinishArgs {
    /// Your result: any JSON value.
    #[serde(default)]
    pub result: Option<Value>,
}

/// `spawn_subagent`'s arguments.
#[derive(Clone, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpawnSubagentArgs {
    /// A profile or machine id on your roster.
    pub agent: String,
    /// The brief it starts from; not empty.
    pub prompt: String,
}

/// `wait_for_subagents`'s arguments.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitForSubagentsArgs {
    /// Subagent ids; all uncollected ones if omitted.
    #[serde(default)]
    pub ids: Option<Vec<String>>,
    /// Also take each subagent's objects (its notebook, task list, results) into your memory.
    #[serde(default)]
    pub merge: bool,
}

/// `send_message`'s arguments.
#[derive(Clone, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendMessageArgs {
    /// "parent" or a subagent id.
    pub to: String,
    /// The text.
    pub text: String,
    /// Noticed before the recipient's next tool call rather than after it.
    #[serde(default)]
    pub interrupt: bool,
}

/// `fork`'s arguments.
#[derive(Clone, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkSelfArgs {
    /// What the copy should do that you will not; not empty.
    pub prompt: String,
}

/// `exec`'s arguments.
#[derive(Clone, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecArgs {
    /// A profile or machine id on your roster.
    pub agent: String,
    /// The successor's opening message.
    #[serde(default)]
    pub prompt: Option<String>,
}

/// `transition_state`'s arguments.
#[derive(Clone, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TransitionArgs {
    /// A state the current one may move to.
    pub state: String,
    /// The next state's opening message.
    #[serde(default)]
    pub prompt: Option<String>,
}

/// `run_code`'s arguments.
#[derive(Clone, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCodeArgs {
    /// The program: JavaScript, the body of an async function.
    #[schemars(extend("maxLength" = CODE_SOURCE_BYTES_MAX))]
    pub code: String,
}

/// `run_program`'s arguments.
#[derive(Clone, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunProgramArgs {
    /// The program's id in your library.
    pub id: String,
    /// Any JSON value, available to the program as `args`.
    #[serde(default)]
    pub args: Option<Value>,
}

/// `archive_thread`'s arguments.
#[derive(Clone, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchiveThreadArgs {
    /// The first turn to archive.
    #[schemars(range(min = 1))]
    pub from_turn: u64,
    /// The last turn to archive (included); before the current turn.
    #[schemars(range(min = 1))]
    pub to_turn: u64,
    /// What the archived turns came to, in your words; left out, your profile's summarizer
    /// writes it.
    #[serde(default)]
    #[schemars(extend("maxLength" = ARCHIVE_SUMMARY_BYTES_MAX))]
    pub summary: Option<String>,
}

/// `read_archive`'s arguments.
#[derive(Clone, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArchiveArgs {
    /// The archived turn's number.
    #[schemars(range(min = 1))]
    pub turn: u64,
}
