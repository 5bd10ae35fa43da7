//! An in-memory store with the same semantics as the SQLite store, minus the disk.

use super::{CallKey, Change, CommitReceipt, CommitTicket, Envelope, ProcessQuery, Store, StoreError};
use crate::kernel::capability::Grant;
use crate::kernel::ids::{Epoch, GrantId, Oid, Pid};
use crate::kernel::mailbox::{MailboxPage, MailboxQuery, Message, MessageId};
use crate::kernel::objects::{ObjectChange, ObjectSpace};
use crate::kernel::process::ProcessRow;
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use uuid::Uuid;

/// Kernel state in memory. Commits apply atomically under one short lock.
#[derive(Default)]
pub struct MemoryStore {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    epoch: u64,
    /// Boxed: a row is several hundred bytes, and a B-tree leaf holds eleven entries inline
    /// whether or not they are in use.
    processes: BTreeMap<Pid, Box<ProcessRow>>,
    /// (parent, child) for every row with a parent, so that a listing of one parent's
    /// children reads a range, not every row. One set, not a set per parent: an entry costs
    /// the same whatever the number of parents.
    children: BTreeSet<(Pid, Pid)>,
    grants: BTreeMap<GrantId, Grant>,
    /// (holder, grant) for every grant, likewise.
    held: BTreeSet<(Pid, GrantId)>,
    objects: ObjectSpace,
    payloads: HashMap<Oid, Envelope>,
    checkpoints: HashMap<Pid, Envelope>,
    /// Mailboxes: (recipient, seq) → message, and id → key.
    messages: BTreeMap<(Pid, u64), Message>,
    message_index: HashMap<MessageId, (Pid, u64)>,
    /// Unacknowledged messages per mailbox, kept with every change so a count is O(1).
    unread: HashMap<Pid, u64>,
    /// The answers of keyed calls, written once.
    keyed: HashMap<CallKey, serde_json::Value>,
    failed: Option<String>,
    inject: Option<String>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes the next commit fail as if a write or fsync had failed, and every later one
    /// refuse with `FailStopped` (for fail-stop tests).
    pub fn fail_next_commit(&self, cause: &str) {
        self.state.lock().inject = Some(cause.to_string());
    }
}

/// Every grant derived, transitively, from `root`, including `root`.
fn closure<'a>(grants: impl IntoIterator<Item = &'a Grant>, root: GrantId) -> Vec<GrantId> {
    let all: Vec<Grant> = grants.into_iter().cloned().collect();
    crate::kernel::capability::revocation_closure(&all, root)
}

/// The grants as the earlier changes of a change set leave them: the stored grants under the
/// set's own, so that validating a spawn's grants does not copy every grant ever made.
struct StagedGrants<'a> {
    stored: &'a BTreeMap<GrantId, Grant>,
    staged: BTreeMap<GrantId, Grant>,
}

impl StagedGrants<'_> {
    fn get(&self, id: GrantId) -> Option<&Grant> {
        self.staged.get(&id).or_else(|| self.stored.get(&id))
    }

    /// Revokes `root` and what derives from it; reads every grant, as a revocation does.
    fn revoke(&mut self, root: GrantId) {
        let stored = self.stored.iter().filter(|(id, _)| !self.staged.contains_key(id)).map(|(_, g)| g);
        for id in closure(stored.chain(self.staged.values()), root) {
            if let Some(mut grant) = self.get(id).cloned() {
                grant.live = false;
                self.staged.insert(id, grant);
            }
        }
    }
}

