//! Data flow: labels on objects, a clearance per process, a context per process.
//!
//! - A handle grant (fork, delegate, wait, merge) to a holder not cleared for one of the
//!   object's labels is refused, naming the holder, the OID and the label.
//! - Reading raises the reader's context by the object's labels.
//! - Writing (and creating) adds the writer's context to the object's labels, and is refused
//!   if a holder of the object is not cleared for what it would gain, so labels never reach a
//!   holder through a shared OID either.
//! - A launched child's goal carries the parent's context, so the child starts knowing it.
//! - A child's clearance is the parent's, or a requested narrowing of it; never wider.

use super::error::ObjectError;
use super::space::ObjectSpace;
use crate::kernel::ids::{Oid, Pid};
use crate::limits;
use std::collections::BTreeSet;

/// The first of `labels` outside `clearance` (`None` is cleared for everything).
pub fn first_uncleared<'l>(
    clearance: Option<&BTreeSet<String>>,
    labels: &'l BTreeSet<String>,
) -> Option<&'l String> {
    let cleared = clearance?;
    labels.iter().find(|l| !cleared.contains(*l))
}

/// Checks a label set: each label 1 to [`limits::LABEL_BYTES_MAX`] bytes, at most
/// [`limits::LABELS_MAX`] of them.
pub fn check_labels(field: &str, labels: &BTreeSet<String>) -> Result<(), ObjectError> {
    if labels.len() > limits::LABELS_MAX {
        return Err(ObjectError::TooManyEntries { field: field.into(), max: limits::LABELS_MAX });
    }
    for label in labels {
        if label.trim().is_empty() {
            return Err(ObjectError::InvalidLabel { label: label.clone(), reason: "it is empty".into() });
        }
        if label.len() > limits::LABEL_BYTES_MAX {
            return Err(ObjectError::InvalidLabel {
                label: label.clone(),
                reason: format!("it is longer than {} bytes", limits::LABEL_BYTES_MAX),
            });
        }
    }
    Ok(())
}

/// A child's clearance: the parent's when none is requested, else the request, which must be
/// within the parent's.
pub fn child_clearance(
    parent: Option<&BTreeSet<String>>,
    requested: Option<&BTreeSet<String>>,
) -> Result<Option<BTreeSet<String>>, ObjectError> {
    let Some(requested) = requested else { return Ok(parent.cloned()) };
    check_labels("clearance", requested)?;
    match first_uncleared(parent, requested) {
        Some(label) => Err(ObjectError::ClearanceExceeds { label: label.clone() }),
        None => Ok(Some(requested.clone())),
    }
}

impl ObjectSpace {
    /// Plans raising `pid`'s context by `labels` (what a delivered message carried): a
    /// `SetContext` when the context grows, nothing otherwise. Refused if `pid` is not cleared
    /// for one of them (`flow_denied` names no object) or the context would exceed
    /// [`limits::LABELS_MAX`].
    pub fn plan_raise_context(
        &self,
        pid: Pid,
        labels: &BTreeSet<String>,
    ) -> Result<Vec<super::ObjectChange>, ObjectError> {
        let memory = self.live_memory(pid)?;
        if let Some(label) = first_uncleared(memory.clearance.as_ref(), labels) {
            return Err(ObjectError::ContextNotCleared { holder: pid, label: label.clone() });
        }
        let context: BTreeSet<String> = memory.context.union(labels).cloned().collect();
        if context == memory.context {
            return Ok(Vec::new());
        }
        check_labels("context", &context)?;
        Ok(vec![super::ObjectChange::SetContext { pid, labels: context }])
    }

    /// The labels a message sent by `pid` carries: its context (empty for a process without
    /// memory).
    pub fn message_labels(&self, pid: Pid) -> BTreeSet<String> {
        self.processes.get(&pid).map(|m| m.context.clone()).unwrap_or_default()
    }

    /// `pid`'s clearance, as the mailbox's delivery check takes it (`None`: every label).
    pub fn clearance_of(&self, pid: Pid) -> Option<Vec<String>> {
        self.processes.get(&pid).and_then(|m| m.clearance.as_ref()).map(|c| c.iter().cloned().collect())
    }

    /// Whether `holder` may be given a handle on `oid`: refused if it is not cleared for one of
    /// the object's labels. The caller has checked that both exist.
    pub(super) fn check_flow(&self, holder: Pid, oid: Oid) -> Result<(), ObjectError> {
        let clearance = self.processes.get(&holder).and_then(|m| m.clearance.as_ref());
        let Some(object) = self.objects.get(&oid) else { return Err(ObjectError::UnknownObject { oid }) };
        match first_uncleared(clearance, &object.labels) {
            Some(label) => Err(ObjectError::FlowDenied { holder, oid, label: label.clone() }),
            None => Ok(()),
        }
    }
}
