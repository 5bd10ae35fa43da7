//! Where a command's state lives: the state directory's SQLite files (the default), or a
//! PostgreSQL database (`--store postgres://…`, or `AGENTVISOR_STORE`) that holds the kernel's
//! tables, the windows' chunks and the rigs' seats of the whole tree. The state directory
//! still holds the owner lock, the event log, the control socket and the image sources.
//!
//! Every command opens its stores through here, so the choice is made in one place.

use agentvisor::actors::runtime::{DB_FILE, RuntimeOptions};
use agentvisor::actors::store::{
    MAIN_SHARD, NodeLease, PostgresStore, shard_names, shard_url, shards_holding,
};
use agentvisor::agent::window::{ChunkStore, open_chunk_store};
use agentvisor::rig::store::{PostgresSeatStore, SEAT_STORE_FILE, SeatStore, SqliteSeatStore};
use anyhow::{Context, bail};
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// The database `--store` named, opening the shard the command uses (`--shard`, or the one
/// holding the process it names); set once by `cli::main`; unset means the state directory.
static STORE_URL: OnceLock<String> = OnceLock::new();

/// The database `--store` named, as given (its main shard), and the shard the command uses.
static BASE: OnceLock<(String, String)> = OnceLock::new();

/// Chooses the store: the state directory, or `base`'s shard `shard`; without `--shard`, a
/// command naming a process (`pid`) uses the shard that holds it, any other the main shard.
pub(crate) fn set_store(
    base: Option<String>,
    shard: Option<String>,
    pid: Option<&str>,
) -> anyhow::Result<()> {
    let Some(base) = base else {
        if let Some(shard) = shard {
            bail!("--shard {shard} names a shard of a PostgreSQL store: pass --store postgres://… too");
        }
        return Ok(());
    };
    let shard = match (shard, pid) {
        (Some(shard), _) => shard,
        (None, Some(pid)) => shard_holding(&base, pid)?,
        (None, None) => MAIN_SHARD.to_string(),
    };
    let url = shard_url(&base, &shard).context("--shard")?;
    let _ = STORE_URL.set(url);
    let _ = BASE.set((base, shard));
    Ok(())
}

/// The shard of `base` holding the process `pid` names; the main shard when none does, or
/// when `pid` cannot be one (the command then says what is wrong with it).
fn shard_holding(base: &str, pid: &str) -> anyhow::Result<String> {
    if !pid.trim().chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return Ok(MAIN_SHARD.to_string());
    }
    let holding = shards_holding(base, pid).with_context(|| {
        format!("failed to find the shard holding {pid:?} in {}", PostgresStore::describe_url(base))
    })?;
    match holding.as_slice() {
        [] => Ok(MAIN_SHARD.to_string()),
        [one] => Ok(one.clone()),
        many => bail!("{pid:?} matches processes in the shards {}: pass --shard NAME", many.join(", ")),
    }
}

/// What a node owns on the command's store, for messages: `the store` (its main shard) or
/// `shard NAME`.
pub(crate) fn owned_part() -> String {
    match shard() {
        MAIN_SHARD => "the store".to_string(),
        shard => format!("shard {shard}"),
    }
}

/// The shards of the command's database other than the one it uses; empty without shards,
/// and (said on stderr) when they cannot be listed.
fn other_shards() -> Vec<String> {
    let Some((base, shard)) = BASE.get() else { return Vec::new() };
    match shard_names(base) {
        Ok(names) => names.into_iter().filter(|name| name != shard).collect(),
        Err(e) => {
            eprintln!("agentvisor: the store's shards could not be listed: {e}");
            Vec::new()
        }
    }
}

/// Names, on stderr, the shards of the command's database other than the one it shows, so
/// that a view of one shard does not pass for the whole tree; nothing without shards.
pub(crate) fn say_other_shards() {
    let others = other_shards();
    if !others.is_empty() {
        eprintln!(
            "showing {}; other shards: {} (`agentvisor shards`; `--shard NAME` shows one)",
            shard_phrase(),
            others.join(", ")
        );
    }
}

/// What to add to a failure to open the command's shard: the shards the database has.
pub(crate) fn other_shards_hint() -> String {
    let others = other_shards();
    if others.is_empty() {
        return String::new();
    }
    format!(
        " ({} is not one of the database's shards here; pass --shard with one of: {})",
        shard_phrase(),
        others.join(", ")
    )
}

/// `the main shard` or `shard NAME`, for messages.
fn shard_phrase() -> String {
    match shard() {
        MAIN_SHARD => "the main shard".to_string(),
        shard => format!("shard {shard}"),
    }
}

/// The command that serves the command's shard, for messages.
pub(crate) fn node_command() -> String {
    match shard() {
        MAIN_SHARD => "agentvisor node".to_string(),
        shard => format!("agentvisor --shard {shard} node"),
    }
}

/// The shard the command uses ([`MAIN_SHARD`] without a PostgreSQL store).
pub(crate) fn shard() -> &'static str {
    BASE.get().map_or(MAIN_SHARD, |(_, shard)| shard.as_str())
}

