//! The portable layer's [`Db`] on a PostgreSQL connection: statements prepared once per
//! connection (placeholders rewritten to `$N`), values bound and read by the server's types.

use crate::store::sql::{Cell, Db, DbError, EachRow, Param, Row, dollar_placeholders};
use bytes::BytesMut;
use postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};
use postgres::{Client, Statement};
use std::collections::HashMap;
use std::error::Error;

/// Boxed errors of the value codecs.
type CodecError = Box<dyn Error + Sync + Send>;

impl ToSql for Param<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, CodecError> {
        match *self {
            Param::Null => Ok(IsNull::Yes),
            Param::Int(v) => match *ty {
                Type::INT2 => i16::try_from(v)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(v)?.to_sql(ty, out),
                Type::BOOL => (v != 0).to_sql(ty, out),
                _ => v.to_sql(ty, out),
            },
            Param::Text(v) => v.to_sql(ty, out),
            Param::Blob(v) => v.to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

impl<'a> FromSql<'a> for Cell {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Cell, CodecError> {
        Ok(match *ty {
            Type::INT8 => Cell::Int(i64::from_sql(ty, raw)?),
            Type::INT4 => Cell::Int(i64::from(i32::from_sql(ty, raw)?)),
            Type::INT2 => Cell::Int(i64::from(i16::from_sql(ty, raw)?)),
            Type::BOOL => Cell::Int(i64::from(bool::from_sql(ty, raw)?)),
            Type::BYTEA => Cell::Blob(Vec::<u8>::from_sql(ty, raw)?),
            _ => Cell::Text(String::from_sql(ty, raw)?),
        })
    }

    fn from_sql_null(_: &Type) -> Result<Cell, CodecError> {
        Ok(Cell::Null)
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// A failed statement, with the server's own message when the server reported it (the
/// client's `Display` says only "db error").
pub(super) fn pg_error(e: postgres::Error) -> DbError {
    match e.as_db_error() {
        Some(db) => {
            DbError::db(format!("{}: {} (SQLSTATE {})", db.severity(), db.message(), db.code().code()))
        }
        None => DbError::db(e),
    }
}

struct PgRow<'r>(&'r postgres::Row);

impl Row for PgRow<'_> {
    fn cell(&self, index: usize) -> Result<Cell, DbError> {
        self.0.try_get::<_, Cell>(index).map_err(|e| {
            let mut error = pg_error(e);
            error.bad_value = true;
            error
        })
    }

    fn text_in_bytes(&self) -> bool {
        true
    }
}

/// How long a connection that just failed a statement may take to answer a liveness check.
const ALIVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// One connection with the statements it has prepared.
pub(super) struct PgDb {
    client: Client,
    prepared: HashMap<String, Statement>,
}

/// Statements that control a transaction: run as simple queries, never prepared.
fn is_control(sql: &str) -> bool {
    ["BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE"].iter().any(|word| sql.starts_with(word))
}

impl PgDb {
    pub(super) fn new(client: Client) -> PgDb {
        PgDb { client, prepared: HashMap::new() }
    }

    /// The connection, for what the portable layer does not cover (setup, locks).
    pub(super) fn client(&mut self) -> &mut Client {
        &mut self.client
    }

    /// Whether the connection still answers: not closed, and a trivial query comes back
    /// within [`ALIVE_TIMEOUT`] (asked only after a failure).
    pub(super) fn is_alive(&mut self) -> bool {
        !self.client.is_closed() && self.client.is_valid(ALIVE_TIMEOUT).is_ok()
    }

    fn statement(&mut self, sql: &str) -> Result<Statement, DbError> {
        if let Some(statement) = self.prepared.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(&dollar_placeholders(sql)).map_err(pg_error)?;
        self.prepared.insert(sql.to_string(), statement.clone());
        Ok(statement)
    }

    fn simple(&mut self, sql: &str) -> Result<(), DbError> {
        self.client.batch_execute(sql).map_err(pg_error)
    }
}

fn bind<'p>(params: &'p [Param<'_>]) -> Vec<&'p (dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

impl Db for PgDb {
    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, DbError> {
        if params.is_empty() && is_control(sql) {
            return self.simple(sql).map(|()| 0);
        }
        let statement = self.statement(sql)?;
        self.client.execute(&statement, &bind(params)).map_err(pg_error)
    }

    fn query(&mut self, sql: &str, params: &[Param<'_>], each: EachRow<'_>) -> Result<(), DbError> {
        let statement = self.statement(sql)?;
        for row in self.client.query(&statement, &bind(params)).map_err(pg_error)? {
            each(&PgRow(&row))?;
        }
        Ok(())
    }

    fn begin_write(&mut self) -> Result<(), DbError> {
        self.simple("BEGIN")
    }

    fn begin_snapshot(&mut self) -> Result<(), DbError> {
        self.simple("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    }

    fn commit(&mut self) -> Result<(), DbError> {
        self.simple("COMMIT")
    }

    fn rollback(&mut self) -> Result<(), DbError> {
        if self.client.is_closed() {
            return Ok(());
        }
        self.simple("ROLLBACK")
    }
}
