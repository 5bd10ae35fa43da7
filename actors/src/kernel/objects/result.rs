//! Process results: `process_exit(payload)` makes a PROCESS_RESULT object; a wait grants the
//! parent a read handle on it, subject to data flow.
//!
//! The result object is owned by `ProcessResult(pid)`, carries the exiting process's context
//! labels, is never one of that process's roots and is bound to no name. Nobody holds a
//! handle on it until a wait grants one. A merge of the child releases it like every other
//! remaining child object, revoking the handle the wait granted: a waited result that
//! suffices must not be followed by a merge.

use super::change::ObjectChange;
use super::error::ObjectError;
use super::model::{Handle, ObjectKind, ObjectMeta, ObjectRights, Owner};
use super::space::ObjectSpace;
use crate::kernel::ids::{IdSource, Oid, Pid};

/// An approved result object or result grant.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ResultPlan {
    /// The result object.
    pub oid: Oid,
    /// What to commit.
    pub changes: Vec<ObjectChange>,
}

impl ObjectSpace {
    /// Plans the PROCESS_RESULT object for `process_exit(payload)`. Refused if the process
    /// already has one.
    pub fn plan_exit_result(&self, pid: Pid, ids: &mut dyn IdSource) -> Result<ResultPlan, ObjectError> {
        let memory = self.live_memory(pid)?;
        if let Some(oid) = self.result_of(pid) {
            return Err(ObjectError::ResultExists { pid, oid });
        }
        let oid = ids.oid();
        let meta = ObjectMeta {
            oid,
            owner: Owner::ProcessResult(pid),
            kind: ObjectKind::ProcessResult,
            labels: memory.context.clone(),
            ephemeral: false,
            released: false,
        };
        Ok(ResultPlan { oid, changes: vec![ObjectChange::PutObject(meta)] })
    }

    /// Plans the handle a wait grants: READ for `parent` on `child`'s result object, added to
    /// any handle it already has. `Ok(None)` when the child made no result. Refused when the
    /// result was released (the child was merged) or the parent is not cleared for a label.
    /// That `child` is a direct child of `parent` and terminal is the caller's rule.
    pub fn grant_result_handle(&self, parent: Pid, child: Pid) -> Result<Option<ResultPlan>, ObjectError> {
        self.live_memory(parent)?;
        let Some(oid) = self.result_of(child) else { return Ok(None) };
        self.live_object(oid)?;
        self.check_flow(parent, oid)?;
        let existing = self.handle(parent, oid).map_or(ObjectRights::empty(), |h| h.rights);
        let handle = Handle { holder: parent, oid, rights: existing | ObjectRights::READ, ephemeral: false };
        Ok(Some(ResultPlan { oid, changes: vec![ObjectChange::PutHandle(handle)] }))
    }
}
