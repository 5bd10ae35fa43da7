//! The tool registry: every tool any caller can reach, in one list.
//!
//! Three families, each defined once: the kernel tools ([`ToolName`]: seed 002's process and
//! mailbox tools and the object-memory tools), the agent calls ([`AgentTool`]) and the module
//! tools ([`ModuleTool`]). An entry gives the tool's name, the description a model reads, the
//! JSON Schema of its arguments (derived from the typed argument struct) and the one
//! conversion of JSON arguments into a typed call ([`parse`]). Every caller — the agent turn
//! loop, the scenario runner, the JSON dispatch, the MCP server — parses through [`parse`],
//! and every refusal is one [`ToolError`] with a stable code.

use super::agent::{AgentCall, AgentTool};
use super::dispatch::{args_object, kernel_call};
use super::spec::ToolSpec;
use super::{ToolName, UNKNOWN_TOOL, tool_schema};
use crate::actors::runtime::calls::{Call, ToolError};
use crate::agent::modules::{ModuleCall, ModuleTool};
use serde_json::Value;

/// One tool of the registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tool {
    /// A kernel tool: the caller acts as its process.
    Kernel(ToolName),
    /// An agent call: only an agent's turn loop runs it.
    Agent(AgentTool),
    /// A module tool: works on an agent's modules.
    Module(ModuleTool),
}

/// The family a tool belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// The kernel tools.
    Kernel,
    /// The agent calls.
    Agent,
    /// The module tools.
    Module,
}

impl Tool {
    /// Every tool: kernel tools, then agent calls, then module tools.
    pub fn all() -> impl Iterator<Item = Tool> {
        ToolName::ALL
            .into_iter()
            .map(Tool::Kernel)
            .chain(AgentTool::ALL.into_iter().map(Tool::Agent))
            .chain(ModuleTool::ALL.into_iter().map(Tool::Module))
    }

    /// The tool's name, as every caller calls it.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Kernel(t) => t.as_str(),
            Tool::Agent(t) => t.name(),
            Tool::Module(t) => t.name(),
        }
    }

    /// The tool with this name.
    pub fn parse(name: &str) -> Option<Tool> {
        Tool::all().find(|t| t.name() == name)
    }

    /// Its family.
    pub fn family(self) -> Family {
        match self {
            Tool::Kernel(_) => Family::Kernel,
            Tool::Agent(_) => Family::Agent,
            Tool::Module(_) => Family::Module,
        }
    }

    /// The tool as a model or client sees it: name, description and argument schema.
    pub fn spec(self) -> ToolSpec {
        match self {
            Tool::Kernel(t) => tool_schema(t),
            Tool::Agent(t) => t.spec(),
            Tool::Module(t) => t.spec(),
        }
    }

    /// The typed call of JSON `args` for this tool.
    pub fn parse_args(self, args: Value) -> Result<ParsedCall, ToolError> {
        let args = args_object(self.name(), args)?;
        Ok(match self {
            Tool::Kernel(t) => ParsedCall::Kernel(Box::new(kernel_call(t, args)?)),
            Tool::Agent(t) => ParsedCall::Agent(t.parse_args(args)?),
            Tool::Module(t) => ParsedCall::Module(t.parse_args(args)?),
        })
    }
}

impl std::fmt::Display for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A tool call with typed arguments, ready for whichever caller runs its family.
#[derive(Clone, Debug)]
pub enum ParsedCall {
    /// A kernel call, made as the caller's process. Boxed: a launch request is large, and
    /// every parsed call would be as large as the largest.
    Kernel(Box<Call>),
    /// An agent call.
    Agent(AgentCall),
    /// A module call.
    Module(ModuleCall),
}

/// Parses one tool call by name: the only place JSON arguments become a typed call.
///
/// Refuses an unknown tool with `unknown_tool` (the message lists every tool), and malformed
/// arguments with `invalid_arguments` naming the field. `null` arguments read as `{}`.
pub fn parse(name: &str, args: Value) -> Result<ParsedCall, ToolError> {
    let Some(tool) = Tool::parse(name) else {
        let names: Vec<&str> = Tool::all().map(Tool::name).collect();
        let shown = crate::tools::quote(name);
        return Err(ToolError::new(
            UNKNOWN_TOOL,
            format!("unknown tool {shown}; the tools are {}", names.join(", ")),
        ));
    };
    tool.parse_args(args)
}
