//! The module tools' typed arguments: what their schemas are derived from and what the
//! registry parses a call into ([`ModuleCall`]). Unknown fields are refused; every byte bound
//! is the module's own limit (`maxLength` counts characters, so it is an upper bound the
//! module narrows to bytes).

use crate::agent::modules::TaskStatus;
use crate::agent::modules::limits::{
    MEMORY_TEXT_BYTES_MAX, NAME_BYTES_MAX, NOTEBOOK_PAGE_BYTES_MAX, PROGRAM_DESCRIPTION_BYTES_MAX,
    PROGRAM_SOURCE_BYTES_MAX, TASK_NOTE_BYTES_MAX, TASK_TITLE_BYTES_MAX,
};
use schemars::JsonSchema;
use serde::Deserialize;

/// A module call with its typed arguments.
#[derive(Clone, Debug, PartialEq)]
pub enum ModuleCall {
    /// `add_task`.
    AddTask(AddTaskArgs),
    /// `update_task`.
    UpdateTask(UpdateTaskArgs),
    /// `list_tasks`.
    ListTasks,
    /// `write_note`.
    WriteNote(WriteNoteArgs),
    /// `read_note`.
    ReadNote(PageArgs),
    /// `list_notes`.
    ListNotes,
    /// `remember`.
    Remember(RememberArgs),
    /// `recall`.
    Recall(KeyArgs),
    /// `forget`.
    Forget(KeyArgs),
    /// `save_program`.
    SaveProgram(SaveProgramArgs),
    /// `fetch_program`.
    FetchProgram(ProgramIdArgs),
    /// `list_programs`.
    ListPrograms,
}

/// The arguments of a tool that takes none.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// `add_task`'s arguments.
#[derive(Clone, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddTaskArgs {
    /// What the task is, in a line.
    #[schemars(extend("maxLength" = TASK_TITLE_BYTES_MAX))]
    pub title: String,
    /// An optional note on the task.
    #[serde(default)]
    #[schemars(extend("maxLength" = TASK_NOTE_BYTES_MAX))]
    pub note: Option<String>,
}

/// `update_task`'s arguments.
#[derive(Clone, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateTaskArgs {
    /// The task's number.
    #[schemars(range(min = 1))]
    pub id: u32,
    /// The task's new status; left out, the status stays.
    #[serde(default)]
    pub status: Option<TaskStatus>,
    /// The task's new note; empty clears it, left out it stays.
    #[serde(default)]
    #[schemars(extend("maxLength" = TASK_NOTE_BYTES_MAX))]
    pub note: Option<String>,
}

/// `write_note`'s arguments.
#[derive(Clone, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteNoteArgs {
    /// The page's name.
    #[schemars(extend("maxLength" = NAME_BYTES_MAX))]
    pub page: String,
    /// The text to write.
    #[schemars(extend("maxLength" = NOTEBOOK_PAGE_BYTES_MAX))]
    pub text: String,
    /// Append to the page instead of replacing it.
    #[serde(default)]
    pub append: bool,
}

/// The arguments naming one notebook page.
#[derive(Clone, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PageArgs {
    /// The page's name.
    #[schemars(extend("maxLength" = NAME_BYTES_MAX))]
    pub page: String,
}

/// `remember`'s arguments.
#[derive(Clone, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberArgs {
    /// The key to remember the text under.
    #[schemars(extend("maxLength" = NAME_BYTES_MAX))]
    pub key: String,
    /// The text to remember.
    #[schemars(extend("maxLength" = MEMORY_TEXT_BYTES_MAX))]
    pub text: String,
}

/// The arguments naming one memory.
#[derive(Clone, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyArgs {
    /// The memory's key.
    #[schemars(extend("maxLength" = NAME_BYTES_MAX))]
    pub key: String,
}

/// `save_program`'s arguments.
#[derive(Clone, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveProgramArgs {
    /// What the program does, in a sentence or two.
    #[schemars(extend("maxLength" = PROGRAM_DESCRIPTION_BYTES_MAX))]
    pub description: String,
    /// The program's source text.
    #[schemars(extend("maxLength" = PROGRAM_SOURCE_BYTES_MAX))]
    pub source: String,
}

/// `fetch_program`'s arguments.
#[derive(Clone, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProgramIdArgs {
    /// The program's id, as save_program or list_programs gave it.
    pub id: String,
}
