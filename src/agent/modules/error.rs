//! [`ModuleError`]: what a module operation or a module tool call refuses, with a stable code.

use crate::agent::config::Capability;
use thiserror::Error;

/// Why a module operation or a module tool call was refused. Nothing is changed by a refused
/// call. Each variant has a stable [`code`](ModuleError::code) for tool results, and a message
/// that says what to do instead.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ModuleError {
    /// The tool's arguments do not fit its schema.
    #[error("bad arguments to {tool}: {message}")]
    BadArguments {
        /// The tool called.
        tool: &'static str,
        /// What is wrong, naming the field.
        message: String,
    },
    /// The tool belongs to a module this agent does not hold.
    #[error("{tool} needs the {capability} module, which this agent does not hold")]
    NotHeld {
        /// The tool called.
        tool: &'static str,
        /// The capability that would hold the module.
        capability: Capability,
    },
    /// No task has this id.
    #[error("there is no task {id}; list_tasks shows the ids that exist")]
    UnknownTask {
        /// The id asked for.
        id: u32,
    },
    /// No notebook page has this name.
    #[error("there is no page named {page:?}; list_notes shows the pages that exist")]
    UnknownPage {
        /// The name asked for.
        page: String,
    },
    /// No memory has this key.
    #[error("there is no memory under {key:?}; nothing has been remembered under that key")]
    UnknownMemory {
        /// The key asked for.
        key: String,
    },
    /// No retained program has this id.
    #[error(
        "there is no program {id:?} in the library (it may have been evicted); list_programs shows those kept"
    )]
    UnknownProgram {
        /// The id asked for.
        id: String,
    },
    /// A text is longer than its bound.
    #[error("the {what} is {bytes} bytes, more than the {max} allowed; shorten it")]
    TooLarge {
        /// What was too long (`task title`, `program source`, …).
        what: &'static str,
        /// Its length, in bytes.
        bytes: usize,
        /// The bound, in bytes.
        max: usize,
    },
    /// A module is full.
    #[error("the {what} holds its maximum of {max}; remove one before adding another")]
    TooMany {
        /// What is full (`tasks`, `notebook pages`, …).
        what: &'static str,
        /// The bound.
        max: usize,
    },
    /// A name, key or title is empty.
    #[error("the {what} must not be empty")]
    Empty {
        /// What was empty.
        what: &'static str,
    },
    /// The library can issue no further id at its id length (or its share of the id space is
    /// used up); no id is ever issued twice, so it refuses instead.
    #[error("the program library has no ids left at length {id_length}; no program can be saved")]
    LibraryIdsExhausted {
        /// The id length, in characters.
        id_length: u8,
    },
}

impl ModuleError {
    /// The stable machine code of the refusal (snake_case).
    pub fn code(&self) -> &'static str {
        match self {
            ModuleError::BadArguments { .. } => "bad_arguments",
            ModuleError::NotHeld { .. } => "not_held",
            ModuleError::UnknownTask { .. } => "unknown_task",
            ModuleError::UnknownPage { .. } => "unknown_page",
            ModuleError::UnknownMemory { .. } => "unknown_memory",
            ModuleError::UnknownProgram { .. } => "unknown_program",
            ModuleError::TooLarge { .. } => "too_large",
            ModuleError::TooMany { .. } => "too_many",
            ModuleError::Empty { .. } => "empty",
            ModuleError::LibraryIdsExhausted { .. } => "library_ids_exhausted",
        }
    }
}

/// Refuses `text` if it is longer than `max` bytes.
pub(super) fn check_len(what: &'static str, text: &str, max: usize) -> Result<(), ModuleError> {
    if text.len() > max { Err(ModuleError::TooLarge { what, bytes: text.len(), max }) } else { Ok(()) }
}

/// Refuses an empty `name`, or one longer than `max` bytes.
pub(super) fn check_name(what: &'static str, name: &str, max: usize) -> Result<(), ModuleError> {
    if name.is_empty() {
        return Err(ModuleError::Empty { what });
    }
    check_len(what, name, max)
}
