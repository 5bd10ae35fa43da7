//! Reads, each on a pooled read-only connection of its own, never the writer's.
//!
//! In WAL mode a reader sees the last transaction committed before its statement began and
//! never waits for the writer, so reads see committed data only and do not stall commits.

use super::codec::{
    self, GRANT_COLUMNS, HANDLE_COLUMNS, MEMORY_COLUMNS, MESSAGE_COLUMNS, OBJECT_META_COLUMNS,
    PROCESS_COLUMNS, PROCESS_COLUMNS_V4, RawGrant, RawHandle, RawMemory, RawMessage, RawObjectMeta,
    RawProcess, StoredMemory,
};
use super::schema::{self, LIVE_STATUS};
use crate::kernel::capability::Grant;
use crate::kernel::ids::{Epoch, Oid, Pid};
use crate::kernel::mailbox::{MailboxPage, MailboxQuery, Message, MessageId};
use crate::kernel::objects::{ObjectChange, ObjectSpace};
use crate::kernel::process::ProcessRow;
use crate::store::{Envelope, ProcessQuery, StoreError};
use parking_lot::Mutex;
use rusqlite::params;
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params_from_iter};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// Idle read connections kept for reuse. More concurrent readers than this still get a
/// connection each (opened on demand); the surplus is closed after use, so the pool never
/// pins more than this many file handles and page caches while idle.
const READ_POOL_IDLE_MAX: usize = 8;

/// A failed read: a stored value of the wrong type or range is a bad row (`Corrupt`), anything
/// else a failure of the database (`Read`).
fn read_error(e: rusqlite::Error) -> StoreError {
    if codec::is_bad_value(&e) { StoreError::Corrupt(e.to_string()) } else { StoreError::Read(e.to_string()) }
}

/// A pool of read-only connections to one file.
pub(super) struct ReadPool {
    path: PathBuf,
    /// Open new connections `immutable` (a read-only copy with no WAL; see
    /// `schema::open_immutable`).
    immutable: bool,
    idle: Mutex<Vec<Connection>>,
    /// Set once the `messages` table has been seen. Only a read-only view of a schema-1 file
    /// (which no writer has migrated yet) lacks it; such a file holds no messages.
    has_messages: AtomicBool,
    /// Set once the object memory tables have been seen. Only a read-only view of a file
    /// older than schema 3 lacks them; it is read as holding no object memory.
    has_object_memory: AtomicBool,
    /// Set once the `processes.restart` column has been seen. Only a read-only view of a
    /// file older than schema 5 lacks it; its rows read with the default restart state.
    has_restart: AtomicBool,
}

impl ReadPool {
    /// A pool seeded with one already-open connection.
    pub(super) fn new(path: PathBuf, first: Connection) -> ReadPool {
        ReadPool::with_mode(path, first, false)
    }

    /// A pool whose connections are opened `immutable` if `immutable` is set.
    pub(super) fn with_mode(path: PathBuf, first: Connection, immutable: bool) -> ReadPool {
        ReadPool {
            path,
            immutable,
            idle: Mutex::new(vec![first]),
            has_messages: AtomicBool::new(false),
            has_object_memory: AtomicBool::new(false),
            has_restart: AtomicBool::new(false),
        }
    }

    /// Whether the file has its `messages` table yet (see `has_messages`).
    fn messages_exist(&self, conn: &Connection) -> Result<bool, StoreError> {
        if self.has_messages.load(Ordering::Acquire) {
            return Ok(true);
        }
        let exists = schema::has_table(conn, "messages").map_err(read_error)?;
        if exists {
            self.has_messages.store(true, Ordering::Release);
        }
        Ok(exists)
    }

    /// Whether the file has its object memory tables yet (see `has_object_memory`).
    fn object_memory_exists(&self, conn: &Connection) -> Result<bool, StoreError> {
        if self.has_object_memory.load(Ordering::Acquire) {
            return Ok(true);
        }
        let exists = schema::has_table(conn, "object_meta").map_err(read_error)?;
        if exists {
            self.has_object_memory.store(true, Ordering::Release);
        }
        Ok(exists)
    }

