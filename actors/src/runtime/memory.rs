//! The runtime's object memory: one [`ObjectSpace`] that every process actor plans against,
//! and the payloads, which live here and not in the kernel.
//!
//! Ordering. A plan is made, applied in memory and submitted to the store under one short
//! lock ([`Memory::stage`] → [`Stage::submit`]), so the store's single writer receives change
//! sets in exactly the order the in-memory space took them: a later commit never depends on an
//! earlier one the store has not seen. The caller awaits the ticket after the lock is gone and
//! answers only once the commit is durable. Another process can plan against a change before
//! it is durable; its own commit then lands after that change, so a crash keeps both or the
//! earlier alone, never the later alone.
//!
//! Failure. A launch whose change set the store refuses (`SourceGrantRevoked`) is taken back
//! with [`ObjectSpace::discard_process`]. Any other commit failure fail-stops the store; the
//! memory is then poisoned and refuses every call, because the space may be ahead of the file.
//!
//! Payloads are runtime-local unless checkpointed: a durable payload is committed with its
//! change set ([`Change::PutPayload`]) and restored after a reopen on first read; any other
//! payload is gone after a reopen, and a read says so by OID instead of pretending.

use crate::kernel::ids::{Oid, Pid};
use crate::kernel::objects::{ObjectChange, ObjectSpace, ViewPlan};
use crate::runtime::calls::ToolError;
use crate::store::{Change, CommitTicket, Envelope, Store, StoreError};
use dashmap::DashMap;
use parking_lot::{Mutex, MutexGuard};
use std::collections::BTreeSet;

/// A payload held by the runtime.
#[derive(Clone, Debug)]
pub(crate) struct Payload {
    /// The value.
    pub(crate) value: serde_json::Value,
    /// Whether every change to it is committed to the store (it was checkpointed).
    pub(crate) durable: bool,
}

/// Object memory shared by every process actor of a runtime.
pub(crate) struct Memory {
    space: Mutex<ObjectSpace>,
    payloads: DashMap<Oid, Payload>,
    /// Objects whose payload survives in the store (loaded lazily on read).
    durable: Mutex<BTreeSet<Oid>>,
    poisoned: Mutex<Option<String>>,
}

/// What a payload lookup found.
pub(crate) enum Lookup {
    /// The payload.
    Found(Payload),
    /// The object has no payload in this runtime: it was runtime-local and did not survive a
    /// reopen.
    NotMaterializable,
}

impl Memory {
    /// Memory over a committed space and the set of objects with durable payloads.
    pub(crate) fn new(space: ObjectSpace, durable: BTreeSet<Oid>) -> Memory {
        Memory {
            space: Mutex::new(space),
            payloads: DashMap::new(),
            durable: Mutex::new(durable),
            poisoned: Mutex::new(None),
        }
    }

    /// Reads the space (a short lock; do not hold it across an await).
    pub(crate) fn read<T>(&self, f: impl FnOnce(&ObjectSpace) -> T) -> T {
        f(&self.space.lock())
    }

    /// Brings into the space what it lacks of the memory of `pids` and of the objects `oids`,
    /// read from the store: the history a reopen leaves there (collected memories, the
    /// released objects they owned; see `Store::object_space`), checked as it is read. Call
    /// it before reading or planning against a process or object that may be such history
    /// (one named by a caller, not one the caller holds). The store is read without the lock;
    /// what the space gained meanwhile is kept ([`ObjectSpace::adopt`]).
    pub(crate) fn ensure(&self, store: &dyn Store, pids: &[Pid], oids: &[Oid]) -> Result<(), ToolError> {
        let (pids, oids): (Vec<Pid>, Vec<Oid>) = {
            let space = self.space.lock();
            (
                pids.iter().copied().filter(|pid| space.process(*pid).is_none()).collect(),
                oids.iter().copied().filter(|oid| space.object(*oid).is_none()).collect(),
            )
        };
        if pids.is_empty() && oids.is_empty() {
            return Ok(());
        }
        let loaded = store.object_memory_of(&pids, &oids).map_err(|e| ToolError::store(&e))?;
        self.space.lock().adopt(loaded);
        Ok(())
    }

