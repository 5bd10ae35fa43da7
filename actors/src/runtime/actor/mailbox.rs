//! Mailbox calls: send, read, receive, and the arrival of a message.

use super::delivery::{Origin, deliver};
use super::{PendingWait, ProcessActor, ProcessMsg, ProcessState, Reply};
use crate::kernel::mailbox::{self, MailboxPage, MailboxQuery, Message, MessageId, MessageKind, Notice};
use crate::kernel::process::Event;
use crate::kernel::status::{Sender, Status, WaitState};
use crate::limits;
use crate::runtime::calls::{CallOk, Continuation, MessagesRead, MessagesReceived, SendRequest, ToolError};
use crate::runtime::mailbox::ReceiveSpec;
use crate::runtime::program::StartKind;
use crate::store::Change;
use ractor::ActorRef;
use std::collections::BTreeSet;

/// The continuation of a page, if more matched than it holds.
fn continuation(page: &MailboxPage, query: &MailboxQuery, ack: bool) -> (bool, u64, Option<Continuation>) {
    let returned = page.messages.len() as u64;
    let omitted = page.matched.saturating_sub(returned);
    let has_more = omitted > 0;
    // Repeating advances only if this page acknowledged what it returned; an empty page
    // (limit 0) acknowledges nothing, so repeating it returns the same empty page.
    let advances = ack && !query.include_acked && returned > 0;
    let cont = has_more.then_some(Continuation { reuse_filters: true, advances });
    (has_more, omitted, cont)
}

impl ProcessActor {
    /// Reads a page of this process's mailbox and acknowledges it if asked, in one commit.
    async fn take_page(
        &self,
        state: &mut ProcessState,
        query: &MailboxQuery,
        ack: bool,
        extra_event: Option<Event>,
    ) -> Result<(MailboxPage, Vec<MessageId>), ToolError> {
        let me = state.pid();
        let mut query = query.clone();
        query.limit = query.limit.min(limits::MAILBOX_PAGE_MAX);
        let page = self.shared.store.mailbox(me, &query).map_err(|e| ToolError::store(&e))?;
        // Reading raises the context by what the messages carry, committed before the ack:
        // a crash in between over-labels the reader, never under-labels it.
        let labels: BTreeSet<String> = page.messages.iter().flat_map(|m| m.labels.iter().cloned()).collect();
        if !labels.is_empty() {
            self.shared
                .memory
                .commit(self.shared.store.as_ref(), |stage| {
                    let changes = stage.space().plan_raise_context(me, &labels)?;
                    stage.apply(changes);
                    Ok::<_, ToolError>(())
                })
                .await?;
        }
        let acked: Vec<MessageId> = if ack {
            page.messages.iter().filter(|m| !m.acked).map(|m| m.message_id).collect()
        } else {
            Vec::new()
        };
        let mut changes = Vec::new();
        if !acked.is_empty() {
            changes.push(Change::AckMessages { recipient: me, ids: acked.clone() });
        }
        match extra_event {
            Some(event) => self.transition(state, event, changes).await?,
            None if !changes.is_empty() => {
                changes.push(Change::PutProcess(state.row.clone()));
                self.shared.store.submit(changes).await.map_err(|e| ToolError::store(&e))?;
            }
            None => {}
        }
        // What was returned has been seen: its notices are moot.
        let returned: Vec<MessageId> = page.messages.iter().map(|m| m.message_id).collect();
        state.notices.retain(|n| !returned.contains(&n.message_id));
        Ok((page, acked))
    }

    /// `send_process_message`.
    pub(crate) async fn send_message(
        &self,
        state: &ProcessState,
        request: SendRequest,
        message_key: Option<String>,
    ) -> Result<CallOk, ToolError> {
        let origin =
            Origin { sender: Sender::Process(state.pid()), parent: state.row.parent, grants: &state.grants };
        deliver(&self.shared, origin, request, message_key).await.map(CallOk::Sent)
    }

    /// `read_process_messages`: a snapshot, never blocking.
    pub(crate) async fn read_messages(
        &self,
        state: &mut ProcessState,
        query: MailboxQuery,
        ack: bool,
    ) -> Result<CallOk, ToolError> {
        let (page, acked_message_ids) = self.take_page(state, &query, ack, None).await?;
        let (has_more, omitted_count, continuation) = continuation(&page, &query, ack);
        Ok(CallOk::Read(MessagesRead {
            messages: page.messages,
            acked_message_ids,
            has_more,
            omitted_count,
            continuation,
        }))
    }

    /// `receive_process_messages`: answers now (`Some`) or suspends the caller and keeps the
    /// reply (`None`).
    pub(crate) async fn receive_messages(
        &self,
        state: &mut ProcessState,
        query: MailboxQuery,
        ack: bool,
        block: bool,
        reply: Reply,
    ) -> Option<(Result<CallOk, ToolError>, Reply)> {
        let cannot_block = query.limit == 0 || query.filter.message_ids.as_ref().is_some_and(Vec::is_empty);
        if block && cannot_block {
            let error = ToolError::new(
                "cannot_block",
                "limit=0 or an empty message_ids list can never match, so it cannot form a blocking wait; use block=false",
            );
            return Some((Err(error), reply));
        }
        let peek = match self.shared.store.mailbox(state.pid(), &MailboxQuery { limit: 0, ..query.clone() }) {
            Ok(page) => page,
            Err(e) => return Some((Err(ToolError::store(&e)), reply)),
        };
        if peek.matched > 0 || !block {
            let result = self.received(state, &query, ack, None, false).await;
            return Some((result.map(CallOk::Received), reply));
        }
        let spec = ReceiveSpec { query, ack };
        let event = Event::BeginWait(WaitState::Message { filter: spec.encode() });
        if let Err(e) = self.transition(state, event, Vec::new()).await {
            return Some((Err(e), reply));
        }
        state.pending_wait = Some(Box::new((PendingWait::Receive(spec), reply)));
        None
    }

