//! Seats' persisted state: each seat of a rig moves declared → resolved → realized, or to
//! failed, and its record says where it is. See `docs/rigs.md`, "Seat state".
//!
//! The rules live in one place (`transition.rs`, pure functions of a record and what the store
//! looked up); the stores only read and write:
//!
//! - `seat.rs`: [`SeatStatus`], [`SeatRecord`] (with [`SeatRecord::check`], its invariants),
//!   [`RigRecord`].
//! - `error.rs`: [`StoreError`] (stable [`StoreError::code`]s) and [`TransitionError`].
//! - `transition.rs`: declare, resolve, realize, fail and record usage as record → record.
//! - `memory.rs`: [`MemorySeatStore`]. `sqlite/`: [`SqliteSeatStore`], its own file.
//!   `postgres.rs`: [`PostgresSeatStore`], beside the kernel's tables in a PostgreSQL database.
//!   `rows.rs`: records to rows and back, for both; `sql.rs`: every call as one transaction of
//!   reads and writes, for both ([`SeatStore`] follows for each).
//! - `failing.rs`: [`FailingSeatStore`], a test double that fails a chosen [`SeatOperation`].
//! - `limits.rs`: how much standard error and error text a failed seat keeps.
//!
//! Invariants every store keeps, whatever the order of calls:
//! - a seat's token is set only by [`SeatStore::realize`], and only on a realized seat;
//! - a token is never the seat's own source (the parent's token is never written onto the new
//!   seat) and never another seat's token;
//! - realized and failed are final: nothing changes a seat in either, and nothing moves a seat
//!   back to declared, so restoring a realized seat later is never a new fork;
//! - a refused call changes nothing;
//! - a write has reached the store's durable medium before it returns `Ok`: a seat counts as
//!   launched only once its realize returned.

mod error;
mod failing;
pub mod limits;
mod memory;
mod postgres;
mod rows;
mod seat;
mod sql;
mod sqlite;
mod transition;

pub use error::{StoreError, TransitionError};
pub use failing::{FailingSeatStore, SeatOperation};
pub use memory::MemorySeatStore;
pub use postgres::{POSTGRES_SEAT_SCHEMA_VERSION, PostgresSeatStore};
pub use seat::{RigRecord, SeatRecord, SeatStatus};
pub use sqlite::{SEAT_STORE_FILE, SEAT_STORE_SCHEMA_VERSION, SqliteSeatStore};

use crate::agent::brain::Usage;
use crate::rig::{Member, MemberId, NativeId, RigId, RigSpec};
use std::sync::Arc;

/// Where seats' state is kept. Object-safe and shared (`Send + Sync`, every method `&self`);
/// each write is durable before it returns `Ok`, and a refused write changes nothing.
pub trait SeatStore: Send + Sync {
    /// Records a rig created from `spec` (read from `spec_path`) and declares each of its
    /// members as a seat, in order, all at once. Refuses an id a rig already has.
    fn create_rig(&self, spec: &RigSpec, spec_path: &str) -> Result<RigRecord, StoreError>;

    /// Declares `member` as a new seat of `rig` (an expansion). Refuses a member id the rig has.
    fn declare(&self, rig: &RigId, member: &Member) -> Result<SeatRecord, StoreError>;

    /// Marks a declared seat resolved: its session source, if any, was found on its runtime.
    fn resolve(&self, rig: &RigId, member: &MemberId) -> Result<SeatRecord, StoreError>;

    /// Marks a resolved seat realized with its own new `token` (and, for a `native` seat, the
    /// agentvisor process `pid`). Refuses its source's token ([`StoreError::TokenIsSource`])
    /// and a token another seat holds ([`StoreError::TokenTaken`]). Until this returns `Ok`
    /// the seat is not launched.
    fn realize(
        &self,
        rig: &RigId,
        member: &MemberId,
        token: &NativeId,
        pid: Option<&str>,
    ) -> Result<SeatRecord, StoreError>;

