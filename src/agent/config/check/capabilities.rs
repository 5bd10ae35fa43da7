//! A profile's capability set on its own: `history` on, required settings present, settings
//! within their limits. What depends on the rest of the profile or on machines (the roster,
//! machine states) is `profiles.rs`'s.

use super::super::capability::{
    Capability, CapabilitySet, Memories, ProgramLibrary, RawCapabilities, RawEntry, Switchable,
};
use super::Problems;
use crate::agent::config::report::ProblemCode;
use crate::agent::limits::{
    PROGRAM_ID_LENGTH_DEFAULT, PROGRAM_ID_LENGTH_MAX, PROGRAM_ID_LENGTH_MIN,
    PROGRAM_RETENTION_ENTRIES_DEFAULT, PROGRAM_RETENTION_ENTRIES_MAX,
};
use std::num::NonZeroU32;

/// Which capabilities an entry turns on, read straight from the file, so that the checks
/// across capabilities run even when a capability's own settings are at fault.
pub(super) struct Switches {
    pub(super) subagents: bool,
    pub(super) exec: bool,
    pub(super) fork: bool,
    pub(super) transition_state: bool,
}

impl Switches {
    pub(super) fn of(raw: &RawCapabilities) -> Self {
        Switches {
            subagents: on(&raw.subagents),
            exec: on(&raw.exec),
            fork: on(&raw.fork),
            transition_state: on(&raw.transition_state),
        }
    }
}

fn on<T: Switchable>(entry: &Option<RawEntry<T>>) -> bool {
    entry.as_ref().is_some_and(RawEntry::is_enabled)
}

/// Checks a `capabilities` table at `path` (`profiles.planner.capabilities`). The set is
/// `None` when a problem was recorded.
pub(super) fn check_capabilities(
    raw: &RawCapabilities,
    path: &str,
    problems: &mut Problems,
) -> Option<CapabilitySet> {
    let before = problems.count();
    if raw.history.as_ref().is_some_and(|e| !e.is_enabled()) {
        problems.push(
            format!("{path}.history"),
            ProblemCode::HistoryDisabled,
            Some(Capability::History),
            "history is in every capability set (it is the conversation itself) and cannot be turned \
             off; remove `history` or turn it on",
        );
    }
    let memories = check_memories(raw, path, problems);
    let program_library = check_program_library(raw, path, problems);
    if problems.count() != before {
        return None;
    }
    let switches = Switches::of(raw);
    Some(CapabilitySet {
        tasks: on(&raw.tasks),
        notebook: on(&raw.notebook),
        memories,
        program_library,
        subagents: switches.subagents,
        exec: switches.exec,
        fork: switches.fork,
        transition_state: switches.transition_state,
    })
}

fn check_memories(raw: &RawCapabilities, path: &str, problems: &mut Problems) -> Option<Memories> {
    let entry = raw.memories.as_ref().filter(|e| e.is_enabled())?;
    match entry.table().and_then(|t| t.scope) {
        Some(scope) => Some(Memories { scope }),
        None => {
            problems.push(
                format!("{path}.memories.scope"),
                ProblemCode::MissingField,
                Some(Capability::Memories),
                "memories need a `scope`: `isolated` (a fork gets its own copy), `shared` (one instance \
                 per profile), `inherited` (a fork is linked to its forker's, read/write) or `read-only` \
                 (linked, and the fork may not write)",
            );
            None
        }
    }
}

fn check_program_library(
    raw: &RawCapabilities,
    path: &str,
    problems: &mut Problems,
) -> Option<ProgramLibrary> {
    let entry = raw.program_library.as_ref()?;
    let table = entry.table();
    // Values written are checked even when the capability is off: a disabled entry is still
    // what a later edit turns on.
    let retention = match table.and_then(|t| t.retention_entries) {
        None => NonZeroU32::new(PROGRAM_RETENTION_ENTRIES_DEFAULT),
        Some(n) => Some(n)
            .filter(|n| (1..=PROGRAM_RETENTION_ENTRIES_MAX).contains(n))
            .and_then(|n| u32::try_from(n).ok())
            .and_then(NonZeroU32::new),
    };
    if retention.is_none() {
        problems.push(
            format!("{path}.program_library.retention_entries"),
            ProblemCode::ProgramRetentionOutOfRange,
            Some(Capability::ProgramLibrary),
            format!(
                "the program library keeps 1 to {PROGRAM_RETENTION_ENTRIES_MAX} programs; set \
                 `retention_entries` within that, or leave it out for {PROGRAM_RETENTION_ENTRIES_DEFAULT}"
            ),
        );
    }
    let id_length = match table.and_then(|t| t.id_length) {
        None => Some(PROGRAM_ID_LENGTH_DEFAULT),
        Some(n) => Some(n)
            .filter(|n| (PROGRAM_ID_LENGTH_MIN..=PROGRAM_ID_LENGTH_MAX).contains(n))
            .and_then(|n| u8::try_from(n).ok()),
    };
    if id_length.is_none() {
        problems.push(
            format!("{path}.program_library.id_length"),
            ProblemCode::ProgramIdLengthOutOfRange,
            Some(Capability::ProgramLibrary),
            format!(
                "program ids are {PROGRAM_ID_LENGTH_MIN} to {PROGRAM_ID_LENGTH_MAX} characters long (fewer \
                 run out over a long session, more cost tokens each time the model says one); set \
                 `id_length` within that, or leave it out for {PROGRAM_ID_LENGTH_DEFAULT}"
            ),
        );
    }
    if !entry.is_enabled() {
        return None;
    }
    Some(ProgramLibrary { retention_entries: retention?, id_length: id_length? })
}
