//! A store that delegates everything to another, with one-shot hooks a test arms to act at an
//! exact point of the runtime's work: just before a change set reaches the store, or just
//! after a durable payload was read from it. This stages interleavings that are otherwise
//! races, deterministically and without sleeping.

use agentvisor_actors::kernel::capability::Grant;
use agentvisor_actors::kernel::ids::{Epoch, Oid, Pid};
use agentvisor_actors::kernel::mailbox::{MailboxPage, MailboxQuery, Message, MessageId};
use agentvisor_actors::kernel::objects::ObjectSpace;
use agentvisor_actors::kernel::process::ProcessRow;
use agentvisor_actors::store::{Change, CommitTicket, Envelope, ProcessQuery, Store, StoreError};
use parking_lot::Mutex;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Decides whether a change set is the one a submit hook waits for.
pub(crate) type SubmitMatch = Box<dyn Fn(&[Change]) -> bool + Send>;
/// Runs on the inner store just before the matched change set is submitted to it.
pub(crate) type SubmitAction = Box<dyn FnOnce(&dyn Store, &[Change]) + Send>;
/// Runs after the payload of one OID was read from the inner store, before it is returned.
pub(crate) type PayloadAction = Box<dyn FnOnce() + Send>;

/// See the module docs.
pub(crate) struct Interposed {
    inner: Arc<dyn Store>,
    before_submit: Mutex<Option<(SubmitMatch, SubmitAction)>>,
    after_payload: Mutex<Option<(Oid, PayloadAction)>>,
}

impl Interposed {
    /// A store over `inner` with no hook armed.
    pub(crate) fn new(inner: Arc<dyn Store>) -> Interposed {
        Interposed { inner, before_submit: Mutex::new(None), after_payload: Mutex::new(None) }
    }

    /// Runs `action` once, just before the first change set `matches` accepts is submitted.
    pub(crate) fn before_submit(&self, matches: SubmitMatch, action: SubmitAction) {
        *self.before_submit.lock() = Some((matches, action));
    }

    /// Runs `action` once, after the next read of `oid`'s payload and before it is returned.
    pub(crate) fn after_payload(&self, oid: Oid, action: PayloadAction) {
        *self.after_payload.lock() = Some((oid, action));
    }
}

impl Store for Interposed {
    fn submit(&self, changes: Vec<Change>) -> CommitTicket {
        let hook = {
            let mut armed = self.before_submit.lock();
            match armed.take() {
                Some((matches, action)) if matches(&changes) => Some(action),
                other => {
                    *armed = other;
                    None
                }
            }
        };
        if let Some(action) = hook {
            action(self.inner.as_ref(), &changes);
        }
        self.inner.submit(changes)
    }
    fn begin_epoch(&self) -> Result<Epoch, StoreError> {
        self.inner.begin_epoch()
    }
    fn epoch(&self) -> Result<Epoch, StoreError> {
        self.inner.epoch()
    }
    fn process(&self, pid: Pid) -> Result<Option<ProcessRow>, StoreError> {
        self.inner.process(pid)
    }
    fn processes(&self, query: ProcessQuery) -> Result<Vec<ProcessRow>, StoreError> {
        self.inner.processes(query)
    }
    fn grants_of(&self, holder: Pid) -> Result<Vec<Grant>, StoreError> {
        self.inner.grants_of(holder)
    }
    fn object_space(&self) -> Result<ObjectSpace, StoreError> {
        self.inner.object_space()
    }
    fn object_memory_of(&self, pids: &[Pid], oids: &[Oid]) -> Result<ObjectSpace, StoreError> {
        self.inner.object_memory_of(pids, oids)
    }
    fn payload(&self, oid: Oid) -> Result<Option<Envelope>, StoreError> {
        let read = self.inner.payload(oid);
        let hook = {
            let mut armed = self.after_payload.lock();
            match armed.take() {
                Some((target, action)) if target == oid => Some(action),
                other => {
                    *armed = other;
                    None
                }
            }
        };
        if let Some(action) = hook {
            action();
        }
        read
    }
    fn payload_oids(&self) -> Result<BTreeSet<Oid>, StoreError> {
        self.inner.payload_oids()
    }
    fn checkpoint(&self, pid: Pid) -> Result<Option<Envelope>, StoreError> {
        self.inner.checkpoint(pid)
    }
    fn mailbox(&self, recipient: Pid, query: &MailboxQuery) -> Result<MailboxPage, StoreError> {
        self.inner.mailbox(recipient, query)
    }
    fn message(&self, id: MessageId) -> Result<Option<Message>, StoreError> {
        self.inner.message(id)
    }
    fn unread_count(&self, recipient: Pid) -> Result<u64, StoreError> {
        self.inner.unread_count(recipient)
    }
    fn message_seq_max(&self) -> Result<u64, StoreError> {
        self.inner.message_seq_max()
    }
    fn is_writable(&self) -> bool {
        self.inner.is_writable()
    }
    fn inject_write_failure(&self) {
        self.inner.inject_write_failure()
    }
    fn keyed(
        &self,
        key: &agentvisor_actors::store::CallKey,
    ) -> Result<Option<serde_json::Value>, StoreError> {
        self.inner.keyed(key)
    }
    fn failures(&self) -> Option<agentvisor_actors::store::FailureWatch> {
        self.inner.failures()
    }
}
