//! The object space: metadata, handles and per-process memory, its read-only queries, and
//! [`ObjectSpace::apply`], the one way it changes.

use super::change::ObjectChange;
use super::error::ObjectError;
use super::model::{Collection, Handle, ObjectMeta, ObjectRights, Owner, Skill};
use crate::compact::{CompactMap, CompactSet};
use crate::kernel::ids::{Oid, Pid};
use std::collections::{BTreeMap, BTreeSet};
use uuid::Uuid;

/// One process's object memory: its namespace, roots, data-flow state and skill snapshot.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct ProcessMemory {
    /// Its goal object; always one of its roots.
    pub goal: Option<Oid>,
    /// Names it has bound (name → OID). Process-local: merge never renames into it. Compact:
    /// most processes bind a name or two.
    pub namespace: CompactMap<String, Oid>,
    /// Its memory view: the goal, inherited roots, roots it created. Compact, likewise.
    pub roots: CompactSet<Oid>,
    /// The labels it may hold; `None` is cleared for every label.
    pub clearance: Option<BTreeSet<String>>,
    /// The labels of what it has read or was launched knowing. Always within its clearance.
    pub context: BTreeSet<String>,
    /// Its loaded skill snapshot.
    pub skills: Vec<Skill>,
    /// Set once its memory is merged or released; after that it holds no handle.
    pub collected: Option<Collection>,
}

/// All object memory: a plain value. Plans read it and return changes; `apply` applies them.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct ObjectSpace {
    pub(super) objects: BTreeMap<Oid, ObjectMeta>,
    /// Index: (owner, object) for every object (released ones included). The indexes are
    /// sets of tuples, not a set per key: most keys have one entry (a process owns its goal,
    /// one process holds it, under one name), and a set per key costs a whole B-tree leaf.
    pub(super) by_owner: BTreeSet<(Owner, Oid)>,
    pub(super) handles: BTreeMap<(Pid, Oid), Handle>,
    /// Index: (object, holder) for every handle.
    pub(super) holders: BTreeSet<(Oid, Pid)>,
    /// Boxed: a memory is 152 bytes, and a B-tree leaf holds eleven entries inline whether or
    /// not they are in use.
    pub(super) processes: BTreeMap<Pid, Box<ProcessMemory>>,
    /// Index: (process, object, name) for every name a process binds.
    pub(super) names_by_oid: BTreeSet<(Pid, Oid, String)>,
}

impl ObjectSpace {
    /// An empty space.
    pub fn new() -> Self {
        ObjectSpace::default()
    }

    /// An object's metadata, released or not.
    pub fn object(&self, oid: Oid) -> Option<&ObjectMeta> {
        self.objects.get(&oid)
    }

    /// Every object, in OID order.
    pub fn objects(&self) -> impl Iterator<Item = &ObjectMeta> {
        self.objects.values()
    }

