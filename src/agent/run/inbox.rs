//! Messages reaching an agent: picked up into the window at the start of each turn, and
//! shown around tool results at the points the mailbox defines — an interrupt before the next
//! non-message call's result, a normal notice after the result of the call it came with.

use super::error::AgentError;
use super::program::Agent;
use super::start::FORK_CHANNEL;
use crate::actors::kernel::mailbox::{
    MailboxQuery, Message as MailMessage, MessageFilter, MessageKind, Notice,
};
use crate::actors::kernel::status::Sender;
use crate::agent::brain::Message;
use crate::agent::limits::INBOX_PAGE;
use crate::agent::telemetry::AgentEvent;
use crate::tools::ToolName;

impl Agent {
    /// Reads unacknowledged messages (acknowledging them) into the window as notes. The
    /// mailbox is read only when something may be in it: at an execution's first turn, after
    /// a notice that no tool result showed, or while an earlier page left messages behind.
    pub(crate) async fn take_inbox(&mut self) -> Result<(), AgentError> {
        let noticed =
            !self.ctx.take_notices().is_empty() || !self.interrupts.is_empty() || !self.normals.is_empty();
        self.interrupts.clear();
        self.normals.clear();
        if !noticed && !self.inbox_unread {
            return Ok(());
        }
        let query =
            MailboxQuery { filter: MessageFilter::default(), include_acked: false, limit: INBOX_PAGE };
        let read =
            self.ctx.read_messages(query, true).await.map_err(AgentError::kernel(ToolName::Read.as_str()))?;
        self.inbox_unread = read.has_more;
        for message in read.messages {
            if message.channel.as_deref() == Some(FORK_CHANNEL) {
                continue;
            }
            let text = self.restate(&message);
            self.window.push(Message::note(text))?;
        }
        Ok(())
    }

    /// The interrupts delivered since the last call, read and acknowledged, as text to show
    /// before the next call's result.
    pub(crate) async fn show_interrupts(&mut self) -> String {
        let mut pending = std::mem::take(&mut self.interrupts);
        let (interrupts, normal): (Vec<Notice>, Vec<Notice>) =
            self.ctx.take_notices().into_iter().partition(|n| n.kind == MessageKind::Interrupt);
        pending.extend(interrupts);
        // Normal notices delivered before this call (with the loop's own calls) are shown
        // after its result.
        self.normals.extend(normal);
        self.read_notices(pending).await
    }

    /// The notices delivered with the last answer: normal ones shown now (after the result);
    /// interrupts kept for before the next non-message call.
    pub(crate) async fn show_notices(&mut self) -> String {
        let (interrupts, normal): (Vec<Notice>, Vec<Notice>) =
            self.ctx.take_notices().into_iter().partition(|n| n.kind == MessageKind::Interrupt);
        self.interrupts.extend(interrupts);
        let mut shown = std::mem::take(&mut self.normals);
        shown.extend(normal);
        self.read_notices(shown).await
    }

    async fn read_notices(&mut self, notices: Vec<Notice>) -> String {
        if notices.is_empty() {
            return String::new();
        }
        let ids = notices.iter().map(|n| n.message_id).collect();
        let query = MailboxQuery {
            filter: MessageFilter { message_ids: Some(ids), ..Default::default() },
            include_acked: false,
            limit: notices.len(),
        };
        let Ok(read) = self.ctx.read_messages(query, true).await else { return String::new() };
        let mut out = String::new();
        for message in read.messages {
            out.push_str(&format!("\n[{}]\n", self.restate(&message)));
        }
        out
    }

    /// A message as text, re-stated on this agent's own stream.
    fn restate(&self, message: &MailMessage) -> String {
        let from = match message.sender {
            Sender::Process(pid) => pid.to_string(),
            Sender::Host => "the host".to_string(),
            Sender::Runtime => "the runtime".to_string(),
        };
        let kind = match message.kind {
            MessageKind::Interrupt => "interrupt",
            MessageKind::Normal => "normal",
        };
        self.emit(AgentEvent::MessageReceived {
            from_pid: from.clone(),
            text: message.body.clone(),
            kind: kind.into(),
        });
        format!("{kind} message from {from}: {}", message.body)
    }
}
