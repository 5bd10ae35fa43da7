//! The owner lease: which runtime (a *node*) may write a PostgreSQL database, until when, and
//! how a node that lost it is stopped from writing (fenced).
//!
//! The `owner` table has one row: the owning node's name, a fence number that grows by one
//! with every claim, the lease's end on the server's clock, and the owner's writer session.
//! A node claims the row in one `UPDATE` when the lease has run out or the owner's writer
//! session is gone from the server (its process died: the server ends a session whose client
//! closed); concurrent claimers serialise on the row, so exactly one wins each claim.
//!
//! Every group transaction of the writer begins by renewing the lease on the condition that
//! the row still names this node and its fence ([`FENCE`]). The row lock it takes is held to
//! the commit, so no claim can slip in between the check and the commit; a zombie (a node
//! that was paused or cut off while another claimed) has its next group refused and its store
//! fail-stops. A renewer thread renews the lease every third of it while nothing is written,
//! and fail-stops the store itself when the lease was taken, or when it could not renew for a
//! whole lease (a node cut off from the server stops writing no later than the server lets
//! another node claim). `docs/nodes.md` has the timing.

use super::db::PgDb;
use super::schema::{client_error, redact};
use crate::store::StoreError;
use crate::store::sql::writer::Stopper;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio_postgres::error::SqlState;

/// The lease a node holds while it owns a database, when nobody chose one.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(5);

/// The shortest lease accepted: renewals every third of it must fit between round trips.
pub const LEASE_MIN: Duration = Duration::from_millis(300);

/// Renews the owner lease and checks that this node still holds it, in the writer's group
/// transaction: `?1` the node, `?2` its fence, `?3` the lease in milliseconds. One row
/// updated means the group may go on.
pub(super) const FENCE: &str = "UPDATE owner SET lease_until = clock_timestamp() + (?3::bigint) * interval '1 millisecond' \
     WHERE id = 1 AND node = ?1 AND fence = ?2";

/// Who a writing runtime is on a shared database, and how long its lease lasts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeLease {
    node: String,
    lease: Duration,
}

impl NodeLease {
    /// A node named `node` holding leases of `lease`. Refuses an empty name, and a lease
    /// shorter than [`LEASE_MIN`].
    pub fn new(node: impl Into<String>, lease: Duration) -> Result<NodeLease, String> {
        let node = node.into();
        if node.trim().is_empty() {
            return Err("a node needs a name that is not empty".to_string());
        }
        if lease < LEASE_MIN {
            return Err(format!(
                "a lease of {} ms is too short: give at least {} ms",
                lease.as_millis(),
                LEASE_MIN.as_millis()
            ));
        }
        Ok(NodeLease { node, lease })
    }

    /// The node's name.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// How long a lease lasts unless renewed.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// How often the owner renews its lease, and how often a waiting node tries to claim:
    /// a third of the lease.
    pub fn renew_every(&self) -> Duration {
        self.lease / 3
    }

    fn lease_ms(&self) -> i64 {
        i64::try_from(self.lease.as_millis()).unwrap_or(i64::MAX)
    }
}

impl Default for NodeLease {
    /// This machine's host name and this process's id, with [`DEFAULT_LEASE`].
    fn default() -> Self {
        NodeLease { node: format!("{}-{}", host_name(), std::process::id()), lease: DEFAULT_LEASE }
    }
}

/// This machine's host name, or `host` when it cannot be read.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "host".to_string())
}

/// The database's owner as its row says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerInfo {
    /// The node that last claimed the database.
    pub node: String,
    /// Its fence: the number of claims so far.
    pub fence: u64,
    /// What is left of its lease on the server's clock (zero once run out or released).
    pub lease_left: Duration,
    /// Whether its writer session is still connected to the server.
    pub session_alive: bool,
}

impl OwnerInfo {
    /// Whether no other node may claim the database now: the lease runs and the owner's
    /// writer session is connected.
    pub fn is_live(&self) -> bool {
        !self.lease_left.is_zero() && self.session_alive
    }
}

/// What a claim won: the node and its fence, which every write is checked against.
#[derive(Clone, Debug)]
pub(super) struct Held {
    pub(super) node: String,
    pub(super) fence: i64,
    pub(super) lease_ms: i64,
}

/// Whether the owner's writer session is still on the server: its pid listed with the start
/// time it was claimed with (a pid the server reused is another session). The start is hidden
/// from other roles without `pg_read_all_stats`; then the pid alone counts, which can only keep
/// a dead owner alive until its lease runs out, never end a live one.
macro_rules! owner_session_alive {
    () => {
        "EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = owner.session_pid \
         AND (a.backend_start IS NULL OR owner.session_start IS NULL \
              OR a.backend_start = owner.session_start))"
    };
}

