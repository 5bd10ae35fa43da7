//! What every process actor of one runtime shares: the store, object memory, the images, the
//! routing table from pid to actor, telemetry and the epoch. Each process's row is owned by its
//! actor; object memory is shared because objects cross processes (forks, waits, merges).

use super::actor::ProcessMsg;
use super::memory::Memory;
use super::program::ImageRegistry;
use super::telemetry::Telemetry;
use crate::kernel::ids::{Epoch, Pid};
use crate::store::Store;
use dashmap::DashMap;
use ractor::ActorRef;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

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
        }
    }

    /// The next message sequence number: runtime-wide, so per-sender order is send order.
    pub(crate) fn next_message_seq(&self) -> u64 {
        self.message_seq.fetch_add(1, Ordering::Relaxed) + 1
    }
}
