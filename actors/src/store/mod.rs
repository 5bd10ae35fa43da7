//! The durable record of kernel state.
//!
//! A [`Store`] takes atomic change sets and acknowledges each only after the commit holding it
//! is durable. Reads see committed state only. Two implementations: [`SqliteStore`] (the
//! default: one embedded file, WAL, `synchronous=FULL`, one writer thread with group commit,
//! readers on their own connections), [`PostgresStore`] (the same tables, statements and writer
//! on a PostgreSQL database) and [`MemoryStore`] (tests and benches; same semantics, no
//! disk).
//!
//! Fail-stop: after any failed write or fsync the store refuses every later commit with
//! [`StoreError::FailStopped`] until it is reopened.

mod envelope;
mod memory;
mod postgres;
mod sql;
mod sqlite;

pub use envelope::{ENVELOPE_VERSION, Envelope, EnvelopeError, PayloadKind};
pub use memory::MemoryStore;
pub use postgres::{
    CHANGES_CHANNEL, DEFAULT_LEASE, LEASE_MIN, MAIN_SHARD, NodeLease, OWNER_CHANNEL, OwnerInfo,
    PostgresStore, SHARD_NAME_MAX, ShardInfo, channel_name, channel_sql, check_shard_name,
    create_shard_schema_sql, describe_postgres_error, off_runtime, shard_names, shard_url, shards,
    shards_holding,
};
pub use sql::writer::WriterHold;
pub use sqlite::{SqliteStore, WriterPragmas};

use crate::kernel::budget::{Account, Budget, ChildShare, Usage};
use crate::kernel::capability::Grant;
use crate::kernel::ids::{Epoch, GrantId, Oid, Pid};
use crate::kernel::mailbox::{MailboxPage, MailboxQuery, Message, MessageId};
use crate::kernel::objects::{ObjectChange, ObjectSpace};
use crate::kernel::process::ProcessRow;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The schema version this build writes and understands; older files are migrated to it on
/// open (the version log is in `docs/storage-format.md`).
pub const SCHEMA_VERSION: u32 = 7;

/// One durable change. A change set (`Vec<Change>`) commits atomically or not at all.
#[derive(Clone, Debug, PartialEq)]
#[expect(
    clippy::large_enum_variant,
    reason = "process rows are most changes; boxing them would add an allocation to nearly every change"
)]
pub enum Change {
    /// Inserts or replaces a process row.
    PutProcess(ProcessRow),
    /// Inserts or replaces a grant. If it derives from another grant, that grant must be live
    /// when the change set commits, or the whole change set is rejected with
    /// [`StoreError::SourceGrantRevoked`] (other callers' change sets in the same group commit
    /// are unaffected).
    PutGrant(Grant),
    /// Revokes a grant and, in the same transaction, every grant transitively derived from it.
    /// The commit receipt lists what was revoked.
    RevokeGrant(GrantId),
    /// Changes to object memory (metadata, handles, names, roots, per-process memory), applied
    /// in order. `ObjectChange::ReleaseObject` also deletes the object's durable payload. One
    /// variant holds a whole plan's changes, so a large plan (a merge of many objects) costs
    /// one small `ObjectChange` per step rather than one `Change` each.
    Objects(Vec<ObjectChange>),
    /// Stores (or replaces) an object's durable payload: the copy a reopen restores.
    PutPayload {
        /// The object.
        oid: Oid,
        /// The payload, already enveloped.
        envelope: Envelope,
    },
    /// Delivers a message into its recipient's mailbox.
    PutMessage(Message),
    /// Acknowledges messages of one mailbox (ack is not deletion). Ids not in that mailbox,
    /// or already acknowledged, are ignored.
    AckMessages {
        /// The mailbox.
        recipient: Pid,
        /// The messages.
        ids: Vec<MessageId>,
    },
    /// Records the answer of a keyed call (a launch with a `launch_key`, a send with a
    /// `message_key`), in the same change set as the call's own effect. Written once: a key
    /// already stored keeps its first answer.
    PutKeyed {
        /// The caller, kind and key.
        key: CallKey,
        /// The first call's answer, as JSON.
        answer: serde_json::Value,
    },
    /// Stores a process's program checkpoint (replacing the previous one).
    PutCheckpoint {
        /// The process.
        pid: Pid,
        /// The checkpoint, already enveloped.
        envelope: Envelope,
    },
}

/// Which keyed call an idempotency key names: unique per caller and kind.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallKey {
    /// The caller: a pid's text, or `host`.
    pub caller: String,
    /// `launch` or `message`.
    pub kind: KeyKind,
    /// The key the caller chose.
    pub key: String,
}

