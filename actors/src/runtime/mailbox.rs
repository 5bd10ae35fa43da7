//! The saved form of a blocking receive, kept durably in `wait_state`.

use crate::kernel::mailbox::MailboxQuery;
use serde::{Deserialize, Serialize};

/// A receive's filters and acknowledgement choice: what a `waiting_event` process whose
/// `wait_state` is `message` waits for. Serialized into the wait state so a restart re-arms it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiveSpec {
    /// Filters, include_acked and limit.
    pub query: MailboxQuery,
    /// Acknowledge the returned unread messages.
    pub ack: bool,
}

impl ReceiveSpec {
    /// The durable text form.
    pub fn encode(&self) -> String {
        serde_json::to_string(self).expect("a receive spec is plain data and always serializes")
    }

    /// Parses the durable text form.
    pub fn decode(text: &str) -> Result<ReceiveSpec, String> {
        serde_json::from_str(text).map_err(|e| format!("unreadable saved receive: {e}"))
    }
}
