//! What the two SQL stores share: the statements, the column codec, how a change set is
//! applied, the queries, and the writer thread with its group commit and fail-stop.
//!
//! A backend supplies a [`Db`]: one connection that runs a statement with [`Param`]s and
//! hands back rows of [`Cell`]s. Statements are written once, in the SQL both SQLite and
//! PostgreSQL accept, with numbered placeholders `?1`, `?2`, … (a backend rewrites them to
//! its own syntax when it prepares a statement). Where the dialects differ the backend says
//! so through the trait: how a write transaction begins ([`Db::begin_write`]), how a read
//! sees one snapshot ([`Db::begin_snapshot`]) and how a query names its driving index
//! ([`Db::index_hint`]).
//!
//! - [`codec`]: kernel types to and from column values.
//! - [`apply`]: one change set, with its preconditions.
//! - [`read`]: the queries, mailbox reads included.
//! - [`writer`]: the writer thread, group commit and fail-stop.

pub(super) mod apply;
pub(super) mod codec;
pub(super) mod read;
pub(super) mod writer;

use crate::store::StoreError;

/// One bound value of a statement.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Param<'a> {
    /// SQL NULL.
    Null,
    /// A 64-bit integer (SQLite INTEGER, PostgreSQL BIGINT).
    Int(i64),
    /// Text.
    Text(&'a str),
    /// Bytes (SQLite BLOB, PostgreSQL BYTEA).
    Blob(&'a [u8]),
}

impl<'a> From<&'a str> for Param<'a> {
    fn from(value: &'a str) -> Self {
        Param::Text(value)
    }
}

impl<'a> From<&'a String> for Param<'a> {
    fn from(value: &'a String) -> Self {
        Param::Text(value)
    }
}

impl<'a> From<&'a Option<String>> for Param<'a> {
    fn from(value: &'a Option<String>) -> Self {
        value.as_deref().map_or(Param::Null, Param::Text)
    }
}

impl From<i64> for Param<'_> {
    fn from(value: i64) -> Self {
        Param::Int(value)
    }
}

impl From<Option<i64>> for Param<'_> {
    fn from(value: Option<i64>) -> Self {
        value.map_or(Param::Null, Param::Int)
    }
}

/// A flag is stored as 0 or 1.
impl From<bool> for Param<'_> {
    fn from(value: bool) -> Self {
        Param::Int(i64::from(value))
    }
}

impl<'a> From<&'a [u8]> for Param<'a> {
    fn from(value: &'a [u8]) -> Self {
        Param::Blob(value)
    }
}

impl<'a> From<&'a Vec<u8>> for Param<'a> {
    fn from(value: &'a Vec<u8>) -> Self {
        Param::Blob(value)
    }
}

/// One value read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Cell {
    /// SQL NULL.
    Null,
    /// An integer.
    Int(i64),
    /// Text.
    Text(String),
    /// Bytes.
    Blob(Vec<u8>),
}

impl Cell {
    /// The cell a parameter would be stored as.
    pub(super) fn of(param: Param<'_>) -> Cell {
        match param {
            Param::Null => Cell::Null,
            Param::Int(v) => Cell::Int(v),
            Param::Text(v) => Cell::Text(v.to_string()),
            Param::Blob(v) => Cell::Blob(v.to_vec()),
        }
    }

    /// The cell as a parameter.
    pub(super) fn as_param(&self) -> Param<'_> {
        match self {
            Cell::Null => Param::Null,
            Cell::Int(v) => Param::Int(*v),
            Cell::Text(v) => Param::Text(v),
            Cell::Blob(v) => Param::Blob(v),
        }
    }

    /// Bytes that are UTF-8 as text; anything else unchanged. For comparing stored cells
    /// with a backend that keeps free text as bytes (see [`Row::text_in_bytes`]).
    pub(super) fn normalized(self) -> Cell {
        match self {
            Cell::Blob(bytes) => match String::from_utf8(bytes) {
                Ok(text) => Cell::Text(text),
                Err(e) => Cell::Blob(e.into_bytes()),
            },
            other => other,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Cell::Null => "NULL",
            Cell::Int(_) => "an integer",
            Cell::Text(_) => "text",
            Cell::Blob(_) => "bytes",
        }
    }
}

/// Why a statement failed: the database failed, or a stored value does not have its
/// column's type (a bad row, which a read reports as [`StoreError::Corrupt`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct DbError {
    /// What happened.
    pub(super) message: String,
    /// A value of the wrong type or range, rather than a failure of the database.
    pub(super) bad_value: bool,
}

impl DbError {
    /// A failure of the database.
    pub(super) fn db(e: impl std::fmt::Display) -> DbError {
        DbError { message: e.to_string(), bad_value: false }
    }

    /// A stored value that is not what its column holds.
    fn bad_value(message: String) -> DbError {
        DbError { message, bad_value: true }
    }

    /// The error a read reports.
    pub(super) fn into_read(self) -> StoreError {
        if self.bad_value { StoreError::Corrupt(self.message) } else { StoreError::Read(self.message) }
    }
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// One result row: its cells by position.
pub(super) trait Row {
    /// The cell at `index`.
    fn cell(&self, index: usize) -> Result<Cell, DbError>;

    /// Whether text may come back as bytes holding UTF-8: a backend whose text type cannot
    /// hold every string keeps free text as bytes.
    fn text_in_bytes(&self) -> bool {
        false
    }

