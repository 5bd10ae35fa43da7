//! A profile's capability set on its own: `history` on, required settings present, settings
//! within their limits. What depends on the rest of the profile or on machines (the roster,
//! machine states) is `profiles.rs`'s.

use super::super::capability::{
    Capability, CapabilitySet, ChildProcesses, Memories, MemoryScope, ProgramLibrary, RawCapabilities,
    RawEntry, Switchable,
};
use super::ids::Index;
use super::{Problems, listing};
use crate::agent::code::CodeLimits;
use crate::agent::config::report::ProblemCode;
use crate::agent::limits::{
    CODE_FUEL_MAX, CODE_FUEL_PER_POLL, CODE_MEMORY_BYTES_MAX, CODE_MEMORY_BYTES_MIN,
    CODE_OUTPUT_BYTES_DEFAULT, CODE_OUTPUT_BYTES_MAX, CODE_TIME_MS_MAX,
};
use crate::agent::limits::{
    PROGRAM_ID_LENGTH_DEFAULT, PROGRAM_ID_LENGTH_MAX, PROGRAM_ID_LENGTH_MIN,
    PROGRAM_RETENTION_ENTRIES_DEFAULT, PROGRAM_RETENTION_ENTRIES_MAX,
};
use crate::tools::{PROCESS_SKILL_EXTRA_TOOLS, PROCESS_SKILL_TOOLS, ToolName};
use std::num::NonZeroU32;
use std::ops::RangeInclusive;

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
    index: &Index<'_>,
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
    let child_processes = check_child_processes(raw, path, index, problems);
    let code = check_code(raw, path, problems);
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
        child_processes,
        code,
        archive_thread: on(&raw.archive_thread),
    })
}

/// `code`: each limit written within its range (checked even when the capability is off, as
/// the program library's settings are).
fn check_code(raw: &RawCapabilities, path: &str, problems: &mut Problems) -> Option<CodeLimits> {
    let entry = raw.code.as_ref()?;
    let table = entry.table();
    let defaults = CodeLimits::default();
    let mut setting = |name: &str, value: Option<u64>, default: u64, range: RangeInclusive<u64>| match value {
        None => Some(default),
        Some(n) if range.contains(&n) => Some(n),
        Some(_) => {
            problems.push(
                format!("{path}.code.{name}"),
                ProblemCode::SettingOutOfRange,
                Some(Capability::Code),
                format!(
                    "`{name}` is {} to {}; set it within that, or leave it out for {default}",
                    range.start(),
                    range.end()
                ),
            );
            None
        }
    };
    let fuel = setting("fuel", table.and_then(|t| t.fuel), defaults.fuel, CODE_FUEL_PER_POLL..=CODE_FUEL_MAX);
    let memory_bytes = setting(
        "memory_bytes",
        table.and_then(|t| t.memory_bytes),
        defaults.memory_bytes,
        CODE_MEMORY_BYTES_MIN..=CODE_MEMORY_BYTES_MAX,
    );
    let time_ms = setting("time_ms", table.and_then(|t| t.time_ms), defaults.time_ms, 1..=CODE_TIME_MS_MAX);
    let output_bytes = setting(
        "output_bytes",
        table.and_then(|t| t.output_bytes),
        CODE_OUTPUT_BYTES_DEFAULT,
        0..=CODE_OUTPUT_BYTES_MAX,
    );
    if !entry.is_enabled() {
        return None;
    }
    Some(CodeLimits {
        fuel: fuel?,
        memory_bytes: memory_bytes?,
        time_ms: time_ms?,
        output_bytes: usize::try_from(output_bytes?).ok()?,
    })
}

/// `child_processes`: a `child_agent` that is a profile or a machine, and `tools` from the
/// skill's nine and its two extra tools (default: the nine, in the skill's order).
fn check_child_processes(
    raw: &RawCapabilities,
    path: &str,
    index: &Index<'_>,
    problems: &mut Problems,
) -> Option<ChildProcesses> {
    let entry = raw.child_processes.as_ref().filter(|e| e.is_enabled())?;
    let table = entry.table();
    let at = format!("{path}.child_processes");
    let offerable: Vec<ToolName> = PROCESS_SKILL_TOOLS.into_iter().chain(PROCESS_SKILL_EXTRA_TOOLS).collect();
    let mut tools = Vec::new();
    let mut bad = false;
    match table.and_then(|t| t.tools.as_ref()) {
        None => tools.extend(PROCESS_SKILL_TOOLS),
        Some(names) => {
            for (j, name) in names.iter().enumerate() {
                match offerable.iter().find(|t| t.as_str() == name) {
                    Some(tool) if !tools.contains(tool) => tools.push(*tool),
                    Some(_) => {}
                    None => {
                        bad = true;
                        problems.push(
                            format!("{at}.tools[{j}]"),
                            ProblemCode::UnknownChildProcessTool,
                            Some(Capability::ChildProcesses),
                            format!(
                                "`{}` is not a tool the process skill offers; the tools it may allow are {}",
                                super::ids::excerpt(name),
                                listing(offerable.iter().map(|t| t.as_str()))
                            ),
                        );
                    }
                }
            }
            // The skill's order, whatever order the file lists them in.
            tools.sort_by_key(|t| offerable.iter().position(|o| o == t));
        }
    }
    let child_agent = match table.and_then(|t| t.child_agent.as_deref()).filter(|a| !a.trim().is_empty()) {
        None => {
            problems.push(
                format!("{at}.child_agent"),
                ProblemCode::MissingField,
                Some(Capability::ChildProcesses),
                "the process skill needs a `child_agent`: the profile or machine id every child it \
                 spawns or forks runs as",
            );
            None
        }
        Some(id) if index.profile_ids.contains(id) || index.machine_ids.contains(id) => Some(id.to_string()),
        Some(id) => {
            problems.push(
                format!("{at}.child_agent"),
                ProblemCode::UnknownChildAgent,
                Some(Capability::ChildProcesses),
                format!(
                    "`{}` is neither a profile nor a machine; the defined ids are {}",
                    super::ids::excerpt(id),
                    listing(index.profile_ids.union(&index.machine_ids).copied())
                ),
            );
            None
        }
    };
    if bad {
        return None;
    }
    Some(ChildProcesses { child_agent: child_agent?, tools })
}

fn check_memories(raw: &RawCapabilities, path: &str, problems: &mut Problems) -> Option<Memories> {
    let entry = raw.memories.as_ref().filter(|e| e.is_enabled())?;
    match entry.table().and_then(|t| t.scope) {
        Some(scope) => Some(Memories { scope }),
        None => {
            let scopes: Vec<String> =
                MemoryScope::ALL.iter().map(|s| format!("`{}` ({})", s.as_str(), s.meaning())).collect();
            problems.push(
                format!("{path}.memories.scope"),
                ProblemCode::MissingField,
                Some(Capability::Memories),
                format!("memories need a `scope`: {}", scopes.join("; ")),
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
