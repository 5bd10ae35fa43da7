//! Conversions between kernel types and SQL column values.
//!
//! Ids are lowercase hyphenated UUID text (so text order is id order), unsigned integers are
//! checked into SQL's signed 64-bit INTEGER, nested typed fields are `serde_json` text and
//! payloads are `Envelope::encode()` bytes. Decoding is strict: anything that does not decode
//! back into the exact value that was written is [`StoreError::Corrupt`].

use super::{Cell, DbError, Param, Row};
use crate::kernel::budget::Account;
use crate::kernel::capability::{Constraints, Grant, Rights};
use crate::kernel::ids::{Epoch, GrantId, ImageId, Oid, Pid};
use crate::kernel::mailbox::{Message, MessageId, MessageKind};
use crate::kernel::objects::{Collection, Handle, ObjectKind, ObjectMeta, ObjectRights, Owner, Skill};
use crate::kernel::process::ProcessRow;
use crate::kernel::restart::RestartState;
use crate::kernel::status::{Outcome, PauseReason, Sender, Status, WaitState};
use crate::store::{Envelope, StoreError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::BTreeSet;
use std::fmt::Display;
use std::str::FromStr;

/// The `processes` columns, in the order [`ProcessColumns`] binds and [`RawProcess`] reads.
pub(in crate::store) const PROCESS_COLUMNS: &str = "pid, parent, depth, image, cwd, goal, status, \
     wait_state, pause_reason, host_gate, outcome, result_oid, state_generation, epoch, \
     resume_claim, started, account, restart";

/// [`PROCESS_COLUMNS`] for a file older than schema 5 (read by a view, which never
/// migrates): no `restart` column, read as NULL (the default restart state).
pub(in crate::store) const PROCESS_COLUMNS_V4: &str = "pid, parent, depth, image, cwd, goal, status, \
     wait_state, pause_reason, host_gate, outcome, result_oid, state_generation, epoch, \
     resume_claim, started, account, NULL AS restart";

/// The `grants` columns, in the order [`GrantColumns`] binds and [`RawGrant`] reads.
pub(in crate::store) const GRANT_COLUMNS: &str =
    "id, holder, resource, rights, constraints, delegable, live, derived_from";

/// The `object_meta` columns, in the order [`ObjectMetaColumns`] binds and [`RawObjectMeta`]
/// reads.
pub(in crate::store) const OBJECT_META_COLUMNS: &str =
    "oid, owner_kind, owner_ref, kind, labels, ephemeral, released";

/// The `object_handles` columns, in the order [`HandleColumns`] binds and [`RawHandle`] reads.
pub(in crate::store) const HANDLE_COLUMNS: &str = "holder, oid, rights, ephemeral";

/// The `object_memory` columns, in the order [`RawMemory`] reads.
pub(in crate::store) const MEMORY_COLUMNS: &str = "pid, goal, clearance, context, skills, collection";

/// The `messages` columns, in the order [`MessageColumns`] binds and [`RawMessage`] reads.
pub(in crate::store) const MESSAGE_COLUMNS: &str = "message_id, recipient, seq, sender_kind, sender_pid, \
     kind, channel, correlation_id, reply_to, body, payload, labels, acked";

fn corrupt(what: impl Display) -> StoreError {
    StoreError::Corrupt(what.to_string())
}

/// An unsigned value as a SQL INTEGER; values past `i64::MAX` cannot be stored.
pub(in crate::store) fn int(value: u64, what: &str) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| corrupt(format!("{what} {value} does not fit a SQL integer")))
}

fn uint<T: TryFrom<i64>>(value: i64, what: &str) -> Result<T, StoreError> {
    T::try_from(value).map_err(|_| corrupt(format!("{what} {value} is out of range")))
}

fn id<T: FromStr>(text: &str, what: &str) -> Result<T, StoreError> {
    text.parse().map_err(|_| corrupt(format!("{what} {text:?} is not a UUID")))
}

fn opt_id<T: FromStr>(text: Option<&str>, what: &str) -> Result<Option<T>, StoreError> {
    text.map(|t| id(t, what)).transpose()
}

fn to_json<T: Serialize>(value: &T, what: &str) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| corrupt(format!("{what} cannot be encoded: {e}")))
}

