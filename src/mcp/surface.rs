//! The tool surface a process offers to an MCP session or a control-socket client: the
//! registry's kernel tools (`crate::tools`), their specs and their dispatch, named here and
//! nowhere else in the server.

use crate::actors::Pid;
use crate::actors::runtime::Runtime;
use crate::actors::runtime::calls::ToolError;
pub use crate::tools::ToolSpec;
use serde_json::Value;

/// The tools `pid` may call. Every process offers the whole kernel tool surface (whether a
/// call is allowed is the kernel's decision when it is made), so this does not depend on
/// `pid` today; it takes it so that a per-process surface changes only this function.
pub fn tools_for(_pid: Pid) -> Vec<ToolSpec> {
    crate::tools::tool_schemas()
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