    /// The process columns this file has (see `has_restart`).
    fn process_columns(&self, conn: &Connection) -> Result<&'static str, StoreError> {
        if self.has_restart.load(Ordering::Acquire) {
            return Ok(PROCESS_COLUMNS);
        }
        if schema::has_column(conn, "processes", "restart").map_err(read_error)? {
            self.has_restart.store(true, Ordering::Release);
            return Ok(PROCESS_COLUMNS);
        }
        Ok(PROCESS_COLUMNS_V4)
    }

    /// Runs `f` on an idle connection, or a fresh one if none is idle.
    fn with<T>(&self, f: impl FnOnce(&Connection) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let pooled = self.idle.lock().pop();
        let conn = match pooled {
            Some(conn) => conn,
            None if self.immutable => schema::open_immutable(&self.path)?,
            None => schema::open_reader(&self.path)?,
        };
        let result = f(&conn);
        let mut idle = self.idle.lock();
        if idle.len() < READ_POOL_IDLE_MAX {
            idle.push(conn);
        }
        result
    }

    /// The current epoch.
    pub(super) fn epoch(&self) -> Result<Epoch, StoreError> {
        let value = self.with(|conn| schema::read_epoch(conn).map_err(read_error))?;
        u64::try_from(value).map(Epoch).map_err(|_| StoreError::Corrupt(format!("epoch {value} is negative")))
    }

    /// One process row.
    pub(super) fn process(&self, pid: Pid) -> Result<Option<ProcessRow>, StoreError> {
        let raw = self.with(|conn| {
            let sql = format!("SELECT {} FROM processes WHERE pid = ?1", self.process_columns(conn)?);
            conn.prepare_cached(&sql)
                .and_then(|mut stmt| stmt.query_row([pid.to_string()], RawProcess::read).optional())
                .map_err(read_error)
        })?;
        raw.map(RawProcess::decode).transpose()
    }

    /// Process rows matching the query, in pid order.
    pub(super) fn processes(&self, query: ProcessQuery) -> Result<Vec<ProcessRow>, StoreError> {
        let raws = self.with(|conn| {
            let (sql, parent) = processes_sql(query, self.process_columns(conn)?);
            let mut stmt = conn.prepare_cached(&sql).map_err(read_error)?;
            let rows = match &parent {
                Some(parent) => stmt.query_map([parent], RawProcess::read),
                None => stmt.query_map([], RawProcess::read),
            };
            rows.and_then(|rows| rows.collect::<Result<Vec<_>, _>>()).map_err(read_error)
        })?;
        raws.into_iter().map(RawProcess::decode).collect()
    }

    /// SQLite's plan for a process query, one line per step (`EXPLAIN QUERY PLAN`).
    pub(super) fn processes_plan(&self, query: ProcessQuery) -> Result<Vec<String>, StoreError> {
        self.with(|conn| {
            let (sql, parent) = processes_sql(query, self.process_columns(conn)?);
            let sql = format!("EXPLAIN QUERY PLAN {sql}");
            let mut stmt = conn.prepare(&sql).map_err(read_error)?;
            let rows = match &parent {
                Some(parent) => stmt.query_map([parent], plan_detail),
                None => stmt.query_map([], plan_detail),
            };
            rows.and_then(|rows| rows.collect::<Result<Vec<_>, _>>()).map_err(read_error)
        })
    }

    /// Every grant held by one process, in grant id order.
    pub(super) fn grants_of(&self, holder: Pid) -> Result<Vec<Grant>, StoreError> {
        let sql = format!("SELECT {GRANT_COLUMNS} FROM grants WHERE holder = ?1 ORDER BY id");
        let raws = self.with(|conn| {
            conn.prepare_cached(&sql)
                .and_then(|mut stmt| {
                    stmt.query_map([holder.to_string()], RawGrant::read)?.collect::<Result<Vec<_>, _>>()
                })
                .map_err(read_error)
        })?;
        raws.into_iter().map(RawGrant::decode).collect()
    }

    /// All object memory: every table read in one read transaction (one snapshot), replayed
    /// into a space (see [`ObjectRows::into_space`]), then checked. A row that does not decode,
    /// or a space that breaks an invariant, is [`StoreError::Corrupt`].
    pub(super) fn object_space(&self) -> Result<ObjectSpace, StoreError> {
        let rows = self.with(|conn| {
            if !self.object_memory_exists(conn)? {
                return Ok(None);
            }
            let tx = conn.unchecked_transaction().map_err(read_error)?;
            let rows = ObjectRows::read(&tx).map_err(read_error)?;
            tx.finish().map_err(read_error)?;
            Ok(Some(rows))
        })?;
        let space = match rows {
            Some(rows) => rows.into_space()?,
            None => ObjectSpace::new(),
        };
        space.check().map_err(|v| StoreError::Corrupt(format!("object memory read back: {v}")))?;
        Ok(space)
    }

    /// One object's durable payload.
    pub(super) fn payload(&self, oid: Oid) -> Result<Option<Envelope>, StoreError> {
        let bytes: Option<Vec<u8>> = self.with(|conn| {
            if !self.object_memory_exists(conn)? {
                return Ok(None);
            }
            conn.prepare_cached("SELECT envelope FROM object_payloads WHERE oid = ?1")
                .and_then(|mut stmt| stmt.query_row([oid.to_string()], |r| r.get(0)).optional())
                .map_err(read_error)
        })?;
        bytes.map(|b| codec::envelope(&b, &format!("object {oid}"))).transpose()
    }

    /// Every object with a durable payload.
    pub(super) fn payload_oids(&self) -> Result<BTreeSet<Oid>, StoreError> {
        let texts: Vec<String> = self.with(|conn| {
            if !self.object_memory_exists(conn)? {
                return Ok(Vec::new());
            }
            select_all(conn, "SELECT oid FROM object_payloads", |r| r.get(0)).map_err(read_error)
        })?;
        texts.iter().map(|t| codec::oid(t)).collect()
    }

    /// A process's checkpoint.
    pub(super) fn checkpoint(&self, pid: Pid) -> Result<Option<Envelope>, StoreError> {
        let bytes: Option<Vec<u8>> = self.with(|conn| {
            conn.prepare_cached("SELECT envelope FROM checkpoints WHERE pid = ?1")
                .and_then(|mut stmt| stmt.query_row([pid.to_string()], |r| r.get(0)).optional())
                .map_err(read_error)
        })?;
        bytes.map(|b| codec::envelope(&b, &format!("the checkpoint of {pid}"))).transpose()
    }

    /// The answer recorded for a keyed call. A file older than schema 4 (read by a view
    /// before its owner migrated it) has no keys.
    pub(super) fn keyed(&self, key: &crate::store::CallKey) -> Result<Option<serde_json::Value>, StoreError> {
        let text: Option<String> = self.with(|conn| {
            if !schema::has_table(conn, "call_keys").map_err(read_error)? {
                return Ok(None);
            }
            conn.prepare_cached(
                "SELECT answer FROM call_keys WHERE caller = ?1 AND kind = ?2 AND call_key = ?3",
            )
            .and_then(|mut stmt| {
                stmt.query_row(params![key.caller, key.kind.as_str(), key.key], |r| r.get(0)).optional()
            })
            .map_err(read_error)
        })?;
        text.map(|t| {
            serde_json::from_str(&t).map_err(|e| {
                StoreError::Corrupt(format!("the answer of key {:?} of {}: {e}", key.key, key.caller))
            })
        })
        .transpose()
    }

    /// A page of one mailbox and how many messages matched in all; see [`MailboxPlan`] for
    /// how the query is chosen. Both statements run in one read transaction, so the page and
    /// the count come from the same snapshot.
    pub(super) fn mailbox(&self, recipient: Pid, query: &MailboxQuery) -> Result<MailboxPage, StoreError> {
        let plan = MailboxPlan::new(recipient, query);
        if plan.matches_nothing() {
            return Ok(MailboxPage::default());
        }
        let (raws, matched) = self.with(|conn| {
            if !self.messages_exist(conn)? {
                return Ok((Vec::new(), 0));
            }
            let tx = conn.unchecked_transaction().map_err(read_error)?;
            let found = plan.run(&tx).map_err(read_error)?;
            tx.finish().map_err(read_error)?;
            Ok(found)
        })?;
        let messages = raws.into_iter().map(RawMessage::decode).collect::<Result<Vec<Message>, _>>()?;
        // The pair assertion of a read: what SQL selected is what `MessageFilter::matches`
        // (the reference semantics) accepts, in `seq` order.
        for (i, m) in messages.iter().enumerate() {
            let selected = m.recipient == recipient
                && (query.include_acked || !m.acked)
                && query.filter.matches(m)
                && (i == 0 || messages[i - 1].seq <= m.seq);
            if !selected {
                return Err(StoreError::Corrupt(format!(
                    "message {} was read from {recipient}'s mailbox but does not match the query",
                    m.message_id
                )));
            }
        }
        Ok(MailboxPage { messages, matched })
    }

    /// SQLite's plan for a mailbox read, one line per step of each statement it runs.
    pub(super) fn mailbox_plan(
        &self,
        recipient: Pid,
        query: &MailboxQuery,
    ) -> Result<Vec<String>, StoreError> {
        let plan = MailboxPlan::new(recipient, query);
        self.with(|conn| {
            let mut lines = Vec::new();
            for (sql, params) in plan.statements() {
                let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).map_err(read_error)?;
                let rows = stmt.query_map(params_from_iter(params), plan_detail).map_err(read_error)?;
                for row in rows {
                    lines.push(row.map_err(read_error)?);
                }
            }
            Ok(lines)
        })
    }

    /// One message, from any mailbox.
    pub(super) fn message(&self, id: MessageId) -> Result<Option<Message>, StoreError> {
        let sql = format!("SELECT {MESSAGE_COLUMNS} FROM messages WHERE message_id = ?1");
        let raw = self.with(|conn| {
            if !self.messages_exist(conn)? {
                return Ok(None);
            }
            conn.prepare_cached(&sql)
                .and_then(|mut stmt| stmt.query_row([id.to_string()], RawMessage::read).optional())
                .map_err(read_error)
        })?;
        raw.map(RawMessage::decode).transpose()
    }

    /// How many unacknowledged messages a mailbox holds: a count over its range of the
    /// covering index `messages_unread`.
    pub(super) fn unread_count(&self, recipient: Pid) -> Result<u64, StoreError> {
        let count: i64 = self.with(|conn| {
            if !self.messages_exist(conn)? {
                return Ok(0);
            }
            conn.prepare_cached(UNREAD_COUNT)
                .and_then(|mut stmt| stmt.query_row([recipient.to_string()], |r| r.get(0)))
                .map_err(read_error)
        })?;
        u64::try_from(count).map_err(|_| StoreError::Corrupt(format!("unread count {count} is negative")))
    }

    /// The highest `seq` stored, 0 for none: the last entry of `messages_seq`.
    pub(super) fn message_seq_max(&self) -> Result<u64, StoreError> {
        let max: Option<i64> = self.with(|conn| {
            if !self.messages_exist(conn)? {
                return Ok(None);
            }
            conn.prepare_cached(SEQ_MAX)
                .and_then(|mut stmt| stmt.query_row([], |r| r.get(0)))
                .map_err(read_error)
        })?;
        let max = max.unwrap_or(0);
        u64::try_from(max).map_err(|_| StoreError::Corrupt(format!("message seq {max} is negative")))
    }

    /// SQLite's plans for `unread_count` and `message_seq_max`, one line per step.
    pub(super) fn message_counters_plan(&self) -> Result<Vec<String>, StoreError> {
        self.with(|conn| {
            let mut lines = Vec::new();
            for (sql, params) in [(UNREAD_COUNT, vec![Value::Text(String::new())]), (SEQ_MAX, vec![])] {
                let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).map_err(read_error)?;
                let rows = stmt.query_map(params_from_iter(params), plan_detail).map_err(read_error)?;
                for row in rows {
                    lines.push(row.map_err(read_error)?);
                }
            }
            Ok(lines)
        })
    }
}