    /// A text cell that may not be NULL.
    fn text(&self, index: usize) -> Result<String, DbError> {
        match self.opt_text(index)? {
            Some(v) => Ok(v),
            None => Err(wrong_type(index, "text", &Cell::Null)),
        }
    }

    /// A text cell or NULL.
    fn opt_text(&self, index: usize) -> Result<Option<String>, DbError> {
        match self.cell(index)? {
            Cell::Null => Ok(None),
            Cell::Text(v) => Ok(Some(v)),
            Cell::Blob(v) if self.text_in_bytes() => String::from_utf8(v)
                .map(Some)
                .map_err(|e| DbError::bad_value(format!("column {index} is not UTF-8: {e}"))),
            other => Err(wrong_type(index, "text or NULL", &other)),
        }
    }

    /// An integer cell that may not be NULL.
    fn int(&self, index: usize) -> Result<i64, DbError> {
        match self.cell(index)? {
            Cell::Int(v) => Ok(v),
            other => Err(wrong_type(index, "an integer", &other)),
        }
    }

    /// An integer cell or NULL.
    fn opt_int(&self, index: usize) -> Result<Option<i64>, DbError> {
        match self.cell(index)? {
            Cell::Null => Ok(None),
            Cell::Int(v) => Ok(Some(v)),
            other => Err(wrong_type(index, "an integer or NULL", &other)),
        }
    }

    /// A 0/1 integer cell as a flag.
    fn flag(&self, index: usize) -> Result<bool, DbError> {
        match self.int(index)? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(DbError::bad_value(format!("column {index} is {other}, not 0 or 1"))),
        }
    }

    /// A bytes cell that may not be NULL.
    fn blob(&self, index: usize) -> Result<Vec<u8>, DbError> {
        match self.cell(index)? {
            Cell::Blob(v) => Ok(v),
            other => Err(wrong_type(index, "bytes", &other)),
        }
    }
}

fn wrong_type(index: usize, wanted: &str, found: &Cell) -> DbError {
    DbError::bad_value(format!("column {index} holds {}, not {wanted}", found.kind()))
}

/// What each row of a query is handed to.
pub(super) type EachRow<'f> = &'f mut dyn FnMut(&dyn Row) -> Result<(), DbError>;

/// One connection of a SQL backend.
pub(super) trait Db {
    /// Runs a statement that returns no rows; the number of rows it changed.
    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, DbError>;

    /// Runs a statement whose outcome the caller does not look at. A backend may send it
    /// later, together with the statements after it (pipelined), as long as it runs before
    /// any statement whose result is read and before the transaction ends; a failure then
    /// surfaces at that later statement (and fails the writer's whole group either way).
    fn execute_deferred(&mut self, sql: &str, params: &[Param<'_>]) -> Result<(), DbError> {
        self.execute(sql, params).map(drop)
    }

    /// Runs a query, handing each row to `each` in order.
    fn query(&mut self, sql: &str, params: &[Param<'_>], each: EachRow<'_>) -> Result<(), DbError>;

    /// Begins the writer's transaction.
    fn begin_write(&mut self) -> Result<(), DbError>;

    /// Begins a read transaction in which every statement sees one snapshot.
    fn begin_snapshot(&mut self) -> Result<(), DbError>;

    /// Ends the open transaction, keeping what it did.
    fn commit(&mut self) -> Result<(), DbError> {
        self.execute("COMMIT", &[]).map(drop)
    }

    /// Abandons the open transaction, if there is one.
    fn rollback(&mut self) -> Result<(), DbError>;

    /// The clause after a table name that makes `index` drive the query, or nothing where
    /// the planner chooses well unaided.
    fn index_hint(&self, index: &str) -> String {
        let _ = index;
        String::new()
    }
}

/// Every row of a query, each read by `read`.
pub(super) fn select<T>(
    db: &mut dyn Db,
    sql: &str,
    params: &[Param<'_>],
    mut read: impl FnMut(&dyn Row) -> Result<T, DbError>,
) -> Result<Vec<T>, DbError> {
    let mut out = Vec::new();
    db.query(sql, params, &mut |row| {
        out.push(read(row)?);
        Ok(())
    })?;
    Ok(out)
}

/// The first row of a query, if any.
pub(super) fn select_one<T>(
    db: &mut dyn Db,
    sql: &str,
    params: &[Param<'_>],
    read: impl FnOnce(&dyn Row) -> Result<T, DbError>,
) -> Result<Option<T>, DbError> {
    let mut read = Some(read);
    let mut out = None;
    db.query(sql, params, &mut |row| {
        if let Some(read) = read.take() {
            out = Some(read(row)?);
        }
        Ok(())
    })?;
    Ok(out)
}

/// Runs `f` inside one read snapshot, ending it either way.
pub(super) fn in_snapshot<T>(
    db: &mut dyn Db,
    f: impl FnOnce(&mut dyn Db) -> Result<T, DbError>,
) -> Result<T, DbError> {
    db.begin_snapshot()?;
    match f(db) {
        Ok(value) => {
            db.commit()?;
            Ok(value)
        }
        Err(e) => {
            // The read failed already; ending its transaction is best effort.
            let _ = db.rollback();
            Err(e)
        }
    }
}

/// A statement with numbered placeholders `?N` rewritten as `$N` (PostgreSQL's syntax). The
/// statements are the store's own, none with a `?` inside a string literal.
pub(super) fn dollar_placeholders(sql: &str) -> String {
    sql.replace('?', "$")
}
