//! The tool surface a process offers to an MCP session or a control-socket client: the one
//! place outside `src/tools/` that names the JSON tool layer, so that the surface can be
//! re-pointed (at a tool registry, say) here and nowhere else.

use crate::actors::Pid;
use crate::actors::runtime::Runtime;
use crate::actors::runtime::calls::ToolError;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool as a client sees it: the name, the model-facing description and the JSON Schema
/// of its arguments object, exactly as the kernel's tool schemas give them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    /// The tool's name.
    pub name: String,
    /// What it does and how to use it.
    pub description: String,
    /// The JSON Schema of its arguments object.
    pub parameters: Value,
}

/// The tools `pid` may call. Every process offers the whole kernel tool surface (whether a
/// call is allowed is the kernel's decision when it is made), so this does not depend on
/// `pid` today; it takes it so that a per-process surface changes only this function.
pub fn tools_for(_pid: Pid) -> Vec<ToolDef> {
    crate::tools::tool_schemas()
        .into_iter()
        .map(|t| ToolDef {
            name: t.name.to_string(),
            description: t.description.to_string(),
            parameters: t.parameters,
        })
        .collect()
}

/// Makes one tool call as `pid` and answers its JSON: the kernel's result object, or
/// `{"error": {"code", "message"}}`, with `notices` when any arrived. Never panics.
///
/// Cancel safety: dropping the future does not withdraw a call already sent; the kernel
/// still applies it and only the answer is lost. A blocking wait dropped this way leaves the
/// caller `waiting_event` with its saved action.
pub async fn call(rt: &Runtime, pid: Pid, tool: &str, args: Value) -> Value {
    crate::tools::dispatch_as(rt, pid, tool, args).await
}

/// Whether `tool` is one whose blocking form suspends the caller (`wait_child_process`,
/// `receive_process_messages`): what a session may call to rejoin a saved wait.
pub fn is_waiting_tool(tool: &str) -> bool {
    use crate::tools::ToolName;
    matches!(ToolName::parse(tool), Some(ToolName::Wait | ToolName::Receive))
}

/// An error answer in the tool surface's shape, `{"error": {"code", "message"}}`.
pub fn error(code: &str, message: impl Into<String>) -> Value {
    crate::tools::error_json(&ToolError::new(code, message))
}

/// Whether an answer is an error answer.
pub fn is_error(answer: &Value) -> bool {
    answer.get("error").is_some_and(Value::is_object)
}