/// Unread messages of one mailbox; `messages_unread (recipient, acked, seq)` covers it.
const UNREAD_COUNT: &str = "SELECT COUNT(*) FROM messages WHERE recipient = ?1 AND acked = 0";

/// The highest `seq`; SQLite answers `MAX` from the last entry of `messages_seq`.
const SEQ_MAX: &str = "SELECT MAX(seq) FROM messages";

/// The index that drives a mailbox read: the most selective filter the query has, in this
/// order. Every other filter is still applied in SQL, as a term checked on the rows the index
/// range yields, so a read costs what its driving range holds, not what the mailbox holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Driver {
    /// `message_ids`: each id is looked up by primary key.
    Ids,
    /// `reply_to`, through `messages_reply_to`: answers to one message are few.
    ReplyTo,
    /// `correlation_id`, through `messages_correlation`: one exchange.
    Correlation,
    /// `channel`, through `messages_channel`: one stream the sender chose to separate.
    Channel,
    /// Unread only, through `messages_unread`: at most `limits::MAILBOX_UNACKED_MAX` entries
    /// per mailbox, which makes it narrower than a sender (whose history is unbounded).
    Unread,
    /// `sender` (with acknowledged messages included), through `messages_sender`.
    Sender,
    /// Nothing narrower than the whole mailbox (acknowledged included, at most a `kind`
    /// filter): the recipient's range of `messages_unread`, sorted by `seq`. Everything in it
    /// may match, so its cost is still what matches.
    Mailbox,
}

