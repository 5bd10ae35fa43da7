//! The exec module table: which modules an exec'd successor takes over, which are dropped
//! and which start fresh, and the note that tells the successor so.

use crate::agent::config::{Capability, CapabilitySet};
use serde::{Deserialize, Serialize};
use std::fmt;

/// One module an agent may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModuleKind {
    /// `history`: the conversation window; in every capability set.
    History,
    /// `tasks`: the task list.
    Tasks,
    /// `notebook`: the notebook.
    Notebook,
    /// `memories`: the memories.
    Memories,
    /// `program_library`: the program library.
    ProgramLibrary,
}

impl ModuleKind {
    /// Every module, in the order tables and notes list them.
    pub const ALL: [ModuleKind; 5] = [
        ModuleKind::History,
        ModuleKind::Tasks,
        ModuleKind::Notebook,
        ModuleKind::Memories,
        ModuleKind::ProgramLibrary,
    ];

    /// The module's id, the same as its capability's.
    pub fn as_str(self) -> &'static str {
        match self {
            ModuleKind::History => "history",
            ModuleKind::Tasks => "tasks",
            ModuleKind::Notebook => "notebook",
            ModuleKind::Memories => "memories",
            ModuleKind::ProgramLibrary => "program_library",
        }
    }

    /// The capability that holds the module.
    pub fn capability(self) -> Capability {
        match self {
            ModuleKind::History => Capability::History,
            ModuleKind::Tasks => Capability::Tasks,
            ModuleKind::Notebook => Capability::Notebook,
            ModuleKind::Memories => Capability::Memories,
            ModuleKind::ProgramLibrary => Capability::ProgramLibrary,
        }
    }

    /// The module, in the words of a note to the model (`your task list`).
    fn held_phrase(self) -> &'static str {
        match self {
            ModuleKind::History => "your conversation history",
            ModuleKind::Tasks => "your task list",
            ModuleKind::Notebook => "your notebook",
            ModuleKind::Memories => "your memories",
            ModuleKind::ProgramLibrary => "your program library",
        }
    }

    /// The module when it starts empty, in the words of a note to the model.
    fn fresh_phrase(self) -> &'static str {
        match self {
            ModuleKind::History => "an empty conversation history",
            ModuleKind::Tasks => "an empty task list",
            ModuleKind::Notebook => "an empty notebook",
            ModuleKind::Memories => "no memories",
            ModuleKind::ProgramLibrary => "an empty program library",
        }
    }
}

impl fmt::Display for ModuleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an exec does with one module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModuleAction {
    /// Held before and by the successor: it comes across with its contents.
    Transferred,
    /// Held before, not by the successor: it and its contents are gone.
    Dropped,
    /// Held by the successor only: it starts empty.
    Fresh,
}

impl ModuleAction {
    /// The action as written in events and documentation.
    pub fn as_str(self) -> &'static str {
        match self {
            ModuleAction::Transferred => "transferred",
            ModuleAction::Dropped => "dropped",
            ModuleAction::Fresh => "fresh",
        }
    }
}

impl fmt::Display for ModuleAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One row of the exec module table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModuleMove {
    /// The module.
    pub module: ModuleKind,
    /// What the exec does with it.
    pub action: ModuleAction,
}

/// The exec module table from one capability set to a successor's: one row per module held
/// by either, in [`ModuleKind::ALL`] order (`history` is always transferred); a module held by
/// neither has no row.
pub fn plan_transfer(held: &CapabilitySet, successor: &CapabilitySet) -> Vec<ModuleMove> {
    plan(|m| held.contains(m.capability()), |m| successor.contains(m.capability()))
}

/// The table from "held before" and "held by the successor" predicates.
pub(super) fn plan(
    held: impl Fn(ModuleKind) -> bool,
    successor: impl Fn(ModuleKind) -> bool,
) -> Vec<ModuleMove> {
    ModuleKind::ALL
        .into_iter()
        .filter_map(|module| {
            // The conversation is in every capability set, so it always comes across.
            let always = module == ModuleKind::History;
            let action = match (always || held(module), always || successor(module)) {
                (true, true) => ModuleAction::Transferred,
                (true, false) => ModuleAction::Dropped,
                (false, true) => ModuleAction::Fresh,
                (false, false) => return None,
            };
            Some(ModuleMove { module, action })
        })
        .collect()
}

/// The note put at the tail of an exec'd successor's window: who it is now and was, which
/// modules came across with their contents, which were dropped with their contents, which
/// start empty, the machine state it entered (if any), what its memories are when a profile's
/// shared instance is involved (`memories`, a sentence), then the prompt it was given (if any).
pub fn opening_note(
    moves: &[ModuleMove],
    successor: &str,
    predecessor: &str,
    machine_entry: Option<(&str, &str)>,
    memories: Option<&str>,
    prompt: Option<&str>,
) -> String {
    let with = |action: ModuleAction, phrase: fn(ModuleKind) -> &'static str| -> Vec<&'static str> {
        moves.iter().filter(|m| m.action == action).map(|m| phrase(m.module)).collect()
    };
    let mut note = format!("You are now {successor}; until now you were {predecessor}.");
    let transferred = with(ModuleAction::Transferred, ModuleKind::held_phrase);
    if !transferred.is_empty() {
        note.push_str(&format!(" Came across with their contents: {}.", join(&transferred)));
    }
    let dropped = with(ModuleAction::Dropped, ModuleKind::held_phrase);
    if !dropped.is_empty() {
        note.push_str(&format!(" Dropped, and their contents are gone: {}.", join(&dropped)));
    }
    let fresh = with(ModuleAction::Fresh, ModuleKind::fresh_phrase);
    if !fresh.is_empty() {
        note.push_str(&format!(" Starting fresh: you have {}.", join(&fresh)));
    }
    if let Some((machine, state)) = machine_entry {
        note.push_str(&format!(
            " You are now in machine {machine} at its entry state {state}; move on with transition_state."
        ));
    }
    if let Some(memories) = memories {
        note.push_str(memories);
    }
    if let Some(prompt) = prompt.filter(|p| !p.is_empty()) {
        note.push_str("\n\n");
        note.push_str(prompt);
    }
    note
}

/// `a`, `a and b`, `a, b and c`.
fn join(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}
