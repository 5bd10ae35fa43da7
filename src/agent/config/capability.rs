//! The capability set: every module and every call an agent may hold is its own capability,
//! enabled independently.
//!
//! A capability is written under its id in a profile's `capabilities` table, either as a
//! switch (`exec: true`) or as a table of settings (`memories: {scope: shared}`, where
//! `enabled` defaults to `true`). A capability left out is off, except `history`, which is in
//! every set.

use serde::de::value::MapAccessDeserializer;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::fmt;
use std::marker::PhantomData;
use std::num::NonZeroU32;

/// One capability, by its id in the configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Capability {
    /// `history`: the conversation. In every set; it is what an exec'd successor opens on.
    History,
    /// `tasks`: the task list module.
    Tasks,
    /// `notebook`: the notebook module.
    Notebook,
    /// `memories`: the memories module, with a [`MemoryScope`].
    Memories,
    /// `program_library`: programs the agent wrote, kept under issued ids.
    ProgramLibrary,
    /// `subagents`: `spawn_subagent` (roster-checked), `wait_for_subagents`, `send_message`.
    Subagents,
    /// `exec`: become another profile (or enter a machine) from the roster.
    Exec,
    /// `fork`: run a copy of this agent; needs `subagents` to collect it.
    Fork,
    /// `transition_state`: move the machine this agent stands in; only for machine states.
    TransitionState,
    /// `child_processes`: the process skill (`agent-libos-child-processes`): the kernel's
    /// process and mailbox tools, with children running a named agent.
    ChildProcesses,
    /// `code`: responses-as-code, `run_code` (and `run_program` with a program library):
    /// programs that call the agent's tools from an embedded interpreter, within limits.
    Code,
    /// `archive_thread`: model-called compaction, `archive_thread` and `read_archive`.
    ArchiveThread,
}

impl Capability {
    /// Every capability, in the order the documentation lists them.
    pub const ALL: [Capability; 12] = [
        Capability::History,
        Capability::Tasks,
        Capability::Notebook,
        Capability::Memories,
        Capability::ProgramLibrary,
        Capability::Subagents,
        Capability::Exec,
        Capability::Fork,
        Capability::TransitionState,
        Capability::ChildProcesses,
        Capability::Code,
        Capability::ArchiveThread,
    ];

    /// The id written in a profile's `capabilities` table.
    pub fn as_str(self) -> &'static str {
        match self {
            Capability::History => "history",
            Capability::Tasks => "tasks",
            Capability::Notebook => "notebook",
            Capability::Memories => "memories",
            Capability::ProgramLibrary => "program_library",
            Capability::Subagents => "subagents",
            Capability::Exec => "exec",
            Capability::Fork => "fork",
            Capability::TransitionState => "transition_state",
            Capability::ChildProcesses => "child_processes",
            Capability::Code => "code",
            Capability::ArchiveThread => "archive_thread",
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How an agent's memories relate to the memories of the copies it forks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryScope {
    /// `isolated`: a fork gets an independent copy; the two diverge.
    Isolated,
    /// `shared`: one instance bound to the profile per state directory; every agent running
    /// the profile reads and writes it.
    Shared,
    /// `inherited`: a fork is linked to its forker's instance, read/write; both are holders
    /// and both get notices.
    Inherited,
    /// `read-only`: a fork is linked to its forker's instance and may not write it.
    #[serde(alias = "read_only")]
    ReadOnly,
}

impl MemoryScope {
    /// Every scope, in the order the documentation lists them.
    pub const ALL: [MemoryScope; 4] =
        [MemoryScope::Isolated, MemoryScope::Shared, MemoryScope::Inherited, MemoryScope::ReadOnly];

    /// What the scope means, in one phrase: the launch check's words for it, and the
    /// documentation's.
    pub fn meaning(self) -> &'static str {
        match self {
            MemoryScope::Isolated => {
                "each agent has its own; a fork gets an independent copy and the two diverge"
            }
            MemoryScope::Shared => {
                "one instance bound to the profile in the state directory: every agent running the \
                 profile (roots, subagents, forks, exec incarnations) reads and writes it, across restarts"
            }
            MemoryScope::Inherited => {
                "each agent has its own; a fork is linked to its forker's, read/write, and both get notices"
            }
            MemoryScope::ReadOnly => {
                "each agent has its own; a fork is linked to its forker's and may not write it"
            }
        }
    }