/// The database `--store` named, as given, if any.
pub(crate) fn base_url() -> Option<&'static str> {
    BASE.get().map(|(base, _)| base.as_str())
}

/// Who this command's runtime is on a PostgreSQL store (`--node`, `--lease-ms`), set once by
/// `cli::main`.
static NODE_LEASE: OnceLock<NodeLease> = OnceLock::new();

/// Sets the node name and lease from `--node` and `--lease-ms`; refuses an empty name or a
/// lease too short to renew.
pub(crate) fn set_node_lease(node: Option<String>, lease_ms: u64) -> Result<(), String> {
    let node = node.unwrap_or_else(|| NodeLease::default().node().to_string());
    let lease = NodeLease::new(node, std::time::Duration::from_millis(lease_ms))
        .map_err(|e| format!("--node/--lease-ms: {e}"))?;
    let _ = NODE_LEASE.set(lease);
    Ok(())
}

/// Who this command's runtime is on a PostgreSQL store.
pub(crate) fn node_lease() -> NodeLease {
    NODE_LEASE.get().cloned().unwrap_or_default()
}

/// Checks a `--store` value: a `postgres://` or `postgresql://` URL.
pub(crate) fn parse_store_url(text: &str) -> Result<String, String> {
    if text.starts_with("postgres://") || text.starts_with("postgresql://") {
        Ok(text.to_string())
    } else {
        Err(format!(
            "{text:?} is not a store URL: give postgres://user:password@host:port/database (or \
             postgresql://…); leave --store out to keep the state in --state DIR"
        ))
    }
}

/// The database the command's state is in, if not the state directory.
pub(crate) fn url() -> Option<&'static str> {
    STORE_URL.get().map(String::as_str)
}

/// Where the state is, for messages: the database (its password hidden) and the shard, or
/// the directory.
pub(crate) fn describe(state: &Path) -> String {
    match BASE.get() {
        Some((base, shard)) => describe_shard(base, shard),
        None => state.display().to_string(),
    }
}

/// How the shard `shard` of the database `base` is named in messages.
pub(crate) fn describe_shard(base: &str, shard: &str) -> String {
    let database = PostgresStore::describe_url(base);
    if shard == MAIN_SHARD { database } else { format!("shard {shard} of {database}") }
}

/// Where the seat store is, for messages: the database (its password hidden) or the file.
pub(crate) fn describe_seats(state: &Path) -> String {
    match url() {
        Some(_) => describe(state),
        None => state.join(SEAT_STORE_FILE).display().to_string(),
    }
}

/// `options` with the kernel store chosen.
pub(crate) fn runtime_options(options: RuntimeOptions) -> RuntimeOptions {
    options.store_url(url().map(str::to_string)).node_lease(node_lease())
}

/// `options` on the PostgreSQL store (or shard) `url` opens.
pub(crate) fn runtime_options_at(url: &str, options: RuntimeOptions) -> RuntimeOptions {
    options.store_url(Some(url.to_string())).node_lease(node_lease())
}

/// Whether there is state to read: the store file exists, or a database was named (which
/// the store itself then checks).
pub(crate) fn has_state(state: &Path) -> bool {
    url().is_some() || state.join(DB_FILE).exists()
}

/// The windows' chunk store.
pub(crate) fn chunks(state: &Path) -> anyhow::Result<Arc<dyn ChunkStore + Send + Sync>> {
    open_chunk_store(state, url())
        .with_context(|| format!("failed to open the window store in {}", describe(state)))
}

/// The rigs' seat store, for writing.
pub(crate) fn seats(state: &Path) -> anyhow::Result<Arc<dyn SeatStore>> {
    Ok(match url() {
        Some(url) => Arc::new(PostgresSeatStore::open(url).context("failed to open the seat store")?),
        None => Arc::new(
            SqliteSeatStore::open_in(state)
                .with_context(|| format!("failed to open the seat store in {}", state.display()))?,
        ),
    })
}

/// The rigs' seat store, for reading only; `None` when no rig ever ran here.
pub(crate) fn seats_read_only(state: &Path) -> anyhow::Result<Option<Arc<dyn SeatStore>>> {
    match url() {
        Some(url) => {
            let store = PostgresSeatStore::open_read_only(url).context("failed to open the seat store")?;
            Ok(store.map(|store| Arc::new(store) as Arc<dyn SeatStore>))
        }
        None => {
            let path = state.join(SEAT_STORE_FILE);
            if !path.exists() {
                return Ok(None);
            }
            let store = SqliteSeatStore::open_read_only(&path)
                .with_context(|| format!("failed to open the seat store {}", path.display()))?;
            Ok(Some(Arc::new(store)))
        }
    }
}

/// Refuses a command that needs state when there is none.
pub(crate) fn require_state(state: &Path) -> anyhow::Result<()> {
    if !has_state(state) {
        bail!(
            "no agentvisor state at {} (run a command that starts processes first, or pass --state DIR)",
            state.display()
        );
    }
    Ok(())
}