fn opt_to_json<T: Serialize>(value: Option<&T>, what: &str) -> Result<Option<String>, StoreError> {
    value.map(|v| to_json(v, what)).transpose()
}

fn from_json<T: DeserializeOwned>(text: &str, what: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| corrupt(format!("{what} {text:?} does not decode: {e}")))
}

fn opt_from_json<T: DeserializeOwned>(text: Option<&str>, what: &str) -> Result<Option<T>, StoreError> {
    text.map(|t| from_json(t, what)).transpose()
}

/// A process row as bindable column values.
pub(in crate::store) struct ProcessColumns {
    pub(in crate::store) pid: String,
    pub(in crate::store) parent: Option<String>,
    pub(in crate::store) depth: i64,
    pub(in crate::store) image: String,
    pub(in crate::store) cwd: String,
    pub(in crate::store) goal: String,
    pub(in crate::store) status: &'static str,
    pub(in crate::store) wait_state: Option<String>,
    pub(in crate::store) pause_reason: Option<String>,
    pub(in crate::store) host_gate: Option<String>,
    pub(in crate::store) outcome: Option<String>,
    pub(in crate::store) result_oid: Option<String>,
    pub(in crate::store) state_generation: i64,
    pub(in crate::store) epoch: Option<i64>,
    pub(in crate::store) resume_claim: Option<i64>,
    pub(in crate::store) started: bool,
    pub(in crate::store) account: String,
    pub(in crate::store) restart: Option<String>,
}

impl ProcessColumns {
    /// Encodes a row, refusing one whose invariants do not hold (the write half of the pair
    /// assertion across the disk boundary).
    pub(in crate::store) fn encode(row: &ProcessRow) -> Result<ProcessColumns, StoreError> {
        row.check().map_err(StoreError::Corrupt)?;
        Ok(ProcessColumns {
            pid: row.pid.to_string(),
            parent: row.parent.map(|p| p.to_string()),
            depth: i64::from(row.depth),
            image: row.image.0.clone(),
            cwd: row.cwd.clone(),
            goal: row.goal.clone(),
            status: row.status.as_str(),
            wait_state: opt_to_json(row.wait_state.as_ref(), "wait_state")?,
            pause_reason: opt_to_json(row.pause_reason.as_ref(), "pause_reason")?,
            host_gate: row.host_gate.clone(),
            outcome: opt_to_json(row.outcome.as_ref(), "outcome")?,
            result_oid: row.result_oid.map(|o| o.to_string()),
            state_generation: int(row.state_generation, "state_generation")?,
            epoch: row.epoch.map(|e| int(e.0, "epoch")).transpose()?,
            resume_claim: row.resume_claim.map(|c| int(c, "resume_claim")).transpose()?,
            started: row.started,
            account: to_json(&row.account, "account")?,
            restart: if row.restart.is_default() { None } else { Some(to_json(&row.restart, "restart")?) },
        })
    }
}

/// A process row as read, before decoding.
pub(in crate::store) struct RawProcess {
    pid: String,
    parent: Option<String>,
    depth: i64,
    image: String,
    cwd: String,
    goal: String,
    status: String,
    wait_state: Option<String>,
    pause_reason: Option<String>,
    host_gate: Option<String>,
    outcome: Option<String>,
    result_oid: Option<String>,
    state_generation: i64,
    epoch: Option<i64>,
    resume_claim: Option<i64>,
    started: bool,
    account: String,
    restart: Option<String>,
}

impl RawProcess {
    /// Reads the [`PROCESS_COLUMNS`] of one result row.
    pub(in crate::store) fn read(r: &dyn Row) -> Result<RawProcess, DbError> {
        Ok(RawProcess {
            pid: r.text(0)?,
            parent: r.opt_text(1)?,
            depth: r.int(2)?,
            image: r.text(3)?,
            cwd: r.text(4)?,
            goal: r.text(5)?,
            status: r.text(6)?,
            wait_state: r.opt_text(7)?,
            pause_reason: r.opt_text(8)?,
            host_gate: r.opt_text(9)?,
            outcome: r.opt_text(10)?,
            result_oid: r.opt_text(11)?,
            state_generation: r.int(12)?,
            epoch: r.opt_int(13)?,
            resume_claim: r.opt_int(14)?,
            started: r.flag(15)?,
            account: r.text(16)?,
            restart: r.opt_text(17)?,
        })
    }