    async fn received(
        &self,
        state: &mut ProcessState,
        query: &MailboxQuery,
        ack: bool,
        event: Option<Event>,
        suspended: bool,
    ) -> Result<MessagesReceived, ToolError> {
        let (page, acked_message_ids) = self.take_page(state, query, ack, event).await?;
        let (has_more, omitted_count, continuation) = continuation(&page, query, ack);
        Ok(MessagesReceived {
            ready: page.matched > 0,
            suspended,
            messages: page.messages,
            acked_message_ids,
            has_more,
            omitted_count,
            continuation,
        })
    }

    /// A message was committed into this mailbox: complete a matching receive, or queue a
    /// notice for the program.
    pub(crate) async fn on_message_arrived(
        &self,
        myself: &ActorRef<ProcessMsg>,
        state: &mut ProcessState,
        message: Message,
    ) {
        if state.row.status.is_terminal() || state.ending.is_some() {
            return;
        }
        if let Some(spec) = self.waiting_receive(state)
            && spec.query.filter.matches(&message)
        {
            self.complete_receive(myself, state, spec).await;
            return;
        }
        state.notices.push_back(Notice::from(&message));
    }

    /// The receive this process is suspended in, live or saved.
    fn waiting_receive(&self, state: &ProcessState) -> Option<ReceiveSpec> {
        if let Some((PendingWait::Receive(spec), _)) = state.pending_wait.as_deref() {
            return Some(spec.clone());
        }
        match (&state.row.wait_state, &state.run) {
            (Some(WaitState::Message { filter }), None) => ReceiveSpec::decode(filter).ok(),
            _ => None,
        }
    }

    /// A saved receive found a match: resume the saved action.
    pub(crate) async fn complete_receive(
        &self,
        myself: &ActorRef<ProcessMsg>,
        state: &mut ProcessState,
        spec: ReceiveSpec,
    ) {
        let restart = state.run.is_none();
        let was_paused = state.row.status == Status::Paused;
        if restart && !was_paused && !self.shared.images.contains(&state.row.image) {
            // No program could take the messages: keep the receive (and leave them unread)
            // so a runtime that has the image completes it on resume.
            return self.pause_for_image(state).await;
        }
        let pending = state.pending_wait.take().map(|wait| wait.1);
        let event = Event::WaitSatisfied { epoch: self.shared.epoch, claim: restart };
        let result = self.received(state, &spec.query, spec.ack, Some(event), true).await;
        let result = match result {
            Ok(result) => result,
            Err(e) => {
                if let Some(reply) = pending {
                    let _ = reply.send(Err(e));
                }
                return;
            }
        };
        if was_paused {
            state.deferred_wait = Some(Box::new((CallOk::Received(result), pending)));
            return;
        }
        if restart {
            let kind = StartKind::Restarted { completed_wait: None, completed_receive: Some(result) };
            self.launch_program(myself, state, kind).await;
        } else if let Some(reply) = pending {
            let _ = reply.send(Ok(CallOk::Received(result)));
        }
    }

    /// Re-arms a saved receive after a restart: completes it now if a match is already there.
    pub(crate) async fn rearm_receive(
        &self,
        myself: &ActorRef<ProcessMsg>,
        state: &mut ProcessState,
        filter: &str,
    ) {
        let spec = match ReceiveSpec::decode(filter) {
            Ok(spec) => spec,
            Err(message) => {
                let event =
                    Event::Fail { kind: crate::kernel::status::FailureKind::InvariantViolation, message };
                self.begin_ending(myself, state, event, None).await;
                return;
            }
        };
        let probe = MailboxQuery { limit: 0, ..spec.query.clone() };
        if matches!(self.shared.store.mailbox(state.pid(), &probe), Ok(page) if page.matched > 0) {
            self.complete_receive(myself, state, spec).await;
        }
    }

    /// Notices to deliver with the answer of `message_call`: interrupts only with a call that
    /// is not a message call, normal notices with any call.
    pub(crate) fn take_notices(state: &mut ProcessState, message_call: bool) -> Vec<Notice> {
        let mut out = Vec::new();
        let mut keep = std::collections::VecDeque::new();
        for notice in state.notices.drain(..) {
            if notice.kind == MessageKind::Interrupt && message_call {
                keep.push_back(notice);
            } else {
                out.push(notice);
            }
        }
        state.notices = keep;
        out
    }

    /// Unread messages that arrived before this actor started (after a restart) become
    /// notices again, so a restarted program hears of them: every unread interrupt (an
    /// interrupt's notice is durable; there are at most `MAILBOX_UNACKED_MAX`), and the oldest
    /// page of unread normal messages. Oldest first.
    pub(crate) fn reload_notices(&self, state: &mut ProcessState) {
        let unread = |kind: MessageKind, limit: usize| MailboxQuery {
            filter: mailbox::MessageFilter { kind: Some(kind), ..Default::default() },
            include_acked: false,
            limit,
        };
        let mut messages = Vec::new();
        for query in [
            unread(MessageKind::Interrupt, limits::MAILBOX_UNACKED_MAX),
            unread(MessageKind::Normal, limits::MAILBOX_PAGE_MAX),
        ] {
            if let Ok(page) = self.shared.store.mailbox(state.pid(), &query) {
                messages.extend(page.messages);
            }
        }
        messages.sort_by_key(|m| m.seq);
        state.notices.extend(messages.iter().map(Notice::from));
    }
}