    /// The objects an owner owns (released ones included), in OID order.
    pub fn owned_by(&self, owner: &Owner) -> impl Iterator<Item = Oid> + '_ {
        crate::pairs::under(&self.by_owner, owner.clone(), Oid(Uuid::nil())).copied()
    }

    /// The result object `process_exit(payload)` made for `pid`, if any.
    pub fn result_of(&self, pid: Pid) -> Option<Oid> {
        self.owned_by(&Owner::ProcessResult(pid)).next()
    }

    /// `holder`'s handle on `oid`.
    pub fn handle(&self, holder: Pid, oid: Oid) -> Option<&Handle> {
        self.handles.get(&(holder, oid))
    }

    /// The rights `holder` holds on `oid` (empty without a handle).
    pub fn rights(&self, holder: Pid, oid: Oid) -> ObjectRights {
        self.handle(holder, oid).map_or(ObjectRights::empty(), |h| h.rights)
    }

    /// Every handle, ordered by holder then OID.
    pub fn handles(&self) -> impl Iterator<Item = &Handle> {
        self.handles.values()
    }

    /// The handles one process holds, in OID order.
    pub fn handles_of(&self, holder: Pid) -> impl Iterator<Item = &Handle> {
        self.handles.range((holder, Oid(Uuid::nil()))..=(holder, Oid(Uuid::max()))).map(|(_, h)| h)
    }

    /// The processes holding a handle on `oid`.
    pub fn holders_of(&self, oid: Oid) -> impl Iterator<Item = Pid> + '_ {
        crate::pairs::under(&self.holders, oid, Pid(Uuid::nil())).copied()
    }

    /// A process's memory, collected or not.
    pub fn process(&self, pid: Pid) -> Option<&ProcessMemory> {
        self.processes.get(&pid).map(|m| &**m)
    }

    /// Every process with memory, in pid order.
    pub fn processes(&self) -> impl Iterator<Item = (Pid, &ProcessMemory)> {
        self.processes.iter().map(|(pid, m)| (*pid, &**m))
    }

    /// A process's memory, refused if unknown or already collected.
    pub(super) fn live_memory(&self, pid: Pid) -> Result<&ProcessMemory, ObjectError> {
        let memory = self.processes.get(&pid).ok_or(ObjectError::UnknownProcess { pid })?;
        match memory.collected {
            Some(how) => Err(ObjectError::MemoryCollected { pid, how }),
            None => Ok(memory),
        }
    }

    /// An object's metadata, refused if unknown or released.
    pub(super) fn live_object(&self, oid: Oid) -> Result<&ObjectMeta, ObjectError> {
        let object = self.objects.get(&oid).ok_or(ObjectError::UnknownObject { oid })?;
        if object.released {
            return Err(ObjectError::ObjectReleased { oid });
        }
        Ok(object)
    }

    /// Applies changes in order. Infallible by design: every change is an upsert or a removal
    /// with one meaning, so a store can replay exactly what it committed. Plans produce only
    /// changes that keep [`ObjectSpace::check`] true; a store checks before it commits.
    pub fn apply(&mut self, changes: impl IntoIterator<Item = ObjectChange>) {
        for change in changes {
            self.apply_one(change);
        }
    }

    fn apply_one(&mut self, change: ObjectChange) {
        match change {
            ObjectChange::PutProcess { pid, goal, clearance } => {
                let memory = ProcessMemory { goal: Some(goal), clearance, ..ProcessMemory::default() };
                self.unindex_names(pid);
                self.processes.insert(pid, Box::new(memory));
            }
            ObjectChange::PutObject(meta) => {
                if let Some(old) = self.objects.get(&meta.oid)
                    && old.owner != meta.owner
                {
                    let old_owner = old.owner.clone();
                    self.unindex_owner(&old_owner, meta.oid);
                }
                self.by_owner.insert((meta.owner.clone(), meta.oid));
                self.objects.insert(meta.oid, meta);
            }
            ObjectChange::ReleaseObject { oid } => {
                if let Some(object) = self.objects.get_mut(&oid) {
                    object.released = true;
                }
            }
            ObjectChange::PutHandle(handle) => {
                self.holders.insert((handle.oid, handle.holder));
                self.handles.insert((handle.holder, handle.oid), handle);
            }
            ObjectChange::RevokeHandle { holder, oid } => {
                self.handles.remove(&(holder, oid));
                self.holders.remove(&(oid, holder));
            }
            ObjectChange::PutName { pid, name, oid } => {
                let namespace = &mut self.processes.entry(pid).or_default().namespace;
                if let Some(old) = namespace.insert(name.clone(), oid) {
                    self.names_by_oid.remove(&(pid, old, name.clone()));
                }
                self.names_by_oid.insert((pid, oid, name));
            }
            ObjectChange::RemoveName { pid, name } => {
                if let Some(memory) = self.processes.get_mut(&pid)
                    && let Some(old) = memory.namespace.remove(&name)
                {
                    self.names_by_oid.remove(&(pid, old, name));
                }
            }
            ObjectChange::PutRoot { pid, oid } => {
                self.processes.entry(pid).or_default().roots.insert(oid);
            }
            ObjectChange::SetContext { pid, labels } => {
                self.processes.entry(pid).or_default().context = labels;
            }
            ObjectChange::PutSkills { pid, skills } => {
                self.processes.entry(pid).or_default().skills = skills;
            }
            ObjectChange::MarkCollected { pid, how } => {
                // A collected memory keeps only its goal root (a released tombstone, for
                // evidence): its names and other roots point at objects it no longer holds.
                self.unindex_names(pid);
                let memory = self.processes.entry(pid).or_default();
                memory.collected = Some(how);
                memory.namespace.clear();
                let goal = memory.goal;
                memory.roots.retain(|oid| Some(*oid) == goal);
            }
        }
    }

    /// Takes from `other` (memory read back from the store on demand, see
    /// `Store::object_memory_of`) every process memory, object and handle this space lacks,
    /// with their indexes. What this space holds already stays as it is: it is as new as the
    /// store or newer (its changes reach the store after they are applied here).
    pub fn adopt(&mut self, other: ObjectSpace) {
        for (pid, memory) in other.processes {
            if self.processes.contains_key(&pid) {
                continue;
            }
            for (name, oid) in &memory.namespace {
                self.names_by_oid.insert((pid, *oid, name.clone()));
            }
            self.processes.insert(pid, memory);
        }
        for (oid, meta) in other.objects {
            if !self.objects.contains_key(&oid) {
                self.by_owner.insert((meta.owner.clone(), oid));
                self.objects.insert(oid, meta);
            }
        }
        for (key, handle) in other.handles {
            if !self.handles.contains_key(&key) {
                self.holders.insert((handle.oid, handle.holder));
                self.handles.insert(key, handle);
            }
        }
    }

    /// Takes back a launch view whose commit was refused: removes `pid`'s memory, the objects
    /// it owns and the handles it holds, in memory only (the store never had them). Valid only
    /// while nothing else refers to them, which holds for a view whose launch was never
    /// acknowledged: nobody knows the child's pid or its goal's OID yet.
    pub fn discard_process(&mut self, pid: Pid) {
        self.unindex_names(pid);
        self.processes.remove(&pid);
        let held: Vec<Oid> = self.handles_of(pid).map(|h| h.oid).collect();
        for oid in held {
            self.apply_one(ObjectChange::RevokeHandle { holder: pid, oid });
        }
        let owner = Owner::Process(pid);
        let owned: Vec<Oid> = self.owned_by(&owner).collect();
        for oid in owned {
            self.by_owner.remove(&(owner.clone(), oid));
            self.objects.remove(&oid);
        }
    }

    /// The names `pid` binds to `oid`, in order.
    pub fn names_of(&self, pid: Pid, oid: Oid) -> impl Iterator<Item = &String> {
        self.names_by_oid
            .range((pid, oid, String::new())..)
            .take_while(move |(p, o, _)| (*p, *o) == (pid, oid))
            .map(|(_, _, name)| name)
    }

    fn unindex_names(&mut self, pid: Pid) {
        let keys: Vec<(Pid, Oid, String)> = self
            .names_by_oid
            .range((pid, Oid(Uuid::nil()), String::new())..)
            .take_while(|(p, _, _)| *p == pid)
            .cloned()
            .collect();
        for key in keys {
            self.names_by_oid.remove(&key);
        }
    }

    fn unindex_owner(&mut self, owner: &Owner, oid: Oid) {
        self.by_owner.remove(&(owner.clone(), oid));
    }
}