/// The calls that take an idempotency key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeyKind {
    /// `spawn_child_process` / `fork_child_process` with a `launch_key`.
    Launch,
    /// `send_process_message` with a `message_key`.
    Message,
}

impl KeyKind {
    /// The lowercase word stored in the `call_keys` table.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyKind::Launch => "launch",
            KeyKind::Message => "message",
        }
    }
}

/// Why the store stopped, for [`Store::failures`] watchers; `None` while it accepts writes.
pub type FailureWatch = tokio::sync::watch::Receiver<Option<String>>;

/// A fault a test makes a store play after a number of commits; see
/// [`Store::inject_fault_after`].
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InjectedFault {
    /// The next group fails as a failed COMMIT would: the store fail-stops.
    Fail,
    /// The writer stops taking groups, forever, as if the machine had frozen: every later
    /// commit waits. For crash tests that kill the process at a known commit.
    Freeze,
}

/// What a commit did beyond applying its changes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommitReceipt {
    /// Every grant revoked by `RevokeGrant` changes, with its holder.
    pub revoked: Vec<(GrantId, Pid)>,
}

/// Why a store operation failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreError {
    /// An earlier write or fsync failed; nothing more is written until reopen.
    #[error("the store stopped accepting writes after an earlier failure ({cause}); reopen it")]
    FailStopped {
        /// The first failure.
        cause: String,
    },
    /// A write failed now; the store is fail-stopped from here on.
    #[error("failed to commit: {0}")]
    Write(String),
    /// A read failed.
    #[error("failed to read the store: {0}")]
    Read(String),
    /// Opening failed.
    #[error("failed to open the store at {path}: {message}")]
    Open {
        /// The path.
        path: String,
        /// What happened.
        message: String,
    },
    /// The file exists but has no tables yet: its owner is creating it (a view racing an
    /// owner's first milliseconds), or it is an empty file.
    #[error(
        "the store at {path} is being created (it has no tables yet); try again once its runtime has started"
    )]
    BeingCreated {
        /// The path.
        path: String,
    },
    /// The file was written by a newer build.
    #[error("the store has schema version {found}; this build understands up to {supported}")]
    SchemaTooNew {
        /// The file's version.
        found: u32,
        /// This build's version.
        supported: u32,
    },
    /// A derived grant's source was revoked before the change set committed.
    #[error("grant {source_grant} was revoked; nothing derived from it can be committed")]
    SourceGrantRevoked {
        /// The revoked source.
        source_grant: GrantId,
    },
    /// Another runtime (node) owns the database: its lease runs and its writer is connected.
    /// Open it read-only to look, send host actions to its owner, or wait for its lease.
    #[error(
        "node {node} owns the store at {path} (its lease has {lease_left_ms} ms left and is renewed while it runs); open it read-only to look, or run `agentvisor node` to take over when it stops"
    )]
    OwnedElsewhere {
        /// Where the store is (a URL without its password).
        path: String,
        /// The owning node's name.
        node: String,
        /// What was left of its lease.
        lease_left_ms: u64,
    },
    /// This runtime lost its lease on a shared database (another node claimed it, or it could
    /// not renew it in time): nothing more is written, and another node may now run its
    /// processes. Reopen to claim the database again.
    #[error("this runtime lost its lease on the store: {0}")]
    LeaseLost(String),
    /// The store was opened read-only (another runtime owns it).
    #[error("the store is open read-only: another runtime owns this state directory")]
    ReadOnly,
    /// A row read back does not satisfy its invariants.
    #[error("corrupt row: {0}")]
    Corrupt(String),
    /// The writer is gone (the store was closed).
    #[error("the store is closed")]
    Closed,
    /// A shard name that cannot be used.
    #[error("cannot use the shard {shard:?}: {reason}")]
    InvalidShard {
        /// The name given.
        shard: String,
        /// What to fix.
        reason: String,
    },
}

/// A pending commit: resolves once the change set is durable (or refused).
///
/// Cancel safety: dropping it does not cancel the commit; the change set still commits (or
/// fails) and nobody is told.
pub struct CommitTicket {
    inner: TicketInner,
}

enum TicketInner {
    Ready(Option<Result<CommitReceipt, StoreError>>),
    Waiting(tokio::sync::oneshot::Receiver<Result<CommitReceipt, StoreError>>),
}

impl CommitTicket {
    /// A ticket that is already resolved.
    pub fn ready(result: Result<CommitReceipt, StoreError>) -> Self {
        CommitTicket { inner: TicketInner::Ready(Some(result)) }
    }

    /// A ticket resolved by a writer through the paired sender.
    pub fn channel() -> (tokio::sync::oneshot::Sender<Result<CommitReceipt, StoreError>>, Self) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        (tx, CommitTicket { inner: TicketInner::Waiting(rx) })
    }
}

