//! Shards: several stores in one PostgreSQL database, each a schema of its own with its own
//! owner lease, so that several nodes serve a tree's roots at once.
//!
//! A shard is addressed by its URL: the database's URL with the shard's schema as the
//! connection's `search_path` ([`shard_url`]), so every store and every client that opens it
//! (the kernel's tables, the windows' chunks, the rigs' seats, the host requests) reads and
//! writes that shard's tables and nothing else. The main shard ([`MAIN_SHARD`]) is the
//! database's `public` schema: a database used without shards is its main shard.
//!
//! Notification channels are database-wide, so each shard's channels carry its schema's name
//! ([`channel_sql`]); the rule is one SQL expression, and a listener asks the server for the
//! name ([`channel_name`]) rather than computing it again.

use super::PostgresStore;
use super::db::PgDb;
use super::schema::{SCHEMA_LOCK, client_error};
use crate::store::StoreError;

/// The shard a database used without shards holds: its `public` schema.
pub const MAIN_SHARD: &str = "main";

/// The longest shard name: its schema's name must fit in a channel name (63 bytes) after the
/// longest channel's base.
pub const SHARD_NAME_MAX: usize = 20;

/// Where a shard's tables are: `public` for the main shard, `agentvisor_shard_NAME` for any
/// other.
const SCHEMA_PREFIX: &str = "agentvisor_shard_";

/// The statement that creates the connection's shard schema if it is missing (the first
/// entry of its `search_path`, which [`shard_url`] sets to exactly that schema), under the
/// lock the kernel's table creation takes, so that concurrent first openers do not race.
/// Every store's creation runs it before creating its tables; on the main shard it does
/// nothing.
pub fn create_shard_schema_sql() -> String {
    format!(
        "DO $$ BEGIN
            IF current_schema() IS NULL THEN
                PERFORM pg_advisory_xact_lock({SCHEMA_LOCK});
                EXECUTE format('CREATE SCHEMA IF NOT EXISTS %I', current_setting('search_path'));
            END IF;
        END $$"
    )
}

/// A shard as [`shards`] lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardInfo {
    /// The shard's name ([`MAIN_SHARD`] for the `public` schema).
    pub name: String,
    /// Its owner, if a node ever claimed it.
    pub owner: Option<super::OwnerInfo>,
    /// Its processes that have not ended.
    pub live: u64,
    /// All its processes.
    pub processes: u64,
}

impl ShardInfo {
    /// Whether a live node serves the shard now ([`super::OwnerInfo::is_live`]).
    pub fn is_served(&self) -> bool {
        self.owner.as_ref().is_some_and(super::OwnerInfo::is_live)
    }
}

/// Checks a shard name: 1 to [`SHARD_NAME_MAX`] lowercase letters, digits or `_`, starting
/// with a letter.
pub fn check_shard_name(shard: &str) -> Result<(), StoreError> {
    let valid = !shard.is_empty()
        && shard.len() <= SHARD_NAME_MAX
        && shard.starts_with(|c: char| c.is_ascii_lowercase())
        && shard.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if valid {
        return Ok(());
    }
    Err(StoreError::InvalidShard {
        shard: crate::limits::excerpt(shard),
        reason: format!(
            "give 1 to {SHARD_NAME_MAX} lowercase letters, digits or '_', starting with a letter"
        ),
    })
}

/// The schema that holds `shard`'s tables.
fn schema_of(shard: &str) -> String {
    if shard == MAIN_SHARD { "public".to_string() } else { format!("{SCHEMA_PREFIX}{shard}") }
}

/// The shard a schema holds, if it is one.
fn shard_of_schema(schema: &str) -> Option<String> {
    if schema == "public" {
        return Some(MAIN_SHARD.to_string());
    }
    schema.strip_prefix(SCHEMA_PREFIX).filter(|name| check_shard_name(name).is_ok()).map(str::to_string)
}

/// The URL that opens `shard` of the database `base` names: `base` itself for the main
/// shard; otherwise `base` with the shard's schema as the connection's `search_path`.
/// Refuses a bad name, and a `base` that already sets connection options.
pub fn shard_url(base: &str, shard: &str) -> Result<String, StoreError> {
    check_shard_name(shard)?;
    if shard == MAIN_SHARD {
        return Ok(base.to_string());
    }
    let refused = |reason: &str| StoreError::InvalidShard {
        shard: shard.to_string(),
        reason: format!("{reason} ({})", super::schema::redact(base)),
    };
    let schema = schema_of(shard);
    if base.starts_with("postgres://") || base.starts_with("postgresql://") {
        if base.contains("options=") {
            return Err(refused("the store URL sets `options` already; leave them out to use shards"));
        }
        let joiner = if base.contains('?') { '&' } else { '?' };
        return Ok(format!("{base}{joiner}options=-c%20search_path%3D{schema}"));
    }
    if base.contains("options") {
        return Err(refused(
            "the store's connection string sets `options` already; leave them out to use shards",
        ));
    }
    Ok(format!("{base} options='-c search_path={schema}'"))
}

