//! `MemorySeatStore`: the seat store's semantics in memory, for tests and embedders that need
//! no durability. "Durable" here means visible to every later call on the same store.

use super::{RigRecord, SeatRecord, SeatStore, StoreError, known_rigs, now_ms, rig_record, transition};
use crate::agent::brain::Usage;
use crate::rig::{Member, MemberId, NativeId, RigId, RigSpec};
use parking_lot::Mutex;

/// A [`SeatStore`] in memory. It never fails a write and forgets everything when dropped.
#[derive(Debug, Default)]
pub struct MemorySeatStore {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// In creation order.
    rigs: Vec<RigRecord>,
    /// In declaration order, all rigs together.
    seats: Vec<SeatRecord>,
}

impl State {
    fn has_rig(&self, rig: &RigId) -> bool {
        self.rigs.iter().any(|record| &record.id == rig)
    }

    fn unknown_rig(&self, rig: &RigId) -> StoreError {
        StoreError::UnknownRig { rig: rig.clone(), known: known_rigs(self.rigs.iter().map(|r| &r.id)) }
    }

    fn position(&self, rig: &RigId, member: &MemberId) -> Result<usize, StoreError> {
        if !self.has_rig(rig) {
            return Err(self.unknown_rig(rig));
        }
        self.seats
            .iter()
            .position(|seat| &seat.rig == rig && &seat.member == member)
            .ok_or_else(|| StoreError::UnknownSeat { rig: rig.clone(), member: member.clone() })
    }

    /// Applies `change` to the seat and writes back what it returns.
    fn update(
        &mut self,
        rig: &RigId,
        member: &MemberId,
        change: impl FnOnce(&State, &SeatRecord) -> Result<SeatRecord, StoreError>,
    ) -> Result<SeatRecord, StoreError> {
        let index = self.position(rig, member)?;
        let next = change(self, &self.seats[index])?;
        self.seats[index] = next.clone();
        Ok(next)
    }
}

impl MemorySeatStore {
    /// An empty store.
    pub fn new() -> MemorySeatStore {
        MemorySeatStore::default()
    }
}

impl SeatStore for MemorySeatStore {
    fn create_rig(&self, spec: &RigSpec, spec_path: &str) -> Result<RigRecord, StoreError> {
        let now = now_ms();
        let mut state = self.state.lock();
        if state.has_rig(&spec.id) {
            return Err(StoreError::RigExists { rig: spec.id.clone() });
        }
        let record = rig_record(spec, spec_path, now)?;
        let mut seats: Vec<SeatRecord> = Vec::with_capacity(spec.members.len());
        for member in &spec.members {
            if seats.iter().any(|seat| seat.member == member.id) {
                return Err(StoreError::DuplicateMember { rig: spec.id.clone(), member: member.id.clone() });
            }
            seats.push(transition::declare(&spec.id, member, now)?);
        }
        state.rigs.push(record.clone());
        state.seats.extend(seats);
        Ok(record)
    }

    fn declare(&self, rig: &RigId, member: &Member) -> Result<SeatRecord, StoreError> {
        let now = now_ms();
        let mut state = self.state.lock();
        if !state.has_rig(rig) {
            return Err(state.unknown_rig(rig));
        }
        if state.seats.iter().any(|seat| &seat.rig == rig && seat.member == member.id) {
            return Err(StoreError::DuplicateMember { rig: rig.clone(), member: member.id.clone() });
        }
        let record = transition::declare(rig, member, now)?;
        state.seats.push(record.clone());
        Ok(record)
    }

    fn resolve(&self, rig: &RigId, member: &MemberId) -> Result<SeatRecord, StoreError> {
        let now = now_ms();
        self.state.lock().update(rig, member, |_, seat| transition::resolve(seat, now))
    }

    fn realize(
        &self,
        rig: &RigId,
        member: &MemberId,
        token: &NativeId,
        pid: Option<&str>,
    ) -> Result<SeatRecord, StoreError> {
        let now = now_ms();
        self.state.lock().update(rig, member, |state, seat| {
            let holder = state.seats.iter().find(|other| other.token.as_ref() == Some(token));
            transition::realize(seat, token, pid, holder, now)
        })
    }

    fn fail(
        &self,
        rig: &RigId,
        member: &MemberId,
        step: &str,
        error: &str,
        stderr: Option<&str>,
    ) -> Result<SeatRecord, StoreError> {
        let now = now_ms();
        self.state.lock().update(rig, member, |_, seat| transition::fail(seat, step, error, stderr, now))
    }

    fn record_usage(&self, rig: &RigId, member: &MemberId, usage: &Usage) -> Result<SeatRecord, StoreError> {
        let now = now_ms();
        self.state.lock().update(rig, member, |_, seat| transition::record_usage(seat, usage, now))
    }

    fn seat(&self, rig: &RigId, member: &MemberId) -> Result<Option<SeatRecord>, StoreError> {
        let state = self.state.lock();
        Ok(state.seats.iter().find(|seat| &seat.rig == rig && &seat.member == member).cloned())
    }

    fn seats(&self, rig: &RigId) -> Result<Vec<SeatRecord>, StoreError> {
        let state = self.state.lock();
        Ok(state.seats.iter().filter(|seat| &seat.rig == rig).cloned().collect())
    }

    fn rigs(&self) -> Result<Vec<RigRecord>, StoreError> {
        Ok(self.state.lock().rigs.clone())
    }

    fn rig(&self, id: &RigId) -> Result<Option<RigRecord>, StoreError> {
        Ok(self.state.lock().rigs.iter().find(|record| &record.id == id).cloned())
    }
}