    /// The scope as written in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryScope::Isolated => "isolated",
            MemoryScope::Shared => "shared",
            MemoryScope::Inherited => "inherited",
            MemoryScope::ReadOnly => "read-only",
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The file format.

/// A capability entry as written: `true`/`false`, or a table of settings with an optional
/// `enabled` (default `true`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RawEntry<T> {
    /// `exec: true`, `fork = false`.
    Switch(bool),
    /// `memories: {scope: shared}`.
    Table(T),
}

/// A table of capability settings that can be switched off with `enabled: false`.
pub trait Switchable {
    /// The `enabled` field as written.
    fn enabled(&self) -> Option<bool>;
}

impl<T: Switchable> RawEntry<T> {
    /// Whether the entry turns its capability on.
    pub fn is_enabled(&self) -> bool {
        match self {
            RawEntry::Switch(on) => *on,
            RawEntry::Table(table) => table.enabled().unwrap_or(true),
        }
    }

    /// The settings table, if the entry was written as one.
    pub fn table(&self) -> Option<&T> {
        match self {
            RawEntry::Switch(_) => None,
            RawEntry::Table(table) => Some(table),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for RawEntry<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntryVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for EntryVisitor<T> {
            type Value = RawEntry<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("true, false, or a table of the capability's settings")
            }
            fn visit_bool<E: serde::de::Error>(self, on: bool) -> Result<Self::Value, E> {
                Ok(RawEntry::Switch(on))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(RawEntry::Table)
            }
        }
        deserializer.deserialize_any(EntryVisitor(PhantomData))
    }
}

/// The settings of a capability that has none but `enabled`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSwitch {
    /// Whether the capability is on (default `true`).
    pub enabled: Option<bool>,
}

impl Switchable for RawSwitch {
    fn enabled(&self) -> Option<bool> {
        self.enabled
    }
}

/// The settings of `memories`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMemories {
    /// Whether the capability is on (default `true`).
    pub enabled: Option<bool>,
    /// How the memories relate to a fork's (required when enabled; no default, since each
    /// scope means something different for every fork).
    pub scope: Option<MemoryScope>,
}

impl Switchable for RawMemories {
    fn enabled(&self) -> Option<bool> {
        self.enabled
    }
}

/// The settings of `program_library`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProgramLibrary {
    /// Whether the capability is on (default `true`).
    pub enabled: Option<bool>,
    /// How many programs the library keeps; writing one more evicts the oldest, whose id
    /// stays issued (default [`crate::agent::limits::PROGRAM_RETENTION_ENTRIES_DEFAULT`]).
    pub retention_entries: Option<u64>,
    /// Length of an issued program id, in characters (default
    /// [`crate::agent::limits::PROGRAM_ID_LENGTH_DEFAULT`]).
    pub id_length: Option<u64>,
}

impl Switchable for RawProgramLibrary {
    fn enabled(&self) -> Option<bool> {
        self.enabled
    }
}

/// The settings of `child_processes`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawChildProcesses {
    /// Whether the capability is on (default `true`).
    pub enabled: Option<bool>,
    /// The profile or machine id every child runs as (required when enabled).
    pub child_agent: Option<String>,
    /// The tools allowed: a subset of the skill's, plus `read_object` and `list_objects`
    /// (default: exactly the skill's nine).
    pub tools: Option<Vec<String>>,
}

impl Switchable for RawChildProcesses {
    fn enabled(&self) -> Option<bool> {
        self.enabled
    }
}

/// The settings of `code`: what one program may spend. Each left out takes its default.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCode {
    /// Whether the capability is on (default `true`).
    pub enabled: Option<bool>,
    /// Interpreter steps (default [`crate::agent::limits::CODE_FUEL_DEFAULT`]).
    pub fuel: Option<u64>,
    /// Bytes the interpreter may allocate (default
    /// [`crate::agent::limits::CODE_MEMORY_BYTES_DEFAULT`]).
    pub memory_bytes: Option<u64>,
    /// Compute time in milliseconds, waiting for tools excluded (default
    /// [`crate::agent::limits::CODE_TIME_MS_DEFAULT`]).
    pub time_ms: Option<u64>,
    /// Bytes of console output (default [`crate::agent::limits::CODE_OUTPUT_BYTES_DEFAULT`]).
    pub output_bytes: Option<u64>,
}

impl Switchable for RawCode {
    fn enabled(&self) -> Option<bool> {
        self.enabled
    }
}

