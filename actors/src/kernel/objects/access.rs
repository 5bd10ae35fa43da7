//! What a process does with objects it holds: create, read, write, delegate.

use super::change::ObjectChange;
use super::error::ObjectError;
use super::flow::{self, first_uncleared};
use super::model::{Handle, ObjectKind, ObjectMeta, ObjectRights, Owner};
use super::space::ObjectSpace;
use crate::kernel::ids::{IdSource, Oid, Pid};
use crate::limits;
use std::collections::BTreeSet;

/// A request to create an object owned by `holder`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct CreateRequest {
    /// The creating process; it becomes the owner and gets a read/write/delegate handle.
    pub holder: Pid,
    /// A name to bind in its namespace, if any.
    pub name: Option<String>,
    /// Labels to put on it, beyond the creator's context (which it always carries).
    pub labels: BTreeSet<String>,
    /// Scratch: a merge never adopts it.
    pub ephemeral: bool,
    /// Whether to add it to the creator's roots (its memory view, what a default fork shares).
    pub root: bool,
}

/// An approved creation.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct CreatePlan {
    /// The new object.
    pub oid: Oid,
    /// What to commit.
    pub changes: Vec<ObjectChange>,
}

/// An approved read.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ReadPlan {
    /// The object's labels: the reader's context is raised by them.
    pub labels: BTreeSet<String>,
    /// What to commit (a `SetContext` when the context grows; empty otherwise).
    pub changes: Vec<ObjectChange>,
}

/// Checks a namespace name: 1 to [`limits::NAME_BYTES_MAX`] bytes, not only whitespace.
pub fn check_name(name: &str) -> Result<(), ObjectError> {
    let reason = if name.trim().is_empty() {
        "it is empty or only whitespace".to_string()
    } else if name.len() > limits::NAME_BYTES_MAX {
        format!("it is longer than {} bytes", limits::NAME_BYTES_MAX)
    } else {
        return Ok(());
    };
    Err(ObjectError::InvalidName { name: name.to_string(), reason })
}

impl ObjectSpace {
    /// Plans `create`: an object owned by the holder (`Process(holder)`), carrying the
    /// requested labels plus the holder's context, a read/write/delegate handle for the holder,
    /// optionally a name and a root. Refused if a label is one the holder is not cleared for,
    /// or the name is invalid or taken.
    pub fn plan_create(
        &self,
        request: &CreateRequest,
        ids: &mut dyn IdSource,
    ) -> Result<CreatePlan, ObjectError> {
        let holder = request.holder;
        let memory = self.live_memory(holder)?;
        if let Some(name) = &request.name {
            check_name(name)?;
            if memory.namespace.contains_key(name) {
                return Err(ObjectError::NameTaken { pid: holder, name: name.clone() });
            }
            if memory.namespace.len() >= limits::NAMES_PER_PROCESS_MAX {
                return Err(ObjectError::TooManyEntries {
                    field: "namespace".into(),
                    max: limits::NAMES_PER_PROCESS_MAX,
                });
            }
        }
        flow::check_labels("labels", &request.labels)?;
        let labels: BTreeSet<String> = request.labels.union(&memory.context).cloned().collect();
        flow::check_labels("labels", &labels)?;
        if let Some(label) = first_uncleared(memory.clearance.as_ref(), &labels) {
            return Err(ObjectError::LabelNotCleared { holder, label: label.clone() });
        }

        let oid = ids.oid();
        let meta = ObjectMeta {
            oid,
            owner: Owner::Process(holder),
            kind: ObjectKind::Data,
            labels,
            ephemeral: request.ephemeral,
            released: false,
        };
        let mut changes = vec![
            ObjectChange::PutObject(meta),
            ObjectChange::PutHandle(Handle { holder, oid, rights: ObjectRights::ALL, ephemeral: false }),
        ];
        if let Some(name) = &request.name {
            changes.push(ObjectChange::PutName { pid: holder, name: name.clone(), oid });
        }
        if request.root {
            changes.push(ObjectChange::PutRoot { pid: holder, oid });
        }
        Ok(CreatePlan { oid, changes })
    }

