//! Which tools an agent is offered: the agent calls by capability, the module tools by
//! module, and the kernel's process tools when the profile enables the process skill. The
//! tools themselves (names, descriptions, schemas, typed arguments) are the registry's
//! ([`crate::tools`]).
//!
//! | tool | offered when |
//! |---|---|
//! | `finish` | always: it ends the session |
//! | `spawn_subagent`, `wait_for_subagents`, `send_message` | `subagents` |
//! | `fork` | `fork` (the launch check requires `subagents` with it) |
//! | `exec` | `exec`, and the agent does not stand in a machine state |
//! | `transition_state` | `transition_state`, and the agent stands in a machine state |
//! | `run_code` | `code` |
//! | `run_program` | `code` and `program_library` |
//! | `archive_thread`, `read_archive` | `archive_thread` |
//! | module tools | the module's capability |
//! | the process skill's tools | `child_processes`, the subset its `tools` allow |

use crate::agent::config::{Capability, Profile};
use crate::agent::modules::ModuleTool;
use crate::tools::{AgentTool, PROCESS_SKILL_EXTRA_TOOLS, PROCESS_SKILL_TOOLS, Tool, ToolName, ToolSpec};

/// Whether an agent running `profile` (standing in a machine state or not) is offered `tool`.
pub(crate) fn offered(tool: Tool, profile: &Profile, in_machine: bool) -> bool {
    let caps = profile.capabilities();
    match tool {
        Tool::Agent(AgentTool::Finish) => true,
        Tool::Agent(AgentTool::SpawnSubagent | AgentTool::WaitForSubagents | AgentTool::SendMessage) => {
            caps.contains(Capability::Subagents)
        }
        Tool::Agent(AgentTool::Fork) => caps.contains(Capability::Fork),
        Tool::Agent(AgentTool::Exec) => caps.contains(Capability::Exec) && !in_machine,
        Tool::Agent(AgentTool::TransitionState) => caps.contains(Capability::TransitionState) && in_machine,
        Tool::Agent(AgentTool::RunCode) => caps.contains(Capability::Code),
        Tool::Agent(AgentTool::RunProgram) => {
            caps.contains(Capability::Code) && caps.contains(Capability::ProgramLibrary)
        }
        Tool::Agent(AgentTool::ArchiveThread | AgentTool::ReadArchive) => {
            caps.contains(Capability::ArchiveThread)
        }
        Tool::Module(m) => caps.contains(m.capability()),
        Tool::Kernel(k) => caps.child_processes().is_some_and(|c| c.tools().contains(&k)),
    }
}

/// Why `tool` is not offered, for the refusal the model reads.
pub(crate) fn why_not_offered(tool: Tool, in_machine: bool) -> &'static str {
    match tool {
        Tool::Agent(AgentTool::Exec) if in_machine => {
            "you stand in a machine state: the next move belongs to the machine; use transition_state"
        }
        Tool::Agent(AgentTool::TransitionState) if !in_machine => "you do not stand in a machine state",
        Tool::Kernel(_) => "your profile does not enable it in its child_processes skill",
        _ => "your profile does not enable it",
    }
}

/// Every tool an agent process may call (what the agent image offers): the agent calls, the
/// module tools and the process skill's tools.
pub fn all_tool_names() -> impl Iterator<Item = &'static str> {
    let kernel: Vec<ToolName> = PROCESS_SKILL_TOOLS.into_iter().chain(PROCESS_SKILL_EXTRA_TOOLS).collect();
    AgentTool::ALL
        .into_iter()
        .map(AgentTool::name)
        .chain(ModuleTool::ALL.into_iter().map(|t| t.name()))
        .chain(kernel.into_iter().map(ToolName::as_str))
}

/// The tools offered to an agent running `profile`: agent calls first, then module calls,
/// then the process skill's tools.
pub fn offered_tools(profile: &Profile, in_machine: bool) -> Vec<ToolSpec> {
    let agent = AgentTool::ALL.into_iter().map(Tool::Agent);
    let modules = ModuleTool::ALL.into_iter().map(Tool::Module);
    let kernel = PROCESS_SKILL_TOOLS.into_iter().chain(PROCESS_SKILL_EXTRA_TOOLS).map(Tool::Kernel);
    agent.chain(modules).chain(kernel).filter(|t| offered(*t, profile, in_machine)).map(Tool::spec).collect()
}
