//! Applies one change set to the writer's open transaction.
//!
//! Preconditions are checked against the database as it stands at that point of the group
//! transaction, so a revocation committed earlier in the same group (by this caller or
//! another) is seen. A refused change set is reported as [`ApplyError::Refused`] and the
//! writer rolls back to the change set's savepoint; any database error is [`ApplyError::Db`]
//! and fails the whole group.

use super::codec::{self, GrantColumns, HandleColumns, MessageColumns, ObjectMetaColumns, ProcessColumns};
use super::{Cell, Db, DbError, Param, select, select_one};
use crate::kernel::ids::{GrantId, Oid, Pid};
use crate::kernel::mailbox::Message;
use crate::kernel::objects::ObjectChange;
use crate::store::{Change, CommitReceipt, StoreError};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

/// Why a change set was not applied.
#[derive(Debug)]
pub(super) enum ApplyError {
    /// A precondition failed: only this change set is refused.
    Refused(StoreError),
    /// The database failed: the whole group fails and the store stops.
    Db(DbError),
}

impl From<DbError> for ApplyError {
    fn from(e: DbError) -> Self {
        ApplyError::Db(e)
    }
}

impl From<StoreError> for ApplyError {
    fn from(e: StoreError) -> Self {
        ApplyError::Refused(e)
    }
}

/// A process's `parent` and `depth` are set when its row is first written and never change,
/// so an update leaves them out: on SQLite, a column named in `SET` rewrites every index that
/// holds it even when the value is the same (`processes_parent`: a WAL frame per update).
const UPSERT_PROCESS: &str = "INSERT INTO processes (pid, parent, depth, image, cwd, goal, \
     status, wait_state, pause_reason, host_gate, outcome, result_oid, state_generation, epoch, \
     resume_claim, started, account, restart) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18) \
     ON CONFLICT (pid) DO UPDATE SET image = excluded.image, cwd = excluded.cwd, goal = excluded.goal, \
     status = excluded.status, wait_state = excluded.wait_state, \
     pause_reason = excluded.pause_reason, host_gate = excluded.host_gate, \
     outcome = excluded.outcome, result_oid = excluded.result_oid, \
     state_generation = excluded.state_generation, epoch = excluded.epoch, \
     resume_claim = excluded.resume_claim, started = excluded.started, \
     account = excluded.account, restart = excluded.restart";

/// A grant's `holder` and `derived_from` never change after it is made (revoking sets `live`),
/// and are left out of the update for the same reason (`grants_holder`, `grants_derived_from`).
const UPSERT_GRANT: &str = "INSERT INTO grants (id, holder, resource, rights, constraints, \
     delegable, live, derived_from) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
     ON CONFLICT (id) DO UPDATE SET resource = excluded.resource, \
     rights = excluded.rights, constraints = excluded.constraints, \
     delegable = excluded.delegable, live = excluded.live";

/// The root and everything derived from it, transitively. `UNION` (not `UNION ALL`) makes
/// the recursion stop even if stored `derived_from` links ever formed a cycle.
const REVOCATION_CLOSURE: &str = "WITH RECURSIVE closure (id) AS ( \
         SELECT CAST(?1 AS TEXT) \
         UNION \
         SELECT g.id FROM grants g JOIN closure c ON g.derived_from = c.id \
     ) \
     SELECT g.id, g.holder, g.live, g.derived_from FROM grants g JOIN closure c ON g.id = c.id";

const UPSERT_OBJECT_META: &str = "INSERT INTO object_meta (oid, owner_kind, owner_ref, kind, \
     labels, ephemeral, released) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
     ON CONFLICT (oid) DO UPDATE SET owner_kind = excluded.owner_kind, \
     owner_ref = excluded.owner_ref, kind = excluded.kind, labels = excluded.labels, \
     ephemeral = excluded.ephemeral, released = excluded.released";

const RELEASE_OBJECT: &str = "UPDATE object_meta SET released = 1 WHERE oid = ?1";

