//! The invariants of an object space, checked before a store commits and after it reads back.

use super::error::InvariantViolation;
use super::flow;
use super::model::{ObjectKind, ObjectRights, Owner};
use super::space::ObjectSpace;

fn broken(what: String) -> Result<(), InvariantViolation> {
    Err(InvariantViolation { what })
}

impl ObjectSpace {
    /// Checks every invariant:
    ///
    /// - the owner and holder indexes match the objects and handles;
    /// - every handle points at a live (unreleased) object, has rights, is held by a process
    ///   whose memory is not collected, is cleared for the object's labels, and, if ephemeral,
    ///   carries READ only;
    /// - every process has a goal of kind `goal` among its roots, a context within its
    ///   clearance, and never has its own result as a root or a name;
    /// - an object is of kind `process_result` exactly when a `ProcessResult` owns it, and a
    ///   process has at most one;
    /// - every object owned by a process whose memory is collected is released;
    /// - a profile key owns at most one live object (its one instance).
    pub fn check(&self) -> Result<(), InvariantViolation> {
        self.check_indexes()?;
        self.check_handles()?;
        self.check_processes()?;
        self.check_objects()
    }

    fn check_indexes(&self) -> Result<(), InvariantViolation> {
        let indexed = self.by_owner.len();
        if indexed != self.objects.len() {
            return broken(format!("owner index holds {indexed} objects, the space {}", self.objects.len()));
        }
        for (owner, oid) in &self.by_owner {
            if self.objects.get(oid).is_none_or(|o| &o.owner != owner) {
                return broken(format!("owner index lists {oid} under {owner}"));
            }
        }
        let names: std::collections::BTreeSet<_> = self
            .processes
            .iter()
            .flat_map(|(pid, memory)| memory.namespace.iter().map(|(name, oid)| (*pid, *oid, name.clone())))
            .collect();
        if names != self.names_by_oid {
            return broken("the name index does not match the namespaces".to_string());
        }
        let indexed = self.holders.len();
        if indexed != self.handles.len() {
            return broken(format!("holder index holds {indexed} handles, the space {}", self.handles.len()));
        }
        for (oid, holder) in &self.holders {
            if !self.handles.contains_key(&(*holder, *oid)) {
                return broken(format!("holder index lists {holder} on {oid} without a handle"));
            }
        }
        Ok(())
    }

    fn check_handles(&self) -> Result<(), InvariantViolation> {
        for ((holder, oid), handle) in &self.handles {
            if (handle.holder, handle.oid) != (*holder, *oid) {
                return broken(format!(
                    "handle keyed ({holder}, {oid}) says ({}, {})",
                    handle.holder, handle.oid
                ));
            }
            let Some(object) = self.objects.get(oid) else {
                return broken(format!("{holder} holds a handle on unknown object {oid}"));
            };
            if object.released {
                return broken(format!("{holder} holds a handle on released object {oid}"));
            }
            if handle.rights.is_empty() {
                return broken(format!("{holder}'s handle on {oid} has no rights"));
            }
            if handle.ephemeral && handle.rights != ObjectRights::READ {
                return broken(format!("{holder}'s ephemeral handle on {oid} carries {}", handle.rights));
            }
            let Some(memory) = self.processes.get(holder) else {
                return broken(format!("handle on {oid} held by {holder}, which has no memory"));
            };
            if memory.collected.is_some() {
                return broken(format!("{holder}'s memory is collected but it holds a handle on {oid}"));
            }
            if let Some(label) = flow::first_uncleared(memory.clearance.as_ref(), &object.labels) {
                return broken(format!("{holder} holds {oid} but is not cleared for label {label:?}"));
            }
        }
        Ok(())
    }

    fn check_processes(&self) -> Result<(), InvariantViolation> {
        for (pid, memory) in &self.processes {
            let Some(goal) = memory.goal else {
                return broken(format!("{pid} has no goal"));
            };
            if !memory.roots.contains(&goal) {
                return broken(format!("{pid}'s goal {goal} is not one of its roots"));
            }
            if self.objects.get(&goal).is_none_or(|o| o.kind != ObjectKind::Goal) {
                return broken(format!("{pid}'s goal {goal} is not a goal object"));
            }
            if let Some(label) = flow::first_uncleared(memory.clearance.as_ref(), &memory.context) {
                return broken(format!("{pid}'s context holds {label:?} outside its clearance"));
            }
            let named = memory.namespace.values();
            for oid in memory.roots.iter().chain(named) {
                let Some(object) = self.objects.get(oid) else {
                    return broken(format!("{pid} names or roots unknown object {oid}"));
                };
                if object.owner == Owner::ProcessResult(*pid) {
                    return broken(format!("{pid}'s own result {oid} is a root or a name"));
                }
            }
        }
        Ok(())
    }

    fn check_objects(&self) -> Result<(), InvariantViolation> {
        for (oid, object) in &self.objects {
            if object.oid != *oid {
                return broken(format!("object keyed {oid} says {}", object.oid));
            }
            let is_result_owner = matches!(object.owner, Owner::ProcessResult(_));
            if is_result_owner != (object.kind == ObjectKind::ProcessResult) {
                return broken(format!("{oid} is of kind {} owned by {}", object.kind, object.owner));
            }
            if let Some(pid) = object.owner.process() {
                let collected = self.processes.get(&pid).is_some_and(|m| m.collected.is_some());
                if collected && !object.released {
                    return broken(format!("{oid} owned by {} outlives its collected memory", object.owner));
                }
            }
        }
        // Per owner: how many results a result owner has, how many live instances a profile.
        let mut counted: std::collections::BTreeMap<&Owner, usize> = std::collections::BTreeMap::new();
        for (owner, oid) in &self.by_owner {
            let counts = match owner {
                Owner::ProcessResult(_) => true,
                Owner::Profile(_) => self.objects.get(oid).is_some_and(|o| !o.released),
                Owner::Process(_) | Owner::Host => false,
            };
            if counts {
                *counted.entry(owner).or_default() += 1;
            }
        }
        for (owner, count) in counted {
            if count > 1 {
                let what =
                    if matches!(owner, Owner::Profile(_)) { "live instances" } else { "result objects" };
                return broken(format!("{owner} owns {count} {what}"));
            }
        }
        Ok(())
    }
}
