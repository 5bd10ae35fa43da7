//! What every process actor of one runtime shares: the store, object memory, the images, the
//! routing table from pid to actor, telemetry and the epoch. Each process's row is owned by its
//! actor; object memory is shared because objects cross processes (forks, waits, merges).

use super::actor::ProcessMsg;
use super::memory::Memory;
use super::program::ImageRegistry;
use super::telemetry::Telemetry;
use crate::kernel::capability::Grant;
use crate::kernel::ids::{Epoch, Pid};
use crate::store::{ChildrenAtStart, LiveReads, ProcessQuery, Store, StoreError};
use dashmap::DashMap;
use parking_lot::Mutex;
use ractor::ActorRef;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Runtime-wide context handed to every process actor.
pub(crate) struct Shared {
    pub(crate) store: Arc<dyn Store>,
    /// Object memory: the one in-memory object space and the payloads.
    pub(crate) memory: Memory,
    pub(crate) images: ImageRegistry,
    /// Routing only: which actor runs which live process.
    pub(crate) registry: DashMap<Pid, ActorRef<ProcessMsg>>,
    pub(crate) telemetry: Telemetry,
    pub(crate) epoch: Epoch,
    /// The last message sequence number issued; continues after the store's highest.
    pub(crate) message_seq: AtomicU64,
    /// Recovered actors do not start or re-arm anything (`RuntimeOptions::hold`).
    pub(crate) hold: bool,
    /// The wall clock restart periods are measured on.
    pub(crate) clock: Arc<dyn super::clock::Clock>,
    /// What the store said about every recovered process as the runtime opened, read for all
    /// of them at once (`Store::live_reads`) and taken by each recovered actor as it starts.
    /// It stays true because no recovered process enters its execution, and so nothing
    /// writes, until every recovered actor has started (`opened`); emptied then.
    opening: Mutex<Option<LiveReads>>,
    /// Whether every recovered actor has started. Until then a recovered actor holds its
    /// entry, and the runtime releases them all at once.
    opened: AtomicBool,
}

impl Shared {
    /// Shared context for a runtime of `epoch` whose store's highest message seq is
    /// `message_seq_max`.
    pub(crate) fn new(
        store: Arc<dyn Store>,
        memory: Memory,
        images: ImageRegistry,
        epoch: Epoch,
        message_seq_max: u64,
    ) -> Self {
        Shared {
            store,
            memory,
            images,
            registry: DashMap::new(),
            telemetry: Telemetry::default(),
            epoch,
            message_seq: AtomicU64::new(message_seq_max),
            hold: false,
            clock: Arc::new(super::clock::SystemClock),
            opening: Mutex::new(None),
            opened: AtomicBool::new(true),
        }
    }

    /// Starts a runtime's opening: recovered actors read `reads` instead of the store and hold
    /// their entry until [`Shared::finish_opening`].
    pub(crate) fn begin_opening(&mut self, reads: LiveReads) {
        *self.opening.get_mut() = Some(reads);
        *self.opened.get_mut() = false;
    }

    /// Ends the opening: what was read for it is dropped, and recovered actors started from
    /// now on enter at once.
    pub(crate) fn finish_opening(&self) {
        *self.opening.lock() = None;
        self.opened.store(true, Ordering::Release);
    }

    /// Whether the runtime is still opening (see [`Shared::begin_opening`]).
    pub(crate) fn is_opening(&self) -> bool {
        !self.opened.load(Ordering::Acquire)
    }

    /// A recovered process's children (the live ones' rows, what the ended ones add up to):
    /// read at the opening, else now.
    pub(crate) fn children_at_start(&self, pid: Pid) -> Result<ChildrenAtStart, StoreError> {
        if let Some(children) = self.opening.lock().as_mut().and_then(|r| r.children.remove(&pid)) {
            return Ok(children);
        }
        Ok(self.store.processes(ProcessQuery::children_of(pid))?.into_iter().collect())
    }

    /// A recovered process's grants: read at the opening, else now.
    pub(crate) fn grants_at_start(&self, pid: Pid) -> Result<Vec<Grant>, StoreError> {
        if let Some(grants) = self.opening.lock().as_mut().and_then(|r| r.grants.remove(&pid)) {
            return Ok(grants);
        }
        self.store.grants_of(pid)
    }

    /// Whether a recovered process may have unread messages: false only when the opening's
    /// read found none.
    pub(crate) fn may_have_unread_at_start(&self, pid: Pid) -> bool {
        self.opening.lock().as_ref().is_none_or(|r| r.unread.contains(&pid))
    }

    /// The next message sequence number: runtime-wide, so per-sender order is send order.
    pub(crate) fn next_message_seq(&self) -> u64 {
        self.message_seq.fetch_add(1, Ordering::Relaxed) + 1
    }
}
