//! The writer thread: the only connection that writes, folding concurrent change sets into one
//! transaction (group commit) and stopping for good after a failed write (fail-stop). One
//! design for both SQL backends: a backend supplies the connection ([`Backend`]), this module
//! everything else.
//!
//! Loop: block for one request; drain whatever else is already queued, up to
//! [`limits::GROUP_COMMIT_CHANGES_MAX`] changes; run one transaction with one savepoint per
//! change set; COMMIT (durable when it returns: SQLite's `synchronous=FULL`, PostgreSQL's
//! `synchronous_commit=on`); only then answer every caller.

use super::apply::{ApplyError, apply_set};
use super::{Db, DbError, select_one};
use crate::kernel::ids::Epoch;
use crate::limits;
use crate::store::{Change, CommitReceipt, CommitTicket, FailureWatch, InjectedFault, StoreError};
use parking_lot::{Mutex, MutexGuard, RwLock};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;

/// The writer's connection, as a backend provides it.
pub(in crate::store) trait Backend: Send + 'static {
    /// The connection every statement runs on.
    fn db(&mut self) -> &mut dyn Db;

    /// Checks, inside the group transaction just begun, that this writer may still write
    /// (a PostgreSQL node renews its lease and checks its fence). A refusal fails the group
    /// and fail-stops the store. Nothing by default.
    fn fence(&mut self) -> Result<(), FenceError> {
        Ok(())
    }

    /// Closes the connection once the writer has answered everything.
    fn close(self);
}

/// Why [`Backend::fence`] refused a group.
pub(in crate::store) enum FenceError {
    /// The check itself failed.
    Db(DbError),
    /// This writer may no longer write; why.
    Lost(String),
}

/// Fail-stops a store from outside its writer thread (a lease that was lost).
#[derive(Clone)]
pub(in crate::store) struct Stopper(Arc<Shared>);

impl Stopper {
    /// Fail-stops the store; the first cause is kept.
    pub(in crate::store) fn stop(&self, cause: &str) {
        self.0.stop(cause);
    }

    /// Whether the store has fail-stopped.
    pub(in crate::store) fn is_stopped(&self) -> bool {
        self.0.stopped.get().is_some()
    }
}

/// Where a commit's outcome goes.
type Reply = tokio::sync::oneshot::Sender<Result<CommitReceipt, StoreError>>;

/// Work run on the writer thread, between groups, with its connection.
type Task<B> = Box<dyn FnOnce(&mut B, &Shared) + Send>;

/// What the writer thread is asked to do.
enum Request<B> {
    /// Commit one atomic change set.
    Commit {
        /// The change set.
        changes: Vec<Change>,
        /// Its caller's ticket.
        reply: Reply,
    },
    /// Run something else on the writer's connection (begin an epoch, report settings).
    Run(Task<B>),
}

/// A fault armed by a test: played after `after` more commits; `fired` is told when it is.
struct ArmedFault {
    after: u64,
    fault: InjectedFault,
    fired: Option<tokio::sync::oneshot::Sender<()>>,
}