impl Driver {
    fn index(self) -> Option<&'static str> {
        match self {
            Driver::Ids => None,
            Driver::ReplyTo => Some("messages_reply_to"),
            Driver::Correlation => Some("messages_correlation"),
            Driver::Channel => Some("messages_channel"),
            Driver::Unread | Driver::Mailbox => Some("messages_unread"),
            Driver::Sender => Some("messages_sender"),
        }
    }
}

/// How one mailbox read runs: its driving index, its `WHERE` terms (all filters, in SQL) and
/// their parameters.
///
/// The driving index is named with `INDEXED BY`: without statistics SQLite rates every
/// two-column equality alike and could drive a channel read through `messages_unread`, which
/// scans the whole unread mailbox. `INDEXED BY` is SQLite's syntax (the one SQLite-specific
/// clause outside setup); a port to another database drops it and lets that planner choose.
struct MailboxPlan {
    driver: Driver,
    /// `message_ids`, deduplicated, in id order (the `Ids` driver only).
    ids: Vec<MessageId>,
    /// Every term but the id lookup; the `n`th parameter is `?n`.
    terms: Vec<String>,
    params: Vec<Value>,
    limit: usize,
}

impl MailboxPlan {
    fn new(recipient: Pid, query: &MailboxQuery) -> MailboxPlan {
        let filter = &query.filter;
        let driver = if filter.message_ids.is_some() {
            Driver::Ids
        } else if filter.reply_to.is_some() {
            Driver::ReplyTo
        } else if filter.correlation_id.is_some() {
            Driver::Correlation
        } else if filter.channel.is_some() {
            Driver::Channel
        } else if !query.include_acked {
            Driver::Unread
        } else if filter.sender.is_some() {
            Driver::Sender
        } else {
            Driver::Mailbox
        };
        let mut plan = MailboxPlan {
            driver,
            ids: filter.message_ids.iter().flatten().copied().collect::<BTreeSet<_>>().into_iter().collect(),
            terms: Vec::new(),
            params: Vec::new(),
            limit: query.limit,
        };
        plan.term("recipient = ?", recipient.to_string());
        if !query.include_acked {
            plan.terms.push("acked = 0".to_string());
        }
        if let Some(reply_to) = filter.reply_to {
            plan.term("reply_to = ?", reply_to.to_string());
        }
        if let Some(correlation_id) = &filter.correlation_id {
            plan.term("correlation_id = ?", correlation_id.clone());
        }
        if let Some(channel) = &filter.channel {
            plan.term("channel = ?", channel.clone());
        }
        if let Some(sender) = filter.sender {
            let (kind, pid) = codec::sender_columns(sender);
            plan.term("sender_kind = ?", kind.to_string());
            match pid {
                Some(pid) => plan.term("sender_pid = ?", pid),
                None => plan.terms.push("sender_pid IS NULL".to_string()),
            }
        }
        if let Some(kind) = filter.kind {
            plan.term("kind = ?", kind.as_str().to_string());
        }
        plan
    }

