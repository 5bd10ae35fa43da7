//! The module tool calls a model makes: their names, the capability each needs, their specs
//! (`spec.rs`) and what they do to the [`Modules`] (`run.rs`).

mod args;
mod run;
mod spec;

pub use args::{
    AddTaskArgs, KeyArgs, ModuleCall, NoArgs, PageArgs, ProgramIdArgs, RememberArgs, SaveProgramArgs,
    UpdateTaskArgs, WriteNoteArgs,
};

use super::{ModuleError, ModuleKind, Modules};
use crate::actors::runtime::calls::ToolError;
use crate::agent::config::{Capability, CapabilitySet};
use crate::tools::ToolSpec;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// One module tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ModuleTool {
    /// `add_task`: add an open task.
    AddTask,
    /// `update_task`: change a task's status or note.
    UpdateTask,
    /// `list_tasks`: every task.
    ListTasks,
    /// `write_note`: write or append to a notebook page.
    WriteNote,
    /// `read_note`: read a notebook page.
    ReadNote,
    /// `list_notes`: the notebook's pages and their sizes.
    ListNotes,
    /// `remember`: keep a text under a key.
    Remember,
    /// `recall`: the text under a key.
    Recall,
    /// `forget`: remove a key.
    Forget,
    /// `save_program`: save a program under a new id.
    SaveProgram,
    /// `fetch_program`: a saved program by id.
    FetchProgram,
    /// `list_programs`: the retained programs' ids and descriptions.
    ListPrograms,
}

/// What a module tool call returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The result for the model, a JSON object.
    pub result: Value,
    /// The module the call wrote, if it wrote one: what the turn loop checkpoints and whose
    /// other holders it notifies.
    pub changed: Option<ModuleKind>,
}

impl ModuleTool {
    /// Every module tool, grouped by module in [`ModuleKind::ALL`] order.
    pub const ALL: [ModuleTool; 12] = [
        ModuleTool::AddTask,
        ModuleTool::UpdateTask,
        ModuleTool::ListTasks,
        ModuleTool::WriteNote,
        ModuleTool::ReadNote,
        ModuleTool::ListNotes,
        ModuleTool::Remember,
        ModuleTool::Recall,
        ModuleTool::Forget,
        ModuleTool::SaveProgram,
        ModuleTool::FetchProgram,
        ModuleTool::ListPrograms,
    ];

    /// The tool's name, as the model calls it.
    pub fn name(self) -> &'static str {
        match self {
            ModuleTool::AddTask => "add_task",
            ModuleTool::UpdateTask => "update_task",
            ModuleTool::ListTasks => "list_tasks",
            ModuleTool::WriteNote => "write_note",
            ModuleTool::ReadNote => "read_note",
            ModuleTool::ListNotes => "list_notes",
            ModuleTool::Remember => "remember",
            ModuleTool::Recall => "recall",
            ModuleTool::Forget => "forget",
            ModuleTool::SaveProgram => "save_program",
            ModuleTool::FetchProgram => "fetch_program",
            ModuleTool::ListPrograms => "list_programs",
        }
    }

    /// The tool with this name, if it is a module tool.
    pub fn parse(name: &str) -> Option<ModuleTool> {
        ModuleTool::ALL.into_iter().find(|tool| tool.name() == name)
    }

    /// The module the tool works on.
    pub fn module(self) -> ModuleKind {
        match self {
            ModuleTool::AddTask | ModuleTool::UpdateTask | ModuleTool::ListTasks => ModuleKind::Tasks,
            ModuleTool::WriteNote | ModuleTool::ReadNote | ModuleTool::ListNotes => ModuleKind::Notebook,
            ModuleTool::Remember | ModuleTool::Recall | ModuleTool::Forget => ModuleKind::Memories,
            ModuleTool::SaveProgram | ModuleTool::FetchProgram | ModuleTool::ListPrograms => {
                ModuleKind::ProgramLibrary
            }
        }
    }

    /// The capability an agent needs to be offered the tool.
    pub fn capability(self) -> Capability {
        self.module().capability()
    }

    /// The tool as offered to the model: name, description and argument schema.
    pub fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_owned(),
            description: spec::description(*self).to_owned(),
            parameters: spec::parameters(*self),
        }
    }

    /// The specs of every module tool a capability set enables, in [`ModuleTool::ALL`] order.
    pub fn specs_for(caps: &CapabilitySet) -> Vec<ToolSpec> {
        ModuleTool::ALL.iter().filter(|tool| caps.contains(tool.capability())).map(ModuleTool::spec).collect()
    }

    /// Reads the call's arguments object into a typed [`ModuleCall`]. A refusal is
    /// `invalid_arguments` and names the field.
    pub fn parse_args(self, args: Value) -> Result<ModuleCall, ToolError> {
        spec::parse_args(self, args)
    }

    /// The tool a typed call is a call of.
    pub fn of(call: &ModuleCall) -> ModuleTool {
        match call {
            ModuleCall::AddTask(_) => ModuleTool::AddTask,
            ModuleCall::UpdateTask(_) => ModuleTool::UpdateTask,
            ModuleCall::ListTasks => ModuleTool::ListTasks,
            ModuleCall::WriteNote(_) => ModuleTool::WriteNote,
            ModuleCall::ReadNote(_) => ModuleTool::ReadNote,
            ModuleCall::ListNotes => ModuleTool::ListNotes,
            ModuleCall::Remember(_) => ModuleTool::Remember,
            ModuleCall::Recall(_) => ModuleTool::Recall,
            ModuleCall::Forget(_) => ModuleTool::Forget,
            ModuleCall::SaveProgram(_) => ModuleTool::SaveProgram,
            ModuleCall::FetchProgram(_) => ModuleTool::FetchProgram,
            ModuleCall::ListPrograms => ModuleTool::ListPrograms,
        }
    }

    /// Runs the call with its JSON arguments against the modules: a tool whose module is not
    /// held is refused ([`ModuleError::NotHeld`]) before its arguments are read, then
    /// [`Self::parse_args`] and [`ModuleCall::run`]. Arguments that do not fit the schema are
    /// [`ModuleError::BadArguments`], naming the field; a refused call changes nothing.
    pub fn run(&self, args: &Value, modules: &mut Modules) -> Result<ToolOutput, ModuleError> {
        if !modules.holds(self.module()) {
            return Err(ModuleError::NotHeld { tool: self.name(), capability: self.capability() });
        }
        let call = crate::tools::args_object(self.name(), args.clone())
            .and_then(|args| self.parse_args(args))
            .map_err(|e| ModuleError::BadArguments { tool: self.name(), message: e.message })?;
        call.run(modules)
    }
}

impl ModuleCall {
    /// Runs the call against the modules. Refuses a tool whose module is not held
    /// ([`ModuleError::NotHeld`]); a refused call changes nothing.
    pub fn run(self, modules: &mut Modules) -> Result<ToolOutput, ModuleError> {
        let tool = ModuleTool::of(&self);
        if !modules.holds(tool.module()) {
            return Err(ModuleError::NotHeld { tool: tool.name(), capability: tool.capability() });
        }
        run::run(self, modules)
    }
}

impl fmt::Display for ModuleTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
