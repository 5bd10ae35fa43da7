//! What a runtime is opened with, and what the host gives a root process.

use super::program::{Image, ImageRegistry};
use crate::kernel::budget::Budget;
use crate::kernel::capability::CapabilityRequest;
use crate::kernel::ids::ImageId;

/// What a runtime is opened with.
#[derive(Clone, Debug, Default)]
pub struct RuntimeOptions {
    /// The images processes may run. Fixed for the runtime's life, so recovery can restart
    /// any process it finds.
    pub images: ImageRegistry,
    /// Resume, on open, the processes a clean shutdown paused (`pause_reason: shutdown`).
    /// Their programs restart from their last checkpoint with the generation claimed, so work
    /// since that checkpoint may run again: enable it only for programs that checkpoint before
    /// effects. Default off: they stay paused until resumed. Stale executions (a crash) are
    /// never resumed automatically.
    pub resume_after_shutdown: bool,
    /// Open without starting anything: `runnable` rows are not started and saved waits are
    /// kept but not re-armed, so no program runs until the host signals a process. For a
    /// command that reports what recovery did and leaves the tree as it found it. Recovery
    /// itself (stale executions paused, claimed resumes failed closed) still runs.
    pub hold: bool,
    /// The wall clock restart periods (`Supervision::period_ms`) are measured on; `None`
    /// means the system clock. Tests pass a [`ManualClock`](super::clock::ManualClock).
    pub clock: Option<std::sync::Arc<dyn super::clock::Clock>>,
    /// Where [`Runtime::open`](super::Runtime::open) and its siblings keep the kernel's
    /// state: `None` for the SQLite file in the state directory (the default), or the URL of
    /// a PostgreSQL database (`postgres://…`). The state directory still holds the owner lock
    /// and the files beside the store.
    pub store_url: Option<String>,
    /// Who this runtime is on a PostgreSQL database it owns: its node name and the lease it
    /// holds and renews (see `docs/nodes.md`). Unused for SQLite.
    pub node_lease: crate::store::NodeLease,
}

impl RuntimeOptions {
    /// Options with no images.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an image.
    pub fn image(mut self, image: Image) -> Self {
        self.images.register(image);
        self
    }

    /// Sets [`Self::hold`].
    pub fn hold(mut self, yes: bool) -> Self {
        self.hold = yes;
        self
    }

    /// Sets [`Self::clock`].
    pub fn clock(mut self, clock: std::sync::Arc<dyn super::clock::Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Sets [`Self::store_url`].
    pub fn store_url(mut self, url: Option<String>) -> Self {
        self.store_url = url;
        self
    }

    /// Sets [`Self::node_lease`].
    pub fn node_lease(mut self, lease: crate::store::NodeLease) -> Self {
        self.node_lease = lease;
        self
    }

    /// Sets [`Self::resume_after_shutdown`].
    pub fn resume_after_shutdown(mut self, yes: bool) -> Self {
        self.resume_after_shutdown = yes;
        self
    }
}

/// What the host gives a root process.
#[derive(Clone, Debug)]
pub struct RootSpec {
    /// Its goal.
    pub goal: String,
    /// Its image.
    pub image: ImageId,
    /// Its absolute working directory.
    pub cwd: String,
    /// Grants made by the host (the root of all authority).
    pub capabilities: Vec<CapabilityRequest>,
    /// Its budget; `Budget::UNLIMITED` for none.
    pub budget: Budget,
    /// Its data-flow clearance; `None` clears it for every label.
    pub clearance: Option<std::collections::BTreeSet<String>>,
    /// Labels the host puts on its goal (its starting context).
    pub goal_labels: std::collections::BTreeSet<String>,
    /// How it restarts its children; `None` means `Supervision::DEFAULT`.
    pub supervision: Option<crate::kernel::restart::Supervision>,
}