    /// Marks a declared or resolved seat failed at `step`, with `error` and the runtime's
    /// standard error (cut to [`limits::STDERR_BYTES_MAX`], keeping its end). No token is
    /// written.
    fn fail(
        &self,
        rig: &RigId,
        member: &MemberId,
        step: &str,
        error: &str,
        stderr: Option<&str>,
    ) -> Result<SeatRecord, StoreError>;

    /// Records what a realized seat has used in all (`usage` replaces what was recorded);
    /// its status does not change. Refuses a seat that is not realized
    /// ([`StoreError::NotRealized`]).
    fn record_usage(&self, rig: &RigId, member: &MemberId, usage: &Usage) -> Result<SeatRecord, StoreError>;

    /// The seat, if `rig` has it.
    fn seat(&self, rig: &RigId, member: &MemberId) -> Result<Option<SeatRecord>, StoreError>;

    /// `rig`'s seats in the order they were declared (empty for an unknown rig).
    fn seats(&self, rig: &RigId) -> Result<Vec<SeatRecord>, StoreError>;

    /// Every rig, in the order they were created.
    fn rigs(&self) -> Result<Vec<RigRecord>, StoreError>;

    /// The rig with this id, if there is one.
    fn rig(&self, id: &RigId) -> Result<Option<RigRecord>, StoreError>;
}

impl<S: SeatStore + ?Sized> SeatStore for Arc<S> {
    fn create_rig(&self, spec: &RigSpec, spec_path: &str) -> Result<RigRecord, StoreError> {
        (**self).create_rig(spec, spec_path)
    }
    fn declare(&self, rig: &RigId, member: &Member) -> Result<SeatRecord, StoreError> {
        (**self).declare(rig, member)
    }
    fn resolve(&self, rig: &RigId, member: &MemberId) -> Result<SeatRecord, StoreError> {
        (**self).resolve(rig, member)
    }
    fn realize(
        &self,
        rig: &RigId,
        member: &MemberId,
        token: &NativeId,
        pid: Option<&str>,
    ) -> Result<SeatRecord, StoreError> {
        (**self).realize(rig, member, token, pid)
    }
    fn fail(
        &self,
        rig: &RigId,
        member: &MemberId,
        step: &str,
        error: &str,
        stderr: Option<&str>,
    ) -> Result<SeatRecord, StoreError> {
        (**self).fail(rig, member, step, error, stderr)
    }
    fn record_usage(&self, rig: &RigId, member: &MemberId, usage: &Usage) -> Result<SeatRecord, StoreError> {
        (**self).record_usage(rig, member, usage)
    }
    fn seat(&self, rig: &RigId, member: &MemberId) -> Result<Option<SeatRecord>, StoreError> {
        (**self).seat(rig, member)
    }
    fn seats(&self, rig: &RigId) -> Result<Vec<SeatRecord>, StoreError> {
        (**self).seats(rig)
    }
    fn rigs(&self) -> Result<Vec<RigRecord>, StoreError> {
        (**self).rigs()
    }
    fn rig(&self, id: &RigId) -> Result<Option<RigRecord>, StoreError> {
        (**self).rig(id)
    }
}

/// The wall clock in milliseconds since the Unix epoch (0 before it). Only timestamps read it;
/// no rule depends on it.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
}

/// The rig record for `spec`, created at `now_ms`.
fn rig_record(spec: &RigSpec, spec_path: &str, now_ms: u64) -> Result<RigRecord, StoreError> {
    let spec_json = serde_json::to_string(spec)
        .map_err(|e| StoreError::Corrupt { message: format!("rig {} does not encode: {e}", spec.id) })?;
    Ok(RigRecord { id: spec.id.clone(), spec_path: spec_path.to_owned(), spec_json, created_at_ms: now_ms })
}

/// The ids of `rigs`, comma-separated, or `none`: what an unknown-rig refusal lists.
fn known_rigs<'a>(rigs: impl Iterator<Item = &'a RigId>) -> String {
    let ids: Vec<&str> = rigs.map(RigId::as_str).collect();
    if ids.is_empty() { "none".to_owned() } else { ids.join(", ") }
}
