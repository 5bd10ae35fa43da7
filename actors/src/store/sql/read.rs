//! The store's queries, on any [`Db`]: process rows, grants, object memory, payloads,
//! checkpoints, keyed answers and mailbox reads. Each takes the columns and tables a current
//! schema has; a backend reading an older file checks first what it lacks (see the SQLite
//! read pool).

use super::codec::{
    self, GRANT_COLUMNS, HANDLE_COLUMNS, MEMORY_COLUMNS, MESSAGE_COLUMNS, OBJECT_META_COLUMNS, RawGrant,
    RawHandle, RawMemory, RawMessage, RawObjectMeta, RawProcess, StoredMemory,
};
use super::{Cell, Db, DbError, Param, Row, in_snapshot, select, select_one};
use crate::kernel::capability::Grant;
use crate::kernel::ids::{Oid, Pid};
use crate::kernel::mailbox::{MailboxPage, MailboxQuery, Message, MessageId};
use crate::kernel::objects::{ObjectChange, ObjectSpace};
use crate::kernel::process::ProcessRow;
use crate::store::{CallKey, ChildrenAtStart, Envelope, LiveReads, ProcessQuery, StoreError};
use std::collections::BTreeSet;

/// The predicates of the partial indexes, as literals so that [`RESIDENT_INDEXES`] and the
/// queries are built from one spelling: a planner uses a partial index only for a query whose
/// term matches the index's predicate.
macro_rules! live_status {
    () => {
        "status NOT IN ('exited', 'failed', 'killed')"
    };
}
macro_rules! uncollected {
    () => {
        "collection IS NULL"
    };
}
macro_rules! unreleased {
    () => {
        "released = 0"
    };
}

/// The `WHERE` term that selects non-terminal rows (the partial index `processes_live_parent`,
/// which also serves the live rows of the whole tree).
pub(in crate::store) const LIVE_STATUS: &str = live_status!();

/// The indexes that let a reopen and every read-only view read what is live without scanning
/// the history: memory not yet collected, unreleased objects, and objects by owner (the
/// resident object memory and the memory of one process read on demand). SQLite's schema 6 and
/// PostgreSQL's schema 3. The live process rows need none of their own: `processes_live_parent`
/// holds every one, and with a partial index on `processes (pid)` as well, turns measured about
/// 40 % slower (`peers turns 200 11`).
pub(in crate::store) const RESIDENT_INDEXES: &str = concat!(
    "CREATE INDEX IF NOT EXISTS object_memory_uncollected ON object_memory (pid) WHERE ",
    uncollected!(),
    ";\nCREATE INDEX IF NOT EXISTS object_meta_unreleased ON object_meta (oid) WHERE ",
    unreleased!(),
    ";\nCREATE INDEX IF NOT EXISTS object_meta_owner ON object_meta (owner_ref);\n",
);

/// One process row, read with `columns` (the `processes` columns this schema has).
pub(in crate::store) fn process(
    db: &mut dyn Db,
    columns: &str,
    pid: Pid,
) -> Result<Option<ProcessRow>, StoreError> {
    let sql = format!("SELECT {columns} FROM processes WHERE pid = ?1");
    let raw =
        select_one(db, &sql, &[(&pid.to_string()).into()], RawProcess::read).map_err(DbError::into_read)?;
    raw.map(RawProcess::decode).transpose()
}

/// Process rows matching the query, in pid order.
pub(in crate::store) fn processes(
    db: &mut dyn Db,
    columns: &str,
    query: ProcessQuery,
) -> Result<Vec<ProcessRow>, StoreError> {
    let (sql, keys) = processes_sql(db, query, columns);
    let keys: Vec<Param<'_>> = keys.iter().map(Param::from).collect();
    let raws = select(db, &sql, &keys, RawProcess::read).map_err(DbError::into_read)?;
    raws.into_iter().map(RawProcess::decode).collect()
}

/// Every grant held by one process, in grant id order.
pub(in crate::store) fn grants_of(db: &mut dyn Db, holder: Pid) -> Result<Vec<Grant>, StoreError> {
    let sql = format!("SELECT {GRANT_COLUMNS} FROM grants WHERE holder = ?1 ORDER BY id");
    let raws =
        select(db, &sql, &[(&holder.to_string()).into()], RawGrant::read).map_err(DbError::into_read)?;
    raws.into_iter().map(RawGrant::decode).collect()
}