/// The owner row read with the server's clock.
const OWNER: &str = concat!(
    "SELECT node, fence, \
     CASE WHEN lease_until > clock_timestamp() \
          THEN (EXTRACT(EPOCH FROM (lease_until - clock_timestamp())) * 1000)::bigint ELSE 0 END, ",
    owner_session_alive!(),
    " FROM owner WHERE id = 1"
);

/// Claims the owner row for `$1` with a lease of `$2` ms when the lease ran out or the
/// owner's session is gone; returns the new fence.
const CLAIM: &str = concat!(
    "UPDATE owner SET node = $1, fence = fence + 1, \
     lease_until = clock_timestamp() + ($2::bigint) * interval '1 millisecond', \
     session_pid = pg_backend_pid(), \
     session_start = (SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()) \
     WHERE id = 1 AND (lease_until <= clock_timestamp() OR NOT ",
    owner_session_alive!(),
    ") RETURNING fence"
);

/// Claims the database for `lease`'s node on `db`'s session (the writer's, whose end tells
/// other nodes that this one died). Refuses with [`StoreError::OwnedElsewhere`] while another
/// node's lease runs and its session lives, or while the owner is inside a write.
pub(super) fn claim(db: &mut PgDb, url: &str, lease: &NodeLease) -> Result<Held, StoreError> {
    let (runtime, client) = db.parts();
    let lease_ms = lease.lease_ms();
    let won = runtime
        .block_on(async {
            client
                .execute(
                    "INSERT INTO nodes (node, host, os_pid, lease_ms, started_at, seen_at) \
                     VALUES ($1, $2, $3, $4, clock_timestamp(), clock_timestamp()) \
                     ON CONFLICT (node) DO UPDATE SET host = excluded.host, os_pid = excluded.os_pid, \
                     lease_ms = excluded.lease_ms, seen_at = excluded.seen_at",
                    &[&lease.node, &host_name(), &i64::from(std::process::id()), &lease_ms],
                )
                .await?;
            // A claim waits for the owner's row lock only so long: an owner frozen inside a
            // group transaction holds it until the server ends its session (below).
            client
                .batch_execute(&format!("SET lock_timeout = {}", lease.renew_every().as_millis().max(1)))
                .await?;
            let row = client.query_opt(CLAIM, &[&lease.node, &lease_ms]).await;
            let row = match row {
                Err(e) if e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) => None,
                other => other?,
            };
            // The writer never idles inside a transaction; one that does for a whole lease
            // (frozen, or cut off mid-group) is ended by the server, releasing the row.
            client
                .batch_execute(&format!(
                    "RESET lock_timeout; SET idle_in_transaction_session_timeout = {lease_ms}"
                ))
                .await?;
            row.map(|r| r.try_get::<_, i64>(0)).transpose()
        })
        .map_err(|e| client_error(url, e))?;
    match won {
        Some(fence) => {
            tracing::info!(node = %lease.node, fence, "claimed the PostgreSQL store");
            Ok(Held { node: lease.node.clone(), fence, lease_ms })
        }
        None => {
            let owner = owner(db, url)?;
            Err(StoreError::OwnedElsewhere {
                path: redact(url),
                node: owner.as_ref().map_or_else(String::new, |o| o.node.clone()),
                lease_left_ms: owner
                    .map_or(0, |o| u64::try_from(o.lease_left.as_millis()).unwrap_or(u64::MAX)),
            })
        }
    }
}

/// The database's owner; `None` before any node claimed it (or before the store existed).
pub(super) fn owner(db: &mut PgDb, url: &str) -> Result<Option<OwnerInfo>, StoreError> {
    let (runtime, client) = db.parts();
    let row = match runtime.block_on(client.query_opt(OWNER, &[])) {
        // No store was ever created here: nobody owns it.
        Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => return Ok(None),
        other => other.map_err(|e| client_error(url, e))?,
    };
    let Some(row) = row else { return Ok(None) };
    let read = || -> Result<OwnerInfo, tokio_postgres::Error> {
        Ok(OwnerInfo {
            node: row.try_get(0)?,
            fence: u64::try_from(row.try_get::<_, i64>(1)?).unwrap_or(0),
            lease_left: Duration::from_millis(u64::try_from(row.try_get::<_, i64>(2)?).unwrap_or(0)),
            session_alive: row.try_get(3)?,
        })
    };
    let info = read().map_err(|e| client_error(url, e))?;
    Ok((!info.node.is_empty()).then_some(info))
}

