//! The modules an agent holds, as pure serializable data: the task list, the notebook, the
//! memories and the program library (the conversation, `history`, is the
//! [window](crate::agent::window)). The turn loop keeps each module as the JSON payload of a
//! kernel object; nothing here does I/O. The tools, the exec table and the id scheme are
//! written down in `docs/agent-modules.md`.
//!
//! - One module each: [`TaskList`] (`tasks.rs`), [`Notebook`] (`notebook.rs`), [`Memories`]
//!   (`memories.rs`), [`ProgramLibrary`] with its fork-safe id issuer (`library.rs`).
//! - `tools/`: the module tool calls a model makes ([`ModuleTool`]), JSON in and
//!   [`ToolOutput`] out; `spec.rs` their schemas, `run.rs` their arguments and effects.
//! - `table.rs`: the exec module table ([`plan_transfer`]) and the successor's
//!   [`opening_note`].
//! - [`limits`]: the modules' bounds. `error.rs`: [`ModuleError`], every refusal, with a
//!   stable code.

mod error;
mod library;
pub mod limits;
mod memories;
mod notebook;
mod table;
mod tasks;
mod tools;

pub use error::ModuleError;
pub use library::{Program, ProgramLibrary};
pub use memories::Memories;
pub use notebook::Notebook;
pub use table::{ModuleAction, ModuleKind, ModuleMove, opening_note, plan_transfer};
pub use tasks::{Task, TaskList, TaskStatus};
pub use tools::{
    AddTaskArgs, KeyArgs, ModuleCall, ModuleTool, NoArgs, PageArgs, ProgramIdArgs, RememberArgs,
    SaveProgramArgs, ToolOutput, UpdateTaskArgs, WriteNoteArgs,
};

use crate::agent::config::CapabilitySet;
use serde::{Deserialize, Serialize};

/// The contents of the modules an agent holds besides its conversation: `Some` for each
/// module its capability set enables. (How memories are shared with forks, their scope, is
/// the turn loop's: it links the memory objects; this holds only the contents.)
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Modules {
    /// The task list, if held.
    pub tasks: Option<TaskList>,
    /// The notebook, if held.
    pub notebook: Option<Notebook>,
    /// The memories, if held.
    pub memories: Option<Memories>,
    /// The program library, if held.
    pub library: Option<ProgramLibrary>,
}

impl Modules {
    /// Every module `caps` enables, empty; the library with the set's retention and id length.
    pub fn fresh_for(caps: &CapabilitySet) -> Modules {
        let mut modules = Modules::default();
        for module in ModuleKind::ALL {
            if caps.contains(module.capability()) {
                modules.init(module, caps);
            }
        }
        modules
    }

    /// Whether the module is held (`history` always is).
    pub fn holds(&self, module: ModuleKind) -> bool {
        match module {
            ModuleKind::History => true,
            ModuleKind::Tasks => self.tasks.is_some(),
            ModuleKind::Notebook => self.notebook.is_some(),
            ModuleKind::Memories => self.memories.is_some(),
            ModuleKind::ProgramLibrary => self.library.is_some(),
        }
    }

    /// Applies an exec to `successor`'s capability set: drops the modules it does not hold,
    /// starts empty the ones only it holds, keeps the rest with their contents (the library
    /// re-resolved to the successor's retention and id length). Returns the table applied,
    /// [`plan_transfer`] of what was held against `successor`.
    pub fn apply_transfer(&mut self, successor: &CapabilitySet) -> Vec<ModuleMove> {
        let moves = table::plan(|m| self.holds(m), |m| successor.contains(m.capability()));
        for ModuleMove { module, action } in &moves {
            match action {
                ModuleAction::Dropped => self.drop_module(*module),
                ModuleAction::Fresh => self.init(*module, successor),
                ModuleAction::Transferred => {
                    if let (ModuleKind::ProgramLibrary, Some(library), Some(settings)) =
                        (module, self.library.as_mut(), successor.program_library())
                    {
                        library.reresolve(settings.retention_entries(), settings.id_length());
                    }
                }
            }
        }
        debug_assert!(ModuleKind::ALL.iter().all(|m| self.holds(*m) == successor.contains(m.capability())));
        moves
    }

    /// Puts an empty module in place.
    fn init(&mut self, module: ModuleKind, caps: &CapabilitySet) {
        match module {
            ModuleKind::History => {}
            ModuleKind::Tasks => self.tasks = Some(TaskList::new()),
            ModuleKind::Notebook => self.notebook = Some(Notebook::new()),
            ModuleKind::Memories => self.memories = Some(Memories::new()),
            ModuleKind::ProgramLibrary => {
                self.library = caps
                    .program_library()
                    .map(|settings| ProgramLibrary::new(settings.retention_entries(), settings.id_length()));
            }
        }
    }

    fn drop_module(&mut self, module: ModuleKind) {
        match module {
            ModuleKind::History => {}
            ModuleKind::Tasks => self.tasks = None,
            ModuleKind::Notebook => self.notebook = None,
            ModuleKind::Memories => self.memories = None,
            ModuleKind::ProgramLibrary => self.library = None,
        }
    }
}