    /// Decodes the row and checks its invariants (the read half of the pair assertion).
    pub(in crate::store) fn decode(self) -> Result<ProcessRow, StoreError> {
        let status = Status::parse(&self.status)
            .ok_or_else(|| corrupt(format!("process {}: unknown status {:?}", self.pid, self.status)))?;
        let row = ProcessRow {
            pid: id::<Pid>(&self.pid, "pid")?,
            parent: opt_id::<Pid>(self.parent.as_deref(), "parent")?,
            depth: uint(self.depth, "depth")?,
            image: ImageId(self.image),
            cwd: self.cwd,
            goal: self.goal,
            status,
            wait_state: opt_from_json::<WaitState>(self.wait_state.as_deref(), "wait_state")?,
            pause_reason: opt_from_json::<PauseReason>(self.pause_reason.as_deref(), "pause_reason")?,
            host_gate: self.host_gate,
            outcome: opt_from_json::<Outcome>(self.outcome.as_deref(), "outcome")?,
            result_oid: opt_id::<Oid>(self.result_oid.as_deref(), "result_oid")?,
            state_generation: uint(self.state_generation, "state_generation")?,
            epoch: self.epoch.map(|e| uint(e, "epoch").map(Epoch)).transpose()?,
            resume_claim: self.resume_claim.map(|c| uint(c, "resume_claim")).transpose()?,
            started: self.started,
            account: account(&self.account)?,
            restart: opt_from_json::<RestartState>(self.restart.as_deref(), "restart")?.unwrap_or_default(),
        };
        row.check().map_err(|e| corrupt(format!("process row read back: {e}")))?;
        Ok(row)
    }
}

/// A grant as bindable column values.
pub(in crate::store) struct GrantColumns {
    pub(in crate::store) id: String,
    pub(in crate::store) holder: String,
    pub(in crate::store) resource: String,
    pub(in crate::store) rights: i64,
    pub(in crate::store) constraints: String,
    pub(in crate::store) delegable: bool,
    pub(in crate::store) live: bool,
    pub(in crate::store) derived_from: Option<String>,
}

impl GrantColumns {
    /// Encodes a grant.
    pub(in crate::store) fn encode(grant: &Grant) -> Result<GrantColumns, StoreError> {
        Ok(GrantColumns {
            id: grant.id.to_string(),
            holder: grant.holder.to_string(),
            resource: grant.resource.clone(),
            rights: i64::from(grant.rights.bits()),
            constraints: to_json(&grant.constraints, "constraints")?,
            delegable: grant.delegable,
            live: grant.live,
            derived_from: grant.derived_from.map(|g| g.to_string()),
        })
    }
}

/// A grant as read, before decoding.
pub(in crate::store) struct RawGrant {
    id: String,
    holder: String,
    resource: String,
    rights: i64,
    constraints: String,
    delegable: bool,
    live: bool,
    derived_from: Option<String>,
}

impl RawGrant {
    /// Reads the [`GRANT_COLUMNS`] of one result row.
    pub(in crate::store) fn read(r: &dyn Row) -> Result<RawGrant, DbError> {
        Ok(RawGrant {
            id: r.text(0)?,
            holder: r.text(1)?,
            resource: r.text(2)?,
            rights: r.int(3)?,
            constraints: r.text(4)?,
            delegable: r.flag(5)?,
            live: r.flag(6)?,
            derived_from: r.opt_text(7)?,
        })
    }

    /// Decodes the grant; unknown right bits are corruption.
    pub(in crate::store) fn decode(self) -> Result<Grant, StoreError> {
        let bits: u8 = uint(self.rights, "rights")?;
        let rights = Rights::from_bits(bits)
            .ok_or_else(|| corrupt(format!("grant {}: unknown right bits {bits:#x}", self.id)))?;
        Ok(Grant {
            id: id::<GrantId>(&self.id, "grant id")?,
            holder: id::<Pid>(&self.holder, "holder")?,
            resource: self.resource,
            rights,
            constraints: from_json::<Constraints>(&self.constraints, "constraints")?,
            delegable: self.delegable,
            live: self.live,
            derived_from: opt_id::<GrantId>(self.derived_from.as_deref(), "derived_from")?,
        })
    }
}

/// Parses a grant id column.
pub(in crate::store) fn grant_id(text: &str) -> Result<GrantId, StoreError> {
    id(text, "grant id")
}

