//! Records to rows and back, for both seat stores. A row read back is checked against the
//! record's invariants before it is returned, as it was before it was written.

use super::{RigRecord, SeatRecord, SeatStatus, StoreError};
use crate::rig::{MemberId, NativeId, RigId, SeatRuntime};

/// The seat columns, in the order [`seat`] reads them and [`seat_values`] writes them.
pub(super) const SEAT_COLUMNS: &str = "rig, member, runtime, status, source, token, failed_step, error, \
     stderr, pid, declared_at_ms, updated_at_ms, member_json, usage_json";

/// The rig columns, in the order [`rig`] reads them.
pub(super) const RIG_COLUMNS: &str = "id, spec_path, spec_json, created_at_ms";

/// What a row holds before it is checked: text stays text until it is decoded.
pub(super) struct RawSeat {
    pub(super) text: [Option<String>; 10],
    pub(super) declared_at_ms: i64,
    pub(super) updated_at_ms: i64,
    pub(super) member_json: String,
    pub(super) usage_json: Option<String>,
}

/// The record a raw row holds, if it decodes and holds its invariants.
pub(super) fn seat(raw: RawSeat) -> Result<SeatRecord, StoreError> {
    let [rig, member, runtime, status, source, token, failed_step, error, stderr, pid] = raw.text;
    let rig = rig.unwrap_or_default();
    let member = member.unwrap_or_default();
    let damaged =
        |what: String| StoreError::Corrupt { message: format!("seat {member} of rig {rig}: {what}") };
    let runtime = runtime.unwrap_or_default();
    let runtime =
        SeatRuntime::parse(&runtime).ok_or_else(|| damaged(format!("unknown runtime {runtime:?}")))?;
    let status = status.unwrap_or_default();
    let status = SeatStatus::parse(&status).ok_or_else(|| damaged(format!("unknown status {status:?}")))?;
    let usage = raw
        .usage_json
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| damaged(format!("its usage does not decode: {e}")))?;
    let record = SeatRecord {
        rig: RigId(rig.clone()),
        member: MemberId(member.clone()),
        runtime,
        status,
        source: source.map(NativeId),
        token: token.map(NativeId),
        failed_step,
        error,
        stderr,
        pid,
        declared_at_ms: millis(raw.declared_at_ms).ok_or_else(|| damaged("a negative timestamp".into()))?,
        updated_at_ms: millis(raw.updated_at_ms).ok_or_else(|| damaged("a negative timestamp".into()))?,
        member_json: raw.member_json,
        usage,
    };
    record.check().map_err(damaged)?;
    Ok(record)
}

/// A seat's usage as its column holds it.
pub(super) fn usage_json(seat: &SeatRecord) -> Result<Option<String>, StoreError> {
    seat.usage.as_ref().map(serde_json::to_string).transpose().map_err(|e| StoreError::Corrupt {
        message: format!("seat {}: its usage does not encode: {e}", seat.member),
    })
}

/// The record a rig row holds, if it decodes.
pub(super) fn rig_record(
    (id, spec_path, spec_json, created_at_ms): (String, String, String, i64),
) -> Result<RigRecord, StoreError> {
    let created_at_ms = millis(created_at_ms)
        .ok_or_else(|| StoreError::Corrupt { message: format!("rig {id}: a negative timestamp") })?;
    Ok(RigRecord { id: RigId(id), spec_path, spec_json, created_at_ms })
}

/// A timestamp as a row stores it (a signed 64-bit integer).
pub(super) fn sql_millis(ms: u64) -> Result<i64, StoreError> {
    i64::try_from(ms)
        .map_err(|_| StoreError::Corrupt { message: format!("timestamp {ms} does not fit a row") })
}

fn millis(stored: i64) -> Option<u64> {
    u64::try_from(stored).ok()
}