const UPSERT_PAYLOAD: &str = "INSERT INTO object_payloads (oid, envelope) VALUES (?1, ?2) \
     ON CONFLICT (oid) DO UPDATE SET envelope = excluded.envelope";

const DELETE_PAYLOAD: &str = "DELETE FROM object_payloads WHERE oid = ?1";

const UPSERT_HANDLE: &str = "INSERT INTO object_handles (holder, oid, rights, ephemeral) \
     VALUES (?1, ?2, ?3, ?4) \
     ON CONFLICT (holder, oid) DO UPDATE SET rights = excluded.rights, \
     ephemeral = excluded.ephemeral";

const DELETE_HANDLE: &str = "DELETE FROM object_handles WHERE holder = ?1 AND oid = ?2";

/// A process's memory begins afresh: goal and clearance set, context, skills and collection
/// back to their defaults (names and roots are deleted separately).
const PUT_MEMORY: &str = "INSERT INTO object_memory (pid, goal, clearance, context, skills, \
     collection) VALUES (?1, ?2, ?3, '[]', '[]', NULL) \
     ON CONFLICT (pid) DO UPDATE SET goal = excluded.goal, clearance = excluded.clearance, \
     context = excluded.context, skills = excluded.skills, collection = excluded.collection";

const DELETE_NAMES: &str = "DELETE FROM object_names WHERE pid = ?1";
const DELETE_NAME: &str = "DELETE FROM object_names WHERE pid = ?1 AND name = ?2";

const DELETE_ROOTS: &str = "DELETE FROM object_roots WHERE pid = ?1";

/// A collected memory keeps only its goal root.
const DELETE_ROOTS_BUT_GOAL: &str = "DELETE FROM object_roots WHERE pid = ?1 AND oid NOT IN \
     (SELECT goal FROM object_memory WHERE pid = ?1 AND goal IS NOT NULL)";

/// The default memory row (no goal, cleared for everything, empty context and skills, not
/// collected), for changes that reach a process with no memory yet.
const ENSURE_MEMORY: &str = "INSERT INTO object_memory (pid, goal, clearance, context, skills, \
     collection) VALUES (?1, NULL, NULL, '[]', '[]', NULL) ON CONFLICT (pid) DO NOTHING";

const UPSERT_NAME: &str = "INSERT INTO object_names (pid, name, oid) VALUES (?1, ?2, ?3) \
     ON CONFLICT (pid, name) DO UPDATE SET oid = excluded.oid";

const INSERT_ROOT: &str =
    "INSERT INTO object_roots (pid, oid) VALUES (?1, ?2) ON CONFLICT (pid, oid) DO NOTHING";

/// The default memory row with its context set, or an existing row's context replaced.
const SET_CONTEXT: &str = "INSERT INTO object_memory (pid, goal, clearance, context, skills, \
     collection) VALUES (?1, NULL, NULL, ?2, '[]', NULL) \
     ON CONFLICT (pid) DO UPDATE SET context = excluded.context";

/// The default memory row with its skills set, or an existing row's skills replaced.
const SET_SKILLS: &str = "INSERT INTO object_memory (pid, goal, clearance, context, skills, \
     collection) VALUES (?1, NULL, NULL, '[]', ?2, NULL) \
     ON CONFLICT (pid) DO UPDATE SET skills = excluded.skills";

/// The default memory row marked collected, or an existing row marked.
const SET_COLLECTION: &str = "INSERT INTO object_memory (pid, goal, clearance, context, skills, \
     collection) VALUES (?1, NULL, NULL, '[]', '[]', ?2) \
     ON CONFLICT (pid) DO UPDATE SET collection = excluded.collection";

/// A message is written once: a second put of the same id changes nothing (see
/// [`put_message`]), so an acknowledged message never becomes unread again.
const INSERT_MESSAGE: &str = "INSERT INTO messages (message_id, recipient, seq, sender_kind, \
     sender_pid, kind, channel, correlation_id, reply_to, body, payload, labels, acked) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) \
     ON CONFLICT (message_id) DO NOTHING";