/// A profile's `capabilities` table as written. Every field is one capability; a capability
/// left out is off (`history` excepted: it is always on, and may only be written as on).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCapabilities {
    /// The conversation; always on.
    pub history: Option<RawEntry<RawSwitch>>,
    /// The task list.
    pub tasks: Option<RawEntry<RawSwitch>>,
    /// The notebook.
    pub notebook: Option<RawEntry<RawSwitch>>,
    /// Memories, with their scope.
    pub memories: Option<RawEntry<RawMemories>>,
    /// The program library, with its retention and id length.
    pub program_library: Option<RawEntry<RawProgramLibrary>>,
    /// `spawn_subagent`, `wait_for_subagents`, `send_message`.
    pub subagents: Option<RawEntry<RawSwitch>>,
    /// Become another profile or enter a machine from the roster.
    pub exec: Option<RawEntry<RawSwitch>>,
    /// Run a copy of this agent.
    pub fork: Option<RawEntry<RawSwitch>>,
    /// Move the machine this agent stands in.
    pub transition_state: Option<RawEntry<RawSwitch>>,
    /// The process skill.
    pub child_processes: Option<RawEntry<RawChildProcesses>>,
    /// Responses-as-code, with its limits.
    pub code: Option<RawEntry<RawCode>>,
    /// Model-called compaction.
    pub archive_thread: Option<RawEntry<RawSwitch>>,
}

// ---------------------------------------------------------------------------------------------
// Checked.

/// The memories module's settings, as checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Memories {
    pub(super) scope: MemoryScope,
}

impl Memories {
    /// How the memories relate to a fork's.
    pub fn scope(&self) -> MemoryScope {
        self.scope
    }
}

/// The program library's settings, as checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramLibrary {
    pub(super) retention_entries: NonZeroU32,
    pub(super) id_length: u8,
}

impl ProgramLibrary {
    /// How many programs the library keeps.
    pub fn retention_entries(&self) -> NonZeroU32 {
        self.retention_entries
    }

    /// Length of an issued id, in characters, within the limits of
    /// [`crate::agent::limits::PROGRAM_ID_LENGTH_MIN`] and `_MAX`.
    pub fn id_length(&self) -> u8 {
        self.id_length
    }
}

/// The process skill's settings, as checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildProcesses {
    pub(super) child_agent: String,
    pub(super) tools: Vec<crate::tools::ToolName>,
}

impl ChildProcesses {
    /// The profile or machine id the children run as.
    pub fn child_agent(&self) -> &str {
        &self.child_agent
    }

    /// The kernel tools offered, in the skill's order (the extra tools last).
    pub fn tools(&self) -> &[crate::tools::ToolName] {
        &self.tools
    }
}

/// A checked capability set. `history` is always in it; `fork` only with `subagents`; `exec`
/// only with a non-empty roster and never on a profile a machine runs as a state;
/// `transition_state` only on such a profile (the launch check proves each).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapabilitySet {
    pub(super) tasks: bool,
    pub(super) notebook: bool,
    pub(super) memories: Option<Memories>,
    pub(super) program_library: Option<ProgramLibrary>,
    pub(super) subagents: bool,
    pub(super) exec: bool,
    pub(super) fork: bool,
    pub(super) transition_state: bool,
    pub(super) child_processes: Option<ChildProcesses>,
    pub(super) code: Option<crate::agent::code::CodeLimits>,
    pub(super) archive_thread: bool,
}

impl CapabilitySet {
    /// Whether the set holds a capability.
    pub fn contains(&self, capability: Capability) -> bool {
        match capability {
            Capability::History => true,
            Capability::Tasks => self.tasks,
            Capability::Notebook => self.notebook,
            Capability::Memories => self.memories.is_some(),
            Capability::ProgramLibrary => self.program_library.is_some(),
            Capability::Subagents => self.subagents,
            Capability::Exec => self.exec,
            Capability::Fork => self.fork,
            Capability::TransitionState => self.transition_state,
            Capability::ChildProcesses => self.child_processes.is_some(),
            Capability::Code => self.code.is_some(),
            Capability::ArchiveThread => self.archive_thread,
        }
    }

    /// The capabilities held, in [`Capability::ALL`] order (so `history` first).
    pub fn iter(&self) -> impl Iterator<Item = Capability> + '_ {
        Capability::ALL.into_iter().filter(|c| self.contains(*c))
    }

    /// The memories settings, if memories are on.
    pub fn memories(&self) -> Option<&Memories> {
        self.memories.as_ref()
    }

    /// The process skill's settings, if it is on.
    pub fn child_processes(&self) -> Option<&ChildProcesses> {
        self.child_processes.as_ref()
    }

    /// What one program may spend, if responses-as-code is on.
    pub fn code(&self) -> Option<&crate::agent::code::CodeLimits> {
        self.code.as_ref()
    }

    /// The program library settings, if the library is on.
    pub fn program_library(&self) -> Option<&ProgramLibrary> {
        self.program_library.as_ref()
    }
}
