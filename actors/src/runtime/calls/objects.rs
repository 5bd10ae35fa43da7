//! The object-memory calls (create, read, write, list, checkpoint, fork, merge, skills) and
//! their results. Field names are the JSON tools' names.

use crate::kernel::ids::{Oid, Pid};
use crate::kernel::launch::LaunchRequest;
use crate::kernel::objects::{
    DroppedSkill, ForkMode, Handle, ObjectError, ObjectMeta, ObjectSpace, RootSelection, Skill, Skipped,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

use super::ToolError;

/// `fork_child_process`: a launch plus the memory view to share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForkRequest {
    /// Goal, image, cwd, capabilities, paths, budget, clearance: as for a spawn.
    pub launch: LaunchRequest,
    /// How the selected objects are shared; `worker` by default.
    pub mode: ForkMode,
    /// Which parent objects (`root_oids` / `include_parent_roots`).
    pub roots: RootSelection,
}

/// Which object a call names: an OID, or a name in the caller's namespace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectTarget {
    /// By OID.
    Oid(Oid),
    /// By a name the caller bound.
    Name(String),
}

/// `create_object`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct CreateObject {
    /// A name to bind in the caller's namespace.
    pub name: Option<String>,
    /// The payload (runtime-local unless `durable`).
    pub payload: serde_json::Value,
    /// Labels beyond the caller's context, which the object always carries.
    pub labels: BTreeSet<String>,
    /// Scratch: a merge never adopts it.
    pub ephemeral: bool,
    /// Add it to the caller's roots (what a default fork shares, what a merge considers).
    pub root: bool,
    /// Checkpoint the payload: it survives a reopen, and so does every later write.
    pub durable: bool,
}

/// The result of `create_object`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ObjectCreated {
    /// The new object.
    pub oid: Oid,
    /// The name bound, if any.
    pub name: Option<String>,
    /// Its labels: the requested ones plus the caller's context.
    pub labels: Vec<String>,
    /// Whether it is one of the caller's roots.
    pub root: bool,
    /// Whether it is scratch.
    pub ephemeral: bool,
    /// Whether its payload is durable.
    pub durable: bool,
}

/// An object's payload as read.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ObjectView {
    /// The object.
    pub oid: Oid,
    /// Its kind (`goal`, `data`, `process_result`).
    pub kind: String,
    /// Its labels; the reader's context now includes them.
    pub labels: Vec<String>,
    /// Its payload, when it could be materialized.
    pub payload: Option<serde_json::Value>,
    /// Whether the payload could be materialized. `false` after a reopen for a payload that
    /// was never checkpointed: the OID and metadata survived, the payload did not.
    pub materialized: bool,
    /// Whether the payload is durable (checkpointed).
    pub durable: bool,
}

/// The result of `write_object` and `checkpoint_object`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ObjectWritten {
    /// The object.
    pub oid: Oid,
    /// Its labels after the call (a write adds the writer's context).
    pub labels: Vec<String>,
    /// Whether its payload is durable.
    pub durable: bool,
}

/// One handle, as `list_objects` and `inspect` show it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct HandleView {
    /// The object.
    pub oid: Oid,
    /// Its kind.
    pub kind: String,
    /// Its owner, in words (`process <pid>`, `the result of process <pid>`, `the host`).
    pub owner: String,
    /// The holder's rights.
    pub rights: Vec<String>,
    /// Whether the handle is a speculative (ephemeral, read-only) view.
    pub ephemeral: bool,
    /// The object's labels.
    pub labels: Vec<String>,
    /// The names the holder binds to it.
    pub names: Vec<String>,
    /// Whether it is one of the holder's roots.
    pub root: bool,
}

/// One owned object, as `inspect` shows it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct OwnedObject {
    /// The object.
    pub oid: Oid,
    /// Its kind.
    pub kind: String,
    /// Its labels.
    pub labels: Vec<String>,
    /// Scratch.
    pub ephemeral: bool,
    /// Released (a tombstone).
    pub released: bool,
}

/// A process's memory: what `list_objects` returns for the caller and `inspect` shows.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct MemoryReport {
    /// The process.
    pub pid: Pid,
    /// Its goal object.
    pub goal_oid: Option<Oid>,
    /// Its roots, in OID order.
    pub roots: Vec<Oid>,
    /// Its handles, in OID order.
    pub handles: Vec<HandleView>,
    /// Objects it owns (and its result), released ones included.
    pub owned: Vec<OwnedObject>,
    /// Its data-flow context.
    pub context: Vec<String>,
    /// Its clearance; `None` is cleared for every label.
    pub clearance: Option<Vec<String>>,
    /// Its loaded skill snapshot.
    pub skills: Vec<Skill>,
    /// `merged` or `released` once its parent collected its memory.
    pub collected: Option<String>,
}

