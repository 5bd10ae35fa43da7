//! Collecting a child's memory: `merge_child_memory`, and the release at a parent's end.
//!
//! A merge takes candidates (the child's roots; with `include_child_created`, also every other
//! object the child's PROCESS owns), adopts each one it can (ownership to the parent, a
//! read/write/delegate parent handle, the same OID, no name) or skips it with a reason, then
//! releases every remaining object owned by the child or by its result and revokes every
//! handle on a released object, whoever holds it, and every handle the child still holds. All
//! of it is one change set. A data-flow denial on a candidate that would be adopted fails the
//! whole merge and changes nothing: merge is irreversible, so it never destroys an object just
//! because the parent may not hold it. A second merge of the same child is refused.

use super::change::ObjectChange;
use super::error::ObjectError;
use super::model::{Collection, Handle, ObjectKind, ObjectMeta, ObjectRights, Owner};
use super::space::ObjectSpace;
use crate::kernel::ids::{Oid, Pid};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;

/// Why a merge candidate was not adopted.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// The child's PROCESS does not own it (an inherited parent object, a host or profile
    /// object, another process's result). It stays with its owner.
    NotChildOwned,
    /// It was already released.
    Released,
    /// It is the child's goal: the parent wrote it. Released with the rest.
    Goal,
    /// The child created it as scratch. Released with the rest.
    Ephemeral,
}

impl SkipReason {
    /// The stable code, as `skipped_oids` entries report it.
    pub fn code(self) -> &'static str {
        match self {
            SkipReason::NotChildOwned => "not_child_owned",
            SkipReason::Released => "released",
            SkipReason::Goal => "goal",
            SkipReason::Ephemeral => "ephemeral",
        }
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// One skipped candidate.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Skipped {
    /// The candidate.
    pub oid: Oid,
    /// Why it was not adopted.
    pub reason: SkipReason,
}

/// An approved merge.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct MergePlan {
    /// Adopted candidates, in candidate order (roots first, then other child-created objects).
    pub merged_oids: Vec<Oid>,
    /// Skipped candidates with their reasons, in candidate order.
    pub skipped_oids: Vec<Skipped>,
    /// Every object released (not reported by the tool; kept for the journal and tests).
    pub released_oids: Vec<Oid>,
    /// Every handle revoked, as (holder, OID).
    pub revoked: Vec<(Pid, Oid)>,
    /// What to commit, in one transaction.
    pub changes: Vec<ObjectChange>,
}

/// An approved release of a parent's unmerged children.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct ReleasePlan {
    /// Children whose memory is released.
    pub released_children: Vec<Pid>,
    /// Every object released.
    pub released_oids: Vec<Oid>,
    /// Every handle revoked, as (holder, OID).
    pub revoked: Vec<(Pid, Oid)>,
    /// What to commit, in one transaction with the parent's end.
    pub changes: Vec<ObjectChange>,
}

impl ObjectSpace {
    /// Plans `merge_child_memory` (see the module docs). That `child` is a direct, terminal
    /// child of `parent` is the caller's rule; a child whose memory is already collected is
    /// refused here (`already_merged`, `memory_released`).
    pub fn plan_merge(
        &self,
        parent: Pid,
        child: Pid,
        include_child_created: bool,
    ) -> Result<MergePlan, ObjectError> {
        if parent == child {
            return Err(ObjectError::SelfMerge { pid: parent });
        }
        self.live_memory(parent)?;
        let memory = self.live_memory(child)?;
        let mut candidates: Vec<Oid> = memory.roots.iter().copied().collect();
        if include_child_created {
            let created = self.owned_by(&Owner::Process(child)).filter(|oid| !memory.roots.contains(oid));
            candidates.extend(created.collect::<Vec<_>>());
        }

        let mut plan = MergePlan {
            merged_oids: Vec::new(),
            skipped_oids: Vec::new(),
            released_oids: Vec::new(),
            revoked: Vec::new(),
            changes: Vec::new(),
        };
        for oid in candidates {
            let object = self.objects.get(&oid).ok_or(ObjectError::UnknownObject { oid })?;
            let Some(reason) = skip_reason(object, child) else {
                self.check_flow(parent, oid)?;
                let adopted = ObjectMeta { owner: Owner::Process(parent), ..object.clone() };
                let rights = ObjectRights::ALL;
                plan.changes.push(ObjectChange::PutObject(adopted));
                plan.changes.push(ObjectChange::PutHandle(Handle {
                    holder: parent,
                    oid,
                    rights,
                    ephemeral: false,
                }));
                plan.merged_oids.push(oid);
                continue;
            };
            plan.skipped_oids.push(Skipped { oid, reason });
        }
        let adopted: BTreeSet<Oid> = plan.merged_oids.iter().copied().collect();
        let (released, revoked) = self.collect(child, &adopted, Collection::Merged, &mut plan.changes);
        plan.released_oids = released;
        plan.revoked = revoked;
        Ok(plan)
    }