/// Ends `held`'s lease at once (a clean close) and notifies [`super::OWNER_CHANNEL`], so that a
/// waiting node claims at once, without waiting for the lease to run out or for its next
/// attempt. Does nothing if another node has claimed since.
pub(super) fn release(db: &mut PgDb, held: &Held) -> Result<(), StoreError> {
    let (runtime, client) = db.parts();
    runtime
        .block_on(client.execute(
            &format!(
                "WITH released AS (
                     UPDATE owner SET lease_until = '-infinity' WHERE id = 1 AND node = $1 AND fence = $2
                     RETURNING node
                 )
                 SELECT pg_notify({}, node) FROM released",
                super::channel_sql(super::OWNER_CHANNEL)
            ),
            &[&held.node, &held.fence],
        ))
        .map(drop)
        .map_err(|e| StoreError::Write(super::db::describe_postgres_error(&e)))
}

/// Why a held lease is gone: who holds the database now, if it can be read.
pub(super) fn lost(db: &mut PgDb, url: &str, held: &Held) -> String {
    let now = match owner(db, url) {
        Ok(Some(o)) => format!("node {} holds it now (fence {})", o.node, o.fence),
        Ok(None) => "nobody holds it now".to_string(),
        Err(e) => format!("the owner could not be read: {e}"),
    };
    format!("node {}'s lease on the store (fence {}) was taken over; {now}", held.node, held.fence)
}

/// The thread that renews the lease while the store is open.
pub(super) struct Renewer {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Renewer {
    /// Starts renewing `held` every `every` on connections of its own to `url`, stopping the
    /// store through `stopper` when the lease is lost.
    pub(super) fn start(
        url: &str,
        held: Held,
        every: Duration,
        stopper: Stopper,
    ) -> std::io::Result<Renewer> {
        let (stop, stopped) = mpsc::channel();
        let url = url.to_string();
        let thread = std::thread::Builder::new()
            .name("agentvisor-store-lease".to_string())
            .spawn(move || renew_until_stopped(&url, &held, every, &stopper, &stopped))?;
        Ok(Renewer { stop: Some(stop), thread: Some(thread) })
    }

    /// Stops renewing and waits for the thread. Idempotent.
    pub(super) fn stop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::error!("the store's lease thread panicked");
        }
    }
}

impl Drop for Renewer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn renew_until_stopped(
    url: &str,
    held: &Held,
    every: Duration,
    stopper: &Stopper,
    stopped: &mpsc::Receiver<()>,
) {
    let lease = Duration::from_millis(u64::try_from(held.lease_ms).unwrap_or(u64::MAX));
    let mut db: Option<PgDb> = None;
    // The start of the last renewal the server confirmed: the server's lease ends no earlier
    // than a lease after it.
    let mut renewed = Instant::now();
    loop {
        match stopped.recv_timeout(every) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
        if stopper.is_stopped() {
            return;
        }
        let attempt = Instant::now();
        match renew(&mut db, url, held, every) {
            Ok(true) => renewed = attempt,
            Ok(false) => {
                let cause = match db.as_mut() {
                    Some(db) => lost(db, url, held),
                    None => format!("node {}'s lease on the store was taken over", held.node),
                };
                stopper.stop(&cause);
                return;
            }
            Err(e) => {
                db = None;
                tracing::warn!(error = %e, "renewing the store's lease failed; retrying");
                if renewed.elapsed() >= lease {
                    stopper.stop(&format!(
                        "node {} could not renew its lease on the store for {} ms ({e}); it stopped \
                         writing so that another node can take over",
                        held.node,
                        lease.as_millis()
                    ));
                    return;
                }
            }
        }
    }
}

/// One renewal, within `within`: whether the row still named this node.
fn renew(db: &mut Option<PgDb>, url: &str, held: &Held, within: Duration) -> Result<bool, StoreError> {
    if db.is_none() {
        *db = Some(PgDb::connect_within(url, within)?);
    }
    let Some(db) = db.as_mut() else { return Err(StoreError::Closed) };
    let sql = crate::store::sql::dollar_placeholders(FENCE);
    let (runtime, client) = db.parts();
    let updated = runtime
        .block_on(async {
            tokio::time::timeout(within, client.execute(&sql, &[&held.node, &held.fence, &held.lease_ms]))
                .await
        })
        .map_err(|_| StoreError::Write(format!("no answer within {} ms", within.as_millis())))?
        .map_err(|e| StoreError::Write(super::db::describe_postgres_error(&e)))?;
    Ok(updated == 1)
}
