//! What every process actor of one runtime shares: the store, the images, the routing table
//! from pid to actor, telemetry and the epoch. No kernel state lives here: each process's row
//! is owned by its actor, and everything else is in the store.

use super::actor::ProcessMsg;
use super::program::ImageRegistry;
use super::telemetry::Telemetry;
use crate::kernel::ids::{Epoch, Pid};
use crate::store::Store;
use dashmap::DashMap;
use ractor::ActorRef;
use std::sync::Arc;

/// Runtime-wide context handed to every process actor.
pub(crate) struct Shared {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) images: ImageRegistry,
    /// Routing only: which actor runs which live process.
    pub(crate) registry: DashMap<Pid, ActorRef<ProcessMsg>>,
    pub(crate) telemetry: Telemetry,
    pub(crate) epoch: Epoch,
}
