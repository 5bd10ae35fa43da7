//! Mailboxes across a restart, on a real SQLite state directory (`Runtime::open`, `shutdown`,
//! `open` again): messages keep their acknowledgement state, unread ones are noticed again, and
//! a process blocked in `receive_process_messages` stays `waiting_event` and completes — its
//! program restarted with `StartKind::Restarted { completed_receive }` — when a matching message
//! is sent in the new runtime, or at once when the match was stored while no runtime ran.
//!
//! Processes run the `probe` image, whose program reports each start and then does nothing; the
//! test drives them with `Runtime::call_as`. Suspension is observed through telemetry.

mod common;

use agentvisor_actors::Pid;
use agentvisor_actors::kernel::budget::Budget;
use agentvisor_actors::kernel::mailbox::{
    MailboxQuery, Message, MessageFilter, MessageId, MessageKind, Notice,
};
use agentvisor_actors::kernel::status::{PauseReason, Sender, SignalKind, Status, WaitState};
use agentvisor_actors::runtime::calls::{Call, CallOk, MessagesRead, MessagesReceived, SendRequest};
use agentvisor_actors::runtime::program::{Image, StartKind, program_fn};
use agentvisor_actors::runtime::{DB_FILE, Runtime, RuntimeOptions};
use agentvisor_actors::store::{Change, SqliteStore, Store};
use common::{root_spec, row, spawn, until_status};
use std::path::Path;
use tokio::sync::mpsc;
use uuid::Uuid;

/// What a probe program saw when it started.
#[derive(Debug)]
struct Started {
    pid: Pid,
    kind: StartKind,
}

/// An image named `probe` whose program reports each start, then does nothing.
fn probe(tx: mpsc::UnboundedSender<Started>) -> RuntimeOptions {
    let image = Image::new("probe", move |_start| {
        let tx = tx.clone();
        program_fn(move |ctx| async move {
            let _ = tx.send(Started { pid: ctx.pid(), kind: ctx.start_kind().clone() });
            std::future::pending().await
        })
    });
    RuntimeOptions::new().image(image)
}

async fn open(dir: &Path, tx: mpsc::UnboundedSender<Started>) -> Runtime {
    let rt = Runtime::open(dir, probe(tx)).await.expect("open the state directory");
    assert!(!rt.is_read_only());
    rt
}

/// The next start `pid`'s program reports (others are skipped).
async fn next_start(rx: &mut mpsc::UnboundedReceiver<Started>, pid: Pid) -> StartKind {
    loop {
        let started = rx.recv().await.expect("the runtime reports starts");
        if started.pid == pid {
            return started.kind;
        }
    }
}

fn request(to: Pid, body: &str, channel: &str) -> SendRequest {
    SendRequest {
        to,
        body: body.into(),
        payload: None,
        channel: Some(channel.into()),
        correlation_id: None,
        reply_to: None,
        kind: MessageKind::Normal,
    }
}

async fn send(rt: &Runtime, from: Pid, to: Pid, body: &str, channel: &str) -> MessageId {
    match rt.call_as(from, Call::Send(request(to, body, channel))).await {
        Ok(CallOk::Sent(s)) => s.message_id,
        other => panic!("send answered {other:?}"),
    }
}

fn query(filter: MessageFilter, include_acked: bool) -> MailboxQuery {
    MailboxQuery { filter, include_acked, limit: 20 }
}

fn on_channel(channel: &str) -> MessageFilter {
    MessageFilter { channel: Some(channel.into()), ..MessageFilter::default() }
}

async fn read(rt: &Runtime, pid: Pid, query: MailboxQuery, ack: bool) -> MessagesRead {
    match rt.call_as(pid, Call::Read { query, ack }).await {
        Ok(CallOk::Read(r)) => r,
        other => panic!("read answered {other:?}"),
    }
}

/// The host's view of a mailbox (never acknowledges): (id, acked) oldest first.
fn mailbox(rt: &Runtime, pid: Pid) -> Vec<(MessageId, bool)> {
    let page = rt.read_mailbox(pid, &query(MessageFilter::default(), true)).expect("host read");
    page.messages.iter().map(|m| (m.message_id, m.acked)).collect()
}

/// Makes a blocking receive as `pid` on `channel` and returns once the process is committed
/// `waiting_event`. The call's future is then dropped: that does not withdraw the call (its
/// saved receive is durable), and it lets the test shut the runtime down.
async fn block_in_receive(rt: &Runtime, pid: Pid, channel: &str) {
    let mut events = rt.subscribe();
    let call = Call::Receive { query: query(on_channel(channel), false), ack: true, block: true };
    tokio::select! {
        answer = rt.call_as(pid, call) => panic!("the receive answered instead of blocking: {answer:?}"),
        _ = until_status(&mut events, pid, Status::WaitingEvent) => {}
    }
}

