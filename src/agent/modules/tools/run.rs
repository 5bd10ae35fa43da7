//! What each module tool does: its arguments, parsed strictly, and its effect on the modules.

use super::{ModuleTool, ToolOutput};
use crate::agent::modules::{ModuleError, ModuleKind, Modules, TaskStatus};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AddTaskArgs {
    title: String,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateTaskArgs {
    id: u32,
    #[serde(default)]
    status: Option<TaskStatus>,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteNoteArgs {
    page: String,
    text: String,
    #[serde(default)]
    append: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PageArgs {
    page: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RememberArgs {
    key: String,
    text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyArgs {
    key: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SaveProgramArgs {
    description: String,
    source: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProgramIdArgs {
    id: String,
}

/// Runs `tool`, whose module the caller checked is held.
pub(super) fn run(tool: ModuleTool, args: &Value, modules: &mut Modules) -> Result<ToolOutput, ModuleError> {
    let not_held = || ModuleError::NotHeld { tool: tool.name(), capability: tool.capability() };
    match tool {
        ModuleTool::AddTask => {
            let AddTaskArgs { title, note } = parse(tool, args)?;
            let tasks = modules.tasks.as_mut().ok_or_else(not_held)?;
            let task = tasks.add(title, note)?;
            Ok(wrote(ModuleKind::Tasks, json!({ "task": task })))
        }
        ModuleTool::UpdateTask => {
            let UpdateTaskArgs { id, status, note } = parse(tool, args)?;
            let tasks = modules.tasks.as_mut().ok_or_else(not_held)?;
            let changes = status.is_some() || note.is_some();
            let task = tasks.update(id, status, note)?;
            let result = json!({ "task": task });
            Ok(if changes { wrote(ModuleKind::Tasks, result) } else { read(result) })
        }
        ModuleTool::ListTasks => {
            let NoArgs {} = parse(tool, args)?;
            let tasks = modules.tasks.as_ref().ok_or_else(not_held)?;
            Ok(read(json!({ "tasks": tasks.tasks() })))
        }
        ModuleTool::WriteNote => {
            let WriteNoteArgs { page, text, append } = parse(tool, args)?;
            let notebook = modules.notebook.as_mut().ok_or_else(not_held)?;
            let bytes = notebook.write(page.clone(), text, append)?;
            Ok(wrote(ModuleKind::Notebook, json!({ "page": page, "bytes": bytes })))
        }
        ModuleTool::ReadNote => {
            let PageArgs { page } = parse(tool, args)?;
            let notebook = modules.notebook.as_ref().ok_or_else(not_held)?;
            let text = notebook.read(&page).ok_or_else(|| ModuleError::UnknownPage { page: page.clone() })?;
            Ok(read(json!({ "page": page, "text": text })))
        }
        ModuleTool::ListNotes => {
            let NoArgs {} = parse(tool, args)?;
            let notebook = modules.notebook.as_ref().ok_or_else(not_held)?;
            let pages: Vec<Value> =
                notebook.pages().map(|(page, text)| json!({ "page": page, "bytes": text.len() })).collect();
            Ok(read(json!({ "pages": pages })))
        }
        ModuleTool::Remember => {
            let RememberArgs { key, text } = parse(tool, args)?;
            let memories = modules.memories.as_mut().ok_or_else(not_held)?;
            let replaced = memories.remember(key.clone(), text)?;
            Ok(wrote(ModuleKind::Memories, json!({ "key": key, "replaced": replaced })))
        }
        ModuleTool::Recall => {
            let KeyArgs { key } = parse(tool, args)?;
            let memories = modules.memories.as_ref().ok_or_else(not_held)?;
            let text =
                memories.recall(&key).ok_or_else(|| ModuleError::UnknownMemory { key: key.clone() })?;
            Ok(read(json!({ "key": key, "text": text })))
        }
        ModuleTool::Forget => {
            let KeyArgs { key } = parse(tool, args)?;
            let memories = modules.memories.as_mut().ok_or_else(not_held)?;
            let forgotten = memories.forget(&key);
            let result = json!({ "key": key, "forgotten": forgotten });
            Ok(if forgotten { wrote(ModuleKind::Memories, result) } else { read(result) })
        }
        ModuleTool::SaveProgram => {
            let SaveProgramArgs { description, source } = parse(tool, args)?;
            let library = modules.library.as_mut().ok_or_else(not_held)?;
            let before: Vec<String> = library.programs().map(|p| p.id.clone()).collect();
            let id = library.save(description, source)?.id.clone();
            let evicted: Vec<String> =
                before.into_iter().filter(|old| library.fetch(old).is_none()).collect();
            Ok(wrote(ModuleKind::ProgramLibrary, json!({ "id": id, "evicted": evicted })))
        }
        ModuleTool::FetchProgram => {
            let ProgramIdArgs { id } = parse(tool, args)?;
            let library = modules.library.as_ref().ok_or_else(not_held)?;
            let program = library.fetch(&id).ok_or_else(|| ModuleError::UnknownProgram { id: id.clone() })?;
            Ok(read(json!({ "program": program })))
        }
        ModuleTool::ListPrograms => {
            let NoArgs {} = parse(tool, args)?;
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

/// The tool's arguments, or [`ModuleError::BadArguments`] naming the field at fault. `null`
/// stands for no arguments, as some models send it for tools that take none; any other value
/// that is not an object is refused (serde would read `[]` as an empty struct).
fn parse<T: DeserializeOwned>(tool: ModuleTool, args: &Value) -> Result<T, ModuleError> {
    let args = match args {
        Value::Null => json!({}),
        Value::Object(_) => args.clone(),
        other => {
            let message = format!("the arguments must be a JSON object, not {}", json_kind(other));
            return Err(ModuleError::BadArguments { tool: tool.name(), message });
        }
    };
    serde_path_to_error::deserialize::<_, T>(args).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        // Missing and unknown fields at the top level name themselves.
        let message = if path == "." { inner.to_string() } else { format!("`{path}`: {inner}") };
        ModuleError::BadArguments { tool: tool.name(), message }
    })
}

/// The JSON kind of a value, for messages.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
