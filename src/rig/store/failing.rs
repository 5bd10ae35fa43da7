//! `FailingSeatStore`: a test double that fails one chosen operation of another store, so a
//! runner's tests can show what happens when, for example, a seat's new token cannot be
//! written (the seat must not be launched).

use super::{RigRecord, SeatRecord, SeatStore, StoreError};
use crate::agent::brain::Usage;
use crate::rig::{Member, MemberId, NativeId, RigId, RigSpec};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// One [`SeatStore`] method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeatOperation {
    /// [`SeatStore::create_rig`].
    CreateRig,
    /// [`SeatStore::declare`].
    Declare,
    /// [`SeatStore::resolve`].
    Resolve,
    /// [`SeatStore::realize`].
    Realize,
    /// [`SeatStore::fail`].
    Fail,
    /// [`SeatStore::record_usage`].
    RecordUsage,
    /// [`SeatStore::seat`].
    Seat,
    /// [`SeatStore::seats`].
    Seats,
    /// [`SeatStore::rigs`].
    Rigs,
    /// [`SeatStore::rig`].
    Rig,
}

impl SeatOperation {
    /// The operation as a verb phrase (`realize a seat`).
    pub fn as_str(self) -> &'static str {
        match self {
            SeatOperation::CreateRig => "create a rig",
            SeatOperation::Declare => "declare a seat",
            SeatOperation::Resolve => "resolve a seat",
            SeatOperation::Realize => "realize a seat",
            SeatOperation::Fail => "record a failed seat",
            SeatOperation::RecordUsage => "record a seat's usage",
            SeatOperation::Seat => "read a seat",
            SeatOperation::Seats => "read a rig's seats",
            SeatOperation::Rigs => "read the rigs",
            SeatOperation::Rig => "read a rig",
        }
    }
}

impl fmt::Display for SeatOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A [`SeatStore`] that passes every call to `inner` except calls of one chosen operation,
/// which fail with [`StoreError::Injected`] before reaching it (so they change nothing).
///
/// A test double, for this crate's tests and for embedders': wrap a real store, fail
/// [`SeatOperation::Realize`], and check that a seat whose token could not be written is not
/// reported or run as launched.
#[derive(Debug)]
pub struct FailingSeatStore<S> {
    inner: S,
    failing: SeatOperation,
    injected: AtomicU64,
}

impl<S: SeatStore> FailingSeatStore<S> {
    /// `inner`, with every call of `failing` failing.
    pub fn new(inner: S, failing: SeatOperation) -> FailingSeatStore<S> {
        FailingSeatStore { inner, failing, injected: AtomicU64::new(0) }
    }

    /// The store it wraps, to read what was (and was not) written.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// How many calls it has failed.
    pub fn injected_count(&self) -> u64 {
        self.injected.load(Ordering::Relaxed)
    }

    fn gate(&self, operation: SeatOperation) -> Result<(), StoreError> {
        if operation == self.failing {
            self.injected.fetch_add(1, Ordering::Relaxed);
            return Err(StoreError::Injected { operation });
        }
        Ok(())
    }
}

impl<S: SeatStore> SeatStore for FailingSeatStore<S> {
    fn create_rig(&self, spec: &RigSpec, spec_path: &str) -> Result<RigRecord, StoreError> {
        self.gate(SeatOperation::CreateRig)?;
        self.inner.create_rig(spec, spec_path)
    }

    fn declare(&self, rig: &RigId, member: &Member) -> Result<SeatRecord, StoreError> {
        self.gate(SeatOperation::Declare)?;
        self.inner.declare(rig, member)
    }

    fn resolve(&self, rig: &RigId, member: &MemberId) -> Result<SeatRecord, StoreError> {
        self.gate(SeatOperation::Resolve)?;
        self.inner.resolve(rig, member)
    }

    fn realize(
        &self,
        rig: &RigId,
        member: &MemberId,
        token: &NativeId,
        pid: Option<&str>,
    ) -> Result<SeatRecord, StoreError> {
        self.gate(SeatOperation::Realize)?;
        self.inner.realize(rig, member, token, pid)
    }

    fn fail(
        &self,
        rig: &RigId,
        member: &MemberId,
        step: &str,
        error: &str,
        stderr: Option<&str>,
    ) -> Result<SeatRecord, StoreError> {
        self.gate(SeatOperation::Fail)?;
        self.inner.fail(rig, member, step, error, stderr)
    }

    fn record_usage(&self, rig: &RigId, member: &MemberId, usage: &Usage) -> Result<SeatRecord, StoreError> {
        self.gate(SeatOperation::RecordUsage)?;
        self.inner.record_usage(rig, member, usage)
    }

    fn seat(&self, rig: &RigId, member: &MemberId) -> Result<Option<SeatRecord>, StoreError> {
        self.gate(SeatOperation::Seat)?;
        self.inner.seat(rig, member)
    }

    fn seats(&self, rig: &RigId) -> Result<Vec<SeatRecord>, StoreError> {
        self.gate(SeatOperation::Seats)?;
        self.inner.seats(rig)
    }

    fn rigs(&self) -> Result<Vec<RigRecord>, StoreError> {
        self.gate(SeatOperation::Rigs)?;
        self.inner.rigs()
    }

    fn rig(&self, id: &RigId) -> Result<Option<RigRecord>, StoreError> {
        self.gate(SeatOperation::Rig)?;
        self.inner.rig(id)
    }
}
