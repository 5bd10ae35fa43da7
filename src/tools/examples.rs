//! One or more example argument objects per tool: documentation a client can copy, and what
//! the registry's tests check every schema and every parse against.

use super::ToolName;
use super::agent::AgentTool;
use super::registry::Tool;
use crate::agent::modules::ModuleTool;
use serde_json::{Value, json};

/// A pid in the examples (any UUID parses; the call is never made).
const PID: &str = "0190f5a2-7b1c-7d3e-8f40-123456789abc";

/// An oid in the examples.
const OID: &str = "0190f5a2-7b1c-7d3e-8f40-cba987654321";

/// Example arguments of `tool`, each valid for its schema and its typed arguments.
pub fn examples(tool: Tool) -> Vec<Value> {
    match tool {
        Tool::Kernel(t) => kernel(t),
        Tool::Agent(t) => agent(t),
        Tool::Module(t) => module(t),
    }
}

fn kernel(tool: ToolName) -> Vec<Value> {
    match tool {
        ToolName::Spawn => vec![
            json!({"goal": "count the words under docs/"}),
            json!({
                "goal": "summarise the notes", "working_directory": "notes",
                "inherit_capabilities": [{"resource": "fs:/data", "rights": ["read"]}],
                "resource_budget": {"tokens": 1000, "tool_calls": 20}
            }),
        ],
        ToolName::Fork => vec![
            json!({"goal": "check the sources"}),
            json!({"goal": "try the risky edit", "mode": "speculative", "root_oids": [OID]}),
        ],
        ToolName::List => vec![json!({}), json!({"include_terminal": false})],
        ToolName::Wait => vec![json!({"child_pid": PID}), json!({"child_pid": PID, "block": false})],
        ToolName::Signal => vec![json!({"child_pid": PID, "signal": "cancel", "reason": "no longer needed"})],
        ToolName::Merge => vec![json!({"child_pid": PID, "include_child_created": true})],
        ToolName::Exit => vec![json!({}), json!({"payload": {"words": 1200}})],
        ToolName::CreateObject => {
            vec![json!({"payload": {"draft": "v1"}, "name": "draft", "root": true, "durable": true})]
        }
        ToolName::ReadObject => vec![json!({"oid": OID}), json!({"name": "draft"})],
        ToolName::WriteObject => vec![json!({"name": "draft", "payload": {"draft": "v2"}})],
        ToolName::ListObjects => vec![json!({})],
        ToolName::CheckpointObject => vec![json!({"oid": OID})],
        ToolName::DelegateObject => vec![json!({"name": "draft", "to": PID, "rights": ["read"]})],
        ToolName::LoadSkills => {
            vec![json!({"skills": [{"name": "counting", "allowed_tools": [ToolName::Spawn.as_str()]}]})]
        }
        ToolName::Send => vec![json!({
            "to": PID, "body": "use the README only", "channel": "setup",
            "correlation_id": "task-1", "kind": "interrupt"
        })],
        ToolName::Read => vec![json!({}), json!({"channel": "progress", "ack": false, "limit": 10})],
        ToolName::Receive => vec![json!({"channel": "progress"}), json!({"block": false})],
    }
}

fn agent(tool: AgentTool) -> Vec<Value> {
    match tool {
        AgentTool::Finish => vec![json!({}), json!({"result": {"report": "done"}})],
        AgentTool::SpawnSubagent => vec![json!({"agent": "researcher", "prompt": "Find the sources"})],
        AgentTool::WaitForSubagents => vec![json!({}), json!({"ids": [PID], "merge": true})],
        AgentTool::SendMessage => {
            vec![
                json!({"to": "parent", "text": "halfway"}),
                json!({"to": PID, "text": "stop", "interrupt": true}),
            ]
        }
        AgentTool::Fork => vec![json!({"prompt": "Check the changelog"})],
        AgentTool::Exec => vec![json!({"agent": "review"}), json!({"agent": "review", "prompt": "Draft it"})],
        AgentTool::TransitionState => vec![json!({"state": "check", "prompt": "Check the draft"})],
        AgentTool::RunCode => {
            vec![json!({"code": "const t = await add_task({title: \"read\"});\nreturn t;"})]
        }
        AgentTool::RunProgram => vec![json!({"id": "a1b2c3"}), json!({"id": "a1b2c3", "args": {"n": 3}})],
        AgentTool::ArchiveThread => vec![
            json!({"from_turn": 2, "to_turn": 7}),
            json!({"from_turn": 2, "to_turn": 7, "summary": "Read the spec; chose plan B"}),
        ],
        AgentTool::ReadArchive => vec![json!({"turn": 4})],
    }
}

fn module(tool: ModuleTool) -> Vec<Value> {
    match tool {
        ModuleTool::AddTask => vec![json!({"title": "read the spec", "note": "section 2 first"})],
        ModuleTool::UpdateTask => vec![json!({"id": 1, "status": "done"})],
        ModuleTool::ListTasks | ModuleTool::ListNotes | ModuleTool::ListPrograms => vec![json!({})],
        ModuleTool::WriteNote => vec![json!({"page": "plan", "text": "step one", "append": true})],
        ModuleTool::ReadNote => vec![json!({"page": "plan"})],
        ModuleTool::Remember => vec![json!({"key": "style", "text": "short sentences"})],
        ModuleTool::Recall | ModuleTool::Forget => vec![json!({"key": "style"})],
        ModuleTool::SaveProgram => vec![json!({"description": "counts words", "source": "count(words)"})],
        ModuleTool::FetchProgram => vec![json!({"id": "a1b2c3"})],
    }
}