/// State shared between the store handle and its writer thread.
pub(in crate::store) struct Shared {
    /// The first failure, once the store has fail-stopped. Set once, read without a lock on
    /// every submit.
    stopped: OnceLock<String>,
    /// Makes the next group fail as if its COMMIT had failed (tests).
    inject_failure: AtomicBool,
    /// Transactions committed by this writer.
    commits: AtomicU64,
    /// Held by a test to keep the writer from starting its next group.
    gate: Mutex<()>,
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
    pub(in crate::store) fn stopped(&self) -> Option<String> {
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
    pub(in crate::store) fn failures(&self) -> tokio::sync::watch::Receiver<Option<String>> {
        self.failures.subscribe()
    }

    /// Arms `fault` to be played after `after` more commits (at least one).
    pub(in crate::store) fn arm_fault(
        &self,
        after: u64,
        fault: InjectedFault,
    ) -> tokio::sync::oneshot::Receiver<()> {
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
    pub(in crate::store) fn inject_failure(&self) {
        self.inject_failure.store(true, Ordering::SeqCst);
    }

    /// Transactions committed so far.
    pub(in crate::store) fn commits(&self) -> u64 {
        self.commits.load(Ordering::SeqCst)
    }
}

/// Why a group transaction failed as a whole.
enum GroupError {
    Db(DbError),
    Injected,
    /// The backend's fence refused the group.
    Lost(String),
}

impl From<FenceError> for GroupError {
    fn from(e: FenceError) -> Self {
        match e {
            FenceError::Db(e) => GroupError::Db(e),
            FenceError::Lost(cause) => GroupError::Lost(cause),
        }
    }
}

impl From<DbError> for GroupError {
    fn from(e: DbError) -> Self {
        GroupError::Db(e)
    }
}

impl GroupError {
    fn cause(&self) -> String {
        match self {
            GroupError::Db(e) => e.to_string(),
            GroupError::Injected => "injected write failure".to_string(),
            GroupError::Lost(cause) => cause.clone(),
        }
    }

    /// What every caller of the failed group is answered.
    fn answer(&self) -> StoreError {
        match self {
            GroupError::Lost(cause) => StoreError::LeaseLost(cause.clone()),
            other => StoreError::Write(other.cause()),
        }
    }
}

/// Runs the writer until every sender is gone, answering everything queued before that.
fn run<B: Backend>(mut backend: B, requests: Receiver<Request<B>>, shared: &Shared) {
    let _panic_stops = PanicStops(shared);
    let mut carried: Option<Request<B>> = None;
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
                group.commit(&mut backend, shared);
            }
            Request::Run(task) => task(&mut backend, shared),
        }
    }
    backend.close();
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
    fn drain<B>(&mut self, requests: &Receiver<Request<B>>) -> Option<Request<B>> {
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
    fn commit<B: Backend>(self, backend: &mut B, shared: &Shared) {
        if let Some(cause) = shared.stopped() {
            return answer_all(self.replies, &StoreError::FailStopped { cause });
        }
        match run_group(backend, shared, &self.sets) {
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
                rollback_quietly(backend.db());
                shared.stop(&e.cause());
                answer_all(self.replies, &e.answer());
            }
        }
    }
}

fn answer_all(replies: Vec<Reply>, error: &StoreError) {
    for reply in replies {
        let _ = reply.send(Err(error.clone()));
    }
}

/// One transaction for the whole group, in which a refused change set leaves nothing behind
/// and does not affect the others.
///
/// A change set's savepoint costs a copy of every page it touches, and almost no change set is
/// refused: the group is first applied without savepoints. If a change set of more than one
/// change is refused there (it may have written part of itself), that attempt is rolled back
/// and the group applied again with each such change set inside a savepoint, which is rolled
/// back alone if it is refused. Both attempts answer alike whenever the first is kept.
fn run_group<B: Backend>(
    backend: &mut B,
    shared: &Shared,
    sets: &[Vec<Change>],
) -> Result<Vec<Result<CommitReceipt, StoreError>>, GroupError> {
    let results = match apply_group(backend, sets, Savepoints::None)? {
        Some(results) => results,
        None => {
            backend.db().rollback()?;
            // Every change set that could leave part of itself runs in a savepoint now.
            apply_group(backend, sets, Savepoints::PerSet)?.ok_or_else(|| {
                GroupError::Db(DbError::db("a change set was refused outside its savepoint"))
            })?
        }
    };
    if shared.inject_failure.swap(false, Ordering::SeqCst) {
        return Err(GroupError::Injected);
    }
    backend.db().commit()?;
    Ok(results)
}

/// Whether a group's change sets of more than one change run inside savepoints.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Savepoints {
    None,
    PerSet,
}