/// The columns of a stored message that a redelivery must match: all but the id and `acked`,
/// in the order of [`MessageColumns::content`].
const STORED_CONTENT: &str = "SELECT recipient, seq, sender_kind, sender_pid, kind, channel, \
     correlation_id, reply_to, body, payload, labels FROM messages WHERE message_id = ?1";
const CONTENT_COLUMNS: usize = 11;

/// Acknowledges one message of one mailbox; a message of another mailbox is left alone.
const ACK_MESSAGE: &str =
    "UPDATE messages SET acked = 1 WHERE message_id = ?1 AND recipient = ?2 AND acked = 0";

const UPSERT_CHECKPOINT: &str = "INSERT INTO checkpoints (pid, envelope) VALUES (?1, ?2) \
     ON CONFLICT (pid) DO UPDATE SET envelope = excluded.envelope";

/// A keyed call's answer is written once: a key already stored keeps its first answer.
const INSERT_CALL_KEY: &str = "INSERT INTO call_keys (caller, kind, call_key, answer) VALUES (?1, ?2, ?3, ?4) \
     ON CONFLICT (caller, kind, call_key) DO NOTHING";

/// Applies every change of one change set, in order, and says what it revoked.
pub(super) fn apply_set(db: &mut dyn Db, changes: &[Change]) -> Result<CommitReceipt, ApplyError> {
    let mut receipt = CommitReceipt::default();
    let mut live = LiveGrants::read(db, changes)?;
    for change in changes {
        match change {
            Change::PutProcess(row) => put_process(db, &ProcessColumns::encode(row)?)?,
            Change::PutGrant(grant) => {
                if let Some(source) = grant.derived_from
                    && !live.is_live(db, source)?
                {
                    return Err(StoreError::SourceGrantRevoked { source_grant: source }.into());
                }
                put_grant(db, &GrantColumns::encode(grant)?)?;
                live.known.insert(grant.id, grant.live);
            }
            Change::RevokeGrant(root) => {
                let revoked = revoke(db, *root)?;
                live.known.extend(revoked.iter().map(|(id, _)| (*id, false)));
                receipt.revoked.extend(revoked);
            }
            Change::Objects(changes) => {
                for change in changes {
                    apply_object(db, change)?;
                }
            }
            Change::PutPayload { oid, envelope } => {
                db.execute_deferred(
                    UPSERT_PAYLOAD,
                    &[(&oid.to_string()).into(), (&envelope.encode()).into()],
                )?;
            }
            Change::PutCheckpoint { pid, envelope } => {
                db.execute_deferred(
                    UPSERT_CHECKPOINT,
                    &[(&pid.to_string()).into(), (&envelope.encode()).into()],
                )?;
            }
            Change::PutMessage(message) => put_message(db, message)?,
            Change::PutKeyed { key, answer } => {
                db.execute_deferred(
                    INSERT_CALL_KEY,
                    &[
                        (&key.caller).into(),
                        key.kind.as_str().into(),
                        (&key.key).into(),
                        (&answer.to_string()).into(),
                    ],
                )?;
            }
            Change::AckMessages { recipient, ids } => {
                let recipient = recipient.to_string();
                for id in ids {
                    db.execute_deferred(ACK_MESSAGE, &[(&id.to_string()).into(), (&recipient).into()])?;
                }
            }
        }
    }
    Ok(receipt)
}

fn put_process(db: &mut dyn Db, c: &ProcessColumns) -> Result<(), DbError> {
    db.execute_deferred(
        UPSERT_PROCESS,
        &[
            (&c.pid).into(),
            (&c.parent).into(),
            c.depth.into(),
            (&c.image).into(),
            (&c.cwd).into(),
            (&c.goal).into(),
            c.status.into(),
            (&c.wait_state).into(),
            (&c.pause_reason).into(),
            (&c.host_gate).into(),
            (&c.outcome).into(),
            (&c.result_oid).into(),
            c.state_generation.into(),
            c.epoch.into(),
            c.resume_claim.into(),
            c.started.into(),
            (&c.account).into(),
            (&c.restart).into(),
        ],
    )?;
    Ok(())
}

