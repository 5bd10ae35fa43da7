//! `PostgresSeatStore`: the durable [`SeatStore`] in the PostgreSQL database that holds the
//! tree's kernel state, so one database holds a whole tree.
//!
//! Two tables, `rigs` and `seats`, with the SQLite file's columns and checks plus a `seq`
//! (declaration order, which SQLite reads from `rowid`); the version is the row `seats` of
//! `store_versions`. Several processes may write at once (`agentvisor run` and a `rig expand`
//! beside it): each write is one transaction that first takes a transaction-scoped advisory
//! lock, then reads the seat, applies the state model's rule and writes the result, so writes
//! are ordered and none works from a stale copy. Every use of the connection runs off the
//! tokio workers. Fail-stop as the SQLite store: after a failed write, every later write is
//! refused until reopen; a refusal by the state model writes nothing.

use super::rows::{self as shared, RIG_COLUMNS, RawSeat, SEAT_COLUMNS};
use super::sql::{SeatDb, SeatTx};
use super::{RigRecord, SeatRecord, StoreError};
use crate::actors::store::create_shard_schema_sql;
use crate::postgres_session::{PostgresSession, describe};
use crate::rig::{MemberId, NativeId, RigId};
use postgres::types::ToSql;
use postgres::{Client, GenericClient};

/// The schema version this build writes and reads.
pub const POSTGRES_SEAT_SCHEMA_VERSION: i64 = 1;

/// The advisory lock every write holds for its transaction.
const SEATS_LOCK: i64 = 0x6167_656e_7476_0003;

const SCHEMA_V1: &str = "
CREATE TABLE IF NOT EXISTS store_versions (
    store   TEXT PRIMARY KEY,
    version BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS rigs (
    id            TEXT PRIMARY KEY,
    spec_path     TEXT NOT NULL,
    spec_json     TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    seq           BIGSERIAL
);
CREATE TABLE IF NOT EXISTS seats (
    rig            TEXT NOT NULL REFERENCES rigs (id),
    member         TEXT NOT NULL,
    runtime        TEXT NOT NULL,
    status         TEXT NOT NULL
        CHECK (status IN ('declared', 'resolved', 'realized', 'failed')),
    source         TEXT NULL,
    token          TEXT NULL,
    failed_step    TEXT NULL,
    error          TEXT NULL,
    stderr         TEXT NULL,
    pid            TEXT NULL,
    declared_at_ms BIGINT NOT NULL,
    updated_at_ms  BIGINT NOT NULL,
    member_json    TEXT NOT NULL,
    usage_json     TEXT NULL CHECK (usage_json IS NULL OR status = 'realized'),
    seq            BIGSERIAL,
    PRIMARY KEY (rig, member),
    CHECK ((status = 'realized') = (token IS NOT NULL)),
    CHECK (token IS NULL OR source IS NULL OR token <> source)
);
CREATE UNIQUE INDEX IF NOT EXISTS seats_token ON seats (token) WHERE token IS NOT NULL;
INSERT INTO store_versions (store, version) VALUES ('seats', 1) ON CONFLICT (store) DO NOTHING;
";

/// A [`SeatStore`] in a PostgreSQL database. `Send + Sync`: one connection behind a mutex.
#[derive(Debug)]
pub struct PostgresSeatStore {
    session: PostgresSession,
    read_only: bool,
}

fn backend(what: &str, error: &postgres::Error) -> StoreError {
    StoreError::Backend { message: format!("failed to {what}: {}", describe(error)) }
}

fn closed() -> StoreError {
    StoreError::Backend { message: "the seat store is closed".to_string() }
}

fn stored_version(client: &mut Client) -> Result<Option<i64>, postgres::Error> {
    let has_table: bool =
        client.query_one("SELECT to_regclass('store_versions') IS NOT NULL", &[])?.try_get(0)?;
    if !has_table {
        return Ok(None);
    }
    let row = client.query_opt("SELECT version FROM store_versions WHERE store = 'seats'", &[])?;
    row.map(|r| r.try_get(0)).transpose()
}

impl PostgresSeatStore {
    /// Opens the store in the database `url` names, creating its tables if needed. Refuses a
    /// database whose seat schema is newer than [`POSTGRES_SEAT_SCHEMA_VERSION`].
    pub fn open(url: &str) -> Result<PostgresSeatStore, StoreError> {
        PostgresSeatStore::connect(url, false)?.ok_or_else(|| StoreError::Backend {
            message: "the seat store's tables are missing right after they were created".to_string(),
        })
    }

    /// Opens an existing store for reading only: creates nothing and refuses every write.
    /// `None` when no rig ever ran on the database (it has no seat tables).
    pub fn open_read_only(url: &str) -> Result<Option<PostgresSeatStore>, StoreError> {
        PostgresSeatStore::connect(url, true)
    }

    /// The store, or `None` when the database has no seat tables (a view before any rig ran).
    fn connect(url: &str, read_only: bool) -> Result<Option<PostgresSeatStore>, StoreError> {
        let (session, has_tables) = PostgresSession::open(
            url,
            |e| backend("connect to the seat store", &e),
            |client| {
                if !read_only {
                    let mut tx =
                        client.transaction().map_err(|e| backend("begin to create the seat store", &e))?;
                    tx.batch_execute(&create_shard_schema_sql())
                        .and_then(|()| tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SEATS_LOCK]))
                        .and_then(|_| tx.batch_execute(SCHEMA_V1))
                        .map_err(|e| backend("create the seat store's tables", &e))?;
                    tx.commit().map_err(|e| backend("commit the seat store's tables", &e))?;
                }
                match stored_version(client).map_err(|e| backend("read the seat store's version", &e))? {
                    None => Ok(false),
                    Some(found) if found > POSTGRES_SEAT_SCHEMA_VERSION => {
                        Err(StoreError::UnsupportedSchema {
                            path: "the PostgreSQL seat store".to_string(),
                            found,
                            supported: POSTGRES_SEAT_SCHEMA_VERSION,
                        })
                    }
                    Some(_) => Ok(true),
                }
            },
        )?;
        Ok(has_tables.then_some(PostgresSeatStore { session, read_only }))
    }
}

