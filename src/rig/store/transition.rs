//! The state model as pure functions: each takes a seat's record (and what the store looked
//! up) and returns the record to write, or the refusal. Both stores call these, so they agree
//! by construction; they only read and write.

use super::error::{StoreError, TransitionError};
use super::limits::{ERROR_BYTES_MAX, STDERR_BYTES_MAX, STEP_BYTES_MAX};
use super::seat::{SeatRecord, SeatStatus, source_of};
use crate::agent::brain::Usage;
use crate::rig::{Member, NativeId, RigId};

/// The record of `member`, newly declared in `rig` at `now_ms`.
pub(crate) fn declare(rig: &RigId, member: &Member, now_ms: u64) -> Result<SeatRecord, StoreError> {
    let member_json = serde_json::to_string(member).map_err(|e| StoreError::Corrupt {
        message: format!("seat {} of rig {rig} does not encode: {e}", member.id),
    })?;
    checked(SeatRecord {
        rig: rig.clone(),
        member: member.id.clone(),
        runtime: member.runtime,
        status: SeatStatus::Declared,
        source: source_of(member),
        token: None,
        failed_step: None,
        error: None,
        stderr: None,
        pid: None,
        declared_at_ms: now_ms,
        updated_at_ms: now_ms,
        member_json,
        usage: None,
    })
}

/// `seat`, resolved.
pub(crate) fn resolve(seat: &SeatRecord, now_ms: u64) -> Result<SeatRecord, StoreError> {
    let mut next = moved(seat, SeatStatus::Resolved, now_ms)?;
    next.status = SeatStatus::Resolved;
    checked(next)
}

/// `seat`, realized with its own new `token` (and, for a native seat, its `pid`). `holder` is
/// the seat that holds `token` already, if the store has one.
pub(crate) fn realize(
    seat: &SeatRecord,
    token: &NativeId,
    pid: Option<&str>,
    holder: Option<&SeatRecord>,
    now_ms: u64,
) -> Result<SeatRecord, StoreError> {
    let mut next = moved(seat, SeatStatus::Realized, now_ms)?;
    if seat.source.as_ref() == Some(token) {
        return Err(StoreError::TokenIsSource {
            rig: seat.rig.clone(),
            member: seat.member.clone(),
            token: token.clone(),
        });
    }
    if let Some(holder) = holder {
        return Err(StoreError::TokenTaken {
            rig: seat.rig.clone(),
            member: seat.member.clone(),
            token: token.clone(),
            holder_rig: holder.rig.clone(),
            holder_member: holder.member.clone(),
        });
    }
    next.status = SeatStatus::Realized;
    next.token = Some(token.clone());
    next.pid = pid.map(str::to_owned);
    checked(next)
}

/// `seat` (realized) with `usage` as what it has used in all: its status does not change.
pub(crate) fn record_usage(seat: &SeatRecord, usage: &Usage, now_ms: u64) -> Result<SeatRecord, StoreError> {
    if seat.status != SeatStatus::Realized {
        return Err(StoreError::NotRealized {
            rig: seat.rig.clone(),
            member: seat.member.clone(),
            status: seat.status,
        });
    }
    let mut next = seat.clone();
    next.updated_at_ms = now_ms.max(seat.updated_at_ms);
    next.usage = Some(*usage);
    checked(next)
}

/// `seat`, failed at `step` with `error` and the runtime's standard error, each cut to its
/// bound (see [`super::limits`]).
pub(crate) fn fail(
    seat: &SeatRecord,
    step: &str,
    error: &str,
    stderr: Option<&str>,
    now_ms: u64,
) -> Result<SeatRecord, StoreError> {
    let mut next = moved(seat, SeatStatus::Failed, now_ms)?;
    next.status = SeatStatus::Failed;
    next.failed_step = Some(keep_start(step, STEP_BYTES_MAX));
    next.error = Some(keep_start(error, ERROR_BYTES_MAX));
    next.stderr = stderr.map(|text| keep_end(text, STDERR_BYTES_MAX));
    checked(next)
}

/// A copy of `seat` stamped `now_ms` (never before its last update, whatever another process's
/// clock said), if the model allows moving it to `to`.
fn moved(seat: &SeatRecord, to: SeatStatus, now_ms: u64) -> Result<SeatRecord, TransitionError> {
    if !seat.status.may_move_to(to) {
        return Err(TransitionError {
            rig: seat.rig.clone(),
            member: seat.member.clone(),
            from: seat.status,
            to,
        });
    }
    let mut next = seat.clone();
    next.updated_at_ms = now_ms.max(seat.updated_at_ms);
    Ok(next)
}

/// `record` if it holds its invariants: checked before it is written, as it is after reading.
fn checked(record: SeatRecord) -> Result<SeatRecord, StoreError> {
    match record.check() {
        Ok(()) => Ok(record),
        Err(broken) => Err(StoreError::Corrupt {
            message: format!(
                "seat {} of rig {} would be written broken: {broken}",
                record.member, record.rig
            ),
        }),
    }
}

const CUT_START: &str = "[earlier output cut]\n";
const CUT_END: &str = " [cut]";

/// `text`, or its last bytes after a mark, at most `max` bytes in all, cut on a character
/// boundary.
pub(crate) fn keep_end(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    format!("{CUT_START}{}", crate::actors::text::suffix(text, max.saturating_sub(CUT_START.len())))
}

/// `text`, or its first bytes before a mark, at most `max` bytes in all, cut on a character
/// boundary.
pub(crate) fn keep_start(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    format!("{}{CUT_END}", crate::actors::text::prefix(text, max.saturating_sub(CUT_END.len())))
}

#[cfg(test)]
mod tests {
    use super::{keep_end, keep_start};

    #[test]
    fn cuts_stay_within_their_bound_and_on_character_boundaries() {
        let text = "é".repeat(100);
        for max in [30, 31, 32, 33] {
            let end = keep_end(&text, max);
            assert!(end.len() <= max && end.ends_with('é'), "{max}: {end}");
            let start = keep_start(&text, max);
            assert!(start.len() <= max && start.starts_with('é'), "{max}: {start}");
        }
        assert_eq!(keep_end("short", 30), "short");
        assert_eq!(keep_start("short", 30), "short");
    }
}