fn put_grant(db: &mut dyn Db, c: &GrantColumns) -> Result<(), DbError> {
    db.execute_deferred(
        UPSERT_GRANT,
        &[
            (&c.id).into(),
            (&c.holder).into(),
            (&c.resource).into(),
            c.rights.into(),
            (&c.constraints).into(),
            c.delegable.into(),
            c.live.into(),
            (&c.derived_from).into(),
        ],
    )?;
    Ok(())
}

/// Applies one change to object memory with the meaning `ObjectSpace::apply` gives it, so
/// that the tables, read back and replayed, are the same space. Never refused.
fn apply_object(db: &mut dyn Db, change: &ObjectChange) -> Result<(), ApplyError> {
    match change {
        ObjectChange::PutProcess { pid, goal, clearance } => {
            put_memory(db, *pid, *goal, clearance.as_ref())?;
        }
        ObjectChange::PutObject(meta) => put_object_meta(db, &ObjectMetaColumns::encode(meta)?)?,
        ObjectChange::ReleaseObject { oid } => {
            let oid = oid.to_string();
            db.execute_deferred(RELEASE_OBJECT, &[(&oid).into()])?;
            db.execute_deferred(DELETE_PAYLOAD, &[(&oid).into()])?;
        }
        ObjectChange::PutHandle(handle) => put_handle(db, &HandleColumns::encode(handle))?,
        ObjectChange::RevokeHandle { holder, oid } => {
            db.execute_deferred(DELETE_HANDLE, &[(&holder.to_string()).into(), (&oid.to_string()).into()])?;
        }
        ObjectChange::PutName { pid, name, oid } => {
            ensure_memory(db, *pid)?;
            db.execute_deferred(
                UPSERT_NAME,
                &[(&pid.to_string()).into(), name.into(), (&oid.to_string()).into()],
            )?;
        }
        ObjectChange::RemoveName { pid, name } => {
            db.execute_deferred(DELETE_NAME, &[(&pid.to_string()).into(), name.into()])?;
        }
        ObjectChange::PutRoot { pid, oid } => {
            ensure_memory(db, *pid)?;
            db.execute_deferred(INSERT_ROOT, &[(&pid.to_string()).into(), (&oid.to_string()).into()])?;
        }
        ObjectChange::SetContext { pid, labels } => {
            set_memory_column(db, SET_CONTEXT, *pid, &codec::labels_column(labels)?)?;
        }
        ObjectChange::PutSkills { pid, skills } => {
            set_memory_column(db, SET_SKILLS, *pid, &codec::skills_column(skills)?)?;
        }
        ObjectChange::MarkCollected { pid, how } => {
            set_memory_column(db, SET_COLLECTION, *pid, codec::collection_column(*how))?;
            let pid = pid.to_string();
            db.execute_deferred(DELETE_NAMES, &[(&pid).into()])?;
            db.execute_deferred(DELETE_ROOTS_BUT_GOAL, &[(&pid).into()])?;
        }
    }
    Ok(())
}

/// Replaces a process's whole memory: its names and roots go, and its row starts afresh.
fn put_memory(
    db: &mut dyn Db,
    pid: Pid,
    goal: Oid,
    clearance: Option<&BTreeSet<String>>,
) -> Result<(), ApplyError> {
    // Encoded first: a refusal must come before anything is written (see the writer's
    // one-change fast path).
    let clearance = codec::clearance_column(clearance)?;
    let pid = pid.to_string();
    db.execute_deferred(DELETE_NAMES, &[(&pid).into()])?;
    db.execute_deferred(DELETE_ROOTS, &[(&pid).into()])?;
    db.execute_deferred(PUT_MEMORY, &[(&pid).into(), (&goal.to_string()).into(), (&clearance).into()])?;
    Ok(())
}

