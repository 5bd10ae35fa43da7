//! Seat and rig rows as SQLite reads and binds them; decoding is the shared `store::rows`.

use super::super::rows::{RawSeat, sql_millis, usage_json};
use super::super::{SeatRecord, StoreError};
use crate::rig::NativeId;
use rusqlite::{Row, ToSql};

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

/// Reads a rig row (columns [`RIG_COLUMNS`]).
pub(super) fn rig(row: &Row<'_>) -> rusqlite::Result<(String, String, String, i64)> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
}
