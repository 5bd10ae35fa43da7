//! The writer thread: the only connection that writes, folding concurrent change sets into one
//! transaction (group commit) and stopping for good after a failed write (fail-stop).
//!
//! Loop: block for one request; drain whatever else is already queued, up to
//! [`limits::GROUP_COMMIT_CHANGES_MAX`] changes; run one transaction with one savepoint per
//! change set; COMMIT (with `synchronous=FULL`, after fsync); only then answer every caller.

use super::apply::{ApplyError, apply_set};
use super::schema;
use crate::kernel::ids::Epoch;
use crate::limits;
use crate::store::{Change, CommitReceipt, InjectedFault, StoreError};
use parking_lot::Mutex;
use rusqlite::Connection;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError};

/// Where a commit's outcome goes.
pub(super) type Reply = tokio::sync::oneshot::Sender<Result<CommitReceipt, StoreError>>;

/// What the writer thread is asked to do.
pub(super) enum Request {
    /// Commit one atomic change set.
    Commit {
        /// The change set.
        changes: Vec<Change>,
        /// Its caller's ticket.
        reply: Reply,
    },
    /// Durably increment the runtime epoch.
    BeginEpoch {
        /// The caller, blocked until the epoch is durable.
        reply: Sender<Result<Epoch, StoreError>>,
    },
    /// Report the writer connection's durability settings (for tests and diagnostics).
    Pragmas {
        /// The caller.
        reply: Sender<Result<WriterPragmas, StoreError>>,
    },
}

/// The durability settings of the writer's connection, as SQLite reports them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriterPragmas {
    /// `PRAGMA journal_mode`, e.g. `wal`.
    pub journal_mode: String,
    /// `PRAGMA synchronous`: 0 off, 1 normal, 2 full, 3 extra.
    pub synchronous: i64,
    /// `PRAGMA foreign_keys`.
    pub foreign_keys: bool,
    /// `PRAGMA busy_timeout`, in milliseconds.
    pub busy_timeout_ms: i64,
}

/// A fault armed by a test: played after `after` more commits; `fired` is told when it is.
struct ArmedFault {
    after: u64,
    fault: InjectedFault,
    fired: Option<tokio::sync::oneshot::Sender<()>>,
}

/// State shared between the store handle and its writer thread.
pub(super) struct Shared {
    /// The first failure, once the store has fail-stopped. Set once, read without a lock on
    /// every submit.
    stopped: OnceLock<String>,
    /// Makes the next group fail as if its COMMIT had failed (tests).
    inject_failure: AtomicBool,
    /// Transactions committed by this writer.
    commits: AtomicU64,
    /// Held by a test to keep the writer from starting its next group.
    pub(super) gate: Mutex<()>,
    /// Tells watchers the fail-stop cause once the store stops.
    failures: tokio::sync::watch::Sender<Option<String>>,
    /// A fault a test armed, if any.
    fault: Mutex<Option<ArmedFault>>,
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            stopped: OnceLock::new(),
            inject_failure: AtomicBool::new(false),
            commits: AtomicU64::new(0),
            gate: Mutex::new(()),
            failures: tokio::sync::watch::Sender::new(None),
            fault: Mutex::new(None),
        }
    }
}

impl Shared {
    /// The cause, if the store has fail-stopped.
    pub(super) fn stopped(&self) -> Option<String> {
        self.stopped.get().cloned()
    }

    /// Fail-stops the store; the first cause is kept.
    fn stop(&self, cause: &str) {
        if self.stopped.set(cause.to_string()).is_ok() {
            tracing::error!(cause, "the store fail-stopped: no more writes until it is reopened");
            self.failures.send_replace(Some(cause.to_string()));
        }
    }

    /// A watch that turns `Some(cause)` when the store fail-stops.
    pub(super) fn failures(&self) -> tokio::sync::watch::Receiver<Option<String>> {
        self.failures.subscribe()
    }

    /// Arms `fault` to be played after `after` more commits (at least one).
    pub(super) fn arm_fault(&self, after: u64, fault: InjectedFault) -> tokio::sync::oneshot::Receiver<()> {
        let (fired, receiver) = tokio::sync::oneshot::channel();
        // Played by the writer thread after a commit, never by the caller: at least one.
        *self.fault.lock() = Some(ArmedFault { after: after.max(1), fault, fired: Some(fired) });
        receiver
    }

    /// Counts one commit against an armed fault; true when the fault is due (the caller
    /// plays it once the commit is answered).
    fn count_commit(&self) -> bool {
        match self.fault.lock().as_mut() {
            Some(armed) if armed.after > 0 => {
                armed.after -= 1;
                armed.after == 0
            }
            _ => false,
        }
    }