/// Gives a process the default memory row unless it has one.
fn ensure_memory(db: &mut dyn Db, pid: Pid) -> Result<(), DbError> {
    db.execute_deferred(ENSURE_MEMORY, &[(&pid.to_string()).into()])?;
    Ok(())
}

/// Runs one of the upserts that set a single memory column (`?2`) of `pid`'s row.
fn set_memory_column(db: &mut dyn Db, sql: &str, pid: Pid, value: &str) -> Result<(), DbError> {
    db.execute_deferred(sql, &[(&pid.to_string()).into(), value.into()])?;
    Ok(())
}

fn put_object_meta(db: &mut dyn Db, c: &ObjectMetaColumns) -> Result<(), DbError> {
    db.execute_deferred(
        UPSERT_OBJECT_META,
        &[
            (&c.oid).into(),
            c.owner_kind.into(),
            (&c.owner_ref).into(),
            c.kind.into(),
            (&c.labels).into(),
            c.ephemeral.into(),
            c.released.into(),
        ],
    )?;
    Ok(())
}

fn put_handle(db: &mut dyn Db, c: &HandleColumns) -> Result<(), DbError> {
    db.execute_deferred(
        UPSERT_HANDLE,
        &[(&c.holder).into(), (&c.oid).into(), c.rights.into(), c.ephemeral.into()],
    )?;
    Ok(())
}

/// Inserts a message. A message id is written once: putting the same message again (equal in
/// every column but `acked`) changes nothing, so a redelivery is harmless and an acknowledged
/// message stays acknowledged; a different message under an id already stored refuses the
/// change set with [`StoreError::Corrupt`]. "The same" is judged on the stored column values
/// against the new message's encoding, which is exact (decoding payload floats need not be).
fn put_message(db: &mut dyn Db, message: &Message) -> Result<(), ApplyError> {
    let c = MessageColumns::encode(message)?;
    let inserted = db.execute(
        INSERT_MESSAGE,
        &[
            (&c.message_id).into(),
            (&c.recipient).into(),
            c.seq.into(),
            c.sender_kind.into(),
            (&c.sender_pid).into(),
            c.kind.into(),
            (&c.channel).into(),
            (&c.correlation_id).into(),
            (&c.reply_to).into(),
            (&c.body).into(),
            (&c.payload).into(),
            (&c.labels).into(),
            c.acked.into(),
        ],
    )?;
    if inserted == 1 {
        return Ok(());
    }
    // Normalized: a backend may keep free text as bytes.
    let stored = select_one(db, STORED_CONTENT, &[(&c.message_id).into()], |r| {
        (0..CONTENT_COLUMNS).map(|i| r.cell(i).map(Cell::normalized)).collect::<Result<Vec<_>, _>>()
    })?;
    if stored.as_deref() == Some(c.content().as_slice()) {
        Ok(())
    } else {
        Err(StoreError::Corrupt(format!(
            "message {} is already stored with different content; a message id is written once",
            c.message_id
        ))
        .into())
    }
}

/// Whether grants are live, as a change set's preconditions ask: every source its derived
/// grants name is read in one query when the set begins (a spawn derives several grants, and
/// on a database server each query is a round trip), and kept exact as the set goes on, since
/// a grant's liveness changes only by `PutGrant` and `RevokeGrant`.
struct LiveGrants {
    known: HashMap<GrantId, bool>,
}

/// The most sources read in one query; a change set naming more reads the rest one by one.
const LIVE_GRANTS_READ_MAX: usize = 64;