/// What a starting runtime reads about its live processes, for all of `pids` in one snapshot
/// and a few statements per [`IN_BATCH`] of them (see `Store::live_reads`): the live children
/// of each through `processes_live_parent`, the parent and account of each ended child through
/// `processes_parent` (counted as they are read, so a parent with a long history costs its
/// live children in memory), the grants of each through `grants_holder`, and the recipients
/// among them with an unread message through `messages_unread`.
pub(in crate::store) fn live_reads(
    db: &mut dyn Db,
    columns: &str,
    pids: &[Pid],
) -> Result<LiveReads, StoreError> {
    let keys: Vec<String> = pids.iter().map(Pid::to_string).collect();
    let mut reads = LiveReads::default();
    for pid in pids {
        reads.children.insert(*pid, ChildrenAtStart::default());
        reads.grants.insert(*pid, Vec::new());
    }
    let mut ended_rows: Result<(), StoreError> = Ok(());
    let (live, grants, unread) = in_snapshot(db, |db| {
        let live = select_in(
            db,
            &format!("SELECT {columns} FROM processes WHERE {LIVE_STATUS} AND parent"),
            &keys,
            " ORDER BY pid",
            RawProcess::read,
        )?;
        each_in(
            db,
            &format!("SELECT parent, account FROM processes WHERE NOT ({LIVE_STATUS}) AND parent"),
            &keys,
            "",
            |r| {
                let (parent, account) = (r.text(0)?, r.text(1)?);
                if ended_rows.is_ok() {
                    ended_rows = codec::pid(&parent).and_then(|parent| {
                        let account = codec::account(&account)?;
                        if let Some(children) = reads.children.get_mut(&parent) {
                            children.add_ended(&account);
                        }
                        Ok(())
                    });
                }
                Ok(())
            },
        )?;
        let grants = select_in(
            db,
            &format!("SELECT {GRANT_COLUMNS} FROM grants WHERE holder"),
            &keys,
            " ORDER BY id",
            RawGrant::read,
        )?;
        let unread = select_in(
            db,
            "SELECT DISTINCT recipient FROM messages WHERE acked = 0 AND recipient",
            &keys,
            "",
            |r| r.text(0),
        )?;
        Ok((live, grants, unread))
    })
    .map_err(DbError::into_read)?;
    ended_rows?;
    for raw in live {
        let row = raw.decode()?;
        let parent = row.parent.ok_or_else(|| {
            StoreError::Corrupt(format!("{} was read as a child but has no parent", row.pid))
        })?;
        reads.children.entry(parent).or_default().live.push(row);
    }
    for raw in grants {
        let grant = raw.decode()?;
        reads.grants.entry(grant.holder).or_default().push(grant);
    }
    for text in unread {
        reads.unread.insert(codec::pid(&text)?);
    }
    Ok(reads)
}

/// The resident part of object memory, read in one read transaction (one snapshot), replayed
/// into a space (see [`ObjectRows::into_space`]), then checked: every memory not yet collected
/// (with its names, roots and the objects it owns, released ones included), every unreleased
/// object, every handle, and every object those refer to. A collected memory and the released
/// objects only it owned are history: nothing live refers to them (a collected memory holds no
/// handle, and what it owned is released), so they are left in the store and read by
/// [`object_memory_of`] when something asks for them. A row that does not decode, or a space
/// that breaks an invariant, is [`StoreError::Corrupt`].
pub(in crate::store) fn object_space(db: &mut dyn Db) -> Result<ObjectSpace, StoreError> {
    let rows = in_snapshot(db, ObjectRows::read_resident).map_err(DbError::into_read)?;
    checked(rows.into_space()?)
}

/// The memory of `pids` (their memory rows, names, roots, handles and the objects they own)
/// and the objects `oids`, with every object those refer to, as a space of its own, checked:
/// what [`object_space`] leaves in the store, read when it is asked for.
pub(in crate::store) fn object_memory_of(
    db: &mut dyn Db,
    pids: &[Pid],
    oids: &[Oid],
) -> Result<ObjectSpace, StoreError> {
    let rows = in_snapshot(db, |db| ObjectRows::read_of(db, pids, oids)).map_err(DbError::into_read)?;
    checked(rows.into_space()?)
}

fn checked(space: ObjectSpace) -> Result<ObjectSpace, StoreError> {
    space.check().map_err(|v| StoreError::Corrupt(format!("object memory read back: {v}")))?;
    Ok(space)
}

