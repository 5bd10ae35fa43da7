//! Rendering a profile's system prompt into its slot, once per incarnation.

use super::state::MachineAt;
use crate::agent::brain::ToolSpec;
use crate::agent::config::{Capability, CheckedConfig, Profile, PromptVar};
use crate::tools::{PROCESS_SKILL_DESCRIPTION, PROCESS_SKILL_NAME, PROCESS_SKILL_WORKFLOW};

/// The system prompt for an agent running `profile` (standing in `machine` if it does),
/// offered `tools`. It describes this incarnation only; it never enters the window.
pub fn render(
    config: &CheckedConfig,
    profile: &Profile,
    machine: Option<&MachineAt>,
    tools: &[ToolSpec],
) -> String {
    profile.system_prompt().render(|var| match var {
        PromptVar::Profile => profile.id().as_str().to_string(),
        PromptVar::Description => profile.description().unwrap_or_default().to_string(),
        PromptVar::Capabilities => capabilities(profile, machine),
        PromptVar::Roster => roster(config, profile, machine.is_some()),
        PromptVar::Tools => {
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            format!("Your tools: {}.", names.join(", "))
        }
        PromptVar::Endings => "Your session ends when you call finish, or when you answer with no tool \
                               call (your text is then your result)."
            .to_string(),
    })
}

fn capabilities(profile: &Profile, machine: Option<&MachineAt>) -> String {
    let mut lines = Vec::new();
    for capability in profile.capabilities().iter() {
        let line = match capability {
            Capability::History => {
                "Your conversation is kept whole across turns, execs and forks.".to_string()
            }
            Capability::Tasks => "You keep a task list.".to_string(),
            Capability::Notebook => "You keep a notebook of named pages.".to_string(),
            Capability::Memories => match profile.capabilities().memories() {
                Some(m) => format!("You keep memories ({} scope).", m.scope().as_str()),
                None => continue,
            },
            Capability::ProgramLibrary => "You keep a library of saved programs, fetched by id.".to_string(),
            Capability::Subagents => "You can start subagents, wait for them and message them.".to_string(),
            Capability::Exec if machine.is_none() => {
                "You can become another agent on your roster with exec.".to_string()
            }
            Capability::Exec => continue,
            Capability::Fork => "You can fork a copy of yourself that works in parallel.".to_string(),
            Capability::TransitionState => match machine {
                Some(at) => format!(
                    "You are the state {} of the machine {}; move it on with transition_state.",
                    at.state, at.machine
                ),
                None => continue,
            },
            Capability::ChildProcesses => match profile.capabilities().child_processes() {
                Some(skill) => process_skill(skill),
                None => continue,
            },
            Capability::Code => "You can answer with a JavaScript program (run_code) in which each of your \
                                 other tools is an async function of the same name; it runs as part of \
                                 your turn, under the same rules as your tool calls."
                .to_string(),
            Capability::ArchiveThread => {
                "You can archive a range of earlier turns with archive_thread: they \
                                          leave your window, a summary takes their place, and read_archive \
                                          reads them back by turn number."
                    .to_string()
            }
        };
        lines.push(line);
    }
    lines.join("\n")
}

fn roster(config: &CheckedConfig, profile: &Profile, in_machine: bool) -> String {
    if profile.roster().is_empty() || in_machine && !profile.capabilities().contains(Capability::Subagents) {
        return "Your roster is empty.".to_string();
    }
    let entries: Vec<String> = profile
        .roster()
        .iter()
        .map(|target| {
            let description = config
                .profile(target.as_str())
                .and_then(Profile::description)
                .or_else(|| config.machine(target.as_str()).and_then(|m| m.description()));
            match description {
                Some(d) => format!("{} ({d})", target.as_str()),
                None => target.as_str().to_string(),
            }
        })
        .collect();
    format!("Your roster: {}.", entries.join("; "))
}

/// The process skill as the system prompt states it: its name and description as the
/// specification words them, the tools it allows here, what the children run, and the
/// specification's recommended workflow.
fn process_skill(skill: &crate::agent::config::ChildProcesses) -> String {
    let tools: Vec<&str> = skill.tools().iter().map(|t| t.as_str()).collect();
    format!(
        "You hold the skill {PROCESS_SKILL_NAME}: {PROCESS_SKILL_DESCRIPTION} Its tools here: {}. The \
         children you spawn or fork are agents running {} (name another agent on your roster as \
         `image` to run that one instead); a child's goal is its opening prompt. Recommended \
         workflow:\n{PROCESS_SKILL_WORKFLOW}",
        tools.join(", "),
        skill.child_agent()
    )
}
