//! Records to rows and back. A row read back is checked against the record's invariants
//! before it is returned, as it was before it was written.

use super::super::{RigRecord, SeatRecord, SeatStatus, StoreError};
use crate::rig::{MemberId, NativeId, RigId, SeatRuntime};
use rusqlite::{Row, ToSql};

/// The seat columns, in the order [`seat`] reads them and [`seat_values`] writes them.
pub(super) const SEAT_COLUMNS: &str = "rig, member, runtime, status, source, token, failed_step, error, \
     stderr, pid, declared_at_ms, updated_at_ms, member_json, usage_json";

/// The rig columns, in the order [`rig`] reads them.
pub(super) const RIG_COLUMNS: &str = "id, spec_path, spec_json, created_at_ms";

/// What a row holds before it is checked: text stays text until it is decoded.
pub(super) struct RawSeat {
    text: [Option<String>; 10],
    declared_at_ms: i64,
    updated_at_ms: i64,
    member_json: String,
    usage_json: Option<String>,
}

/// Reads a seat row (columns [`SEAT_COLUMNS`]).
pub(super) fn raw_seat(row: &Row<'_>) -> rusqlite::Result<RawSeat> {
    let mut text: [Option<String>; 10] = Default::default();
    for (index, slot) in text.iter_mut().enumerate() {
        *slot = row.get(index)?;
    }
    Ok(RawSeat {
        text,
        declared_at_ms: row.get(10)?,
        updated_at_ms: row.get(11)?,
        member_json: row.get(12)?,
        usage_json: row.get(13)?,
    })
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

/// The values of a seat's row, in [`SEAT_COLUMNS`] order.
pub(super) fn seat_values(seat: &SeatRecord) -> Result<[Box<dyn ToSql + '_>; 14], StoreError> {
    Ok([
        Box::new(seat.rig.as_str()),
        Box::new(seat.member.as_str()),
        Box::new(seat.runtime.as_str()),
        Box::new(seat.status.as_str()),
        Box::new(seat.source.as_ref().map(NativeId::as_str)),
        Box::new(seat.token.as_ref().map(NativeId::as_str)),
        Box::new(seat.failed_step.as_deref()),
        Box::new(seat.error.as_deref()),
        Box::new(seat.stderr.as_deref()),
        Box::new(seat.pid.as_deref()),
        Box::new(sql_millis(seat.declared_at_ms)?),
        Box::new(sql_millis(seat.updated_at_ms)?),
        Box::new(seat.member_json.as_str()),
        Box::new(usage_json(seat)?),
    ])
}

/// A seat's usage as its column holds it.
pub(super) fn usage_json(seat: &SeatRecord) -> Result<Option<String>, StoreError> {
    seat.usage.as_ref().map(serde_json::to_string).transpose().map_err(|e| StoreError::Corrupt {
        message: format!("seat {}: its usage does not encode: {e}", seat.member),
    })
}

/// Reads a rig row (columns [`RIG_COLUMNS`]).
pub(super) fn rig(row: &Row<'_>) -> rusqlite::Result<(String, String, String, i64)> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
}

/// The record a rig row holds, if it decodes.
pub(super) fn rig_record(
    (id, spec_path, spec_json, created_at_ms): (String, String, String, i64),
) -> Result<RigRecord, StoreError> {
    let created_at_ms = millis(created_at_ms)
        .ok_or_else(|| StoreError::Corrupt { message: format!("rig {id}: a negative timestamp") })?;
    Ok(RigRecord { id: RigId(id), spec_path, spec_json, created_at_ms })
}

/// A timestamp as SQLite stores it (a signed 64-bit integer).
pub(super) fn sql_millis(ms: u64) -> Result<i64, StoreError> {
    i64::try_from(ms)
        .map_err(|_| StoreError::Corrupt { message: format!("timestamp {ms} does not fit a row") })
}

fn millis(stored: i64) -> Option<u64> {
    u64::try_from(stored).ok()
}
