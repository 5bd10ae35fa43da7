//! The module tools' descriptions and argument schemas, written by hand: each schema is an
//! object with `additionalProperties: false`, matching the strict argument types of `run.rs`.

use super::ModuleTool;
use crate::agent::modules::limits::{
    MEMORY_TEXT_BYTES_MAX, NAME_BYTES_MAX, NOTEBOOK_PAGE_BYTES_MAX, PROGRAM_DESCRIPTION_BYTES_MAX,
    PROGRAM_SOURCE_BYTES_MAX, TASK_NOTE_BYTES_MAX, TASK_TITLE_BYTES_MAX,
};
use serde_json::{Map, Value, json};

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

/// The JSON Schema of the tool's arguments object.
pub(super) fn parameters(tool: ModuleTool) -> Value {
    match tool {
        ModuleTool::AddTask => object(
            json!({
                "title": text("What the task is, in a line.", TASK_TITLE_BYTES_MAX),
                "note": text("An optional note on the task.", TASK_NOTE_BYTES_MAX),
            }),
            &["title"],
        ),
        ModuleTool::UpdateTask => object(
            json!({
                "id": {"type": "integer", "minimum": 1, "description": "The task's number."},
                "status": {
                    "type": "string",
                    "enum": ["open", "in_progress", "done", "dropped"],
                    "description": "The task's new status; left out, the status stays.",
                },
                "note": text("The task's new note; empty clears it, left out it stays.", TASK_NOTE_BYTES_MAX),
            }),
            &["id"],
        ),
        ModuleTool::WriteNote => object(
            json!({
                "page": text("The page's name.", NAME_BYTES_MAX),
                "text": text("The text to write.", NOTEBOOK_PAGE_BYTES_MAX),
                "append": {
                    "type": "boolean",
                    "description": "Append to the page instead of replacing it (default false).",
                },
            }),
            &["page", "text"],
        ),
        ModuleTool::ReadNote => object(json!({"page": text("The page's name.", NAME_BYTES_MAX)}), &["page"]),
        ModuleTool::Remember => object(
            json!({
                "key": text("The key to remember the text under.", NAME_BYTES_MAX),
                "text": text("The text to remember.", MEMORY_TEXT_BYTES_MAX),
            }),
            &["key", "text"],
        ),
        ModuleTool::Recall => object(json!({"key": text("The key to recall.", NAME_BYTES_MAX)}), &["key"]),
        ModuleTool::Forget => object(json!({"key": text("The key to forget.", NAME_BYTES_MAX)}), &["key"]),
        ModuleTool::SaveProgram => object(
            json!({
                "description": text("What the program does, in a sentence or two.", PROGRAM_DESCRIPTION_BYTES_MAX),
                "source": text("The program's source text.", PROGRAM_SOURCE_BYTES_MAX),
            }),
            &["description", "source"],
        ),
        ModuleTool::FetchProgram => object(
            json!({"id": {"type": "string", "description": "The program's id, as save_program or list_programs gave it."}}),
            &["id"],
        ),
        ModuleTool::ListTasks | ModuleTool::ListNotes | ModuleTool::ListPrograms => object(json!({}), &[]),
    }
}

/// An arguments object with these properties, these required, and no others.
fn object(properties: Value, required: &[&str]) -> Value {
    let properties = match properties {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// A string property of at most `max_bytes` bytes (the schema bounds characters; the byte
/// bound is stated in the description and enforced by the module).
fn text(description: &str, max_bytes: usize) -> Value {
    json!({"type": "string", "description": format!("{description} At most {max_bytes} bytes.")})
}