/// One object's durable payload.
pub(in crate::store) fn payload(db: &mut dyn Db, oid: Oid) -> Result<Option<Envelope>, StoreError> {
    let bytes = select_one(
        db,
        "SELECT envelope FROM object_payloads WHERE oid = ?1",
        &[(&oid.to_string()).into()],
        |r| r.blob(0),
    )
    .map_err(DbError::into_read)?;
    bytes.map(|b| codec::envelope(&b, &format!("object {oid}"))).transpose()
}

/// Every object with a durable payload.
pub(in crate::store) fn payload_oids(db: &mut dyn Db) -> Result<BTreeSet<Oid>, StoreError> {
    let texts =
        select_all(db, "SELECT oid FROM object_payloads", |r| r.text(0)).map_err(DbError::into_read)?;
    texts.iter().map(|t| codec::oid(t)).collect()
}

/// A process's checkpoint.
pub(in crate::store) fn checkpoint(db: &mut dyn Db, pid: Pid) -> Result<Option<Envelope>, StoreError> {
    let bytes = select_one(
        db,
        "SELECT envelope FROM checkpoints WHERE pid = ?1",
        &[(&pid.to_string()).into()],
        |r| r.blob(0),
    )
    .map_err(DbError::into_read)?;
    bytes.map(|b| codec::envelope(&b, &format!("the checkpoint of {pid}"))).transpose()
}

/// The answer recorded for a keyed call.
pub(in crate::store) fn keyed(
    db: &mut dyn Db,
    key: &CallKey,
) -> Result<Option<serde_json::Value>, StoreError> {
    let text = select_one(
        db,
        "SELECT answer FROM call_keys WHERE caller = ?1 AND kind = ?2 AND call_key = ?3",
        &[(&key.caller).into(), key.kind.as_str().into(), (&key.key).into()],
        |r| r.text(0),
    )
    .map_err(DbError::into_read)?;
    text.map(|t| {
        serde_json::from_str(&t).map_err(|e| {
            StoreError::Corrupt(format!("the answer of key {:?} of {}: {e}", key.key, key.caller))
        })
    })
    .transpose()
}