/// The SQL expression naming the notification channel `base` of the connection's shard:
/// `base` on the main shard, `base.SCHEMA` on any other.
pub fn channel_sql(base: &str) -> String {
    // Before the shard's schema exists (a listener earlier than the shard's first node),
    // `current_schema()` is null and the `search_path` names the schema.
    format!(
        "('{base}' || CASE coalesce(current_schema(), current_setting('search_path')) WHEN 'public' THEN '' \
         ELSE '.' || coalesce(current_schema(), current_setting('search_path')) END)"
    )
}

/// The name of the notification channel `base` of the shard `client` is connected to, as
/// [`channel_sql`] names it, quoted for `LISTEN`.
pub async fn channel_name(
    client: &impl tokio_postgres::GenericClient,
    base: &str,
) -> Result<String, tokio_postgres::Error> {
    let name: String = client.query_one(&format!("SELECT {}", channel_sql(base)), &[]).await?.try_get(0)?;
    Ok(format!("\"{}\"", name.replace('"', "\"\"")))
}

/// The names of the shards of the database `base` names whose kernel tables exist, the main
/// shard first, then by name.
pub fn shard_names(base: &str) -> Result<Vec<String>, StoreError> {
    super::off_runtime(|| names_on(&mut PgDb::connect(base)?, base))
}

/// Every shard of the database `base` names ([`shard_names`]): its owner and how many of its
/// processes are live. One connection visits every shard.
pub fn shards(base: &str) -> Result<Vec<ShardInfo>, StoreError> {
    super::off_runtime(|| {
        let mut db = PgDb::connect(base)?;
        let mut found = Vec::new();
        for shard in names_on(&mut db, base)? {
            enter(&mut db, base, &shard)?;
            let owner = super::lease::owner(&mut db, base)?;
            let (runtime, client) = db.parts();
            let sql = format!(
                "SELECT count(*) FILTER (WHERE {}), count(*) FROM processes",
                crate::store::sql::read::LIVE_STATUS
            );
            let row = runtime.block_on(client.query_one(&sql, &[])).map_err(|e| client_error(base, e))?;
            let count = |i: usize| {
                row.try_get::<_, i64>(i)
                    .map(|n| u64::try_from(n).unwrap_or(0))
                    .map_err(|e| client_error(base, e))
            };
            found.push(ShardInfo { name: shard, owner, live: count(0)?, processes: count(1)? });
        }
        Ok(found)
    })
}

impl PostgresStore {
    /// The shards of the database `base` names that a live node serves ([`shards`]).
    pub fn shards_served(base: &str) -> Result<Vec<ShardInfo>, StoreError> {
        Ok(shards(base)?.into_iter().filter(ShardInfo::is_served).collect())
    }
}

/// The shards of the database `base` names holding a process whose pid is `text`, or starts
/// or ends with it (as the command line resolves a pid), in [`shards`]' order. One connection
/// visits every shard.
pub fn shards_holding(base: &str, text: &str) -> Result<Vec<String>, StoreError> {
    let wanted = text.trim().to_ascii_lowercase();
    super::off_runtime(|| {
        let mut db = PgDb::connect(base)?;
        let mut holding = Vec::new();
        for shard in names_on(&mut db, base)? {
            enter(&mut db, base, &shard)?;
            let (runtime, client) = db.parts();
            let found = runtime
                .block_on(client.query_opt(
                    "SELECT 1 FROM processes WHERE pid = $1 OR pid LIKE $1 || '%' OR pid LIKE '%' || $1 LIMIT 1",
                    &[&wanted],
                ))
                .map_err(|e| client_error(base, e))?
                .is_some();
            if found {
                holding.push(shard);
            }
        }
        Ok(holding)
    })
}

/// The shards whose kernel tables exist, read on `db` (a connection to `base`).
fn names_on(db: &mut PgDb, base: &str) -> Result<Vec<String>, StoreError> {
    let (runtime, client) = db.parts();
    let schemas = runtime
        .block_on(async {
            let rows = client
                .query(
                    "SELECT nspname FROM pg_namespace \
                     WHERE to_regclass(quote_ident(nspname) || '.owner') IS NOT NULL \
                     ORDER BY nspname <> 'public', nspname",
                    &[],
                )
                .await?;
            rows.iter().map(|row| row.try_get::<_, String>(0)).collect::<Result<Vec<_>, _>>()
        })
        .map_err(|e| client_error(base, e))?;
    Ok(schemas.iter().filter_map(|schema| shard_of_schema(schema)).collect())
}

/// Points `db`'s unqualified names at `shard`'s tables, as [`shard_url`]'s connections are.
fn enter(db: &mut PgDb, base: &str, shard: &str) -> Result<(), StoreError> {
    check_shard_name(shard)?;
    let (runtime, client) = db.parts();
    runtime
        .block_on(client.batch_execute(&format!("SET search_path TO \"{}\"", schema_of(shard))))
        .map_err(|e| client_error(base, e))
}
