//! The process skill of the process-kernel specification, `agent-libos-child-processes`: its
//! name, description and allowed tools exactly as the specification lists them, offered to
//! models whose profile enables it (`child_processes`).

use super::ToolName;

/// The skill's name.
pub const PROCESS_SKILL_NAME: &str = "agent-libos-child-processes";

/// The skill's description, as the specification words it.
pub const PROCESS_SKILL_DESCRIPTION: &str = "Spawn or fork direct AgentProcess children, coordinate \
their lifecycle and messages, then import selected results. Use for bounded parallel delegation, \
isolated exploration, or structured parent-child collaboration.";

/// The skill's allowed tools, in the specification's order.
pub const PROCESS_SKILL_TOOLS: [ToolName; 9] = [
    ToolName::Fork,
    ToolName::Spawn,
    ToolName::List,
    ToolName::Wait,
    ToolName::Signal,
    ToolName::Merge,
    ToolName::Send,
    ToolName::Read,
    ToolName::Receive,
];

/// Kernel tools a profile may allow beside the skill's: reading a waited child's result and
/// listing its own memory. Nothing that ends the process (an agent ends with `finish`) or
/// replaces its skills.
pub const PROCESS_SKILL_EXTRA_TOOLS: [ToolName; 2] = [ToolName::ReadObject, ToolName::ListObjects];

/// The skill's guidance for the system prompt: the specification's recommended workflow.
pub const PROCESS_SKILL_WORKFLOW: &str = "\
1. Partition only genuinely independent, bounded work. Give every child a concrete deliverable, \
stop condition and expected evidence.
2. Choose spawn_child_process for isolated goal-only work; fork_child_process only for named \
parent Objects, preferring exact root_oids and read-only modes.
3. Delegate least authority and an explicit bounded budget. Record each pid: status=\"runnable\" \
is launch, not success.
4. For fan-out, launch the bounded set first. Send setup or corrections before a blocking wait: a \
blocking wait ends your tool batch, so later calls of the same batch do not run.
5. Use list_child_processes for one snapshot; block on one exact child when you have nothing \
else to do.
6. On wake, require ready=true and status=\"exited\", inspect the typed outcome, and verify the \
payload. failed and killed are unsuccessful.
7. Prefer the wait-published result. Merge once, only for named additional memory: merge \
releases what it does not adopt. Report every skipped oid.";