    /// Opens a stage: the lock under which a plan is made, applied and submitted.
    fn stage(&self) -> Result<Stage<'_>, ToolError> {
        if let Some(cause) = self.poisoned.lock().clone() {
            // The space may be ahead of the file: refuse exactly as the fail-stopped store does.
            return Err(ToolError::store(&StoreError::FailStopped { cause }));
        }
        Ok(Stage { memory: self, space: self.space.lock(), changes: Vec::new() })
    }

    /// Runs `plan` under a stage and submits what it staged: the lock is held only for the
    /// closure (which cannot await). Returns the closure's value and the ticket to await, if
    /// anything was staged; an `Err` from the closure must leave the stage empty.
    pub(crate) fn plan<T, E: From<ToolError>>(
        &self,
        store: &dyn Store,
        plan: impl FnOnce(&mut Stage<'_>) -> Result<T, E>,
    ) -> Result<(T, Option<CommitTicket>), E> {
        let mut stage = self.stage()?;
        let value = plan(&mut stage);
        let ticket = if stage.is_empty() { None } else { Some(stage.submit(store)) };
        Ok((value?, ticket))
    }

    /// [`Self::plan`], then awaits the commit.
    pub(crate) async fn commit<T, E: From<ToolError>>(
        &self,
        store: &dyn Store,
        plan: impl FnOnce(&mut Stage<'_>) -> Result<T, E>,
    ) -> Result<T, E> {
        let (value, ticket) = self.plan(store, plan)?;
        if let Some(ticket) = ticket {
            self.finish(ticket).await.map_err(|e| E::from(ToolError::store(&e)))?;
        }
        Ok(value)
    }

    /// Records the outcome of a staged commit: any failure except a refused precondition
    /// poisons the memory.
    fn settle(&self, result: &Result<crate::store::CommitReceipt, StoreError>) {
        if let Err(e) = result
            && !matches!(e, StoreError::SourceGrantRevoked { .. })
        {
            let mut poisoned = self.poisoned.lock();
            if poisoned.is_none() {
                *poisoned = Some(e.to_string());
            }
        }
    }

    /// Awaits a staged commit and [`Self::settle`]s its result.
    pub(crate) async fn finish(
        &self,
        ticket: CommitTicket,
    ) -> Result<crate::store::CommitReceipt, StoreError> {
        let result = ticket.await;
        self.settle(&result);
        result
    }

    /// Takes back a launch view whose change set the store refused, with the payloads staged
    /// for the objects it owned (its goal).
    pub(crate) fn discard_launch(&self, child: Pid) {
        let mut space = self.space.lock();
        let owned: Vec<Oid> = space.owned_by(&crate::kernel::objects::Owner::Process(child)).collect();
        let mut durable = self.durable.lock();
        for oid in owned {
            self.payloads.remove(&oid);
            durable.remove(&oid);
        }
        drop(durable);
        space.discard_process(child);
    }

    /// Sets a payload (under a stage, so concurrent writes land in commit order).
    fn set_payload(&self, oid: Oid, payload: Payload) {
        if payload.durable {
            self.durable.lock().insert(oid);
        }
        self.payloads.insert(oid, payload);
    }

    /// A payload: from this runtime, else from the store if it was made durable.
    pub(crate) fn payload(&self, store: &dyn Store, oid: Oid) -> Result<Lookup, ToolError> {
        if let Some(p) = self.payloads.get(&oid) {
            return Ok(Lookup::Found(p.clone()));
        }
        if !self.durable.lock().contains(&oid) {
            return Ok(Lookup::NotMaterializable);
        }
        let stored = store.payload(oid).map_err(|e| ToolError::store(&e))?;
        let Some(envelope) = stored else { return Ok(Lookup::NotMaterializable) };
        let value = envelope.to_json().map_err(|e| {
            ToolError::new("corrupt_payload", format!("the durable payload of {oid} cannot be decoded: {e}"))
        })?;
        // Cached under the space lock, which every write and release of a payload holds: a
        // write that landed since the load wins (the entry is taken as it is), and an object
        // released since the load is not brought back.
        let space = self.space.lock();
        if space.object(oid).is_none_or(|o| o.released) {
            return Ok(Lookup::NotMaterializable);
        }
        let cached = self.payloads.entry(oid).or_insert(Payload { value, durable: true }).clone();
        drop(space);
        Ok(Lookup::Found(cached))
    }

    /// A payload held in this runtime, without going to the store: for a caller that holds a
    /// stage (a payload that is only in the store is durable already).
    pub(crate) fn local_payload(&self, oid: Oid) -> Option<Payload> {
        self.payloads.get(&oid).map(|p| p.clone())
    }

    /// Whether an object's payload is durable.
    pub(crate) fn is_durable(&self, oid: Oid) -> bool {
        self.durable.lock().contains(&oid)
    }

    /// Live objects whose payload this runtime cannot materialize: after a reopen, every
    /// unreleased object that was never checkpointed.
    pub(crate) fn unmaterializable(&self) -> Vec<Oid> {
        let durable = self.durable.lock().clone();
        self.read(|space| {
            space
                .objects()
                .filter(|o| !o.released && !durable.contains(&o.oid) && !self.payloads.contains_key(&o.oid))
                .map(|o| o.oid)
                .collect()
        })
    }
}

/// A plan in progress: the space, locked, and the change set being built.
pub(crate) struct Stage<'m> {
    memory: &'m Memory,
    space: MutexGuard<'m, ObjectSpace>,
    changes: Vec<Change>,
}

