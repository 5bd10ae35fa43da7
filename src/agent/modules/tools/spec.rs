//! The module tools' descriptions, their argument schemas (derived from the typed arguments
//! of `args.rs`) and the parse of a call's arguments into a [`ModuleCall`].

use super::ModuleTool;
use super::args::{
    AddTaskArgs, KeyArgs, ModuleCall, NoArgs, PageArgs, ProgramIdArgs, RememberArgs, SaveProgramArgs,
    UpdateTaskArgs, WriteNoteArgs,
};
use crate::actors::runtime::calls::ToolError;
use crate::tools::{from_args, parameters_of};
use serde_json::Value;

/// What the tool does and when to call it, for the model.
pub(super) fn description(tool: ModuleTool) -> &'static str {
    match tool {
        ModuleTool::AddTask => {
            "Add a task to your task list, open, with an optional note. Tasks are numbered from 1 and \
             a number is never reused. Use the task list to plan work of several steps and to keep \
             track of it across turns."
        }
        ModuleTool::UpdateTask => {
            "Change a task's status (open, in_progress, done or dropped), its note, or both. An \
             empty note clears the note. Refused for a task number that does not exist."
        }
        ModuleTool::ListTasks => "List every task on your task list with its number, title, status and note.",
        ModuleTool::WriteNote => {
            "Write a page of your notebook: replace its text, or append to it with append set to \
             true. Writing a page that does not exist creates it. Use the notebook for longer \
             working material you want to read back later."
        }
        ModuleTool::ReadNote => "Read the text of one page of your notebook by its name.",
        ModuleTool::ListNotes => "List the pages of your notebook by name, with each page's length in bytes.",
        ModuleTool::Remember => {
            "Remember a text under a key, replacing whatever was remembered under that key. \
             Memories are short facts or lessons you want to recall by key later."
        }
        ModuleTool::Recall => "Recall the text remembered under a key.",
        ModuleTool::Forget => "Forget the text remembered under a key; says whether there was one.",
        ModuleTool::SaveProgram => {
            "Save a program (its source and a short description) to your program library under a \
             newly issued id, which the result gives. The library keeps a bounded number of \
             programs; saving past it evicts the oldest, whose ids are listed in the result."
        }
        ModuleTool::FetchProgram => "Fetch a saved program, description and source, by its id.",
        ModuleTool::ListPrograms => {
            "List the programs kept in your program library, oldest first, by id and description \
             (without their sources; fetch one with fetch_program)."
        }
    }
}

/// The JSON Schema of the tool's arguments object, derived from its argument type.
pub(super) fn parameters(tool: ModuleTool) -> Value {
    match tool {
        ModuleTool::AddTask => parameters_of::<AddTaskArgs>(),
        ModuleTool::UpdateTask => parameters_of::<UpdateTaskArgs>(),
        ModuleTool::WriteNote => parameters_of::<WriteNoteArgs>(),
        ModuleTool::ReadNote => parameters_of::<PageArgs>(),
        ModuleTool::Remember => parameters_of::<RememberArgs>(),
        ModuleTool::Recall | ModuleTool::Forget => parameters_of::<KeyArgs>(),
        ModuleTool::SaveProgram => parameters_of::<SaveProgramArgs>(),
        ModuleTool::FetchProgram => parameters_of::<ProgramIdArgs>(),
        ModuleTool::ListTasks | ModuleTool::ListNotes | ModuleTool::ListPrograms => parameters_of::<NoArgs>(),
    }
}

/// The typed call of a module tool's arguments object.
pub(super) fn parse_args(tool: ModuleTool, args: Value) -> Result<ModuleCall, ToolError> {
    Ok(match tool {
        ModuleTool::AddTask => ModuleCall::AddTask(from_args(args)?),
        ModuleTool::UpdateTask => ModuleCall::UpdateTask(from_args(args)?),
        ModuleTool::ListTasks => no_args(args, ModuleCall::ListTasks)?,
        ModuleTool::WriteNote => ModuleCall::WriteNote(from_args(args)?),
        ModuleTool::ReadNote => ModuleCall::ReadNote(from_args(args)?),
        ModuleTool::ListNotes => no_args(args, ModuleCall::ListNotes)?,
        ModuleTool::Remember => ModuleCall::Remember(from_args(args)?),
        ModuleTool::Recall => ModuleCall::Recall(from_args(args)?),
        ModuleTool::Forget => ModuleCall::Forget(from_args(args)?),
        ModuleTool::SaveProgram => ModuleCall::SaveProgram(from_args(args)?),
        ModuleTool::FetchProgram => ModuleCall::FetchProgram(from_args(args)?),
        ModuleTool::ListPrograms => no_args(args, ModuleCall::ListPrograms)?,
    })
}

fn no_args(args: Value, call: ModuleCall) -> Result<ModuleCall, ToolError> {
    let NoArgs {} = from_args(args)?;
    Ok(call)
}