    /// Adds a term with one parameter; `?` becomes the parameter's number.
    fn term(&mut self, sql: &str, value: String) {
        self.params.push(Value::Text(value));
        self.terms.push(sql.replace('?', &format!("?{}", self.params.len())));
    }

    /// The number of the one parameter after the terms' (the id, or the limit).
    fn last_param(&self) -> usize {
        self.params.len() + 1
    }

    /// Whether the query cannot match anything (`limit` aside): an empty `message_ids` list.
    fn matches_nothing(&self) -> bool {
        self.driver == Driver::Ids && self.ids.is_empty()
    }

    /// `FROM messages` with the driving index, and the `WHERE` clause.
    fn clauses(&self) -> String {
        let index = self.driver.index().map(|i| format!(" INDEXED BY {i}")).unwrap_or_default();
        let id = if self.driver == Driver::Ids {
            format!("message_id = ?{} AND ", self.last_param())
        } else {
            String::new()
        };
        format!("FROM messages{index} WHERE {id}{}", self.terms.join(" AND "))
    }

    /// The terms' parameters, then `last` (the id or the limit), if any.
    fn params_with(&self, last: Option<Value>) -> Vec<Value> {
        self.params.iter().cloned().chain(last).collect()
    }

    /// The statements a read runs, with their parameters (for `EXPLAIN QUERY PLAN`).
    fn statements(&self) -> Vec<(String, Vec<Value>)> {
        if self.driver == Driver::Ids {
            let id = self.ids.first().map_or(Value::Null, |id| Value::Text(id.to_string()));
            return vec![(self.lookup_sql(), self.params_with(Some(id)))];
        }
        vec![(self.page_sql(), self.page_params()), (self.count_sql(), self.params_with(None))]
    }