/// Begins the group's transaction and applies every change set. `None` when a change set that
/// may have written part of itself was refused outside a savepoint: the transaction must be
/// rolled back.
fn apply_group<B: Backend>(
    backend: &mut B,
    sets: &[Vec<Change>],
    savepoints: Savepoints,
) -> Result<Option<Vec<Result<CommitReceipt, StoreError>>>, GroupError> {
    backend.db().begin_write()?;
    backend.fence()?;
    let db = backend.db();
    let mut results = Vec::with_capacity(sets.len());
    for changes in sets {
        // A one-change set is refused, if at all, before anything of it is written (a
        // `PutMessage` refused over an existing id inserted nothing; `AckMessages` is never
        // refused), so it never needs a savepoint; most commits (one process row or one
        // message) are such.
        if changes.len() <= 1 || savepoints == Savepoints::None {
            match apply_set(db, changes) {
                Ok(receipt) => results.push(Ok(receipt)),
                Err(ApplyError::Refused(refusal)) if changes.len() <= 1 => results.push(Err(refusal)),
                Err(ApplyError::Refused(_)) => return Ok(None),
                Err(ApplyError::Db(e)) => return Err(GroupError::Db(e)),
            }
            continue;
        }
        // Neither is read: a backend may send both with the change set's statements.
        db.execute_deferred("SAVEPOINT change_set", &[])?;
        match apply_set(db, changes) {
            Ok(receipt) => {
                db.execute_deferred("RELEASE SAVEPOINT change_set", &[])?;
                results.push(Ok(receipt));
            }
            Err(ApplyError::Refused(refusal)) => {
                db.execute("ROLLBACK TO SAVEPOINT change_set", &[])?;
                db.execute("RELEASE SAVEPOINT change_set", &[])?;
                results.push(Err(refusal));
            }
            Err(ApplyError::Db(e)) => return Err(GroupError::Db(e)),
        }
    }
    Ok(Some(results))
}

/// Abandons an open transaction after a failure. If even that fails the store is already
/// stopping, and the connection is never written through again.
fn rollback_quietly(db: &mut dyn Db) {
    if let Err(e) = db.rollback() {
        tracing::warn!(error = %e, "rolling back a failed group commit failed");
    }
}

/// The current epoch (0 before any runtime began one).
pub(in crate::store) fn read_epoch(db: &mut dyn Db) -> Result<Epoch, StoreError> {
    let value = select_one(db, "SELECT value FROM meta WHERE key = 'epoch'", &[], |r| r.int(0))
        .map_err(DbError::into_read)?
        .ok_or_else(|| StoreError::Corrupt("the store has no epoch row".to_string()))?;
    u64::try_from(value).map(Epoch).map_err(|_| StoreError::Corrupt(format!("epoch {value} is negative")))
}

/// Durably increments the epoch in a transaction of its own.
fn begin_epoch<B: Backend>(backend: &mut B, shared: &Shared) -> Result<Epoch, StoreError> {
    if let Some(cause) = shared.stopped() {
        return Err(StoreError::FailStopped { cause });
    }
    let result = (|| {
        backend.db().begin_write()?;
        backend.fence()?;
        let db = backend.db();
        db.execute("UPDATE meta SET value = value + 1 WHERE key = 'epoch'", &[])?;
        let epoch = select_one(db, "SELECT value FROM meta WHERE key = 'epoch'", &[], |r| r.int(0))?;
        db.commit()?;
        Ok::<_, GroupError>(epoch)
    })();
    match result {
        Ok(Some(epoch)) => u64::try_from(epoch)
            .map(Epoch)
            .map_err(|_| StoreError::Corrupt(format!("epoch {epoch} is negative"))),
        Ok(None) => Err(StoreError::Corrupt("the store has no epoch row".to_string())),
        Err(e) => {
            rollback_quietly(backend.db());
            shared.stop(&e.cause());
            Err(e.answer())
        }
    }
}

/// The handle a store keeps on its writer thread.
pub(in crate::store) struct Writer<B: Backend> {
    /// `None` once closed. Unbounded, so that a submission never blocks: the runtime submits
    /// under its object-memory lock, and a submitter waiting there for room would stall every
    /// other process's plan with it. What bounds the queue is that every submitter waits for
    /// its commit before it submits again (an actor handles one message at a time), so it
    /// holds at most one change set per concurrent submitter.
    requests: RwLock<Option<Sender<Request<B>>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    shared: Arc<Shared>,
}