impl Stage<'_> {
    /// The space as staged so far.
    pub(crate) fn space(&self) -> &ObjectSpace {
        &self.space
    }

    /// Applies object changes in memory and adds them to the change set. A released object's
    /// payload is dropped with it.
    pub(crate) fn apply(&mut self, changes: Vec<ObjectChange>) {
        for change in &changes {
            if let ObjectChange::ReleaseObject { oid } = change {
                self.memory.payloads.remove(oid);
                self.memory.durable.lock().remove(oid);
            }
        }
        self.space.apply(changes.iter().cloned());
        match self.changes.last_mut() {
            Some(Change::Objects(staged)) => staged.extend(changes),
            _ => self.changes.push(Change::Objects(changes)),
        }
    }

    /// Adds a change that is not an object change (a process row, a grant).
    pub(crate) fn push(&mut self, change: Change) {
        self.changes.push(change);
    }

    /// Adds several such changes.
    pub(crate) fn extend(&mut self, changes: impl IntoIterator<Item = Change>) {
        self.changes.extend(changes);
    }

    /// Applies a materialized launch view and stores its goal's payload, the goal text, which
    /// is always durable (the process row holds the text, and a goal must read back after a
    /// reopen like the row).
    pub(crate) fn apply_view(&mut self, view: &mut ViewPlan, goal: &str) {
        self.apply(std::mem::take(&mut view.changes));
        self.put_payload(view.goal, serde_json::Value::String(goal.to_string()), true);
    }

    /// Sets an object's payload; a durable one is committed with the change set.
    pub(crate) fn put_payload(&mut self, oid: Oid, value: serde_json::Value, durable: bool) {
        if durable {
            self.changes.push(Change::PutPayload { oid, envelope: Envelope::json(&value) });
        }
        self.memory.set_payload(oid, Payload { value, durable });
    }

    /// Whether nothing has been staged.
    fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Submits the change set and releases the lock. Await the ticket, then
    /// [`Memory::settle`] its result.
    fn submit(self, store: &dyn Store) -> CommitTicket {
        let ticket = store.submit(self.changes);
        drop(self.space);
        ticket
    }
}