    fn lookup_sql(&self) -> String {
        format!("SELECT {MESSAGE_COLUMNS} {}", self.clauses())
    }

    fn page_sql(&self) -> String {
        format!("SELECT {MESSAGE_COLUMNS} {} ORDER BY seq LIMIT ?{}", self.clauses(), self.last_param())
    }

    fn page_params(&self) -> Vec<Value> {
        // Bounded by i64::MAX, which is "all" for any real mailbox.
        self.params_with(Some(Value::Integer(i64::try_from(self.limit).unwrap_or(i64::MAX))))
    }

    fn count_sql(&self) -> String {
        format!("SELECT COUNT(*) {}", self.clauses())
    }

    /// Runs the read: the page and how many matched.
    fn run(&self, conn: &Connection) -> rusqlite::Result<(Vec<RawMessage>, u64)> {
        if self.driver == Driver::Ids {
            return self.run_ids(conn);
        }
        let mut page = Vec::new();
        if self.limit > 0 {
            let mut stmt = conn.prepare_cached(&self.page_sql())?;
            for raw in stmt.query_map(params_from_iter(self.page_params()), RawMessage::read)? {
                page.push(raw?);
            }
            // A short page is everything that matched: no count needed.
            if page.len() < self.limit {
                let matched = page.len() as u64;
                return Ok((page, matched));
            }
        }
        let count: i64 = conn
            .prepare_cached(&self.count_sql())?
            .query_row(params_from_iter(self.params_with(None)), |r| r.get(0))?;
        Ok((page, u64::try_from(count).unwrap_or(0)))
    }

    /// Looks up each id by primary key with every other filter as terms; sorts by `seq`.
    fn run_ids(&self, conn: &Connection) -> rusqlite::Result<(Vec<RawMessage>, u64)> {
        let mut stmt = conn.prepare_cached(&self.lookup_sql())?;
        let mut found = Vec::new();
        for id in &self.ids {
            let params = params_from_iter(self.params_with(Some(Value::Text(id.to_string()))));
            let row =
                stmt.query_row(params, |r| Ok((r.get::<_, i64>(2)?, RawMessage::read(r)?))).optional()?;
            found.extend(row);
        }
        found.sort_by_key(|(seq, _)| *seq);
        let matched = found.len() as u64;
        Ok((found.into_iter().take(self.limit).map(|(_, raw)| raw).collect(), matched))
    }
}

/// Every row of a query without parameters.
fn select_all<T>(
    conn: &Connection,
    sql: &str,
    read: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Vec<T>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map([], read)?;
    rows.collect()
}

/// Every row of object memory, read in one snapshot, before decoding.
struct ObjectRows {
    memory: Vec<RawMemory>,
    objects: Vec<RawObjectMeta>,
    names: Vec<(String, String, String)>,
    roots: Vec<(String, String)>,
    handles: Vec<RawHandle>,
}