impl LiveGrants {
    fn read(db: &mut dyn Db, changes: &[Change]) -> Result<LiveGrants, DbError> {
        let sources: Vec<GrantId> = changes
            .iter()
            .filter_map(|c| match c {
                Change::PutGrant(grant) => grant.derived_from,
                _ => None,
            })
            .collect::<BTreeSet<GrantId>>()
            .into_iter()
            .take(LIVE_GRANTS_READ_MAX)
            .collect();
        if sources.is_empty() {
            return Ok(LiveGrants { known: HashMap::new() });
        }
        let texts: Vec<String> = sources.iter().map(GrantId::to_string).collect();
        let placeholders: Vec<String> = (1..=texts.len()).map(|n| format!("?{n}")).collect();
        let sql = format!("SELECT id FROM grants WHERE live = 1 AND id IN ({})", placeholders.join(", "));
        let params: Vec<Param<'_>> = texts.iter().map(Param::from).collect();
        let live: HashSet<String> = select(db, &sql, &params, |r| r.text(0))?.into_iter().collect();
        let known = sources.into_iter().zip(&texts).map(|(id, text)| (id, live.contains(text))).collect();
        Ok(LiveGrants { known })
    }

    /// Whether `id` exists and is live right now, inside the group transaction.
    fn is_live(&mut self, db: &mut dyn Db, id: GrantId) -> Result<bool, DbError> {
        if let Some(live) = self.known.get(&id) {
            return Ok(*live);
        }
        let live =
            select_one(db, "SELECT live FROM grants WHERE id = ?1", &[(&id.to_string()).into()], |r| {
                r.flag(0)
            })?
            .unwrap_or(false);
        self.known.insert(id, live);
        Ok(live)
    }
}

struct ClosureRow {
    id: GrantId,
    holder: Pid,
    live: bool,
    derived_from: Option<GrantId>,
}

/// Revokes `root` and its transitive derivations; returns each grant that went from live to
/// revoked, with its holder, in breadth-first order from the root with siblings in id order
/// (the order `kernel::capability::revocation_closure` and the in-memory store use).
fn revoke(db: &mut dyn Db, root: GrantId) -> Result<Vec<(GrantId, Pid)>, ApplyError> {
    let raw = select(db, REVOCATION_CLOSURE, &[(&root.to_string()).into()], |r| {
        Ok((r.text(0)?, r.text(1)?, r.flag(2)?, r.opt_text(3)?))
    })?;
    let mut rows = Vec::with_capacity(raw.len());
    for (id, holder, live, derived_from) in raw {
        rows.push(ClosureRow {
            id: codec::grant_id(&id)?,
            holder: codec::pid(&holder)?,
            live,
            derived_from: derived_from.as_deref().map(codec::grant_id).transpose()?,
        });
    }
    let mut revoked = Vec::new();
    for (id, holder) in breadth_first(root, &rows) {
        db.execute_deferred(
            "UPDATE grants SET live = ?1 WHERE id = ?2",
            &[Param::from(false), (&id.to_string()).into()],
        )?;
        revoked.push((id, holder));
    }
    Ok(revoked)
}

/// The live grants of a closure in breadth-first order from `root`, siblings in id order.
fn breadth_first(root: GrantId, rows: &[ClosureRow]) -> Vec<(GrantId, Pid)> {
    let by_id: BTreeMap<GrantId, &ClosureRow> = rows.iter().map(|r| (r.id, r)).collect();
    let mut children: BTreeMap<GrantId, Vec<GrantId>> = BTreeMap::new();
    for row in by_id.values() {
        if let Some(parent) = row.derived_from {
            children.entry(parent).or_default().push(row.id);
        }
    }
    let mut out = Vec::new();
    let mut seen = HashSet::from([root]);
    let mut queue = VecDeque::from([root]);
    while let Some(id) = queue.pop_front() {
        if let Some(row) = by_id.get(&id)
            && row.live
        {
            out.push((row.id, row.holder));
        }
        for child in children.get(&id).into_iter().flatten() {
            if seen.insert(*child) {
                queue.push_back(*child);
            }
        }
    }
    out
}
