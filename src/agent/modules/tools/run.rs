//! What each module call does to the modules.

use super::args::{
    AddTaskArgs, KeyArgs, ModuleCall, PageArgs, ProgramIdArgs, RememberArgs, SaveProgramArgs, UpdateTaskArgs,
    WriteNoteArgs,
};
use super::{ModuleTool, ToolOutput};
use crate::agent::modules::{ModuleError, ModuleKind, Modules};
use serde_json::{Value, json};

/// Runs `call`, whose module the caller checked is held.
pub(super) fn run(call: ModuleCall, modules: &mut Modules) -> Result<ToolOutput, ModuleError> {
    let tool = ModuleTool::of(&call);
    let not_held = || ModuleError::NotHeld { tool: tool.name(), capability: tool.capability() };
    match call {
        ModuleCall::AddTask(AddTaskArgs { title, note }) => {
            let tasks = modules.tasks.as_mut().ok_or_else(not_held)?;
            let task = tasks.add(title, note)?;
            Ok(wrote(ModuleKind::Tasks, json!({ "task": task })))
        }
        ModuleCall::UpdateTask(UpdateTaskArgs { id, status, note }) => {
            let tasks = modules.tasks.as_mut().ok_or_else(not_held)?;
            let changes = status.is_some() || note.is_some();
            let task = tasks.update(id, status, note)?;
            let result = json!({ "task": task });
            Ok(if changes { wrote(ModuleKind::Tasks, result) } else { read(result) })
        }
        ModuleCall::ListTasks => {
            let tasks = modules.tasks.as_ref().ok_or_else(not_held)?;
            Ok(read(json!({ "tasks": tasks.tasks() })))
        }
        ModuleCall::WriteNote(WriteNoteArgs { page, text, append }) => {
            let notebook = modules.notebook.as_mut().ok_or_else(not_held)?;
            let bytes = notebook.write(page.clone(), text, append)?;
            Ok(wrote(ModuleKind::Notebook, json!({ "page": page, "bytes": bytes })))
        }
        ModuleCall::ReadNote(PageArgs { page }) => {
            let notebook = modules.notebook.as_ref().ok_or_else(not_held)?;
            let text = notebook.read(&page).ok_or_else(|| ModuleError::UnknownPage { page: page.clone() })?;
            Ok(read(json!({ "page": page, "text": text })))
        }
        ModuleCall::ListNotes => {
            let notebook = modules.notebook.as_ref().ok_or_else(not_held)?;
            let pages: Vec<Value> =
                notebook.pages().map(|(page, text)| json!({ "page": page, "bytes": text.len() })).collect();
            Ok(read(json!({ "pages": pages })))
        }
        ModuleCall::Remember(RememberArgs { key, text }) => {
            let memories = modules.memories.as_mut().ok_or_else(not_held)?;
            let replaced = memories.remember(key.clone(), text)?;
            Ok(wrote(ModuleKind::Memories, json!({ "key": key, "replaced": replaced })))
        }
        ModuleCall::Recall(KeyArgs { key }) => {
            let memories = modules.memories.as_ref().ok_or_else(not_held)?;
            let text =
                memories.recall(&key).ok_or_else(|| ModuleError::UnknownMemory { key: key.clone() })?;
            Ok(read(json!({ "key": key, "text": text })))
        }
        ModuleCall::Forget(KeyArgs { key }) => {
            let memories = modules.memories.as_mut().ok_or_else(not_held)?;
            let forgotten = memories.forget(&key);
            let result = json!({ "key": key, "forgotten": forgotten });
            Ok(if forgotten { wrote(ModuleKind::Memories, result) } else { read(result) })
        }
        ModuleCall::SaveProgram(SaveProgramArgs { description, source }) => {
            let library = modules.library.as_mut().ok_or_else(not_held)?;
            let before: Vec<String> = library.programs().map(|p| p.id.clone()).collect();
            let id = library.save(description, source)?.id.clone();
            let evicted: Vec<String> =
                before.into_iter().filter(|old| library.fetch(old).is_none()).collect();
            Ok(wrote(ModuleKind::ProgramLibrary, json!({ "id": id, "evicted": evicted })))
        }
        ModuleCall::FetchProgram(ProgramIdArgs { id }) => {
            let library = modules.library.as_ref().ok_or_else(not_held)?;
            let program = library.fetch(&id).ok_or_else(|| ModuleError::UnknownProgram { id: id.clone() })?;
            Ok(read(json!({ "program": program })))
        }
        ModuleCall::ListPrograms => {
            let library = modules.library.as_ref().ok_or_else(not_held)?;
            let programs: Vec<Value> =
                library.programs().map(|p| json!({ "id": p.id, "description": p.description })).collect();
            Ok(read(json!({
                "programs": programs,
                "retention_entries": library.retention_entries().get(),
            })))
        }
    }
}

/// A result that wrote `module`.
fn wrote(module: ModuleKind, result: Value) -> ToolOutput {
    ToolOutput { result, changed: Some(module) }
}

/// A result that wrote nothing.
fn read(result: Value) -> ToolOutput {
    ToolOutput { result, changed: None }
}
