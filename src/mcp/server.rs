//! The rmcp handler: one session's tools and calls.
//!
//! `tools/list` answers the process's tool surface (names, descriptions and input schemas
//! exactly as the kernel's tool schemas give them). `tools/call` answers every call with a
//! successful MCP result whose structured content is the tool's JSON answer and whose text
//! content is the same JSON: a kernel result with `isError: false`, or `{"error": {code,
//! message}}` with `isError: true` (a refused call is the tool's answer, not a protocol
//! failure). While a call waits (a blocking wait or receive, or a call held because the
//! process is `waiting_event`), progress notifications are sent when the client gave a
//! progress token. A cancelled request drops the call: see [`crate::control::host::call`].

use super::McpError;
use super::backend::Backend;
use super::surface;
use crate::actors::Pid;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorCode, ErrorData, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler};
use serde_json::{Map, Value};
use std::sync::Arc;
use tokio::sync::mpsc;

/// The handler of a session acting as one process. Cheap to clone (the HTTP transport makes
/// one per MCP session; all act as the same process).
#[derive(Clone)]
pub struct McpServer {
    backend: Backend,
    pid: Pid,
    tools: Arc<Vec<Tool>>,
}

impl McpServer {
    /// A handler acting as `pid` through `backend`.
    pub async fn new(backend: Backend, pid: Pid) -> Result<McpServer, McpError> {
        let tools = backend
            .tools(pid)
            .await?
            .into_iter()
            .map(|t| {
                let schema = match t.parameters {
                    Value::Object(map) => map,
                    _ => Map::new(),
                };
                Tool::new(t.name, t.description, schema)
            })
            .collect();
        Ok(McpServer { backend, pid, tools: Arc::new(tools) })
    }

    /// The process this handler acts as.
    pub fn pid(&self) -> Pid {
        self.pid
    }
}

/// What the server tells the client at initialization: who it is.
fn instructions(pid: Pid) -> String {
    format!(
        "This server acts as agentvisor process {pid}. Its tools are the process kernel's tools; each call is made as this process, under its capabilities and budget. A tool's answer is JSON: the result object, or {{\"error\": {{\"code\", \"message\"}}}} with isError set. A blocking wait_child_process or receive_process_messages answers when ready and sends progress meanwhile."
    )
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("agentvisor", env!("CARGO_PKG_VERSION")))
            .with_instructions(instructions(self.pid))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let token = context.meta.get_progress_token();
        let (sink, mut progress) = mpsc::channel(16);
        let call = self.backend.call(self.pid, &request.name, args, Some(&sink));
        tokio::pin!(call);
        let mut step = 0u32;
        let answer = loop {
            tokio::select! {
                biased;
                answer = &mut call => break answer,
                () = context.ct.cancelled() => {
                    return Err(ErrorData::new(ErrorCode::INTERNAL_ERROR, "the request was cancelled", None));
                }
                Some(p) = progress.recv() => {
                    if let Some(token) = &token {
                        step += 1;
                        let note = ProgressNotificationParam::new(token.clone(), f64::from(step)).with_message(p.message);
                        let _ = context.peer.notify_progress(note).await;
                    }
                }
            }
        };
        let result = if surface::is_error(&answer) {
            CallToolResult::structured_error(answer)
        } else {
            CallToolResult::structured(answer)
        };
        Ok(result.into())
    }
}