    /// Plays the armed fault.
    fn play_fault(&self) {
        let Some(mut armed) = self.fault.lock().take() else { return };
        match armed.fault {
            InjectedFault::Fail => {
                self.inject_failure();
                if let Some(fired) = armed.fired.take() {
                    let _ = fired.send(());
                }
            }
            InjectedFault::Freeze => {
                if let Some(fired) = armed.fired.take() {
                    let _ = fired.send(());
                }
                // The writer thread takes no further group, ever: the process is meant to
                // be killed here. Parking can wake spuriously, hence the loop.
                loop {
                    std::thread::park();
                }
            }
        }
    }

    /// Arms a one-shot failure of the next group's commit.
    pub(super) fn inject_failure(&self) {
        self.inject_failure.store(true, Ordering::SeqCst);
    }

    /// Transactions committed so far.
    pub(super) fn commits(&self) -> u64 {
        self.commits.load(Ordering::SeqCst)
    }
}

/// Why a group transaction failed as a whole.
enum GroupError {
    Sql(rusqlite::Error),
    Injected,
}

impl From<rusqlite::Error> for GroupError {
    fn from(e: rusqlite::Error) -> Self {
        GroupError::Sql(e)
    }
}

impl GroupError {
    fn cause(&self) -> String {
        match self {
            GroupError::Sql(e) => e.to_string(),
            GroupError::Injected => "injected write failure".to_string(),
        }
    }
}

/// Runs the writer until every sender is gone, answering everything queued before that.
pub(super) fn run(conn: Connection, requests: Receiver<Request>, shared: &Shared) {
    let _panic_stops = PanicStops(shared);
    let mut carried: Option<Request> = None;
    loop {
        let first = match carried.take() {
            Some(request) => request,
            None => match requests.recv() {
                Ok(request) => request,
                Err(_) => break,
            },
        };
        // Waits only while a test holds the gate; otherwise uncontended.
        drop(shared.gate.lock());
        match first {
            Request::Commit { changes, reply } => {
                let mut group = Group::default();
                group.push(changes, reply);
                carried = group.drain(&requests);
                group.commit(&conn, shared);
            }
            Request::BeginEpoch { reply } => {
                // A caller that gave up waiting is not an error of the store.
                let _ = reply.send(begin_epoch(&conn, shared));
            }
            Request::Pragmas { reply } => {
                let _ = reply.send(pragmas(&conn).map_err(|e| StoreError::Read(e.to_string())));
            }
        }
    }
    // Closing checkpoints the WAL into the main file; a failure here loses nothing committed.
    if let Err((_, e)) = conn.close() {
        tracing::warn!(error = %e, "closing the store's writer connection failed");
    }
}

/// Fail-stops the store if the writer thread unwinds: a writer that died mid-group must not
/// leave the store looking writable. (Its callers' tickets resolve `Closed` as the replies drop.)
struct PanicStops<'a>(&'a Shared);

impl Drop for PanicStops<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.stop("the store's writer thread panicked");
        }
    }
}

/// The change sets of one transaction and their callers.
#[derive(Default)]
struct Group {
    sets: Vec<Vec<Change>>,
    replies: Vec<Reply>,
    weight: usize,
}

impl Group {
    /// An empty change set still costs a savepoint, so it weighs one.
    /// A change set's weight: its changes, each object change counted.
    fn weight_of(changes: &[Change]) -> usize {
        let weight: usize = changes
            .iter()
            .map(|c| match c {
                Change::Objects(objects) => objects.len().max(1),
                _ => 1,
            })
            .sum();
        weight.max(1)
    }

    fn push(&mut self, changes: Vec<Change>, reply: Reply) {
        self.weight += Self::weight_of(&changes);
        self.sets.push(changes);
        self.replies.push(reply);
    }

    /// Takes already-queued commits until the group is full. Returns the first request that
    /// does not belong in this group, to be handled next.
    fn drain(&mut self, requests: &Receiver<Request>) -> Option<Request> {
        while self.weight < limits::GROUP_COMMIT_CHANGES_MAX {
            match requests.try_recv() {
                Ok(Request::Commit { changes, reply }) => {
                    if self.weight + Self::weight_of(&changes) > limits::GROUP_COMMIT_CHANGES_MAX {
                        return Some(Request::Commit { changes, reply });
                    }
                    self.push(changes, reply);
                }
                Ok(other) => return Some(other),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return None,
            }
        }
        None
    }