/// A page of one mailbox and how many messages matched in all; see [`MailboxPlan`] for how
/// the query is chosen. Both statements run in one read snapshot, so the page and the count
/// agree.
pub(in crate::store) fn mailbox(
    db: &mut dyn Db,
    recipient: Pid,
    query: &MailboxQuery,
) -> Result<MailboxPage, StoreError> {
    let plan = MailboxPlan::new(recipient, query);
    if plan.matches_nothing() {
        return Ok(MailboxPage::default());
    }
    let (raws, matched) = in_snapshot(db, |db| plan.run(db)).map_err(DbError::into_read)?;
    let messages = raws.into_iter().map(RawMessage::decode).collect::<Result<Vec<Message>, _>>()?;
    // The pair assertion of a read: what SQL selected is what `MessageFilter::matches` (the
    // reference semantics) accepts, in `seq` order.
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

/// One message, from any mailbox.
pub(in crate::store) fn message(db: &mut dyn Db, id: MessageId) -> Result<Option<Message>, StoreError> {
    let sql = format!("SELECT {MESSAGE_COLUMNS} FROM messages WHERE message_id = ?1");
    let raw =
        select_one(db, &sql, &[(&id.to_string()).into()], RawMessage::read).map_err(DbError::into_read)?;
    raw.map(RawMessage::decode).transpose()
}

/// How many unacknowledged messages a mailbox holds: a count over its range of the covering
/// index `messages_unread`.
pub(in crate::store) fn unread_count(db: &mut dyn Db, recipient: Pid) -> Result<u64, StoreError> {
    let count = select_one(db, UNREAD_COUNT, &[(&recipient.to_string()).into()], |r| r.int(0))
        .map_err(DbError::into_read)?
        .unwrap_or(0);
    u64::try_from(count).map_err(|_| StoreError::Corrupt(format!("unread count {count} is negative")))
}

/// The highest `seq` stored, 0 for none: the last entry of `messages_seq`.
pub(in crate::store) fn message_seq_max(db: &mut dyn Db) -> Result<u64, StoreError> {
    let max =
        select_one(db, SEQ_MAX, &[], |r| r.opt_int(0)).map_err(DbError::into_read)?.flatten().unwrap_or(0);
    u64::try_from(max).map_err(|_| StoreError::Corrupt(format!("message seq {max} is negative")))
}

/// Unread messages of one mailbox; `messages_unread (recipient, acked, seq)` covers it.
pub(in crate::store) const UNREAD_COUNT: &str =
    "SELECT COUNT(*) FROM messages WHERE recipient = ?1 AND acked = 0";

/// The highest `seq`; an index answers `MAX` from the last entry of `messages_seq`.
pub(in crate::store) const SEQ_MAX: &str = "SELECT MAX(seq) FROM messages";

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
/// The driving index is named through [`Db::index_hint`]: without statistics SQLite rates
/// every two-column equality alike and could drive a channel read through `messages_unread`,
/// which scans the whole unread mailbox, so SQLite gets `INDEXED BY`; PostgreSQL keeps
/// statistics and chooses unaided.
pub(in crate::store) struct MailboxPlan {
    driver: Driver,
    /// `message_ids`, deduplicated, in id order (the `Ids` driver only).
    ids: Vec<MessageId>,
    /// Every term but the id lookup; the `n`th parameter is `?n`.
    terms: Vec<String>,
    params: Vec<Cell>,
    limit: usize,
}

impl MailboxPlan {
    pub(in crate::store) fn new(recipient: Pid, query: &MailboxQuery) -> MailboxPlan {
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
        self.params.push(Cell::Text(value));
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
    fn clauses(&self, db: &dyn Db) -> String {
        let index = self.driver.index().map(|i| db.index_hint(i)).unwrap_or_default();
        let id = if self.driver == Driver::Ids {
            format!("message_id = ?{} AND ", self.last_param())
        } else {
            String::new()
        };
        format!("FROM messages{index} WHERE {id}{}", self.terms.join(" AND "))
    }

    /// The terms' parameters, then `last` (the id or the limit), if any.
    fn params_with(&self, last: Option<Cell>) -> Vec<Cell> {
        self.params.iter().cloned().chain(last).collect()
    }

    /// The statements a read runs, with their parameters (for `EXPLAIN QUERY PLAN`).
    pub(in crate::store) fn statements(&self, db: &dyn Db) -> Vec<(String, Vec<Cell>)> {
        if self.driver == Driver::Ids {
            let id = self.ids.first().map_or(Cell::Null, |id| Cell::Text(id.to_string()));
            return vec![(self.lookup_sql(db), self.params_with(Some(id)))];
        }
        vec![(self.page_sql(db), self.page_params()), (self.count_sql(db), self.params_with(None))]
    }

    fn lookup_sql(&self, db: &dyn Db) -> String {
        format!("SELECT {MESSAGE_COLUMNS} {}", self.clauses(db))
    }

    fn page_sql(&self, db: &dyn Db) -> String {
        format!("SELECT {MESSAGE_COLUMNS} {} ORDER BY seq LIMIT ?{}", self.clauses(db), self.last_param())
    }

    fn page_params(&self) -> Vec<Cell> {
        // Bounded by i64::MAX, which is "all" for any real mailbox.
        self.params_with(Some(Cell::Int(i64::try_from(self.limit).unwrap_or(i64::MAX))))
    }

    fn count_sql(&self, db: &dyn Db) -> String {
        format!("SELECT COUNT(*) {}", self.clauses(db))
    }

    /// Runs the read: the page and how many matched.
    fn run(&self, db: &mut dyn Db) -> Result<(Vec<RawMessage>, u64), DbError> {
        if self.driver == Driver::Ids {
            return self.run_ids(db);
        }
        let mut page = Vec::new();
        if self.limit > 0 {
            let sql = self.page_sql(db);
            page = select(db, &sql, &params(&self.page_params()), RawMessage::read)?;
            // A short page is everything that matched: no count needed.
            if page.len() < self.limit {
                let matched = page.len() as u64;
                return Ok((page, matched));
            }
        }
        let sql = self.count_sql(db);
        let count = select_one(db, &sql, &params(&self.params_with(None)), |r| r.int(0))?;
        Ok((page, count.and_then(|c| u64::try_from(c).ok()).unwrap_or(0)))
    }

    /// Looks up each id by primary key with every other filter as terms; sorts by `seq`.
    fn run_ids(&self, db: &mut dyn Db) -> Result<(Vec<RawMessage>, u64), DbError> {
        let sql = self.lookup_sql(db);
        let mut found = Vec::new();
        for id in &self.ids {
            let cells = self.params_with(Some(Cell::Text(id.to_string())));
            let row = select_one(db, &sql, &params(&cells), |r| Ok((r.int(2)?, RawMessage::read(r)?)))?;
            found.extend(row);
        }
        found.sort_by_key(|(seq, _)| *seq);
        let matched = found.len() as u64;
        Ok((found.into_iter().take(self.limit).map(|(_, raw)| raw).collect(), matched))
    }
}

/// Owned cells as statement parameters.
pub(in crate::store) fn params(cells: &[Cell]) -> Vec<Param<'_>> {
    cells.iter().map(Cell::as_param).collect()
}

/// Every row of a query without parameters.
fn select_all<T>(
    db: &mut dyn Db,
    sql: &str,
    read: impl FnMut(&dyn Row) -> Result<T, DbError>,
) -> Result<Vec<T>, DbError> {
    select(db, sql, &[], read)
}

/// Every row of `head IN (keys…) tail`, the keys bound in batches of [`IN_BATCH`] (one
/// statement per batch; none without keys).
fn select_in<T>(
    db: &mut dyn Db,
    head: &str,
    keys: &[String],
    tail: &str,
    mut read: impl FnMut(&dyn Row) -> Result<T, DbError>,
) -> Result<Vec<T>, DbError> {
    let mut out = Vec::new();
    each_in(db, head, keys, tail, |row| {
        out.push(read(row)?);
        Ok(())
    })?;
    Ok(out)
}

/// Calls `each` on every row of `head IN (keys…) tail`, as [`select_in`] reads them, keeping
/// none.
fn each_in(
    db: &mut dyn Db,
    head: &str,
    keys: &[String],
    tail: &str,
    mut each: impl FnMut(&dyn Row) -> Result<(), DbError>,
) -> Result<(), DbError> {
    for batch in keys.chunks(IN_BATCH) {
        let marks: Vec<String> = (1..=batch.len()).map(|i| format!("?{i}")).collect();
        let sql = format!("{head} IN ({}){tail}", marks.join(", "));
        let params: Vec<Param<'_>> = batch.iter().map(Param::from).collect();
        db.query(&sql, &params, &mut each)?;
    }
    Ok(())
}

/// Keys bound per statement by [`select_in`]: under SQLite's default limit of 32,766
/// parameters and PostgreSQL's of 65,535, and few statements for thousands of keys.
const IN_BATCH: usize = 500;

/// Rows of object memory, read in one snapshot, before decoding.
struct ObjectRows {
    memory: Vec<RawMemory>,
    objects: Vec<RawObjectMeta>,
    names: Vec<(String, String, String)>,
    roots: Vec<(String, String)>,
    handles: Vec<RawHandle>,
}

impl ObjectRows {
    /// Reads the resident rows (the caller holds the read transaction); see [`object_space`].
    fn read_resident(db: &mut dyn Db) -> Result<ObjectRows, DbError> {
        let memory = select_all(
            db,
            &format!("SELECT {MEMORY_COLUMNS} FROM object_memory WHERE {}", uncollected!()),
            RawMemory::read,
        )?;
        let mut rows = ObjectRows {
            memory: Vec::new(),
            objects: select_all(
                db,
                &format!("SELECT {OBJECT_META_COLUMNS} FROM object_meta WHERE {}", unreleased!()),
                RawObjectMeta::read,
            )?,
            names: Vec::new(),
            roots: Vec::new(),
            handles: select_all(
                db,
                &format!("SELECT {HANDLE_COLUMNS} FROM object_handles"),
                RawHandle::read,
            )?,
        };
        // Unreleased objects are read above; what the memories own beyond them is released.
        rows.add_memory(db, memory, " AND released = 1")?;
        rows.add_referenced(db)?;
        Ok(rows)
    }

    /// Reads the rows of `pids` and `oids` (the caller holds the read transaction); see
    /// [`object_memory_of`].
    fn read_of(db: &mut dyn Db, pids: &[Pid], oids: &[Oid]) -> Result<ObjectRows, DbError> {
        let pids: Vec<String> = pids.iter().map(Pid::to_string).collect();
        let oids: Vec<String> = oids.iter().map(Oid::to_string).collect();
        let memory = select_in(
            db,
            &format!("SELECT {MEMORY_COLUMNS} FROM object_memory WHERE pid"),
            &pids,
            "",
            RawMemory::read,
        )?;
        let mut rows = ObjectRows {
            memory: Vec::new(),
            objects: select_in(
                db,
                &format!("SELECT {OBJECT_META_COLUMNS} FROM object_meta WHERE oid"),
                &oids,
                "",
                RawObjectMeta::read,
            )?,
            names: Vec::new(),
            roots: Vec::new(),
            handles: select_in(
                db,
                &format!("SELECT {HANDLE_COLUMNS} FROM object_handles WHERE holder"),
                &pids,
                "",
                RawHandle::read,
            )?,
        };
        rows.add_memory(db, memory, "")?;
        rows.add_referenced(db)?;
        Ok(rows)
    }

    /// Adds `memory` with the names and roots of its processes and the objects they own
    /// (those matching the extra `owned` term).
    fn add_memory(&mut self, db: &mut dyn Db, memory: Vec<RawMemory>, owned: &str) -> Result<(), DbError> {
        let pids: Vec<String> = memory.iter().map(|m| m.pid().to_string()).collect();
        self.names.extend(select_in(
            db,
            "SELECT pid, name, oid FROM object_names WHERE pid",
            &pids,
            "",
            |r| Ok((r.text(0)?, r.text(1)?, r.text(2)?)),
        )?);
        self.roots.extend(select_in(db, "SELECT pid, oid FROM object_roots WHERE pid", &pids, "", |r| {
            Ok((r.text(0)?, r.text(1)?))
        })?);
        self.objects.extend(select_in(
            db,
            &format!("SELECT {OBJECT_META_COLUMNS} FROM object_meta WHERE owner_ref"),
            &pids,
            owned,
            RawObjectMeta::read,
        )?);
        self.memory.extend(memory);
        Ok(())
    }

    /// Adds every object a goal, root, name or handle read so far refers to and the objects
    /// read do not hold (a released object a live memory still names, say).
    fn add_referenced(&mut self, db: &mut dyn Db) -> Result<(), DbError> {
        let read: BTreeSet<&str> = self.objects.iter().map(RawObjectMeta::oid).collect();
        let referenced = self.memory.iter().filter_map(RawMemory::goal);
        let referenced = referenced.chain(self.names.iter().map(|(_, _, oid)| oid.as_str()));
        let referenced = referenced.chain(self.roots.iter().map(|(_, oid)| oid.as_str()));
        let referenced = referenced.chain(self.handles.iter().map(RawHandle::oid));
        let missing: BTreeSet<&str> = referenced.filter(|oid| !read.contains(oid)).collect();
        if missing.is_empty() {
            return Ok(());
        }
        let missing: Vec<String> = missing.into_iter().map(str::to_string).collect();
        let sql = format!("SELECT {OBJECT_META_COLUMNS} FROM object_meta WHERE oid");
        let found = select_in(db, &sql, &missing, "", RawObjectMeta::read)?;
        self.objects.extend(found);
        Ok(())
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

/// The SQL of a process query and its parameters (the parent, then the pid to start after).
/// Children of one parent are read through `processes_parent (parent, pid)`, or the partial
/// index `processes_live_parent` when terminal rows are excluded, and the live rows of the
/// whole tree through `processes_live_parent` too (then sorted), so such a query costs what it
/// returns.
pub(in crate::store) fn processes_sql(
    db: &dyn Db,
    query: ProcessQuery,
    columns: &str,
) -> (String, Vec<String>) {
    let mut terms: Vec<String> = Vec::new();
    let mut keys = Vec::new();
    if let Some(p) = query.parent {
        keys.push(p.to_string());
        terms.push(format!("parent = ?{}", keys.len()));
    } else if query.roots_only {
        terms.push("parent IS NULL".to_string());
    }
    if let Some(after) = query.after {
        keys.push(after.to_string());
        terms.push(format!("pid > ?{}", keys.len()));
    }
    if !query.include_terminal {
        terms.push(LIVE_STATUS.to_string());
    }
    let mut sql = format!("SELECT {columns} FROM processes");
    if query.parent.is_none() && !query.roots_only && !query.include_terminal {
        // Unaided, SQLite walks the whole table in pid order rather than sort the live rows.
        sql.push_str(&db.index_hint("processes_live_parent"));
    }
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
    (sql, keys)
}