/// Parses a pid column.
/// A process row's `account` column.
pub(in crate::store) fn account(text: &str) -> Result<Account, StoreError> {
    from_json(text, "account")
}

pub(in crate::store) fn pid(text: &str) -> Result<Pid, StoreError> {
    id(text, "pid")
}

/// Parses an oid column.
pub(in crate::store) fn oid(text: &str) -> Result<Oid, StoreError> {
    id(text, "oid")
}

/// A 0/1 column as a boolean; anything else is corruption of `whose` row.
fn flag(value: i64, column: &str, whose: &str) -> Result<bool, StoreError> {
    match value {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(corrupt(format!("{whose}: {column} is {other}, not 0 or 1"))),
    }
}

/// A label set (labels, context) as its JSON array text; a `BTreeSet` writes it sorted.
pub(in crate::store) fn labels_column(labels: &BTreeSet<String>) -> Result<String, StoreError> {
    to_json(labels, "labels")
}

/// A clearance as its column: NULL for "cleared for every label", else a JSON array.
pub(in crate::store) fn clearance_column(
    clearance: Option<&BTreeSet<String>>,
) -> Result<Option<String>, StoreError> {
    opt_to_json(clearance, "clearance")
}

/// A skill snapshot as JSON text, in snapshot order.
pub(in crate::store) fn skills_column(skills: &[Skill]) -> Result<String, StoreError> {
    to_json(&skills, "skills")
}

/// How a process's memory was collected, as its column word.
pub(in crate::store) fn collection_column(how: Collection) -> &'static str {
    match how {
        Collection::Merged => "merged",
        Collection::Released => "released",
    }
}

fn parse_collection(text: &str, whose: &str) -> Result<Collection, StoreError> {
    match text {
        "merged" => Ok(Collection::Merged),
        "released" => Ok(Collection::Released),
        other => Err(corrupt(format!("{whose}: unknown collection {other:?}"))),
    }
}

fn parse_kind(text: &str, whose: &str) -> Result<ObjectKind, StoreError> {
    [ObjectKind::Goal, ObjectKind::Data, ObjectKind::ProcessResult]
        .into_iter()
        .find(|k| k.as_str() == text)
        .ok_or_else(|| corrupt(format!("{whose}: unknown kind {text:?}")))
}

/// An owner as its two columns: `process` or `process_result` with the pid, `profile` with
/// the profile's name, `host` with NULL.
fn owner_columns(owner: &Owner) -> (&'static str, Option<String>) {
    match owner {
        Owner::Process(pid) => ("process", Some(pid.to_string())),
        Owner::ProcessResult(pid) => ("process_result", Some(pid.to_string())),
        Owner::Profile(name) => ("profile", Some(name.clone())),
        Owner::Host => ("host", None),
    }
}

fn parse_owner(kind: &str, reference: Option<String>, whose: &str) -> Result<Owner, StoreError> {
    match (kind, reference) {
        ("process", Some(pid)) => Ok(Owner::Process(id(&pid, "owner pid")?)),
        ("process_result", Some(pid)) => Ok(Owner::ProcessResult(id(&pid, "owner pid")?)),
        ("profile", Some(name)) => Ok(Owner::Profile(name)),
        ("host", None) => Ok(Owner::Host),
        (kind, reference) => Err(corrupt(format!("{whose}: owner {kind:?} with reference {reference:?}"))),
    }
}

/// Object metadata as bindable column values.
pub(in crate::store) struct ObjectMetaColumns {
    pub(in crate::store) oid: String,
    pub(in crate::store) owner_kind: &'static str,
    pub(in crate::store) owner_ref: Option<String>,
    pub(in crate::store) kind: &'static str,
    pub(in crate::store) labels: String,
    pub(in crate::store) ephemeral: bool,
    pub(in crate::store) released: bool,
}

impl ObjectMetaColumns {
    /// Encodes an object's metadata.
    pub(in crate::store) fn encode(meta: &ObjectMeta) -> Result<ObjectMetaColumns, StoreError> {
        let (owner_kind, owner_ref) = owner_columns(&meta.owner);
        Ok(ObjectMetaColumns {
            oid: meta.oid.to_string(),
            owner_kind,
            owner_ref,
            kind: meta.kind.as_str(),
            labels: labels_column(&meta.labels)?,
            ephemeral: meta.ephemeral,
            released: meta.released,
        })
    }
}

