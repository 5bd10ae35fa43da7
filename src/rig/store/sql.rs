//! What both SQL seat stores do, written once: every [`SeatStore`] call as reads and writes
//! inside one transaction, the state model's rule in between, and a read back of each write.
//! A backend supplies the transaction ([`SeatTx`]: the rows it reads and writes) and how one
//! is run ([`SeatDb`]: its lock, commit and fail-stop); `SeatStore` follows for every
//! `SeatDb`.

use super::{RigRecord, SeatRecord, SeatStore, StoreError, known_rigs, now_ms, rig_record, transition};
use crate::agent::brain::Usage;
use crate::rig::{Member, MemberId, NativeId, RigId, RigSpec};

/// The rows one transaction of a seat store reads and writes.
pub(super) trait SeatTx {
    /// One seat.
    fn read_seat(&mut self, rig: &RigId, member: &MemberId) -> Result<Option<SeatRecord>, StoreError>;
    /// The seat holding `token`, if one does.
    fn seat_holding(&mut self, token: &NativeId) -> Result<Option<SeatRecord>, StoreError>;
    /// Every seat of a rig, in declaration order.
    fn read_seats(&mut self, rig: &RigId) -> Result<Vec<SeatRecord>, StoreError>;
    /// One rig.
    fn read_rig(&mut self, rig: &RigId) -> Result<Option<RigRecord>, StoreError>;
    /// Every rig, in creation order.
    fn read_rigs(&mut self) -> Result<Vec<RigRecord>, StoreError>;
    /// Inserts a rig's row.
    fn insert_rig(&mut self, record: &RigRecord) -> Result<(), StoreError>;
    /// Inserts a seat's row.
    fn insert_seat(&mut self, seat: &SeatRecord) -> Result<(), StoreError>;
    /// Writes a seat's changing columns (status, token, failure, pid, time, usage).
    fn update_seat(&mut self, seat: &SeatRecord) -> Result<(), StoreError>;
}

/// A SQL seat store: how it runs a write transaction and a read.
pub(super) trait SeatDb: Send + Sync {
    /// Runs `body` in one write transaction and commits it. A backend error fail-stops the
    /// store; a refusal rolls back and changes nothing.
    fn write<T: Send>(
        &self,
        what: &str,
        body: &mut (dyn FnMut(&mut dyn SeatTx) -> Result<T, StoreError> + Send),
    ) -> Result<T, StoreError>;

    /// Runs `body` on what is committed.
    fn read<T: Send>(
        &self,
        body: &mut (dyn FnMut(&mut dyn SeatTx) -> Result<T, StoreError> + Send),
    ) -> Result<T, StoreError>;
}

fn unknown_rig(tx: &mut dyn SeatTx, rig: &RigId) -> Result<StoreError, StoreError> {
    let rigs = tx.read_rigs()?;
    Ok(StoreError::UnknownRig { rig: rig.clone(), known: known_rigs(rigs.iter().map(|r| &r.id)) })
}

/// Checks that the seat as stored is what was written.
fn read_back(tx: &mut dyn SeatTx, seat: &SeatRecord) -> Result<(), StoreError> {
    if tx.read_seat(&seat.rig, &seat.member)?.as_ref() != Some(seat) {
        return Err(StoreError::Corrupt {
            message: format!(
                "seat {} of rig {} read back differs from what was written",
                seat.member, seat.rig
            ),
        });
    }
    Ok(())
}

fn insert_seat(tx: &mut dyn SeatTx, seat: &SeatRecord) -> Result<(), StoreError> {
    tx.insert_seat(seat)?;
    read_back(tx, seat)
}

