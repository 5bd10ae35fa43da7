//! The values object memory is made of: rights, owners, kinds, object metadata, handles,
//! skills, fork modes. Payloads are not here: they live outside the kernel.

use crate::kernel::ids::{Oid, Pid};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;

bitflags::bitflags! {
    /// Rights a handle gives its holder on one object. Never empty on a handle.
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
    pub struct ObjectRights: u8 {
        /// Read the payload (raises the reader's context by the object's labels).
        const READ = 1;
        /// Change the payload in place; every holder of the OID sees the change.
        const WRITE = 1 << 1;
        /// Hand the object to another process with `delegate`.
        const DELEGATE = 1 << 2;
    }
}

const RIGHT_NAMES: [(&str, ObjectRights); 3] =
    [("read", ObjectRights::READ), ("write", ObjectRights::WRITE), ("delegate", ObjectRights::DELEGATE)];

impl ObjectRights {
    /// Every right: what an owner holds.
    pub const ALL: ObjectRights = ObjectRights::all();

    /// The right names, in a fixed order (`read`, `write`, `delegate`).
    pub fn names(self) -> Vec<&'static str> {
        RIGHT_NAMES.iter().filter(|(_, r)| self.contains(*r)).map(|(n, _)| *n).collect()
    }

    /// The first right of `needed` that `self` lacks, if any (in the fixed order).
    pub fn first_missing(self, needed: ObjectRights) -> Option<ObjectRights> {
        RIGHT_NAMES.iter().map(|(_, r)| *r).find(|r| needed.contains(*r) && !self.contains(*r))
    }
}

impl fmt::Display for ObjectRights {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() { f.write_str("none") } else { f.write_str(&self.names().join(",")) }
    }
}

/// Who owns an object. Ownership decides lifetime: a process's objects and its result live
/// until its parent merges them or the memory is released.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Owner {
    /// A process's own object (PROCESS). Merge candidates are of this kind.
    Process(Pid),
    /// A process's result, made by `process_exit(payload)` (PROCESS_RESULT).
    ProcessResult(Pid),
    /// A profile-bound instance: memory shared by every process bound to that profile.
    Profile(String),
    /// The host.
    Host,
}

impl Owner {
    /// The process whose memory this is, for `Process` and `ProcessResult` owners.
    pub fn process(&self) -> Option<Pid> {
        match self {
            Owner::Process(pid) | Owner::ProcessResult(pid) => Some(*pid),
            Owner::Profile(_) | Owner::Host => None,
        }
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Owner::Process(pid) => write!(f, "process {pid}"),
            Owner::ProcessResult(pid) => write!(f, "the result of process {pid}"),
            Owner::Profile(name) => write!(f, "profile {name:?}"),
            Owner::Host => f.write_str("the host"),
        }
    }
}

/// What an object is for.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectKind {
    /// A process's goal: written by its launcher, owned by the process, always one of its
    /// roots, never adopted by a merge.
    Goal,
    /// Ordinary data a process created.
    Data,
    /// The object `process_exit(payload)` makes. Never a root of the process it belongs to.
    ProcessResult,
}

impl ObjectKind {
    /// The lowercase word (as the store's `kind` column has it).
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Goal => "goal",
            ObjectKind::Data => "data",
            ObjectKind::ProcessResult => "process_result",
        }
    }
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Object metadata: everything the kernel knows of an object. The payload is elsewhere.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ObjectMeta {
    /// Its id; never reused and never renamed (merge keeps it).
    pub oid: Oid,
    /// Its owner.
    pub owner: Owner,
    /// What it is for.
    pub kind: ObjectKind,
    /// Data-flow labels. Only ever grow: a write adds the writer's context.
    pub labels: BTreeSet<String>,
    /// Scratch: a merge never adopts it, so it ends with its owner's memory.
    pub ephemeral: bool,
    /// Released: a tombstone kept for evidence. No handle points at a released object.
    pub released: bool,
}

/// A process's handle on one object. A holder has at most one handle per object.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Handle {
    /// Who holds it.
    pub holder: Pid,
    /// The object.
    pub oid: Oid,
    /// Never empty.
    pub rights: ObjectRights,
    /// A speculative view of an object inherited from a parent: read-only, never widened,
    /// never delegated, and it ends with the holder's memory. Never carries WRITE or DELEGATE.
    pub ephemeral: bool,
}

/// One loaded skill: its name and the tools it allows.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
pub struct Skill {
    /// The skill's name.
    pub name: String,
    /// The tools it allows.
    pub allowed_tools: BTreeSet<String>,
}

/// How a fork shares the parent objects it selects.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForkMode {
    /// Read-only view; DELEGATE passes through when the parent holds it.
    #[default]
    Worker,
    /// Read-only view without DELEGATE, and no skill projection (image defaults instead).
    Restricted,
    /// Read and write on the same OID: a child write is visible to the parent. Not isolation.
    Copy,
    /// Read-only, ephemeral view; child-created objects stay mergeable. Not rollback.
    Speculative,
}

impl ForkMode {
    /// The lowercase word.
    pub fn as_str(self) -> &'static str {
        match self {
            ForkMode::Worker => "worker",
            ForkMode::Restricted => "restricted",
            ForkMode::Copy => "copy",
            ForkMode::Speculative => "speculative",
        }
    }

    /// The rights the parent must hold on each selected object.
    pub fn required(self) -> ObjectRights {
        match self {
            ForkMode::Copy => ObjectRights::READ | ObjectRights::WRITE,
            ForkMode::Worker | ForkMode::Restricted | ForkMode::Speculative => ObjectRights::READ,
        }
    }

    /// The rights the child gets, given the parent's handle rights (which hold `required`).
    pub fn child_rights(self, parent: ObjectRights) -> ObjectRights {
        let pass_delegate = parent & ObjectRights::DELEGATE;
        match self {
            ForkMode::Worker => ObjectRights::READ | pass_delegate,
            ForkMode::Copy => ObjectRights::READ | ObjectRights::WRITE | pass_delegate,
            ForkMode::Restricted | ForkMode::Speculative => ObjectRights::READ,
        }
    }

    /// Whether the child's handles on inherited objects are ephemeral.
    pub fn ephemeral(self) -> bool {
        self == ForkMode::Speculative
    }
}

impl fmt::Display for ForkMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a process's memory was collected: it ends exactly once, one of these ways.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Collection {
    /// Its parent merged it.
    Merged,
    /// Its parent ended without merging it, so it was released.
    Released,
}

impl Collection {
    /// The lowercase word.
    pub fn as_str(self) -> &'static str {
        match self {
            Collection::Merged => "merged",
            Collection::Released => "released",
        }
    }
}