impl Future for CommitTicket {
    type Output = Result<CommitReceipt, StoreError>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.inner {
            TicketInner::Ready(r) => Poll::Ready(r.take().unwrap_or(Err(StoreError::Closed))),
            TicketInner::Waiting(rx) => Pin::new(rx).poll(cx).map(|r| r.unwrap_or(Err(StoreError::Closed))),
        }
    }
}

/// Which process rows to read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessQuery {
    /// Only direct children of this process.
    pub parent: Option<Pid>,
    /// Only roots (no parent). Ignored when `parent` is set.
    pub roots_only: bool,
    /// Include terminal rows.
    pub include_terminal: bool,
    /// At most this many rows (in pid order, i.e. creation order); `None` for all.
    pub limit: Option<usize>,
    /// Only rows whose pid comes after this one: with `limit`, the next page of a listing
    /// read page by page (pass the last pid of the previous page), so a reader of the whole
    /// history holds one page at a time.
    pub after: Option<Pid>,
}

impl ProcessQuery {
    /// Every child of `parent`, terminal ones included.
    pub fn children_of(parent: Pid) -> ProcessQuery {
        ProcessQuery { parent: Some(parent), include_terminal: true, ..ProcessQuery::default() }
    }
}

/// What [`Store::live_reads`] answers about a set of processes.
#[derive(Debug, Default)]
pub struct LiveReads {
    /// Each process's children: the live ones' rows, and what the terminal ones add up to.
    pub children: HashMap<Pid, ChildrenAtStart>,
    /// Each process's grants, live and revoked, in grant id order.
    pub grants: HashMap<Pid, Vec<Grant>>,
    /// The processes with at least one unread message.
    pub unread: HashSet<Pid>,
}

/// A process's children as its recovered actor needs them: the rows of the live ones, in pid
/// order, and what the terminal ones add up to, so that a long-lived parent's history is
/// folded as it is read, never held.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ChildrenAtStart {
    /// The live children's rows, in pid order.
    pub live: Vec<ProcessRow>,
    /// How many children have ended.
    pub ended: usize,
    /// What the ended children's subtrees spent (their accounts' `total_spent`, added up).
    pub ended_spent: Usage,
}

impl ChildrenAtStart {
    /// Counts one ended child, by its account.
    pub fn add_ended(&mut self, account: &Account) {
        self.ended += 1;
        self.ended_spent.add_spend(&account.total_spent());
    }

    /// Adds one child's row: kept if it is live, counted if it has ended.
    pub fn add(&mut self, row: ProcessRow) {
        if row.status.is_terminal() {
            self.add_ended(&row.account);
        } else {
            self.live.push(row);
        }
    }

    /// Every child, live and ended.
    pub fn total(&self) -> usize {
        self.live.len() + self.ended
    }

    /// The children's shares of the parent's account ([`Account::rebuild_children`]): one per
    /// live child, and the ended ones as one share, since a terminal share counts only its
    /// spending, added up saturating, which their sum gives alike.
    pub fn shares(&self) -> impl Iterator<Item = ChildShare> + '_ {
        let live = self.live.iter().map(|c| ChildShare {
            limit: c.account.limit,
            spent: c.account.total_spent(),
            terminal: false,
        });
        live.chain([ChildShare { limit: Budget::default(), spent: self.ended_spent, terminal: true }])
    }
}

impl FromIterator<ProcessRow> for ChildrenAtStart {
    fn from_iter<I: IntoIterator<Item = ProcessRow>>(rows: I) -> ChildrenAtStart {
        let mut children = ChildrenAtStart::default();
        rows.into_iter().for_each(|row| children.add(row));
        children
    }
}