    /// Plans the release of `parent`'s unmerged children when `parent` ends: for each child in
    /// `children` whose memory is not yet collected, every object it or its result owns is
    /// released and every handle on them, and every handle it holds, is revoked. Children
    /// without memory or already collected are passed over. The runtime calls this at each
    /// process's end, leaves first, so grandchildren were released at their parent's end.
    pub fn release_unmerged_children(
        &self,
        parent: Pid,
        children: &[Pid],
    ) -> Result<ReleasePlan, ObjectError> {
        if !self.processes.contains_key(&parent) {
            return Err(ObjectError::UnknownProcess { pid: parent });
        }
        let mut plan = ReleasePlan::default();
        let mut seen = BTreeSet::new();
        for &child in children {
            let live = self.processes.get(&child).is_some_and(|m| m.collected.is_none());
            if !live || !seen.insert(child) {
                continue;
            }
            let (released, revoked) =
                self.collect(child, &BTreeSet::new(), Collection::Released, &mut plan.changes);
            plan.released_children.push(child);
            plan.released_oids.extend(released);
            plan.revoked.extend(revoked);
        }
        Ok(plan)
    }

    /// Releases what `child` and its result own (except `adopted`), revokes every handle on a
    /// released object and every handle `child` holds, and marks the memory collected.
    /// Returns the released OIDs and the revoked handles.
    fn collect(
        &self,
        child: Pid,
        adopted: &BTreeSet<Oid>,
        how: Collection,
        changes: &mut Vec<ObjectChange>,
    ) -> (Vec<Oid>, Vec<(Pid, Oid)>) {
        let owned = self.owned_by(&Owner::Process(child)).chain(self.owned_by(&Owner::ProcessResult(child)));
        let released: Vec<Oid> = owned
            .filter(|oid| !adopted.contains(oid))
            .filter(|oid| self.objects.get(oid).is_some_and(|o| !o.released))
            .collect();
        let mut revoked: BTreeSet<(Pid, Oid)> = BTreeSet::new();
        for oid in &released {
            revoked.extend(self.holders_of(*oid).map(|holder| (holder, *oid)));
        }
        revoked.extend(self.handles_of(child).map(|h| (h.holder, h.oid)));
        changes.extend(released.iter().map(|oid| ObjectChange::ReleaseObject { oid: *oid }));
        changes.extend(
            revoked.iter().map(|(holder, oid)| ObjectChange::RevokeHandle { holder: *holder, oid: *oid }),
        );
        changes.push(ObjectChange::MarkCollected { pid: child, how });
        (released, revoked.into_iter().collect())
    }
}

/// Why `object`, a candidate of `child`'s merge, is skipped; `None` if it is adoptable.
fn skip_reason(object: &ObjectMeta, child: Pid) -> Option<SkipReason> {
    if object.released {
        Some(SkipReason::Released)
    } else if object.owner != Owner::Process(child) {
        Some(SkipReason::NotChildOwned)
    } else if object.kind == ObjectKind::Goal {
        Some(SkipReason::Goal)
    } else if object.ephemeral {
        Some(SkipReason::Ephemeral)
    } else {
        None
    }
}
