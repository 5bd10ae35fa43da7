//! The modules' bounds, each with the reason for its value. A module is kept as the JSON
//! payload of one kernel object, so every module must stay well inside
//! [`crate::actors::limits::OBJECT_BYTES_MAX`] (1 MiB) once serialized.

/// Most text one module holds in total, in bytes: titles and notes of tasks, the pages of a
/// notebook, the texts of memories, the descriptions and sources of retained programs. Half of
/// an object payload, so that JSON escaping and field names fit in the other half.
pub const MODULE_TEXT_BYTES_MAX: usize = 512 * 1024;

/// Longest page name or memory key, in bytes. A name is what a model repeats to read the
/// page back; it is a word or a short phrase, and listings repeat every one of them.
pub const NAME_BYTES_MAX: usize = 128;

/// Most tasks one task list holds, open or not. The whole list is returned by `list_tasks`;
/// past this it is a backlog, not a plan a model can read in one turn.
pub const TASKS_MAX: usize = 256;

/// Longest task title, in bytes: a line, not a specification (that belongs in the note or
/// the notebook).
pub const TASK_TITLE_BYTES_MAX: usize = 512;

/// Longest task note, in bytes: a few sentences of status.
pub const TASK_NOTE_BYTES_MAX: usize = 2048;

/// Most pages one notebook holds. `list_notes` returns every page name.
pub const NOTEBOOK_PAGES_MAX: usize = 256;

/// Longest notebook page, in bytes: about 16k tokens, more than a model should read back in
/// one call; appending past it is refused rather than silently cut.
pub const NOTEBOOK_PAGE_BYTES_MAX: usize = 64 * 1024;

/// Most memories one module holds.
pub const MEMORIES_MAX: usize = 1024;

/// Longest memory text, in bytes: a memory is a fact or a lesson, recalled by key; long
/// material belongs in the notebook.
pub const MEMORY_TEXT_BYTES_MAX: usize = 4096;

/// Longest program description, in bytes: a sentence or two, listed by `list_programs`.
pub const PROGRAM_DESCRIPTION_BYTES_MAX: usize = 1024;

/// Longest program source, in bytes: 64 KiB is a large script; a library of such programs is
/// bounded by [`MODULE_TEXT_BYTES_MAX`] as well, past which the oldest programs are evicted.
pub const PROGRAM_SOURCE_BYTES_MAX: usize = 64 * 1024;