impl ObjectRows {
    /// Reads every table (the caller holds the read transaction).
    fn read(conn: &Connection) -> rusqlite::Result<ObjectRows> {
        Ok(ObjectRows {
            memory: select_all(
                conn,
                &format!("SELECT {MEMORY_COLUMNS} FROM object_memory"),
                RawMemory::read,
            )?,
            objects: select_all(
                conn,
                &format!("SELECT {OBJECT_META_COLUMNS} FROM object_meta"),
                RawObjectMeta::read,
            )?,
            names: select_all(conn, "SELECT pid, name, oid FROM object_names", |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?,
            roots: select_all(conn, "SELECT pid, oid FROM object_roots", |r| Ok((r.get(0)?, r.get(1)?)))?,
            handles: select_all(
                conn,
                &format!("SELECT {HANDLE_COLUMNS} FROM object_handles"),
                RawHandle::read,
            )?,
        })
    }

    /// Decodes the rows and replays them as the changes that would have written them, so the
    /// space is rebuilt by [`ObjectSpace::apply`] itself, indexes included:
    ///
    /// 1. `PutProcess` for each memory row with a goal (it resets the rest of that memory);
    /// 2. `PutObject` for each object, then `PutName` and `PutRoot`;
    /// 3. `SetContext` and `PutSkills` for every memory row, and `MarkCollected` for each
    ///    collected one. `SetContext` also restores a memory row without a goal (made by a
    ///    name, root, context, skills or collection change alone) as the default memory that
    ///    such a change creates;
    /// 4. `PutHandle` for each handle.
    ///
    /// Every change of one kind touches its own key, so the order within a kind does not matter.
    fn into_space(self) -> Result<ObjectSpace, StoreError> {
        let memory = self.memory.into_iter().map(RawMemory::decode).collect::<Result<Vec<_>, _>>()?;
        let mut changes: Vec<ObjectChange> = memory
            .iter()
            .filter_map(|m| {
                let goal = m.goal?;
                Some(ObjectChange::PutProcess { pid: m.pid, goal, clearance: m.clearance.clone() })
            })
            .collect();
        for raw in self.objects {
            changes.push(ObjectChange::PutObject(raw.decode()?));
        }
        for row in self.names {
            let (pid, name, oid) = codec::name_row(row)?;
            changes.push(ObjectChange::PutName { pid, name, oid });
        }
        for row in self.roots {
            let (pid, oid) = codec::root_row(row)?;
            changes.push(ObjectChange::PutRoot { pid, oid });
        }
        changes.extend(memory_changes(memory));
        for raw in self.handles {
            changes.push(ObjectChange::PutHandle(raw.decode()?));
        }
        let mut space = ObjectSpace::new();
        space.apply(changes);
        Ok(space)
    }
}

/// The context, skills and collection of every memory row, as changes, in that order.
fn memory_changes(memory: Vec<StoredMemory>) -> Vec<ObjectChange> {
    let mut contexts = Vec::with_capacity(memory.len());
    let mut skills = Vec::with_capacity(memory.len());
    let mut marks = Vec::new();
    for m in memory {
        contexts.push(ObjectChange::SetContext { pid: m.pid, labels: m.context });
        skills.push(ObjectChange::PutSkills { pid: m.pid, skills: m.skills });
        if let Some(how) = m.collection {
            marks.push(ObjectChange::MarkCollected { pid: m.pid, how });
        }
    }
    contexts.into_iter().chain(skills).chain(marks).collect()
}

/// The `detail` column of an `EXPLAIN QUERY PLAN` row.
fn plan_detail(r: &rusqlite::Row<'_>) -> rusqlite::Result<String> {
    r.get(3)
}

/// The SQL of a process query and its parent parameter, if any. Children of one parent are
/// read through `processes_parent (parent, pid)`, or the partial index `processes_live_parent`
/// when terminal rows are excluded, so such a query costs what it returns.
fn processes_sql(query: ProcessQuery, columns: &str) -> (String, Option<String>) {
    let mut terms: Vec<&str> = Vec::new();
    let mut parent = None;
    if let Some(p) = query.parent {
        terms.push("parent = ?1");
        parent = Some(p.to_string());
    } else if query.roots_only {
        terms.push("parent IS NULL");
    }
    if !query.include_terminal {
        terms.push(LIVE_STATUS);
    }
    let mut sql = format!("SELECT {columns} FROM processes");
    if !terms.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&terms.join(" AND "));
    }
    sql.push_str(" ORDER BY pid");
    if let Some(limit) = query.limit {
        // Bounded by i64::MAX, which is "all" for any real table.
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        sql.push_str(&format!(" LIMIT {limit}"));
    }
    (sql, parent)
}