/// Reads the seat, refuses an unknown one, applies `change` and writes the result back, then
/// reads it back and checks it is what was written.
fn update<D: SeatDb + ?Sized>(
    db: &D,
    what: &str,
    rig: &RigId,
    member: &MemberId,
    change: impl Fn(&mut dyn SeatTx, &SeatRecord) -> Result<SeatRecord, StoreError> + Sync,
) -> Result<SeatRecord, StoreError> {
    db.write(what, &mut |tx| {
        let Some(seat) = tx.read_seat(rig, member)? else {
            return Err(if tx.read_rig(rig)?.is_some() {
                StoreError::UnknownSeat { rig: rig.clone(), member: member.clone() }
            } else {
                unknown_rig(tx, rig)?
            });
        };
        let next = change(tx, &seat)?;
        tx.update_seat(&next)?;
        read_back(tx, &next)?;
        Ok(next)
    })
}

impl<D: SeatDb> SeatStore for D {
    fn create_rig(&self, spec: &RigSpec, spec_path: &str) -> Result<RigRecord, StoreError> {
        let now = now_ms();
        let record = rig_record(spec, spec_path, now)?;
        let mut seats: Vec<SeatRecord> = Vec::with_capacity(spec.members.len());
        for member in &spec.members {
            if seats.iter().any(|seat| seat.member == member.id) {
                return Err(StoreError::DuplicateMember { rig: spec.id.clone(), member: member.id.clone() });
            }
            seats.push(transition::declare(&spec.id, member, now)?);
        }
        self.write(&format!("create rig {}", spec.id), &mut |tx| {
            if tx.read_rig(&spec.id)?.is_some() {
                return Err(StoreError::RigExists { rig: spec.id.clone() });
            }
            tx.insert_rig(&record)?;
            for seat in &seats {
                insert_seat(tx, seat)?;
            }
            Ok(record.clone())
        })
    }

    fn declare(&self, rig: &RigId, member: &Member) -> Result<SeatRecord, StoreError> {
        let seat = transition::declare(rig, member, now_ms())?;
        self.write(&format!("declare seat {} of rig {rig}", member.id), &mut |tx| {
            if tx.read_rig(rig)?.is_none() {
                return Err(unknown_rig(tx, rig)?);
            }
            if tx.read_seat(rig, &member.id)?.is_some() {
                return Err(StoreError::DuplicateMember { rig: rig.clone(), member: member.id.clone() });
            }
            insert_seat(tx, &seat)?;
            Ok(seat.clone())
        })
    }

    fn resolve(&self, rig: &RigId, member: &MemberId) -> Result<SeatRecord, StoreError> {
        let now = now_ms();
        update(self, &format!("resolve seat {member} of rig {rig}"), rig, member, |_, seat| {
            transition::resolve(seat, now)
        })
    }

    fn realize(
        &self,
        rig: &RigId,
        member: &MemberId,
        token: &NativeId,
        pid: Option<&str>,
    ) -> Result<SeatRecord, StoreError> {
        let now = now_ms();
        update(self, &format!("realize seat {member} of rig {rig}"), rig, member, |tx, seat| {
            let holder = tx.seat_holding(token)?;
            transition::realize(seat, token, pid, holder.as_ref(), now)
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
        update(self, &format!("record seat {member} of rig {rig} as failed"), rig, member, |_, seat| {
            transition::fail(seat, step, error, stderr, now)
        })
    }

    fn record_usage(&self, rig: &RigId, member: &MemberId, usage: &Usage) -> Result<SeatRecord, StoreError> {
        let now = now_ms();
        update(self, &format!("record the usage of seat {member} of rig {rig}"), rig, member, |_, seat| {
            transition::record_usage(seat, usage, now)
        })
    }

    fn seat(&self, rig: &RigId, member: &MemberId) -> Result<Option<SeatRecord>, StoreError> {
        self.read(&mut |tx| tx.read_seat(rig, member))
    }

    fn seats(&self, rig: &RigId) -> Result<Vec<SeatRecord>, StoreError> {
        self.read(&mut |tx| tx.read_seats(rig))
    }

    fn rigs(&self) -> Result<Vec<RigRecord>, StoreError> {
        self.read(&mut |tx| tx.read_rigs())
    }

    fn rig(&self, id: &RigId) -> Result<Option<RigRecord>, StoreError> {
        self.read(&mut |tx| tx.read_rig(id))
    }
}