    /// Commits the group and answers every caller, only after COMMIT returned.
    fn commit(self, conn: &Connection, shared: &Shared) {
        if let Some(cause) = shared.stopped() {
            return answer_all(self.replies, &StoreError::FailStopped { cause });
        }
        match run_group(conn, shared, &self.sets) {
            Ok(results) => {
                shared.commits.fetch_add(1, Ordering::SeqCst);
                // Counted before anyone hears of the commit, so a fault armed after a commit
                // was acknowledged never counts that commit; played after the answers.
                let due = shared.count_commit();
                for (reply, result) in self.replies.into_iter().zip(results) {
                    // A dropped ticket means nobody waits; the commit stands.
                    let _ = reply.send(result);
                }
                if due {
                    shared.play_fault();
                }
            }
            Err(e) => {
                let cause = e.cause();
                rollback_quietly(conn);
                shared.stop(&cause);
                answer_all(self.replies, &StoreError::Write(cause));
            }
        }
    }
}

fn answer_all(replies: Vec<Reply>, error: &StoreError) {
    for reply in replies {
        let _ = reply.send(Err(error.clone()));
    }
}

/// One transaction for the whole group; each change set inside its own savepoint so that a
/// refused one leaves nothing behind and does not affect the others.
fn run_group(
    conn: &Connection,
    shared: &Shared,
    sets: &[Vec<Change>],
) -> Result<Vec<Result<CommitReceipt, StoreError>>, GroupError> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let mut results = Vec::with_capacity(sets.len());
    for changes in sets {
        // A one-change set is refused, if at all, before anything of it is written (a
        // `PutMessage` refused over an existing id inserted nothing; `AckMessages` is never
        // refused), so it needs no savepoint; most commits (one process row or one message)
        // take this path.
        if changes.len() <= 1 {
            match apply_set(conn, changes) {
                Ok(receipt) => results.push(Ok(receipt)),
                Err(ApplyError::Refused(refusal)) => results.push(Err(refusal)),
                Err(ApplyError::Sql(e)) => return Err(GroupError::Sql(e)),
            }
            continue;
        }
        conn.prepare_cached("SAVEPOINT change_set")?.execute([])?;
        match apply_set(conn, changes) {
            Ok(receipt) => {
                conn.prepare_cached("RELEASE SAVEPOINT change_set")?.execute([])?;
                results.push(Ok(receipt));
            }
            Err(ApplyError::Refused(refusal)) => {
                conn.prepare_cached("ROLLBACK TO SAVEPOINT change_set")?.execute([])?;
                conn.prepare_cached("RELEASE SAVEPOINT change_set")?.execute([])?;
                results.push(Err(refusal));
            }
            Err(ApplyError::Sql(e)) => return Err(GroupError::Sql(e)),
        }
    }
    if shared.inject_failure.swap(false, Ordering::SeqCst) {
        return Err(GroupError::Injected);
    }
    conn.execute_batch("COMMIT")?;
    Ok(results)
}

/// Abandons an open transaction after a failure. If even that fails the store is already
/// stopping, and the connection is never written through again.
fn rollback_quietly(conn: &Connection) {
    if !conn.is_autocommit()
        && let Err(e) = conn.execute_batch("ROLLBACK")
    {
        tracing::warn!(error = %e, "rolling back a failed group commit failed");
    }
}

fn begin_epoch(conn: &Connection, shared: &Shared) -> Result<Epoch, StoreError> {
    if let Some(cause) = shared.stopped() {
        return Err(StoreError::FailStopped { cause });
    }
    let result = (|| {
        conn.execute_batch("BEGIN IMMEDIATE")?;
        let epoch = schema::bump_epoch(conn)?;
        conn.execute_batch("COMMIT")?;
        Ok::<_, rusqlite::Error>(epoch)
    })();
    match result {
        Ok(epoch) => u64::try_from(epoch)
            .map(Epoch)
            .map_err(|_| StoreError::Corrupt(format!("epoch {epoch} is negative"))),
        Err(e) => {
            let cause = e.to_string();
            rollback_quietly(conn);
            shared.stop(&cause);
            Err(StoreError::Write(cause))
        }
    }
}

fn pragmas(conn: &Connection) -> rusqlite::Result<WriterPragmas> {
    Ok(WriterPragmas {
        journal_mode: conn.pragma_query_value(None, "journal_mode", |r| r.get(0))?,
        synchronous: conn.pragma_query_value(None, "synchronous", |r| r.get(0))?,
        foreign_keys: conn.pragma_query_value(None, "foreign_keys", |r| r.get(0))?,
        busy_timeout_ms: conn.pragma_query_value(None, "busy_timeout", |r| r.get(0))?,
    })
}