/// Object metadata as read, before decoding.
pub(in crate::store) struct RawObjectMeta {
    oid: String,
    owner_kind: String,
    owner_ref: Option<String>,
    kind: String,
    labels: String,
    ephemeral: i64,
    released: i64,
}

impl RawObjectMeta {
    /// The object, as stored.
    pub(in crate::store) fn oid(&self) -> &str {
        &self.oid
    }

    /// Reads the [`OBJECT_META_COLUMNS`] of one result row.
    pub(in crate::store) fn read(r: &dyn Row) -> Result<RawObjectMeta, DbError> {
        Ok(RawObjectMeta {
            oid: r.text(0)?,
            owner_kind: r.text(1)?,
            owner_ref: r.opt_text(2)?,
            kind: r.text(3)?,
            labels: r.text(4)?,
            ephemeral: r.int(5)?,
            released: r.int(6)?,
        })
    }

    /// Decodes the metadata: an unknown owner or kind, an owner kind that disagrees with its
    /// reference, a flag other than 0/1, a bad id or labels that are not a JSON array of
    /// strings is [`StoreError::Corrupt`], naming the object.
    pub(in crate::store) fn decode(self) -> Result<ObjectMeta, StoreError> {
        let whose = format!("object {}", self.oid);
        Ok(ObjectMeta {
            oid: oid(&self.oid)?,
            owner: parse_owner(&self.owner_kind, self.owner_ref, &whose)?,
            kind: parse_kind(&self.kind, &whose)?,
            labels: from_json(&self.labels, &format!("{whose}: labels"))?,
            ephemeral: flag(self.ephemeral, "ephemeral", &whose)?,
            released: flag(self.released, "released", &whose)?,
        })
    }
}

/// A handle as bindable column values.
pub(in crate::store) struct HandleColumns {
    pub(in crate::store) holder: String,
    pub(in crate::store) oid: String,
    pub(in crate::store) rights: i64,
    pub(in crate::store) ephemeral: bool,
}

impl HandleColumns {
    /// Encodes a handle; `rights` is the bit set (read 1, write 2, delegate 4).
    pub(in crate::store) fn encode(handle: &Handle) -> HandleColumns {
        HandleColumns {
            holder: handle.holder.to_string(),
            oid: handle.oid.to_string(),
            rights: i64::from(handle.rights.bits()),
            ephemeral: handle.ephemeral,
        }
    }
}

/// A handle as read, before decoding.
pub(in crate::store) struct RawHandle {
    holder: String,
    oid: String,
    rights: i64,
    ephemeral: i64,
}

impl RawHandle {
    /// The object, as stored.
    pub(in crate::store) fn oid(&self) -> &str {
        &self.oid
    }

    /// Reads the [`HANDLE_COLUMNS`] of one result row.
    pub(in crate::store) fn read(r: &dyn Row) -> Result<RawHandle, DbError> {
        Ok(RawHandle { holder: r.text(0)?, oid: r.text(1)?, rights: r.int(2)?, ephemeral: r.int(3)? })
    }

    /// Decodes the handle; unknown right bits are corruption. (Empty rights decode, and
    /// [`ObjectSpace::check`](crate::kernel::objects::ObjectSpace::check) refuses them.)
    pub(in crate::store) fn decode(self) -> Result<Handle, StoreError> {
        let whose = format!("handle of {} on object {}", self.holder, self.oid);
        let bits: u8 = uint(self.rights, &format!("{whose}: rights"))?;
        let rights = ObjectRights::from_bits(bits)
            .ok_or_else(|| corrupt(format!("{whose}: unknown right bits {bits:#x}")))?;
        Ok(Handle {
            holder: pid(&self.holder)?,
            oid: oid(&self.oid)?,
            rights,
            ephemeral: flag(self.ephemeral, "ephemeral", &whose)?,
        })
    }
}

/// One process's memory row, decoded: everything but its names and roots (their own tables).
pub(in crate::store) struct StoredMemory {
    pub(in crate::store) pid: Pid,
    /// NULL until a `PutProcess` gave it one.
    pub(in crate::store) goal: Option<Oid>,
    pub(in crate::store) clearance: Option<BTreeSet<String>>,
    pub(in crate::store) context: BTreeSet<String>,
    pub(in crate::store) skills: Vec<Skill>,
    pub(in crate::store) collection: Option<Collection>,
}

