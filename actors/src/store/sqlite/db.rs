//! The portable layer's [`Db`] on a SQLite connection: statements prepared once and cached
//! by the connection, values bound and read as SQLite's own types.

use crate::store::sql::{Cell, Db, DbError, EachRow, Param, Row};
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ToSql};
use std::borrow::Borrow;

/// A SQLite connection, owned or borrowed, as a [`Db`].
pub(super) struct SqliteDb<C: Borrow<Connection>>(pub(super) C);

impl<C: Borrow<Connection>> SqliteDb<C> {
    fn conn(&self) -> &Connection {
        self.0.borrow()
    }
}

impl ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match *self {
            Param::Null => ValueRef::Null,
            Param::Int(v) => ValueRef::Integer(v),
            Param::Text(v) => ValueRef::Text(v.as_bytes()),
            Param::Blob(v) => ValueRef::Blob(v),
        }))
    }
}

/// A failed statement: a value of the wrong type or range is a bad row, anything else a
/// failure of the database.
fn db_error(e: rusqlite::Error) -> DbError {
    let bad_value = matches!(
        e,
        rusqlite::Error::InvalidColumnType(..)
            | rusqlite::Error::FromSqlConversionFailure(..)
            | rusqlite::Error::IntegralValueOutOfRange(..)
    );
    let mut error = DbError::db(e);
    error.bad_value = bad_value;
    error
}

struct SqliteRow<'r, 's>(&'r rusqlite::Row<'s>);

impl Row for SqliteRow<'_, '_> {
    fn cell(&self, index: usize) -> Result<Cell, DbError> {
        let value = self.0.get_ref(index).map_err(db_error)?;
        Ok(match value {
            ValueRef::Null => Cell::Null,
            ValueRef::Integer(v) => Cell::Int(v),
            ValueRef::Text(v) => Cell::Text(
                String::from_utf8(v.to_vec())
                    .map_err(|e| db_error(rusqlite::Error::Utf8Error(index, e.utf8_error())))?,
            ),
            ValueRef::Blob(v) => Cell::Blob(v.to_vec()),
            ValueRef::Real(v) => {
                return Err(db_error(rusqlite::Error::InvalidColumnType(
                    index,
                    format!("a real number {v}"),
                    rusqlite::types::Type::Real,
                )));
            }
        })
    }
}

impl<C: Borrow<Connection>> Db for SqliteDb<C> {
    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, DbError> {
        let changed = self
            .conn()
            .prepare_cached(sql)
            .and_then(|mut s| s.execute(rusqlite::params_from_iter(params)))
            .map_err(db_error)?;
        Ok(changed as u64)
    }

    fn query(&mut self, sql: &str, params: &[Param<'_>], each: EachRow<'_>) -> Result<(), DbError> {
        let mut stmt = self.conn().prepare_cached(sql).map_err(db_error)?;
        let mut rows = stmt.query(rusqlite::params_from_iter(params)).map_err(db_error)?;
        while let Some(row) = rows.next().map_err(db_error)? {
            each(&SqliteRow(row))?;
        }
        Ok(())
    }

    fn begin_write(&mut self) -> Result<(), DbError> {
        // IMMEDIATE takes the write lock now, so a group never fails halfway on a busy file.
        self.execute("BEGIN IMMEDIATE", &[]).map(drop)
    }

    fn begin_snapshot(&mut self) -> Result<(), DbError> {
        // In WAL mode a read transaction sees one snapshot from its first read on.
        self.execute("BEGIN", &[]).map(drop)
    }

    fn rollback(&mut self) -> Result<(), DbError> {
        if self.conn().is_autocommit() {
            return Ok(());
        }
        self.conn().execute_batch("ROLLBACK").map_err(db_error)
    }

    fn index_hint(&self, index: &str) -> String {
        format!(" INDEXED BY {index}")
    }
}
