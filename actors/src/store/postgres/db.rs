//! The portable layer's [`Db`] on a PostgreSQL connection: statements prepared once per
//! connection (placeholders rewritten to `$N`), values bound and read by the server's types.
//!
//! The client is tokio-postgres on a current-thread runtime the connection owns, driven only
//! inside its calls (which the store makes off the tokio workers). Statements whose outcome
//! nobody reads ([`Db::execute_deferred`]: nearly every statement of a change set) are held
//! and sent together, pipelined, before the next statement whose result is read and before
//! the transaction ends: a group of change sets costs a few round trips to the server, not
//! one per statement.

use crate::store::StoreError;
use crate::store::sql::{Cell, Db, DbError, EachRow, Param, Row, dollar_placeholders};
use bytes::BytesMut;
use std::collections::HashMap;
use std::error::Error;
use std::str::FromStr;
use std::time::Duration;
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{Client, NoTls, Statement};

/// Boxed errors of the value codecs.
type CodecError = Box<dyn Error + Sync + Send>;

/// How long a connection that just failed a statement may take to answer a liveness check.
const ALIVE_TIMEOUT: Duration = Duration::from_secs(5);

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

/// A held parameter binds as the parameter it was.
impl ToSql for Cell {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, CodecError> {
        self.as_param().to_sql(ty, out)
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

/// What a PostgreSQL client error says: the server's own message and code when the server
/// reported it (the client's `Display` says only "db error"), else the client's text. Every
/// PostgreSQL store and transport of the project reports errors through it.
pub fn describe_postgres_error(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {} (SQLSTATE {})", db.severity(), db.message(), db.code().code()),
        None => e.to_string(),
    }
}

/// A failed statement.
pub(super) fn pg_error(e: tokio_postgres::Error) -> DbError {
    DbError::db(describe_postgres_error(&e))
}

struct PgRow<'r>(&'r tokio_postgres::Row);

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

/// One connection: its runtime, the statements it has prepared, and the statements held to be
/// sent together.
pub(super) struct PgDb {
    runtime: tokio::runtime::Runtime,
    client: Client,
    prepared: HashMap<String, Statement>,
    held: Vec<(Statement, Vec<Cell>)>,
}

/// Statements that control a transaction: run as simple queries, never prepared.
fn is_control(sql: &str) -> bool {
    ["BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE"].iter().any(|word| sql.starts_with(word))
}

/// Control statements that may be held and sent with the statements around them (prepared,
/// like those): setting and releasing a savepoint. Beginning, committing or rolling back is
/// never held.
fn may_hold(sql: &str) -> bool {
    !is_control(sql) || sql.starts_with("SAVEPOINT") || sql.starts_with("RELEASE")
}

fn bind<P: ToSql + Sync>(params: &[P]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

impl PgDb {
    /// Connects to `url` (a `postgres://` or `postgresql://` URL, or libpq `key=value` pairs).
    pub(super) fn connect(url: &str) -> Result<PgDb, StoreError> {
        Self::connect_with(url, None)
    }

    /// [`Self::connect`], giving up after `timeout` if the server does not answer.
    pub(super) fn connect_within(url: &str, timeout: Duration) -> Result<PgDb, StoreError> {
        Self::connect_with(url, Some(timeout))
    }

    fn connect_with(url: &str, timeout: Option<Duration>) -> Result<PgDb, StoreError> {
        let fail = |message: String| super::schema::open_error(url, message);
        let mut config = tokio_postgres::Config::from_str(url).map_err(|e| fail(pg_error(e).to_string()))?;
        if let Some(timeout) = timeout {
            config.connect_timeout(timeout);
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| fail(format!("failed to start the connection's runtime: {e}")))?;
        let (client, connection) =
            runtime.block_on(config.connect(NoTls)).map_err(|e| fail(pg_error(e).to_string()))?;
        runtime.spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!(error = %e, "a PostgreSQL connection of the store ended");
            }
        });
        Ok(PgDb { runtime, client, prepared: HashMap::new(), held: Vec::new() })
    }

    /// The connection's runtime and client, to run the client's futures on.
    pub(super) fn parts(&mut self) -> (&tokio::runtime::Runtime, &mut Client) {
        (&self.runtime, &mut self.client)
    }

    /// Whether the connection is closed.
    pub(super) fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    /// Whether the connection still answers: not closed, and an empty query comes back within
    /// [`ALIVE_TIMEOUT`] (asked only after a failure).
    pub(super) fn is_alive(&mut self) -> bool {
        !self.client.is_closed()
            && matches!(
                self.runtime.block_on(async {
                    tokio::time::timeout(ALIVE_TIMEOUT, self.client.simple_query("")).await
                }),
                Ok(Ok(_))
            )
    }

    fn statement(&mut self, sql: &str) -> Result<Statement, DbError> {
        if let Some(statement) = self.prepared.get(sql) {
            return Ok(statement.clone());
        }
        let text = dollar_placeholders(sql);
        let statement = self.runtime.block_on(self.client.prepare(&text)).map_err(pg_error)?;
        self.prepared.insert(sql.to_string(), statement.clone());
        Ok(statement)
    }

    fn simple(&mut self, sql: &str) -> Result<(), DbError> {
        self.send_held()?;
        self.runtime.block_on(self.client.batch_execute(sql)).map_err(pg_error)
    }

    /// Sends every held statement, pipelined, and waits for all of them.
    fn send_held(&mut self) -> Result<(), DbError> {
        if self.held.is_empty() {
            return Ok(());
        }
        let held = std::mem::take(&mut self.held);
        let client = &self.client;
        let sends = held.iter().map(|(statement, params)| async move {
            let params = bind(params);
            client.execute(statement, &params).await
        });
        self.runtime.block_on(futures_util::future::try_join_all(sends)).map_err(pg_error)?;
        Ok(())
    }
}

impl Db for PgDb {
    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, DbError> {
        if params.is_empty() && is_control(sql) {
            return self.simple(sql).map(|()| 0);
        }
        self.send_held()?;
        let statement = self.statement(sql)?;
        self.runtime.block_on(self.client.execute(&statement, &bind(params))).map_err(pg_error)
    }

    fn execute_deferred(&mut self, sql: &str, params: &[Param<'_>]) -> Result<(), DbError> {
        if !may_hold(sql) {
            return self.simple(sql);
        }
        let statement = self.statement(sql)?;
        self.held.push((statement, params.iter().copied().map(Cell::of).collect()));
        Ok(())
    }

    fn query(&mut self, sql: &str, params: &[Param<'_>], each: EachRow<'_>) -> Result<(), DbError> {
        self.send_held()?;
        let statement = self.statement(sql)?;
        let rows = self.runtime.block_on(self.client.query(&statement, &bind(params))).map_err(pg_error)?;
        for row in &rows {
            each(&PgRow(row))?;
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
        // What was held belongs to the transaction being abandoned.
        self.held.clear();
        if self.client.is_closed() {
            return Ok(());
        }
        self.runtime.block_on(self.client.batch_execute("ROLLBACK")).map_err(pg_error)
    }
}