fn completed_receive(kind: StartKind) -> MessagesReceived {
    match kind {
        StartKind::Restarted { completed_wait: None, completed_receive: Some(r) } => r,
        other => panic!("expected a restart with a completed receive, got {other:?}"),
    }
}

#[tokio::test]
async fn messages_and_a_blocked_receive_survive_a_restart() {
    let dir = tempfile::tempdir().expect("a state directory");
    let (tx, _rx) = mpsc::unbounded_channel();
    let rt = open(dir.path(), tx).await;
    let parent = rt.spawn_root(root_spec("probe", Budget::UNLIMITED)).await.expect("root");
    let reader = spawn(&rt, parent, "reads some of its mail").await;
    let waiter = spawn(&rt, parent, "blocks in receive").await;

    let acked = send(&rt, parent, reader, "read before the restart", "work").await;
    let unread = send(&rt, parent, reader, "still unread", "work").await;
    let up = send(&rt, reader, parent, "for the parent", "status").await;
    let first = read(
        &rt,
        reader,
        query(MessageFilter { message_ids: Some(vec![acked]), ..Default::default() }, false),
        true,
    )
    .await;
    assert_eq!(first.acked_message_ids, [acked]);

    block_in_receive(&rt, waiter, "wake").await;
    let ignored = send(&rt, parent, waiter, "not the one", "other").await;
    let saved = row(&rt, waiter).wait_state.expect("a saved receive");
    assert_eq!(saved.kind(), "message");

    rt.shutdown().await.expect("shutdown");

    // Reopen: rows, messages and acknowledgement state come back from SQLite.
    let (tx, mut rx) = mpsc::unbounded_channel();
    let rt = open(dir.path(), tx).await;
    assert_eq!(mailbox(&rt, reader), [(acked, true), (unread, false)], "ack state survives");
    assert_eq!(mailbox(&rt, parent), [(up, false)]);
    assert_eq!(mailbox(&rt, waiter), [(ignored, false)]);
    assert_eq!((rt.unread_count(reader).expect("n"), rt.unread_count(waiter).expect("n")), (1, 1));
    let w = row(&rt, waiter);
    assert_eq!((w.status, w.wait_state), (Status::WaitingEvent, Some(saved)), "still blocked in its receive");
    for pid in [parent, reader] {
        assert_eq!(row(&rt, pid).pause_reason, Some(PauseReason::Shutdown));
    }

    // The reader comes back: its unread message is noticed again, and a default read returns
    // only that one (the acknowledged one stays excluded, not deleted).
    rt.signal(reader, SignalKind::Resume, None).await.expect("resume the reader");
    assert_eq!(
        next_start(&mut rx, reader).await,
        StartKind::Restarted { completed_wait: None, completed_receive: None }
    );
    let listed = rt.call_as_with_notices(reader, Call::List { include_terminal: true }).await;
    assert!(listed.result.is_ok(), "{:?}", listed.result);
    let notice = Notice { message_id: unread, kind: MessageKind::Normal, sender: Sender::Process(parent) };
    assert_eq!(listed.notices, [notice], "unread messages are noticed again after a restart");
    let page = read(&rt, reader, query(MessageFilter::default(), false), true).await;
    assert_eq!(page.messages.iter().map(|m| m.message_id).collect::<Vec<_>>(), [unread]);
    let all = read(&rt, reader, query(MessageFilter::default(), true), false).await;
    assert_eq!(
        all.messages.iter().map(|m| (m.message_id, m.acked)).collect::<Vec<_>>(),
        [(acked, true), (unread, true)]
    );

    // A matching message sent in the new runtime completes the saved receive.
    rt.signal(parent, SignalKind::Resume, None).await.expect("resume the parent");
    let wake = send(&rt, parent, waiter, "wake up", "wake").await;
    let received = completed_receive(next_start(&mut rx, waiter).await);
    assert!(received.ready && received.suspended, "{received:?}");
    assert_eq!(received.messages.iter().map(|m| m.message_id).collect::<Vec<_>>(), [wake]);
    assert_eq!(received.acked_message_ids, [wake]);
    let w = row(&rt, waiter);
    assert_eq!((w.status, w.wait_state), (Status::Running, None));
    assert_eq!(mailbox(&rt, waiter), [(ignored, false), (wake, true)], "the non-match stays queued");
    rt.shutdown().await.expect("shutdown");

    // What the second runtime acknowledged is durable too.
    let (tx, _rx) = mpsc::unbounded_channel();
    let rt = open(dir.path(), tx).await;
    assert_eq!(mailbox(&rt, waiter), [(ignored, false), (wake, true)]);
    assert_eq!(mailbox(&rt, reader), [(acked, true), (unread, true)]);
    assert_eq!(mailbox(&rt, parent), [(up, false)], "never read, still unread");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_receive_whose_match_was_stored_while_no_runtime_ran_completes_on_reopen() {
    let dir = tempfile::tempdir().expect("a state directory");
    let (tx, _rx) = mpsc::unbounded_channel();
    let rt = open(dir.path(), tx).await;
    let parent = rt.spawn_root(root_spec("probe", Budget::UNLIMITED)).await.expect("root");
    let waiter = spawn(&rt, parent, "blocks in receive").await;
    block_in_receive(&rt, waiter, "wake").await;
    rt.shutdown().await.expect("shutdown");

    // The match reached the store, but no runtime was there to complete the receive.
    let store = SqliteStore::open(&dir.path().join(DB_FILE)).expect("open the store");
    let seq = store.message_seq_max().expect("seq") + 1;
    let message = Message {
        message_id: MessageId(Uuid::now_v7()),
        recipient: waiter,
        sender: Sender::Host,
        seq,
        kind: MessageKind::Normal,
        channel: Some("wake".into()),
        correlation_id: None,
        reply_to: None,
        body: "stored while nobody ran".into(),
        payload: None,
        labels: Vec::new(),
        acked: false,
    };
    store.submit(vec![Change::PutMessage(message.clone())]).await.expect("store the message");
    store.close();

    let (tx, mut rx) = mpsc::unbounded_channel();
    let rt = open(dir.path(), tx).await;
    let received = completed_receive(next_start(&mut rx, waiter).await);
    // A page shows each message as it was when read, before this call acknowledged it.
    assert_eq!(received.messages, std::slice::from_ref(&message));
    assert!(received.ready && received.suspended);
    let w = row(&rt, waiter);
    assert_eq!((w.status, w.wait_state), (Status::Running, None::<WaitState>));
    assert_eq!(mailbox(&rt, waiter), [(message.message_id, true)]);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn an_interrupt_behind_a_long_unread_backlog_is_still_noticed_after_a_restart() {
    let dir = tempfile::tempdir().expect("a state directory");
    let (tx, _rx) = mpsc::unbounded_channel();
    let rt = open(dir.path(), tx).await;
    let parent = rt.spawn_root(root_spec("probe", Budget::UNLIMITED)).await.expect("root");
    let busy = spawn(&rt, parent, "has a long backlog").await;
    rt.shutdown().await.expect("shutdown");

    // More unread messages than one page, then an interrupt, all stored while nobody ran.
    let store = SqliteStore::open(&dir.path().join(DB_FILE)).expect("open the store");
    let first_seq = store.message_seq_max().expect("seq") + 1;
    let backlog = 600;
    let message = |seq: u64, kind: MessageKind| Message {
        message_id: MessageId(Uuid::now_v7()),
        recipient: busy,
        sender: Sender::Host,
        seq,
        kind,
        channel: None,
        correlation_id: None,
        reply_to: None,
        body: format!("message {seq}"),
        payload: None,
        labels: Vec::new(),
        acked: false,
    };
    let mut changes: Vec<Change> =
        (0..backlog).map(|i| Change::PutMessage(message(first_seq + i, MessageKind::Normal))).collect();
    let interrupt = message(first_seq + backlog, MessageKind::Interrupt);
    changes.push(Change::PutMessage(interrupt.clone()));
    store.submit(changes).await.expect("store the messages");
    store.close();

    let (tx, mut rx) = mpsc::unbounded_channel();
    let rt = open(dir.path(), tx).await;
    rt.signal(busy, SignalKind::Resume, None).await.expect("resume");
    next_start(&mut rx, busy).await;
    let listed = rt.call_as_with_notices(busy, Call::List { include_terminal: true }).await;
    assert!(listed.result.is_ok(), "{:?}", listed.result);
    let interrupts: Vec<&Notice> =
        listed.notices.iter().filter(|n| n.kind == MessageKind::Interrupt).collect();
    assert_eq!(
        interrupts,
        [&Notice { message_id: interrupt.message_id, kind: MessageKind::Interrupt, sender: Sender::Host }],
        "an interrupt's notice is durable, however many unread messages precede it"
    );
    rt.shutdown().await.expect("shutdown");
}
