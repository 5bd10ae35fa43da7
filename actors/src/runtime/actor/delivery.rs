//! Sending a message: the checks, the commit and the recipient's wake-up, for one send
//! ([`deliver`]) and for a group of sends that share one commit
//! ([`Call::SendGroup`](crate::runtime::calls::Call::SendGroup)).

use super::ProcessMsg;
use crate::kernel::capability::Grant;
use crate::kernel::ids::Pid;
use crate::kernel::mailbox::{self, Message, MessageId, Relation, SendDenied};
use crate::kernel::status::Sender;
use crate::limits;
use crate::runtime::calls::{SendRequest, SentMessage, ToolError};
use crate::runtime::keys::{self, Keyed};
use crate::runtime::shared::Shared;
use crate::runtime::telemetry::KernelEvent;
use crate::store::{CallKey, Change, KeyKind};
use std::collections::HashMap;
use uuid::Uuid;

/// Who sends: the sender, its parent and its grants (the parent and grants of a process; none
/// for the host, which may reach any live process).
#[derive(Clone, Copy)]
pub(crate) struct Origin<'a> {
    pub(crate) sender: Sender,
    pub(crate) parent: Option<Pid>,
    pub(crate) grants: &'a [Grant],
}

impl Origin<'_> {
    /// The host or the runtime: no parent, no grants, every live process reachable.
    pub(crate) fn nobody(sender: Sender) -> Origin<'static> {
        Origin { sender, parent: None, grants: &[] }
    }
}

/// Looks up `message_key` of `sender`.
pub(crate) fn keyed(
    shared: &Shared,
    sender: Sender,
    message_key: Option<String>,
) -> Result<Keyed<SentMessage>, ToolError> {
    keys::lookup(shared.store.as_ref(), sender, KeyKind::Message, message_key, "message_key")
}

/// What the sends planned before a send (in the same group) leave for its checks: the unread
/// count of each mailbox they sent to, their messages included (read from the store once per
/// recipient), and who each message is for (a `reply_to` may name one).
#[derive(Default)]
pub(crate) struct Planned {
    unread: HashMap<Pid, u64>,
    recipients: HashMap<MessageId, Pid>,
}

/// A checked message, ready to commit.
pub(crate) struct Outgoing {
    pub(crate) message: Message,
    pub(crate) sent: SentMessage,
    pub(crate) key: Option<CallKey>,
}

impl Outgoing {
    /// The changes that commit it: the message, and its key's answer.
    pub(crate) fn changes(&self) -> Result<Vec<Change>, ToolError> {
        let mut changes = vec![Change::PutMessage(self.message.clone())];
        if let Some(key) = &self.key {
            changes.push(keys::record(key.clone(), &self.sent)?);
        }
        Ok(changes)
    }

    /// After its commit: the telemetry event, and the recipient's actor told.
    pub(crate) fn announce(self, shared: &Shared) {
        let message = self.message;
        shared.telemetry.publish(KernelEvent::MessageSent {
            message_id: message.message_id,
            from: message.sender,
            to: message.recipient,
            kind: message.kind,
        });
        if let Some(actor) = shared.registry.get(&message.recipient) {
            let _ = actor.cast(ProcessMsg::MessageArrived(Box::new(message)));
        }
    }
}

impl Planned {
    /// Checks `request` from `origin` as a send made after the ones planned so far, and
    /// plans it: refused with the reason a send made alone at this point would get.
    pub(crate) fn plan(
        &mut self,
        shared: &Shared,
        origin: Origin<'_>,
        request: SendRequest,
        key: Option<CallKey>,
    ) -> Result<Outgoing, ToolError> {
        mailbox::check_message(
            &request.body,
            request.payload.as_ref(),
            request.channel.as_deref(),
            request.correlation_id.as_deref(),
        )?;
        let store = &shared.store;
        let recipient = store
            .process(request.to)
            .map_err(|e| ToolError::store(&e))?
            .ok_or(SendDenied::UnknownRecipient { recipient: request.to })?;
        if let Sender::Process(me) = origin.sender
            && mailbox::relation(me, origin.parent, recipient.pid, recipient.parent) == Relation::Other
            && !mailbox::may_message(origin.grants, recipient.pid)
        {
            return Err(SendDenied::NotReachable { recipient: recipient.pid }.into());
        }
        if let Some(reply_to) = request.reply_to {
            let answered = match self.recipients.get(&reply_to) {
                Some(recipient) => Some(*recipient),
                None => store.message(reply_to).map_err(|e| ToolError::store(&e))?.map(|m| m.recipient),
            };
            // A process answers a message it received; the host and the runtime any message.
            let known = match origin.sender {
                Sender::Process(me) => answered == Some(me),
                _ => answered.is_some(),
            };
            if !known {
                return Err(SendDenied::UnknownReplyTo { reply_to }.into());
            }
        }
        if recipient.status.is_terminal() {
            return Err(SendDenied::Terminal { recipient: recipient.pid, status: recipient.status }.into());
        }
        let unread = match self.unread.get(&recipient.pid) {
            Some(unread) => *unread,
            None => store.unread_count(recipient.pid).map_err(|e| ToolError::store(&e))?,
        };
        if unread >= limits::MAILBOX_UNACKED_MAX as u64 {
            return Err(SendDenied::MailboxFull { recipient: recipient.pid }.into());
        }
        // Data flow: a process's message carries its context; the recipient must be cleared for
        // it. (The host's messages carry no labels.)
        let (labels, clearance) = shared.memory.read(|space| {
            let labels = match origin.sender {
                Sender::Process(me) => space.message_labels(me).into_iter().collect::<Vec<_>>(),
                _ => Vec::new(),
            };
            (labels, space.clearance_of(recipient.pid))
        });
        mailbox::may_deliver(recipient.pid, &labels, clearance.as_deref())?;
        let message = Message {
            message_id: MessageId(Uuid::now_v7()),
            recipient: recipient.pid,
            sender: origin.sender,
            seq: shared.next_message_seq(),
            kind: request.kind,
            channel: request.channel,
            correlation_id: request.correlation_id,
            reply_to: request.reply_to,
            body: request.body,
            payload: request.payload,
            labels,
            acked: false,
        };
        let sent = SentMessage {
            message_id: message.message_id,
            to: message.recipient,
            kind: message.kind,
            channel: message.channel.clone(),
            correlation_id: message.correlation_id.clone(),
            reply_to: message.reply_to,
            seq: message.seq,
        };
        self.unread.insert(recipient.pid, unread + 1);
        self.recipients.insert(message.message_id, recipient.pid);
        Ok(Outgoing { message, sent, key })
    }
}

/// Validates and commits a message from `origin`, then tells the recipient's actor. Shared by
/// processes (`send_process_message`), the host and the runtime.
pub(crate) async fn deliver(
    shared: &Shared,
    origin: Origin<'_>,
    request: SendRequest,
    message_key: Option<String>,
) -> Result<SentMessage, ToolError> {
    let key = match keyed(shared, origin.sender, message_key)? {
        Keyed::Answered(first) => return Ok(first),
        Keyed::New(key) => key,
    };
    let outgoing = Planned::default().plan(shared, origin, request, key)?;
    shared.store.submit(outgoing.changes()?).await.map_err(|e| ToolError::store(&e))?;
    let sent = outgoing.sent.clone();
    outgoing.announce(shared);
    Ok(sent)
}
