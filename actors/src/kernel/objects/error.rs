//! Why an object-memory operation is refused. One enum for the family; each variant has a
//! stable machine code and a lowercase sentence that says what to do.

use super::model::{Collection, ObjectRights};
use crate::kernel::ids::{Oid, Pid};
use serde::{Deserialize, Serialize};

/// A refused object-memory operation. A refusal changes nothing and takes no id.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ObjectError {
    /// The process has no object memory.
    #[error("process {pid} has no object memory; check the pid (list_child_processes)")]
    UnknownProcess {
        /// The pid given.
        pid: Pid,
    },
    /// The process's memory was already collected (merged, or released when its parent ended).
    #[error("{}", collected_message(*pid, *how))]
    MemoryCollected {
        /// The process.
        pid: Pid,
        /// How it was collected.
        how: Collection,
    },
    /// No such object.
    #[error("no object {oid}")]
    UnknownObject {
        /// The OID given.
        oid: Oid,
    },
    /// The object was released; its OID remains only as evidence.
    #[error(
        "object {oid} was released (its owner's memory was merged or released); an OID alone does not prove an object survives"
    )]
    ObjectReleased {
        /// The OID.
        oid: Oid,
    },
    /// The holder lacks a right the operation needs (or delegates).
    #[error(
        "{holder} lacks the {right} right on object {oid} (it holds {held}); select only objects it holds with that right"
    )]
    MissingRight {
        /// The process that lacks it.
        holder: Pid,
        /// The object.
        oid: Oid,
        /// The first missing right.
        right: ObjectRights,
        /// What it does hold (empty: no handle at all).
        held: ObjectRights,
    },
    /// The holder's handle is a speculative view: read-only and never widened.
    #[error(
        "{holder}'s handle on object {oid} is a speculative (ephemeral) read-only view; it can be neither written nor widened. Create a new object and let the parent merge it instead"
    )]
    EphemeralHandle {
        /// The holder.
        holder: Pid,
        /// The object.
        oid: Oid,
    },
    /// A handle grant (or a write that would taint an object) reaches a process not cleared
    /// for one of the object's labels.
    #[error("data-flow denied: {holder} is not cleared for label {label:?} carried by object {oid}")]
    FlowDenied {
        /// The process not cleared.
        holder: Pid,
        /// The object.
        oid: Oid,
        /// The first label it is not cleared for.
        label: String,
    },
    /// A launch would give the child an object (or a goal) it is not cleared for.
    #[error("data-flow denied: the child would not be cleared for label {label:?} carried by {}", describe_launch_object(*oid))]
    ChildFlowDenied {
        /// The selected object, or `None` for the goal (which carries the parent's context).
        oid: Option<Oid>,
        /// The first label the child would not be cleared for.
        label: String,
    },
    /// A process asks to create an object with a label it is not cleared for.
    #[error(
        "data-flow denied: {holder} is not cleared for label {label:?}, so it cannot create an object carrying it"
    )]
    LabelNotCleared {
        /// The process.
        holder: Pid,
        /// The label.
        label: String,
    },
    /// The host asked for a root whose goal carries a label its clearance leaves out.
    #[error(
        "data-flow denied: the root's goal carries label {label:?} and its clearance does not cover it; widen the clearance or drop the label"
    )]
    RootGoalNotCleared {
        /// The label.
        label: String,
    },
    /// A process would learn (read a delivered message carrying) a label it is not cleared for.
    #[error(
        "data-flow denied: {holder} is not cleared for label {label:?}, so it cannot read what carries it"
    )]
    ContextNotCleared {
        /// The process.
        holder: Pid,
        /// The label.
        label: String,
    },
    /// A requested child clearance is wider than the parent's.
    #[error(
        "the requested child clearance includes label {label:?}, which the parent is not cleared for; a clearance only narrows"
    )]
    ClearanceExceeds {
        /// The label.
        label: String,
    },
    /// The name is already bound in the namespace.
    #[error("name {name:?} is already bound in {pid}'s namespace; choose another name")]
    NameTaken {
        /// The process.
        pid: Pid,
        /// The name.
        name: String,
    },
    /// The name is not bound in the namespace.
    #[error("{pid} binds no object to the name {name:?}")]
    UnknownName {
        /// The process.
        pid: Pid,
        /// The name.
        name: String,
    },
    /// A profile-bound instance's key outside the namespace of the image the binder runs.
    #[error(
        "profile instance key {key:?} is outside image {image:?}'s namespace; a process binds only keys that begin with its own image id and a slash"
    )]
    ProfileKeyOutsideImage {
        /// The key as given.
        key: String,
        /// The binder's image.
        image: String,
    },
    /// A process asked to drop its own goal, which is always one of its roots.
    #[error(
        "object {oid} is {pid}'s goal; a goal lives as long as its process's memory and cannot be dropped"
    )]
    GoalNotDroppable {
        /// The process.
        pid: Pid,
        /// Its goal.
        oid: Oid,
    },
    /// The name is empty or too long.
    #[error("invalid name {name:?}: {reason}")]
    InvalidName {
        /// The name as given.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// The label is empty or too long.
    #[error("invalid label {label:?}: {reason}")]
    InvalidLabel {
        /// The label as given.
        label: String,
        /// What is wrong.
        reason: String,
    },
    /// A skill or one of its tool names is empty or too long, or a name repeats.
    #[error("invalid skill {name:?}: {reason}")]
    InvalidSkill {
        /// The skill's name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// Too many entries in a list or set.
    #[error("{field} has more than {max} entries")]
    TooManyEntries {
        /// Which list.
        field: String,
        /// The limit.
        max: usize,
    },
    /// A delegation of no rights.
    #[error("a delegation needs at least one right (read, write, delegate)")]
    EmptyRights,
    /// A process cannot delegate to itself.
    #[error("{pid} cannot delegate to itself")]
    SelfDelegation {
        /// The process.
        pid: Pid,
    },
    /// A process cannot merge its own memory.
    #[error("{pid} cannot merge its own memory; merge takes a direct terminal child")]
    SelfMerge {
        /// The process.
        pid: Pid,
    },
    /// The process already has a result object.
    #[error("process {pid} already has a result object {oid}; process_exit makes exactly one")]
    ResultExists {
        /// The process.
        pid: Pid,
        /// Its result.
        oid: Oid,
    },
    /// A view is planned for a pid that already has memory.
    #[error("process {pid} already has object memory; a view is planned once, for a fresh pid")]
    ProcessExists {
        /// The pid.
        pid: Pid,
    },
}

fn collected_message(pid: Pid, how: Collection) -> String {
    match how {
        Collection::Merged => format!(
            "the memory of {pid} was already merged; merge is a one-time collection boundary, so re-read the first merge's merged_oids and skipped_oids instead"
        ),
        Collection::Released => {
            format!("the memory of {pid} was released when its parent ended without merging it")
        }
    }
}

fn describe_launch_object(oid: Option<Oid>) -> String {
    match oid {
        Some(oid) => format!("object {oid}"),
        None => "its goal (which carries the parent's context labels)".to_string(),
    }
}

impl ObjectError {
    /// A stable machine code naming the rule.
    pub fn code(&self) -> &'static str {
        match self {
            ObjectError::UnknownProcess { .. } => "unknown_process",
            ObjectError::MemoryCollected { how: Collection::Merged, .. } => "already_merged",
            ObjectError::MemoryCollected { how: Collection::Released, .. } => "memory_released",
            ObjectError::UnknownObject { .. } => "unknown_object",
            ObjectError::ObjectReleased { .. } => "object_released",
            ObjectError::MissingRight { .. } => "missing_right",
            ObjectError::EphemeralHandle { .. } => "ephemeral_handle",
            ObjectError::FlowDenied { .. }
            | ObjectError::ChildFlowDenied { .. }
            | ObjectError::LabelNotCleared { .. }
            | ObjectError::ContextNotCleared { .. }
            | ObjectError::RootGoalNotCleared { .. } => "flow_denied",
            ObjectError::ClearanceExceeds { .. } => "clearance_exceeds",
            ObjectError::NameTaken { .. } => "name_taken",
            ObjectError::UnknownName { .. } => "unknown_name",
            ObjectError::ProfileKeyOutsideImage { .. } => "profile_key_outside_image",
            ObjectError::GoalNotDroppable { .. } => "goal_not_droppable",
            ObjectError::InvalidName { .. } => "invalid_name",
            ObjectError::InvalidLabel { .. } => "invalid_label",
            ObjectError::InvalidSkill { .. } => "invalid_skill",
            ObjectError::TooManyEntries { .. } => "too_many_entries",
            ObjectError::EmptyRights => "empty_rights",
            ObjectError::SelfDelegation { .. } => "self_delegation",
            ObjectError::SelfMerge { .. } => "self_merge",
            ObjectError::ResultExists { .. } => "result_exists",
            ObjectError::ProcessExists { .. } => "process_exists",
        }
    }
}

/// A broken invariant of an [`super::ObjectSpace`]: a bug in a plan, or a corrupt record read
/// back from a store. Checked before committing and after reading back.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("object memory invariant broken: {what}")]
pub struct InvariantViolation {
    /// Which invariant, and where.
    pub what: String,
}

impl InvariantViolation {
    /// The stable machine code.
    pub fn code(&self) -> &'static str {
        "invariant_violation"
    }
}