/// Keeps the writer from starting its next group while held; see [`Writer::hold`].
#[doc(hidden)]
#[must_use = "the writer is held only while this guard lives"]
pub struct WriterHold<'a> {
    _guard: MutexGuard<'a, ()>,
}

impl<B: Backend> Writer<B> {
    /// Starts the writer thread on `backend`'s connection.
    pub(in crate::store) fn start(backend: B) -> std::io::Result<Writer<B>> {
        let shared = Arc::new(Shared::default());
        let (requests, receiver) = mpsc::channel();
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("agentvisor-store-writer".to_string())
            .spawn(move || run(backend, receiver, &thread_shared))?;
        Ok(Writer { requests: RwLock::new(Some(requests)), thread: Mutex::new(Some(thread)), shared })
    }

    /// Submits a change set; see [`Store::submit`](crate::store::Store::submit). Never blocks.
    pub(in crate::store) fn submit(&self, changes: Vec<Change>) -> CommitTicket {
        if let Some(cause) = self.shared.stopped() {
            return CommitTicket::ready(Err(StoreError::FailStopped { cause }));
        }
        let (reply, ticket) = CommitTicket::channel();
        match self.send(Request::Commit { changes, reply }) {
            Ok(()) => ticket,
            Err(e) => CommitTicket::ready(Err(e)),
        }
    }

    /// Runs `task` on the writer thread between groups and waits for its answer.
    pub(in crate::store) fn run<T: Send + 'static>(
        &self,
        task: impl FnOnce(&mut B, &Shared) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (reply, answer) = mpsc::channel();
        self.send(Request::Run(Box::new(move |backend, shared| {
            // A caller that gave up waiting is not an error of the store.
            let _ = reply.send(task(backend, shared));
        })))?;
        answer.recv().map_err(|_| StoreError::Closed)?
    }

    /// Durably increments the runtime epoch.
    pub(in crate::store) fn begin_epoch(&self) -> Result<Epoch, StoreError> {
        self.run(|backend, shared| begin_epoch(backend, shared))
    }

    /// Stops the writer after it has committed and answered everything already submitted,
    /// and waits for it. Idempotent.
    pub(in crate::store) fn close(&self) {
        // Dropping the only sender ends the writer's loop once the queue is empty.
        drop(self.requests.write().take());
        let thread = self.thread.lock().take();
        if let Some(thread) = thread
            && thread.join().is_err()
        {
            tracing::error!("the store's writer thread panicked");
        }
    }

    /// Whether commits are still taken.
    pub(in crate::store) fn is_writable(&self) -> bool {
        self.shared.stopped().is_none() && self.requests.read().is_some()
    }

    /// A watch that turns `Some(cause)` when the store fail-stops.
    pub(in crate::store) fn failures(&self) -> FailureWatch {
        self.shared.failures()
    }

    /// Arms `fault` to be played after `commits` more commits.
    pub(in crate::store) fn arm_fault(
        &self,
        commits: u64,
        fault: InjectedFault,
    ) -> tokio::sync::oneshot::Receiver<()> {
        self.shared.arm_fault(commits, fault)
    }

    /// Makes the next group fail as if its COMMIT had failed.
    pub(in crate::store) fn inject_failure(&self) {
        self.shared.inject_failure();
    }

    /// Transactions committed so far.
    pub(in crate::store) fn commits(&self) -> u64 {
        self.shared.commits()
    }

    /// What fail-stops this writer's store from another thread.
    pub(in crate::store) fn stopper(&self) -> Stopper {
        Stopper(Arc::clone(&self.shared))
    }

    /// Keeps the writer from starting its next group until the guard is dropped.
    pub(in crate::store) fn hold(&self) -> WriterHold<'_> {
        WriterHold { _guard: self.shared.gate.lock() }
    }

    fn send(&self, request: Request<B>) -> Result<(), StoreError> {
        let requests = self.requests.read();
        let sender = requests.as_ref().ok_or(StoreError::Closed)?;
        sender.send(request).map_err(|_| StoreError::Closed)
    }
}