    /// Plans a read: needs READ and clearance for the object's labels; returns the labels and
    /// the change that raises the reader's context by them.
    pub fn plan_read(&self, reader: Pid, oid: Oid) -> Result<ReadPlan, ObjectError> {
        let memory = self.live_memory(reader)?;
        let object = self.live_object(oid)?;
        let held = self.rights(reader, oid);
        if !held.contains(ObjectRights::READ) {
            return Err(ObjectError::MissingRight { holder: reader, oid, right: ObjectRights::READ, held });
        }
        self.check_flow(reader, oid)?;
        let context: BTreeSet<String> = memory.context.union(&object.labels).cloned().collect();
        let mut changes = Vec::new();
        if context != memory.context {
            flow::check_labels("context", &context)?;
            changes.push(ObjectChange::SetContext { pid: reader, labels: context });
        }
        Ok(ReadPlan { labels: object.labels.clone(), changes })
    }

    /// Plans a write check: needs a non-ephemeral handle with WRITE. The object gains the
    /// writer's context labels; refused if any holder of the object is not cleared for them.
    /// The payload write itself happens outside the kernel, after these changes commit.
    pub fn plan_write(&self, writer: Pid, oid: Oid) -> Result<Vec<ObjectChange>, ObjectError> {
        let memory = self.live_memory(writer)?;
        let object = self.live_object(oid)?;
        let handle = self.handle(writer, oid);
        if handle.is_some_and(|h| h.ephemeral) {
            return Err(ObjectError::EphemeralHandle { holder: writer, oid });
        }
        let held = handle.map_or(ObjectRights::empty(), |h| h.rights);
        if !held.contains(ObjectRights::WRITE) {
            return Err(ObjectError::MissingRight { holder: writer, oid, right: ObjectRights::WRITE, held });
        }
        let labels: BTreeSet<String> = object.labels.union(&memory.context).cloned().collect();
        if labels == object.labels {
            return Ok(Vec::new());
        }
        flow::check_labels("labels", &labels)?;
        for holder in self.holders_of(oid) {
            let clearance = self.processes.get(&holder).and_then(|m| m.clearance.as_ref());
            if let Some(label) = first_uncleared(clearance, &labels) {
                return Err(ObjectError::FlowDenied { holder, oid, label: label.clone() });
            }
        }
        Ok(vec![ObjectChange::PutObject(ObjectMeta { labels, ..object.clone() })])
    }

    /// Plans `delegate`: `from` gives `to` a handle with `rights` on `oid`. `from` must hold
    /// DELEGATE and every right it gives; `to` must be cleared for the object's labels; a
    /// speculative (ephemeral) view is never widened. Rights add to any handle `to` has. Who
    /// may receive (a direct live child, say) is the caller's rule.
    pub fn plan_delegate(
        &self,
        from: Pid,
        to: Pid,
        oid: Oid,
        rights: ObjectRights,
    ) -> Result<Vec<ObjectChange>, ObjectError> {
        if rights.is_empty() {
            return Err(ObjectError::EmptyRights);
        }
        if from == to {
            return Err(ObjectError::SelfDelegation { pid: from });
        }
        self.live_memory(from)?;
        self.live_memory(to)?;
        self.live_object(oid)?;
        let held = self.rights(from, oid);
        if let Some(right) = held.first_missing(rights | ObjectRights::DELEGATE) {
            return Err(ObjectError::MissingRight { holder: from, oid, right, held });
        }
        let existing = self.handle(to, oid);
        if let Some(handle) = existing.filter(|h| h.ephemeral) {
            if ObjectRights::READ.contains(rights) {
                return Ok(Vec::new());
            }
            return Err(ObjectError::EphemeralHandle { holder: handle.holder, oid });
        }
        self.check_flow(to, oid)?;
        let rights = rights | existing.map_or(ObjectRights::empty(), |h| h.rights);
        Ok(vec![ObjectChange::PutHandle(Handle { holder: to, oid, rights, ephemeral: false })])
    }
}