/// A process's memory row as read, before decoding.
pub(in crate::store) struct RawMemory {
    pid: String,
    goal: Option<String>,
    clearance: Option<String>,
    context: String,
    skills: String,
    collection: Option<String>,
}

impl RawMemory {
    /// The process, as stored.
    pub(in crate::store) fn pid(&self) -> &str {
        &self.pid
    }

    /// The goal object, as stored.
    pub(in crate::store) fn goal(&self) -> Option<&str> {
        self.goal.as_deref()
    }

    /// Reads the [`MEMORY_COLUMNS`] of one result row.
    pub(in crate::store) fn read(r: &dyn Row) -> Result<RawMemory, DbError> {
        Ok(RawMemory {
            pid: r.text(0)?,
            goal: r.opt_text(1)?,
            clearance: r.opt_text(2)?,
            context: r.text(3)?,
            skills: r.text(4)?,
            collection: r.opt_text(5)?,
        })
    }

    /// Decodes the row. A clearance without a goal is corruption: only `PutProcess` sets a
    /// clearance, and it sets the goal with it.
    pub(in crate::store) fn decode(self) -> Result<StoredMemory, StoreError> {
        let whose = format!("memory of process {}", self.pid);
        let memory = StoredMemory {
            pid: pid(&self.pid)?,
            goal: self.goal.as_deref().map(oid).transpose()?,
            clearance: opt_from_json(self.clearance.as_deref(), &format!("{whose}: clearance"))?,
            context: from_json(&self.context, &format!("{whose}: context"))?,
            skills: from_json(&self.skills, &format!("{whose}: skills"))?,
            collection: self.collection.as_deref().map(|c| parse_collection(c, &whose)).transpose()?,
        };
        if memory.goal.is_none() && memory.clearance.is_some() {
            return Err(corrupt(format!("{whose}: a clearance without a goal")));
        }
        Ok(memory)
    }
}

/// Decodes an `object_names` row (pid, name, oid).
pub(in crate::store) fn name_row(
    (pid_text, name, oid_text): (String, String, String),
) -> Result<(Pid, String, Oid), StoreError> {
    Ok((pid(&pid_text)?, name, oid(&oid_text)?))
}

/// Decodes an `object_roots` row (pid, oid).
pub(in crate::store) fn root_row((pid_text, oid_text): (String, String)) -> Result<(Pid, Oid), StoreError> {
    Ok((pid(&pid_text)?, oid(&oid_text)?))
}

/// Decodes a stored envelope.
pub(in crate::store) fn envelope(bytes: &[u8], whose: &str) -> Result<Envelope, StoreError> {
    Envelope::decode(bytes).map_err(|e| corrupt(format!("payload of {whose}: {e}")))
}

/// A sender as its two columns: `process` with the pid, `host` or `runtime` with NULL.
pub(in crate::store) fn sender_columns(sender: Sender) -> (&'static str, Option<String>) {
    match sender {
        Sender::Process(pid) => ("process", Some(pid.to_string())),
        Sender::Host => ("host", None),
        Sender::Runtime => ("runtime", None),
    }
}

/// A message as bindable column values.
pub(in crate::store) struct MessageColumns {
    pub(in crate::store) message_id: String,
    pub(in crate::store) recipient: String,
    pub(in crate::store) seq: i64,
    pub(in crate::store) sender_kind: &'static str,
    pub(in crate::store) sender_pid: Option<String>,
    pub(in crate::store) kind: &'static str,
    pub(in crate::store) channel: Option<String>,
    pub(in crate::store) correlation_id: Option<String>,
    pub(in crate::store) reply_to: Option<String>,
    pub(in crate::store) body: String,
    pub(in crate::store) payload: Option<String>,
    pub(in crate::store) labels: String,
    pub(in crate::store) acked: bool,
}

