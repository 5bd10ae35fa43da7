//! A SIGKILL crash with messages in flight, against the real SQLite store: nothing
//! acknowledged is lost, nothing unread is marked read, and a receive blocked at the moment of
//! the crash is re-armed and completes on a match sent after the reopen.
//!
//! Same fixture pattern as `crash_sigkill.rs`: the test re-executes its own binary as the
//! crash child, which commits the state, prints a ready line and blocks until killed.

mod common;

use agentvisor_actors::kernel::mailbox::{MailboxQuery, MessageFilter, MessageId, MessageKind};
use agentvisor_actors::kernel::status::WaitState;
use agentvisor_actors::runtime::calls::{Call, CallOk, SendRequest};
use agentvisor_actors::runtime::{Runtime, RuntimeOptions};
use agentvisor_actors::{Pid, Status};
use common::{crash, puppet, puppet_root, spawn, until_status};
use std::io::Write;
use std::path::{Path, PathBuf};

const CHILD_ENV: &str = "AGENTVISOR_CRASH_MAILBOX_DIR";
const READY: &str = "AGENTVISOR_CRASH_MAILBOX_READY";

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

fn on_channel(channel: &str, limit: usize) -> MailboxQuery {
    MailboxQuery {
        filter: MessageFilter { channel: Some(channel.into()), ..MessageFilter::default() },
        include_acked: false,
        limit,
    }
}

/// The crash child's role; does nothing unless run by the crash test.
#[test]
#[ignore = "the crash child: run in a process of its own by the SIGKILL test in this file"]
fn crash_mailbox_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else { return };
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("tokio");
    runtime.block_on(child_main(PathBuf::from(dir)));
}

async fn child_main(dir: PathBuf) {
    let rt =
        std::sync::Arc::new(Runtime::open(&dir, RuntimeOptions::new().image(puppet())).await.expect("open"));
    let mut events = rt.subscribe();
    let parent = puppet_root(&rt).await;
    let child = spawn(&rt, parent, "mailbox owner").await;
    until_status(&mut events, child, Status::Running).await;
    let mut ids = Vec::new();
    for body in ["one", "two", "three"] {
        match rt.call_as(parent, Call::Send(request(child, body, "work"))).await {
            Ok(CallOk::Sent(s)) => ids.push(s.message_id),
            other => panic!("send answered {other:?}"),
        }
    }
    // The child reads, and so acknowledges, the first two.
    match rt.call_as(child, Call::Read { query: on_channel("work", 2), ack: true }).await {
        Ok(CallOk::Read(r)) => assert_eq!(r.acked_message_ids, ids[..2].to_vec()),
        other => panic!("read answered {other:?}"),
    }
    // Then it blocks on a channel nobody has written to yet.
    let waiting = rt.clone();
    let call = Call::Receive { query: on_channel("wake", 10), ack: true, block: true };
    tokio::spawn(async move { waiting.call_as(child, call).await });
    until_status(&mut events, child, Status::WaitingEvent).await;
    let words: Vec<String> = [parent.to_string(), child.to_string()]
        .into_iter()
        .chain(ids.iter().map(|m| m.to_string()))
        .collect();
    let mut out = std::io::stdout().lock();
    writeln!(out, "\n{READY} {}", words.join(" ")).expect("ready line");
    out.flush().expect("flush");
    drop(out);
    std::future::pending::<()>().await;
}

fn run_and_kill(dir: &Path) -> Vec<String> {
    let envs = [(CHILD_ENV, dir.to_string_lossy().to_string())];
    crash::run_until_ready_then_kill("crash_mailbox_child", &envs, &[], READY)
}

#[tokio::test]
async fn sigkill_keeps_every_acknowledgement_and_rearms_a_blocked_receive() {
    let dir = tempfile::tempdir().expect("tempdir");
    let words = run_and_kill(dir.path());
    let parent: Pid = words[0].parse().expect("pid");
    let child: Pid = words[1].parse().expect("pid");
    let ids: Vec<MessageId> = words[2..].iter().map(|w| w.parse().expect("message id")).collect();

    let rt = Runtime::open(dir.path(), RuntimeOptions::new().image(puppet())).await.expect("reopen");
    let row = rt.process(child).expect("read").expect("row");
    assert_eq!(row.status, Status::WaitingEvent, "the blocked receive survived: {row:?}");
    assert!(matches!(row.wait_state, Some(WaitState::Message { .. })));

    let everything = MailboxQuery { filter: MessageFilter::default(), include_acked: true, limit: 100 };
    let page = rt.read_mailbox(child, &everything).expect("read");
    let seen: Vec<(MessageId, bool)> = page.messages.iter().map(|m| (m.message_id, m.acked)).collect();
    assert_eq!(seen, vec![(ids[0], true), (ids[1], true), (ids[2], false)]);
    assert_eq!(rt.unread_count(child).expect("count"), 1);

    // The parent was running at the crash, so it came back a paused stale execution (its calls
    // would be held until a resume): the host sends the match instead.
    assert_eq!(rt.process(parent).expect("read").expect("row").status, Status::Paused);
    let mut events = rt.subscribe();
    let wake = rt.send_message(request(child, "go", "wake")).await.expect("host send").message_id;
    until_status(&mut events, child, Status::Running).await;
    let page = rt.read_mailbox(child, &everything).expect("read");
    assert!(page.messages.iter().any(|m| m.message_id == wake && m.acked), "{page:?}");
    assert_eq!(rt.unread_count(child).expect("count"), 1, "only `three` is still unread");
    rt.shutdown().await.expect("shutdown");
}
