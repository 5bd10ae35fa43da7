//! What of object memory a reopened runtime holds, and what it leaves in the store as history.
//!
//! A memory its parent collected (merged or released) holds no handle, and every object it
//! owned is released (both are invariants, see [`ObjectSpace::check`]): nothing live can reach
//! it except by naming its pid or an OID. So a reopen loads the *resident* part only, and the
//! rest is read from the store when something names it (`Store::object_memory_of`, adopted
//! with [`ObjectSpace::adopt`]). The stores implement this rule in their queries; this is its
//! definition, which the store conformance tests hold them to.

use super::space::ObjectSpace;
use crate::kernel::ids::{Oid, Pid};
use std::collections::BTreeSet;

impl ObjectSpace {
    /// The resident part: every memory not collected, every object such a memory owns
    /// (released ones included), every unreleased object, every handle, and every object a
    /// kept goal, root, name or handle refers to.
    pub fn resident(&self) -> ObjectSpace {
        let kept: BTreeSet<Pid> =
            self.processes.iter().filter(|(_, m)| m.collected.is_none()).map(|(pid, _)| *pid).collect();
        let mut oids: BTreeSet<Oid> = self
            .objects
            .values()
            .filter(|o| !o.released || o.owner.process().is_some_and(|pid| kept.contains(&pid)))
            .map(|o| o.oid)
            .collect();
        for pid in &kept {
            if let Some(memory) = self.processes.get(pid) {
                oids.extend(memory.goal);
                oids.extend(memory.roots.iter().copied());
                oids.extend(memory.namespace.values().copied());
            }
        }
        oids.extend(self.handles.keys().map(|(_, oid)| *oid));
        let mut resident = ObjectSpace::new();
        resident.processes = self
            .processes
            .iter()
            .filter(|(pid, _)| kept.contains(pid))
            .map(|(p, m)| (*p, m.clone()))
            .collect();
        resident.names_by_oid =
            self.names_by_oid.iter().filter(|(pid, _, _)| kept.contains(pid)).cloned().collect();
        for oid in oids {
            if let Some(meta) = self.objects.get(&oid) {
                resident.by_owner.insert((meta.owner.clone(), oid));
                resident.objects.insert(oid, meta.clone());
            }
        }
        resident.handles = self.handles.clone();
        resident.holders = self.holders.clone();
        resident
    }
}