impl MessageColumns {
    /// Encodes a message, refusing one that cannot be stored exactly (a `seq` past
    /// `i64::MAX`): the write half of the pair assertion across the disk boundary.
    pub(in crate::store) fn encode(message: &Message) -> Result<MessageColumns, StoreError> {
        let (sender_kind, sender_pid) = sender_columns(message.sender);
        Ok(MessageColumns {
            message_id: message.message_id.to_string(),
            recipient: message.recipient.to_string(),
            seq: int(message.seq, "seq")?,
            sender_kind,
            sender_pid,
            kind: message.kind.as_str(),
            channel: message.channel.clone(),
            correlation_id: message.correlation_id.clone(),
            reply_to: message.reply_to.map(|r| r.to_string()),
            body: message.body.clone(),
            payload: opt_to_json(message.payload.as_ref(), "payload")?,
            labels: to_json(&message.labels, "labels")?,
            acked: message.acked,
        })
    }
}

impl MessageColumns {
    /// Every column but the id and `acked`, as SQL values, in the order of the columns
    /// `recipient, seq, sender_kind, sender_pid, kind, channel, correlation_id, reply_to,
    /// body, payload, labels`.
    pub(in crate::store) fn content(&self) -> Vec<Cell> {
        [
            Param::from(&self.recipient),
            Param::Int(self.seq),
            Param::Text(self.sender_kind),
            Param::from(&self.sender_pid),
            Param::Text(self.kind),
            Param::from(&self.channel),
            Param::from(&self.correlation_id),
            Param::from(&self.reply_to),
            Param::from(&self.body),
            Param::from(&self.payload),
            Param::from(&self.labels),
        ]
        .into_iter()
        .map(Cell::of)
        .collect()
    }
}

/// A message as read, before decoding.
pub(in crate::store) struct RawMessage {
    message_id: String,
    recipient: String,
    seq: i64,
    sender_kind: String,
    sender_pid: Option<String>,
    kind: String,
    channel: Option<String>,
    correlation_id: Option<String>,
    reply_to: Option<String>,
    body: String,
    payload: Option<String>,
    labels: String,
    acked: i64,
}

impl RawMessage {
    /// Reads the [`MESSAGE_COLUMNS`] of one result row.
    pub(in crate::store) fn read(r: &dyn Row) -> Result<RawMessage, DbError> {
        Ok(RawMessage {
            message_id: r.text(0)?,
            recipient: r.text(1)?,
            seq: r.int(2)?,
            sender_kind: r.text(3)?,
            sender_pid: r.opt_text(4)?,
            kind: r.text(5)?,
            channel: r.opt_text(6)?,
            correlation_id: r.opt_text(7)?,
            reply_to: r.opt_text(8)?,
            body: r.text(9)?,
            payload: r.opt_text(10)?,
            labels: r.text(11)?,
            acked: r.int(12)?,
        })
    }

    /// Decodes the message (the read half of the pair assertion): an unknown kind, a sender
    /// kind that disagrees with its pid column, `acked` other than 0/1, a bad id, a negative
    /// `seq` or JSON that does not decode is [`StoreError::Corrupt`].
    pub(in crate::store) fn decode(self) -> Result<Message, StoreError> {
        let whose = &self.message_id;
        let sender_pid = opt_id::<Pid>(self.sender_pid.as_deref(), "sender pid")?;
        let sender = match (self.sender_kind.as_str(), sender_pid) {
            ("process", Some(pid)) => Sender::Process(pid),
            ("host", None) => Sender::Host,
            ("runtime", None) => Sender::Runtime,
            (kind, pid) => {
                return Err(corrupt(format!("message {whose}: sender {kind:?} with pid {pid:?}")));
            }
        };
        let kind = match self.kind.as_str() {
            "normal" => MessageKind::Normal,
            "interrupt" => MessageKind::Interrupt,
            other => return Err(corrupt(format!("message {whose}: unknown kind {other:?}"))),
        };
        let acked = match self.acked {
            0 => false,
            1 => true,
            other => return Err(corrupt(format!("message {whose}: acked is {other}, not 0 or 1"))),
        };
        Ok(Message {
            message_id: id::<MessageId>(&self.message_id, "message id")?,
            recipient: id::<Pid>(&self.recipient, "recipient")?,
            sender,
            seq: uint(self.seq, "seq")?,
            kind,
            channel: self.channel,
            correlation_id: self.correlation_id,
            reply_to: opt_id::<MessageId>(self.reply_to.as_deref(), "reply_to")?,
            body: self.body,
            payload: opt_from_json::<serde_json::Value>(self.payload.as_deref(), "payload")?,
            labels: from_json::<Vec<String>>(&self.labels, "labels")?,
            acked,
        })
    }
}