impl SeatDb for PostgresSeatStore {
    /// One transaction under the seats' advisory lock.
    fn write<T: Send>(
        &self,
        what: &str,
        body: &mut (dyn FnMut(&mut dyn SeatTx) -> Result<T, StoreError> + Send),
    ) -> Result<T, StoreError> {
        if self.read_only {
            return Err(StoreError::Backend {
                message: format!("failed to {what}: the seat store was opened read-only"),
            });
        }
        self.session.with(closed, move |client, failed| {
            if let Some(message) = failed {
                return Err(StoreError::FailStopped { message: message.clone() });
            }
            let result = (|| {
                let mut tx = client.transaction().map_err(|e| backend(&format!("begin to {what}"), &e))?;
                tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SEATS_LOCK])
                    .map_err(|e| backend(&format!("lock the seats to {what}"), &e))?;
                let value = body(&mut PgSeatTx(&mut tx))?;
                tx.commit().map_err(|e| backend(&format!("commit ({what})"), &e))?;
                Ok(value)
            })();
            if let Err(error @ StoreError::Backend { .. }) = &result {
                tracing::error!(%error, "the seat store fail-stops");
                *failed = Some(error.to_string());
            }
            result
        })
    }

    fn read<T: Send>(
        &self,
        body: &mut (dyn FnMut(&mut dyn SeatTx) -> Result<T, StoreError> + Send),
    ) -> Result<T, StoreError> {
        self.session.with(closed, move |client, _| body(&mut PgSeatTx(client)))
    }
}

/// The rows of a connection or transaction.
struct PgSeatTx<'c, C: GenericClient>(&'c mut C);

fn raw_seat(row: &postgres::Row) -> Result<RawSeat, postgres::Error> {
    let mut text: [Option<String>; 10] = Default::default();
    for (index, slot) in text.iter_mut().enumerate() {
        *slot = row.try_get(index)?;
    }
    Ok(RawSeat {
        text,
        declared_at_ms: row.try_get(10)?,
        updated_at_ms: row.try_get(11)?,
        member_json: row.try_get(12)?,
        usage_json: row.try_get(13)?,
    })
}

fn rig_row(row: &postgres::Row) -> Result<(String, String, String, i64), postgres::Error> {
    Ok((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?, row.try_get(3)?))
}

