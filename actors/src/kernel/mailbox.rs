//! Durable process mailboxes: messages, filters, and the delivery rule.
//!
//! A process may send only to itself, its parent, or a direct non-terminal child. Messages
//! carry a channel, a correlation id, the exact message they answer (`reply_to`), a kind
//! (`normal` or `interrupt`), a body and a payload — data, never authority. Reads take a
//! snapshot of the caller's own mailbox through ANDed filters; acknowledgement marks a message
//! read without deleting it.

use super::ids::Pid;
use super::status::{Sender, Status};
use crate::limits;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use uuid::Uuid;

/// A message id: a UUID v7.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MessageId(pub Uuid);

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "message({})", self.0)
    }
}

impl FromStr for MessageId {
    type Err = super::ids::IdParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::parse_str(s.trim())
            .map(MessageId)
            .map_err(|_| super::ids::IdParseError { kind: "message", text: s.to_string() })
    }
}

/// `normal` or `interrupt`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// Noticed after the recipient's current tool call.
    #[default]
    Normal,
    /// Noticed before the recipient's next non-message tool call.
    Interrupt,
}

impl MessageKind {
    /// The lowercase word.
    pub fn as_str(self) -> &'static str {
        match self {
            MessageKind::Normal => "normal",
            MessageKind::Interrupt => "interrupt",
        }
    }
}

/// A stored message.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Message {
    /// Its id.
    pub message_id: MessageId,
    /// The mailbox it is in.
    pub recipient: Pid,
    /// Who sent it.
    pub sender: Sender,
    /// Runtime-wide delivery order; per sender it is the send order.
    pub seq: u64,
    /// `normal` or `interrupt`.
    pub kind: MessageKind,
    /// A stable channel name, if any.
    pub channel: Option<String>,
    /// A correlation id, if any.
    pub correlation_id: Option<String>,
    /// The exact message this one answers.
    pub reply_to: Option<MessageId>,
    /// Text; untrusted data.
    pub body: String,
    /// Structured data; untrusted.
    pub payload: Option<serde_json::Value>,
    /// Data-flow labels carried by the message.
    pub labels: Vec<String>,
    /// Whether the recipient has acknowledged it. Ack is not deletion.
    pub acked: bool,
}

/// What a notice shows: ids only. Content is read through the mailbox calls.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Notice {
    /// The message.
    pub message_id: MessageId,
    /// Its kind.
    pub kind: MessageKind,
    /// Its sender.
    pub sender: Sender,
}

impl From<&Message> for Notice {
    fn from(m: &Message) -> Self {
        Notice { message_id: m.message_id, kind: m.kind, sender: m.sender }
    }
}

/// The ANDed filters of a read or receive. `None` means "any".
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct MessageFilter {
    /// Only this kind.
    pub kind: Option<MessageKind>,
    /// Only from this sender.
    pub sender: Option<Sender>,
    /// Only on this channel.
    pub channel: Option<String>,
    /// Only with this correlation id.
    pub correlation_id: Option<String>,
    /// Only answers to this message.
    pub reply_to: Option<MessageId>,
    /// Only these messages (an empty list matches nothing).
    pub message_ids: Option<Vec<MessageId>>,
}

impl MessageFilter {
    /// Whether a message passes every filter.
    pub fn matches(&self, m: &Message) -> bool {
        self.kind.is_none_or(|k| k == m.kind)
            && self.sender.is_none_or(|s| s == m.sender)
            && self.channel.as_ref().is_none_or(|c| m.channel.as_ref() == Some(c))
            && self.correlation_id.as_ref().is_none_or(|c| m.correlation_id.as_ref() == Some(c))
            && self.reply_to.is_none_or(|r| m.reply_to == Some(r))
            && self.message_ids.as_ref().is_none_or(|ids| ids.contains(&m.message_id))
    }
}

/// A mailbox read: filters, whether acked messages count, and how many to return.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct MailboxQuery {
    /// The filters.
    pub filter: MessageFilter,
    /// Include messages already acknowledged.
    pub include_acked: bool,
    /// At most this many messages, oldest first.
    pub limit: usize,
}

/// A page of a mailbox.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct MailboxPage {
    /// The messages returned, oldest first.
    pub messages: Vec<Message>,
    /// How many matched in all (returned or not).
    pub matched: u64,
}