/// Checks every precondition of a change set in order, against the state as the earlier
/// changes of the same set leave it, without changing the state; a refused change set leaves
/// nothing behind.
fn validate(state: &State, changes: &[Change]) -> Result<(), StoreError> {
    let mut grants = StagedGrants { stored: &state.grants, staged: BTreeMap::new() };
    for change in changes {
        match change {
            Change::PutProcess(row) => row.check().map_err(StoreError::Corrupt)?,
            Change::PutGrant(grant) => {
                if let Some(source) = grant.derived_from
                    && !grants.get(source).is_some_and(|g| g.live)
                {
                    return Err(StoreError::SourceGrantRevoked { source_grant: source });
                }
                grants.staged.insert(grant.id, grant.clone());
            }
            Change::RevokeGrant(root) => grants.revoke(*root),
            // A message is written once: the same message again is a no-op (it keeps its ack
            // state); a different message under a stored id is refused.
            Change::PutMessage(message) => {
                let stored = state.message_index.get(&message.message_id).and_then(|k| state.messages.get(k));
                if let Some(stored) = stored {
                    let same = Message { acked: stored.acked, ..message.clone() } == *stored;
                    if !same {
                        return Err(StoreError::Corrupt(format!(
                            "message {} is already stored with different content",
                            message.message_id
                        )));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn apply(state: &mut State, changes: Vec<Change>) -> CommitReceipt {
    let mut receipt = CommitReceipt::default();
    for change in changes {
        match change {
            Change::PutProcess(row) => {
                if let Some(parent) = row.parent {
                    state.children.insert((parent, row.pid));
                }
                state.processes.insert(row.pid, Box::new(row));
            }
            Change::PutGrant(grant) => {
                state.held.insert((grant.holder, grant.id));
                state.grants.insert(grant.id, grant);
            }
            Change::RevokeGrant(root) => {
                for id in closure(state.grants.values(), root) {
                    if let Some(g) = state.grants.get_mut(&id)
                        && g.live
                    {
                        g.live = false;
                        receipt.revoked.push((id, g.holder));
                    }
                }
            }
            Change::Objects(changes) => {
                for change in &changes {
                    if let ObjectChange::ReleaseObject { oid } = change {
                        state.payloads.remove(oid);
                    }
                }
                state.objects.apply(changes);
            }
            Change::PutPayload { oid, envelope } => {
                state.payloads.insert(oid, envelope);
            }
            Change::PutCheckpoint { pid, envelope } => {
                state.checkpoints.insert(pid, envelope);
            }
            Change::PutKeyed { key, answer } => {
                state.keyed.entry(key).or_insert(answer);
            }
            Change::PutMessage(message) => {
                if state.message_index.contains_key(&message.message_id) {
                    continue; // written once; validation refused a different message
                }
                let key = (message.recipient, message.seq);
                if !message.acked {
                    *state.unread.entry(message.recipient).or_default() += 1;
                }
                state.message_index.insert(message.message_id, key);
                state.messages.insert(key, message);
            }
            Change::AckMessages { recipient, ids } => {
                for id in ids {
                    let Some(key) = state.message_index.get(&id).copied() else { continue };
                    if key.0 != recipient {
                        continue;
                    }
                    if let Some(m) = state.messages.get_mut(&key)
                        && !m.acked
                    {
                        m.acked = true;
                        if let Some(n) = state.unread.get_mut(&recipient) {
                            *n = n.saturating_sub(1);
                        }
                    }
                }
            }
        }
    }
    receipt
}

impl Store for MemoryStore {
    fn submit(&self, changes: Vec<Change>) -> CommitTicket {
        let mut state = self.state.lock();
        if let Some(cause) = &state.failed {
            return CommitTicket::ready(Err(StoreError::FailStopped { cause: cause.clone() }));
        }
        if let Some(cause) = state.inject.take() {
            state.failed = Some(cause.clone());
            return CommitTicket::ready(Err(StoreError::Write(cause)));
        }
        if let Err(e) = validate(&state, &changes) {
            return CommitTicket::ready(Err(e));
        }
        CommitTicket::ready(Ok(apply(&mut state, changes)))
    }

    fn begin_epoch(&self) -> Result<Epoch, StoreError> {
        let mut state = self.state.lock();
        state.epoch += 1;
        Ok(Epoch(state.epoch))
    }

    fn epoch(&self) -> Result<Epoch, StoreError> {
        Ok(Epoch(self.state.lock().epoch))
    }

    fn process(&self, pid: Pid) -> Result<Option<ProcessRow>, StoreError> {
        Ok(self.state.lock().processes.get(&pid).map(|row| (**row).clone()))
    }

    fn processes(&self, query: ProcessQuery) -> Result<Vec<ProcessRow>, StoreError> {
        let state = self.state.lock();
        let candidates: Box<dyn Iterator<Item = &ProcessRow>> = match query.parent {
            Some(parent) => Box::new(
                // A row keeps its parent; the check costs nothing and keeps the index honest.
                crate::pairs::under(&state.children, parent, Pid(Uuid::nil()))
                    .filter_map(|pid| state.processes.get(pid).map(|row| &**row))
                    .filter(move |r| r.parent == Some(parent)),
            ),
            None => Box::new(
                state
                    .processes
                    .values()
                    .map(|row| &**row)
                    .filter(|r| !query.roots_only || r.parent.is_none()),
            ),
        };
        let rows = candidates
            .filter(|r| query.include_terminal || !r.status.is_terminal())
            .filter(|r| query.after.is_none_or(|after| r.pid > after))
            .take(query.limit.unwrap_or(usize::MAX))
            .cloned()
            .collect();
        Ok(rows)
    }

    fn grants_of(&self, holder: Pid) -> Result<Vec<Grant>, StoreError> {
        let state = self.state.lock();
        let held = crate::pairs::under(&state.held, holder, GrantId(Uuid::nil()));
        Ok(held.filter_map(|id| state.grants.get(id)).filter(|g| g.holder == holder).cloned().collect())
    }

    fn object_space(&self) -> Result<ObjectSpace, StoreError> {
        let space = self.state.lock().objects.resident();
        space.check().map_err(|v| StoreError::Corrupt(v.to_string()))?;
        Ok(space)
    }

    /// The whole space, which holds at least what was asked for.
    fn object_memory_of(&self, _pids: &[Pid], _oids: &[Oid]) -> Result<ObjectSpace, StoreError> {
        let space = self.state.lock().objects.clone();
        space.check().map_err(|v| StoreError::Corrupt(v.to_string()))?;
        Ok(space)
    }

    fn payload(&self, oid: Oid) -> Result<Option<Envelope>, StoreError> {
        Ok(self.state.lock().payloads.get(&oid).cloned())
    }

    fn payload_oids(&self) -> Result<BTreeSet<Oid>, StoreError> {
        Ok(self.state.lock().payloads.keys().copied().collect())
    }

    fn keyed(&self, key: &CallKey) -> Result<Option<serde_json::Value>, StoreError> {
        Ok(self.state.lock().keyed.get(key).cloned())
    }

    fn checkpoint(&self, pid: Pid) -> Result<Option<Envelope>, StoreError> {
        Ok(self.state.lock().checkpoints.get(&pid).cloned())
    }

    fn mailbox(&self, recipient: Pid, query: &MailboxQuery) -> Result<MailboxPage, StoreError> {
        let state = self.state.lock();
        let mut page = MailboxPage::default();
        for message in state.messages.range((recipient, 0)..=(recipient, u64::MAX)).map(|(_, m)| m) {
            if (query.include_acked || !message.acked) && query.filter.matches(message) {
                page.matched += 1;
                if page.messages.len() < query.limit {
                    page.messages.push(message.clone());
                }
            }
        }
        Ok(page)
    }

    fn message(&self, id: MessageId) -> Result<Option<Message>, StoreError> {
        let state = self.state.lock();
        Ok(state.message_index.get(&id).and_then(|key| state.messages.get(key)).cloned())
    }

    fn unread_count(&self, recipient: Pid) -> Result<u64, StoreError> {
        Ok(self.state.lock().unread.get(&recipient).copied().unwrap_or(0))
    }

    fn message_seq_max(&self) -> Result<u64, StoreError> {
        Ok(self.state.lock().messages.values().map(|m| m.seq).max().unwrap_or(0))
    }

    fn is_writable(&self) -> bool {
        self.state.lock().failed.is_none()
    }

    fn inject_write_failure(&self) {
        self.fail_next_commit("injected write failure");
    }
}