impl<C: GenericClient> PgSeatTx<'_, C> {
    fn seats_where(
        &mut self,
        what: &str,
        condition: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<SeatRecord>, StoreError> {
        let raws = self
            .0
            .query(&format!("SELECT {SEAT_COLUMNS} FROM seats WHERE {condition} ORDER BY seq"), params)
            .and_then(|rows| rows.iter().map(raw_seat).collect::<Result<Vec<_>, _>>())
            .map_err(|e| backend(what, &e))?;
        raws.into_iter().map(shared::seat).collect()
    }

    fn rigs_where(
        &mut self,
        what: &str,
        condition: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<RigRecord>, StoreError> {
        let rows = self
            .0
            .query(&format!("SELECT {RIG_COLUMNS} FROM rigs WHERE {condition} ORDER BY seq"), params)
            .and_then(|rows| rows.iter().map(rig_row).collect::<Result<Vec<_>, _>>())
            .map_err(|e| backend(what, &e))?;
        rows.into_iter().map(shared::rig_record).collect()
    }
}

impl<C: GenericClient> SeatTx for PgSeatTx<'_, C> {
    fn read_seat(&mut self, rig: &RigId, member: &MemberId) -> Result<Option<SeatRecord>, StoreError> {
        let what = format!("read seat {member} of rig {rig}");
        Ok(self.seats_where(&what, "rig = $1 AND member = $2", &[&rig.as_str(), &member.as_str()])?.pop())
    }

    fn seat_holding(&mut self, token: &NativeId) -> Result<Option<SeatRecord>, StoreError> {
        Ok(self.seats_where(&format!("look up token {token}"), "token = $1", &[&token.as_str()])?.pop())
    }

    fn read_seats(&mut self, rig: &RigId) -> Result<Vec<SeatRecord>, StoreError> {
        self.seats_where(&format!("read the seats of rig {rig}"), "rig = $1", &[&rig.as_str()])
    }

    fn read_rig(&mut self, rig: &RigId) -> Result<Option<RigRecord>, StoreError> {
        Ok(self.rigs_where(&format!("read rig {rig}"), "id = $1", &[&rig.as_str()])?.pop())
    }

    fn read_rigs(&mut self) -> Result<Vec<RigRecord>, StoreError> {
        self.rigs_where("read the rigs", "TRUE", &[])
    }

    fn insert_rig(&mut self, record: &RigRecord) -> Result<(), StoreError> {
        let created_at = shared::sql_millis(record.created_at_ms)?;
        self.0
            .execute(
                &format!("INSERT INTO rigs ({RIG_COLUMNS}) VALUES ($1, $2, $3, $4)"),
                &[&record.id.as_str(), &record.spec_path, &record.spec_json, &created_at],
            )
            .map_err(|e| backend(&format!("create rig {}", record.id), &e))?;
        Ok(())
    }

    fn insert_seat(&mut self, seat: &SeatRecord) -> Result<(), StoreError> {
        let declared_at = shared::sql_millis(seat.declared_at_ms)?;
        let updated_at = shared::sql_millis(seat.updated_at_ms)?;
        let usage = shared::usage_json(seat)?;
        self.0
            .execute(
                &format!(
                    "INSERT INTO seats ({SEAT_COLUMNS}) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
                ),
                &[
                    &seat.rig.as_str(),
                    &seat.member.as_str(),
                    &seat.runtime.as_str(),
                    &seat.status.as_str(),
                    &seat.source.as_ref().map(NativeId::as_str),
                    &seat.token.as_ref().map(NativeId::as_str),
                    &seat.failed_step,
                    &seat.error,
                    &seat.stderr,
                    &seat.pid,
                    &declared_at,
                    &updated_at,
                    &seat.member_json,
                    &usage,
                ],
            )
            .map_err(|e| backend(&format!("declare seat {} of rig {}", seat.member, seat.rig), &e))?;
        Ok(())
    }

    fn update_seat(&mut self, next: &SeatRecord) -> Result<(), StoreError> {
        let updated_at = shared::sql_millis(next.updated_at_ms)?;
        let usage = shared::usage_json(next)?;
        self.0
            .execute(
                "UPDATE seats SET status = $3, token = $4, failed_step = $5, error = $6, stderr = $7, \
                 pid = $8, updated_at_ms = $9, usage_json = $10 WHERE rig = $1 AND member = $2",
                &[
                    &next.rig.as_str(),
                    &next.member.as_str(),
                    &next.status.as_str(),
                    &next.token.as_ref().map(NativeId::as_str),
                    &next.failed_step,
                    &next.error,
                    &next.stderr,
                    &next.pid,
                    &updated_at,
                    &usage,
                ],
            )
            .map_err(|e| backend(&format!("write seat {} of rig {}", next.member, next.rig), &e))?;
        Ok(())
    }
}