/// Why a send is refused.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error, Serialize, Deserialize)]
#[non_exhaustive]
pub enum SendDenied {
    /// The recipient is not self, the parent, or a direct child.
    #[error(
        "{recipient} is not this process, its parent, or a direct child; messages reach only those (not siblings or other processes)"
    )]
    NotReachable {
        /// The recipient asked for.
        recipient: Pid,
    },
    /// The recipient is terminal.
    #[error("{recipient} is {status}; terminal processes receive no messages")]
    Terminal {
        /// The recipient.
        recipient: Pid,
        /// Its status.
        status: Status,
    },
    /// No such process.
    #[error("no process {recipient}")]
    UnknownRecipient {
        /// The recipient asked for.
        recipient: Pid,
    },
    /// `reply_to` does not name a message delivered to the sender.
    #[error(
        "reply_to {reply_to} is not a message in this process's mailbox; set it to the exact message answered"
    )]
    UnknownReplyTo {
        /// The id given.
        reply_to: MessageId,
    },
    /// Body and payload together are too large.
    #[error("the message is {size} bytes; the limit is {max}", max = limits::MESSAGE_BYTES_MAX)]
    TooLarge {
        /// Its size.
        size: usize,
    },
    /// The recipient's mailbox holds too many unacknowledged messages.
    #[error("{recipient}'s mailbox holds {max} unacknowledged messages; nothing was dropped, but no more are accepted until some are read", max = limits::MAILBOX_UNACKED_MAX)]
    MailboxFull {
        /// The recipient.
        recipient: Pid,
    },
    /// A channel or correlation id is too long.
    #[error("{field} is longer than {max} bytes", max = limits::MESSAGE_TAG_BYTES_MAX)]
    TagTooLong {
        /// Which field.
        field: String,
    },
    /// Data flow refuses the delivery.
    #[error(
        "data-flow denied: the message carries label {label:?} (the sender's context) and {recipient} is not cleared for it"
    )]
    FlowDenied {
        /// The recipient.
        recipient: Pid,
        /// The label it is not cleared for.
        label: String,
    },
}

impl SendDenied {
    /// A stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            SendDenied::NotReachable { .. } => "recipient_not_reachable",
            SendDenied::Terminal { .. } => super::codes::PROCESS_TERMINAL,
            SendDenied::UnknownRecipient { .. } => "unknown_process",
            SendDenied::UnknownReplyTo { .. } => "unknown_reply_to",
            SendDenied::TooLarge { .. } => "message_too_large",
            SendDenied::MailboxFull { .. } => "mailbox_full",
            SendDenied::TagTooLong { .. } => super::codes::INVALID_ARGUMENTS,
            SendDenied::FlowDenied { .. } => "flow_denied",
        }
    }
}

/// How the recipient relates to the sender.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Relation {
    /// The sender itself.
    SelfProcess,
    /// The sender's parent.
    Parent,
    /// A direct child of the sender.
    Child,
    /// Anything else.
    Other,
}

/// The relation of `recipient` (with its `recipient_parent`) to `sender` (with its parent).
pub fn relation(
    sender: Pid,
    sender_parent: Option<Pid>,
    recipient: Pid,
    recipient_parent: Option<Pid>,
) -> Relation {
    if recipient == sender {
        Relation::SelfProcess
    } else if sender_parent == Some(recipient) {
        Relation::Parent
    } else if recipient_parent == Some(sender) {
        Relation::Child
    } else {
        Relation::Other
    }
}

/// The prefix of the resource that names a process's mailbox: `mailbox:<pid>`.
pub const MAILBOX_RESOURCE_PREFIX: &str = "mailbox:";

/// The resource naming `pid`'s mailbox. A process holding WRITE on it may message `pid`
/// although `pid` is neither its parent nor its child (the host grants it, as a rig grants
/// one seat the right to message another); the data-flow check applies as to any send.
pub fn mailbox_resource(pid: Pid) -> String {
    format!("{MAILBOX_RESOURCE_PREFIX}{pid}")
}

/// Whether a sender holding `grants` may message `recipient` outside its parent and children.
pub fn may_message(grants: &[super::capability::Grant], recipient: Pid) -> bool {
    super::capability::holds(grants, &mailbox_resource(recipient), super::capability::Rights::WRITE)
}

/// Data flow for messages: whether a message with `labels` (its sender's context) may be
/// delivered to a holder cleared for `clearance` (`None`: cleared for everything).
pub fn may_deliver(
    recipient: Pid,
    labels: &[String],
    clearance: Option<&[String]>,
) -> Result<(), SendDenied> {
    let Some(cleared) = clearance else { return Ok(()) };
    match labels.iter().find(|l| !cleared.contains(l)) {
        Some(label) => Err(SendDenied::FlowDenied { recipient, label: label.clone() }),
        None => Ok(()),
    }
}

/// Checks a message's size and tags.
pub fn check_message(
    body: &str,
    payload: Option<&serde_json::Value>,
    channel: Option<&str>,
    correlation_id: Option<&str>,
) -> Result<(), SendDenied> {
    let size = body.len() + payload.map_or(0, |p| p.to_string().len());
    if size > limits::MESSAGE_BYTES_MAX {
        return Err(SendDenied::TooLarge { size });
    }
    for (field, value) in [("channel", channel), ("correlation_id", correlation_id)] {
        if value.is_some_and(|v| v.len() > limits::MESSAGE_TAG_BYTES_MAX) {
            return Err(SendDenied::TagTooLong { field: field.into() });
        }
    }
    Ok(())
}
