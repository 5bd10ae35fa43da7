//! The closed set of changes object memory makes. Every plan returns a `Vec<ObjectChange>`
//! that a store commits in one transaction and that [`super::ObjectSpace::apply`] applies, so
//! the in-memory value and the durable record move by the same steps.

use super::model::{Collection, Handle, ObjectMeta, Skill};
use crate::kernel::ids::{Oid, Pid};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// One change to object memory.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectChange {
    /// A process's memory begins: an empty namespace, its goal (added as a root and a name by
    /// the changes that follow), its clearance. Replaces any earlier entry for the pid.
    PutProcess {
        /// The process.
        pid: Pid,
        /// Its goal object.
        goal: Oid,
        /// Its clearance; `None` is cleared for every label.
        clearance: Option<BTreeSet<String>>,
    },
    /// Inserts or replaces an object's metadata.
    PutObject(ObjectMeta),
    /// Marks an object released (a tombstone is kept). Revocations are separate changes.
    ReleaseObject {
        /// The object.
        oid: Oid,
    },
    /// Inserts or replaces the handle of `holder` on `oid`.
    PutHandle(Handle),
    /// Removes a handle.
    RevokeHandle {
        /// The holder.
        holder: Pid,
        /// The object.
        oid: Oid,
    },
    /// Binds a name in a process namespace.
    PutName {
        /// The process.
        pid: Pid,
        /// The name.
        name: String,
        /// The object.
        oid: Oid,
    },
    /// Removes a name from a process namespace (the object and any handle stay).
    RemoveName {
        /// The process.
        pid: Pid,
        /// The name.
        name: String,
    },
    /// Adds a root to a process's memory view.
    PutRoot {
        /// The process.
        pid: Pid,
        /// The object.
        oid: Oid,
    },
    /// Replaces a process's context labels (what it has read, or was launched knowing).
    SetContext {
        /// The process.
        pid: Pid,
        /// The whole new context.
        labels: BTreeSet<String>,
    },
    /// Replaces a process's loaded skill snapshot.
    PutSkills {
        /// The process.
        pid: Pid,
        /// The whole new snapshot.
        skills: Vec<Skill>,
    },
    /// Records that a process's memory has been collected, by merge or by release.
    MarkCollected {
        /// The process.
        pid: Pid,
        /// How.
        how: Collection,
    },
}