/// The durable store of kernel state.
pub trait Store: Send + Sync + 'static {
    /// Submits an atomic change set. The ticket resolves after the commit that holds it is
    /// durable. Never blocks the caller (the runtime submits under its object-memory lock). Concurrent submissions may share one transaction (group commit); a change set
    /// is never split across transactions.
    fn submit(&self, changes: Vec<Change>) -> CommitTicket;

    /// Starts a new runtime epoch: durably increments and returns it. Called once per open by
    /// the owning runtime.
    fn begin_epoch(&self) -> Result<Epoch, StoreError>;

    /// The current epoch (0 before any runtime began one).
    fn epoch(&self) -> Result<Epoch, StoreError>;

    /// One process row.
    fn process(&self, pid: Pid) -> Result<Option<ProcessRow>, StoreError>;

    /// Process rows matching the query, in pid (creation) order.
    fn processes(&self, query: ProcessQuery) -> Result<Vec<ProcessRow>, StoreError>;

    /// Every grant held by one process, live and revoked.
    fn grants_of(&self, holder: Pid) -> Result<Vec<Grant>, StoreError>;

    /// What a starting runtime reads about each of its live processes `pids`, for all of them
    /// at once: their children as [`Store::processes`] gives them, folded into
    /// [`ChildrenAtStart`] (the ended ones counted as they are read, not held), their grants as
    /// [`Store::grants_of`] gives them, and which have unread messages. A store over a network
    /// answers in a few statements instead of several round trips per process. The default
    /// asks process by process.
    fn live_reads(&self, pids: &[Pid]) -> Result<LiveReads, StoreError> {
        let mut reads = LiveReads::default();
        for &pid in pids {
            reads.children.insert(pid, self.processes(ProcessQuery::children_of(pid))?.into_iter().collect());
            reads.grants.insert(pid, self.grants_of(pid)?);
            if self.unread_count(pid)? > 0 {
                reads.unread.insert(pid);
            }
        }
        Ok(reads)
    }

    /// The resident part of object memory as committed: every memory not yet collected (its
    /// namespace, roots, clearance, context, skill snapshot and the objects it owns, released
    /// ones as tombstones), every unreleased object, every handle, and every object those refer
    /// to. What is left out is history nothing live refers to: collected memories and the
    /// released objects they owned, read on demand with [`Store::object_memory_of`]. A
    /// reopening runtime reads it once, so a reopen costs what is live, not what ever ran. The
    /// value passes [`ObjectSpace::check`] or the read fails with [`StoreError::Corrupt`].
    fn object_space(&self) -> Result<ObjectSpace, StoreError>;

    /// A space holding at least the memory of `pids` (collected or not: memory rows, names,
    /// roots, handles and owned objects) and the objects `oids`, with every object those refer
    /// to; unknown ones are simply absent. It passes [`ObjectSpace::check`] or the read fails
    /// with [`StoreError::Corrupt`].
    fn object_memory_of(&self, pids: &[Pid], oids: &[Oid]) -> Result<ObjectSpace, StoreError>;

    /// One object's durable payload, if one was stored (and the object is not released).
    fn payload(&self, oid: Oid) -> Result<Option<Envelope>, StoreError>;

    /// Every object that has a durable payload.
    fn payload_oids(&self) -> Result<BTreeSet<Oid>, StoreError>;

    /// A process's latest checkpoint.
    fn checkpoint(&self, pid: Pid) -> Result<Option<Envelope>, StoreError>;

    /// A page of one mailbox: messages matching the query's filters (acknowledged ones only
    /// with `include_acked`), oldest first (by `seq`), at most `limit`, and how many matched
    /// in all. Costs in proportion to what matches, not to the mailbox's size.
    fn mailbox(&self, recipient: Pid, query: &MailboxQuery) -> Result<MailboxPage, StoreError>;

    /// One message, from any mailbox.
    fn message(&self, id: MessageId) -> Result<Option<Message>, StoreError>;

    /// How many unacknowledged messages a mailbox holds.
    fn unread_count(&self, recipient: Pid) -> Result<u64, StoreError>;

    /// The highest message `seq` stored (0 for none), so a reopened runtime continues after it.
    fn message_seq_max(&self) -> Result<u64, StoreError>;

    /// Whether the store refuses writes (read-only view, or fail-stopped).
    fn is_writable(&self) -> bool;

    /// Takes no more writes: what was already submitted commits and is answered, every later
    /// submission resolves [`StoreError::Closed`]; reads keep working. Waits for the writer.
    /// A PostgreSQL store also ends its lease. Idempotent. The default does nothing (a store
    /// with no writer of its own).
    fn close(&self) {}

    /// The answer recorded for a keyed call, if that key was used before.
    fn keyed(&self, key: &CallKey) -> Result<Option<serde_json::Value>, StoreError>;

    /// A watch that turns `Some(cause)` when the store fail-stops, so that a waiter on work
    /// that can no longer commit ends instead of hanging. `None` for a store that never
    /// fail-stops on its own.
    fn failures(&self) -> Option<FailureWatch> {
        None
    }

    /// After `commits` more successful commits, plays `fault`; the receiver fires when it
    /// does. For tests of what a command does on a failed or frozen store.
    #[doc(hidden)]
    fn inject_fault_after(
        &self,
        commits: u64,
        fault: InjectedFault,
    ) -> Option<tokio::sync::oneshot::Receiver<()>> {
        let _ = (commits, fault);
        None
    }

    /// Makes the next group commit fail as a failed write would, fail-stopping the store.
    /// For tests of fail-stop behaviour through the runtime.
    #[doc(hidden)]
    fn inject_write_failure(&self) {}
}