impl MemoryReport {
    /// The report of `pid`'s memory, or `None` if it has none.
    pub fn of(space: &ObjectSpace, pid: Pid) -> Option<MemoryReport> {
        let memory = space.process(pid)?;
        let handles = space
            .handles_of(pid)
            .filter_map(|h| space.object(h.oid).map(|meta| handle_view(h, meta, memory)))
            .collect();
        let owned_by = |owner| space.owned_by(&owner).collect::<Vec<_>>();
        let mut owned: Vec<OwnedObject> = owned_by(crate::kernel::objects::Owner::Process(pid))
            .into_iter()
            .chain(owned_by(crate::kernel::objects::Owner::ProcessResult(pid)))
            .filter_map(|oid| space.object(oid))
            .map(|meta| OwnedObject {
                oid: meta.oid,
                kind: meta.kind.as_str().to_string(),
                labels: meta.labels.iter().cloned().collect(),
                ephemeral: meta.ephemeral,
                released: meta.released,
            })
            .collect();
        owned.sort_by_key(|o| o.oid);
        Some(MemoryReport {
            pid,
            goal_oid: memory.goal,
            roots: memory.roots.iter().copied().collect(),
            handles,
            owned,
            context: memory.context.iter().cloned().collect(),
            clearance: memory.clearance.as_ref().map(|c| c.iter().cloned().collect()),
            skills: memory.skills.clone(),
            collected: memory.collected.map(|c| c.as_str().to_string()),
        })
    }
}

fn handle_view(h: &Handle, meta: &ObjectMeta, memory: &crate::kernel::objects::ProcessMemory) -> HandleView {
    HandleView {
        oid: h.oid,
        kind: meta.kind.as_str().to_string(),
        owner: meta.owner.to_string(),
        rights: h.rights.names().into_iter().map(String::from).collect(),
        ephemeral: h.ephemeral,
        labels: meta.labels.iter().cloned().collect(),
        names: memory.namespace.iter().filter(|(_, oid)| **oid == h.oid).map(|(n, _)| n.clone()).collect(),
        root: memory.roots.contains(&h.oid),
    }
}

/// The result of `merge_child_memory`. The arrays cover the merge candidates only: every
/// other child-owned object (its result included) was released, and is not listed.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct MergeResult {
    /// The merged child.
    pub child_pid: Pid,
    /// Adopted candidates: now owned by the caller, which holds read/write/delegate on each.
    /// No name is bound to them.
    pub merged_oids: Vec<Oid>,
    /// Candidates not adopted, each with its reason.
    pub skipped_oids: Vec<Skipped>,
}

/// The result of `delegate_object`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ObjectDelegated {
    /// The object (the same OID: nothing is copied).
    pub oid: Oid,
    /// The child that received it.
    pub to: Pid,
    /// The child's rights on it now (what it had plus what was given).
    pub rights: Vec<String>,
}

/// Binding a profile-bound instance: the one object owned by `Profile(key)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindProfileObject {
    /// The instance's key, `<image>/<rest>` where `<image>` is the caller's image id.
    pub key: String,
    /// The name to bind it to in the caller's namespace.
    pub name: String,
    /// The payload it starts with when this bind makes it (durable, as every later write).
    pub initial: serde_json::Value,
}

/// The result of binding a profile-bound instance.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ProfileBound {
    /// The instance.
    pub oid: Oid,
    /// Whether this bind made it.
    pub created: bool,
}

/// The result of unbinding a name.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct NameUnbound {
    /// The object the name was bound to.
    pub oid: Oid,
}

/// The result of dropping an object.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ObjectDropped {
    /// The object.
    pub oid: Oid,
    /// Whether it was released (the caller owned it), rather than only let go of.
    pub released: bool,
}

/// The result of `load_skills`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SkillsLoaded {
    /// The caller's whole loaded snapshot now.
    pub skills: Vec<Skill>,
}

/// What a launch's memory view turned out to be, reported with the launch.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct LaunchView {
    /// The child's goal object: always its own root.
    pub goal_oid: Option<Oid>,
    /// Every root of the child: the goal first, then inherited objects in selection order.
    pub roots: Vec<Oid>,
    /// The fork mode (forks only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ForkMode>,
    /// Names of the child's loaded skills.
    pub skills: Vec<String>,
    /// Parent skills that did not carry into the child, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped_skills: Vec<DroppedSkill>,
    /// Parent roots an all-roots fork passed over because they were already released.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub released_roots: Vec<Oid>,
}

impl From<ObjectError> for ToolError {
    fn from(e: ObjectError) -> Self {
        ToolError::new(e.code(), e.to_string())
    }
}
