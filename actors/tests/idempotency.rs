//! Idempotency keys: a launch with a `launch_key` and a send with a `message_key` made twice
//! create one child and one message, and the second call answers the first call's result —
//! within one runtime, and across a reopen of a real SQLite state directory. Also: a reopen
//! by a runtime that lacks a process's image pauses it (`image_unavailable`) instead of
//! failing it, and a later runtime with the image resumes it.

mod common;

use agentvisor_actors::Pid;
use agentvisor_actors::kernel::budget::Budget;
use agentvisor_actors::kernel::mailbox::{MailboxQuery, MessageKind};
use agentvisor_actors::kernel::status::{PauseReason, SignalKind, Status};
use agentvisor_actors::runtime::calls::{Call, CallOk, Launched, SendRequest, SentMessage};
use agentvisor_actors::runtime::{Runtime, RuntimeOptions};
use agentvisor_actors::store::ProcessQuery;
use common::*;

fn keyed(goal: &str, key: &str) -> agentvisor_actors::kernel::launch::LaunchRequest {
    let mut request = launch(goal, None);
    request.launch_key = Some(key.to_string());
    request
}

async fn spawn_keyed(rt: &Runtime, parent: Pid, goal: &str, key: &str) -> Launched {
    match rt.call_as(parent, Call::Spawn(keyed(goal, key))).await.expect("the launch") {
        CallOk::Spawned(launched) => launched,
        other => panic!("unexpected answer {other:?}"),
    }
}

fn send_to(to: Pid, body: &str) -> SendRequest {
    SendRequest {
        to,
        body: body.into(),
        payload: None,
        channel: Some("work".into()),
        correlation_id: None,
        reply_to: None,
        kind: MessageKind::Normal,
    }
}

async fn send_keyed(rt: &Runtime, from: Pid, to: Pid, body: &str, key: &str) -> SentMessage {
    let call = Call::SendKeyed { message_key: key.into(), request: Box::new(send_to(to, body)) };
    match rt.call_as(from, call).await.expect("the send") {
        CallOk::Sent(sent) => sent,
        other => panic!("unexpected answer {other:?}"),
    }
}

fn children(rt: &Runtime, parent: Pid) -> Vec<Pid> {
    rt.processes(ProcessQuery { parent: Some(parent), include_terminal: true, ..ProcessQuery::default() })
        .expect("children")
        .into_iter()
        .map(|r| r.pid)
        .collect()
}

fn mailbox_len(rt: &Runtime, pid: Pid) -> u64 {
    let query = MailboxQuery { filter: Default::default(), include_acked: true, limit: 0 };
    rt.read_mailbox(pid, &query).expect("mailbox").matched
}

#[tokio::test]
async fn a_second_keyed_launch_or_send_answers_the_first_and_creates_nothing() {
    let rt = Runtime::in_memory(RuntimeOptions::new().image(puppet())).await.expect("runtime");
    let root = puppet_root(&rt).await;
    let first = spawn_keyed(&rt, root, "entry a", "a").await;
    let again = spawn_keyed(&rt, root, "entry a", "a").await;
    assert_eq!(first, again, "the second launch answers the first launch's result");
    let other = spawn_keyed(&rt, root, "entry b", "b").await;
    assert_ne!(other.pid, first.pid);
    assert_eq!(children(&rt, root), vec![first.pid, other.pid]);

    let sent = send_keyed(&rt, root, first.pid, "do a", "m1").await;
    let resent = send_keyed(&rt, root, first.pid, "do a", "m1").await;
    assert_eq!(sent, resent);
    assert_eq!(mailbox_len(&rt, first.pid), 1);
    // The key is per caller: the child may use the same key to its parent.
    let up = send_keyed(&rt, first.pid, root, "done", "m1").await;
    assert_ne!(up.message_id, sent.message_id);

    // Keys are checked: empty and oversized ones are refused and change nothing.
    for bad in [String::new(), "k".repeat(257)] {
        let refused = rt.call_as(root, Call::Spawn(keyed("entry c", &bad))).await.expect_err("refused");
        assert_eq!(refused.code, "invalid_arguments", "{refused:?}");
    }
    assert_eq!(children(&rt, root).len(), 2);
}

#[tokio::test]
async fn keyed_calls_answer_the_first_result_after_a_reopen() {
    let dir = tempfile::tempdir().expect("state dir");
    let options = || RuntimeOptions::new().image(puppet());
    let (root, first, sent) = {
        let rt = Runtime::open(dir.path(), options()).await.expect("open");
        let root = puppet_root(&rt).await;
        let first = spawn_keyed(&rt, root, "entry a", "a").await;
        let sent = send_keyed(&rt, root, first.pid, "do a", "m1").await;
        rt.shutdown().await.expect("shutdown");
        (root, first, sent)
    };
    let rt = Runtime::open(dir.path(), options()).await.expect("reopen");
    // The root's execution was stopped by the shutdown; a resume restarts it, and the
    // restarted program issues its calls again.
    assert_eq!(row(&rt, root).status, Status::Paused);
    rt.signal(root, SignalKind::Resume, None).await.expect("resume");
    let again = spawn_keyed(&rt, root, "entry a", "a").await;
    assert_eq!(again, first);
    assert_eq!(children(&rt, root), vec![first.pid]);
    let resent = send_keyed(&rt, root, first.pid, "do a", "m1").await;
    assert_eq!(resent, sent);
    assert_eq!(mailbox_len(&rt, first.pid), 1);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_runtime_without_the_image_pauses_the_process_and_one_with_it_resumes_it() {
    let dir = tempfile::tempdir().expect("state dir");
    let (root, child) = {
        let rt = Runtime::open(dir.path(), RuntimeOptions::new().image(puppet()).image(other_puppet()))
            .await
            .expect("open");
        let mut spec = root_spec("puppet", Budget::UNLIMITED);
        spec.capabilities.push(image_read("puppet.other"));
        let root = rt.spawn_root(spec).await.expect("root");
        let child = spawn_keyed_on(&rt, root, "puppet.other").await;
        rt.shutdown().await.expect("shutdown");
        (root, child)
    };
    // As an earlier runtime would have left it after a crash between the launch and the
    // start: the child never started.
    leave_never_started(dir.path(), child).await;
    let before = {
        let view = Runtime::open_read_only(dir.path(), RuntimeOptions::new()).expect("view");
        view.process(child).expect("read").expect("row")
    };
    // Reopened with the first image only: the child's program cannot start.
    let rt = Runtime::open(dir.path(), RuntimeOptions::new().image(puppet())).await.expect("reopen");
    let row_now = until_paused_for_image(&rt, child, &before).await;
    assert!(
        matches!(&row_now.pause_reason, Some(PauseReason::ImageUnavailable { image }) if image == "puppet.other"),
        "{row_now:?}"
    );
    assert!(!row_now.status.is_terminal());
    assert!(row_now.state_generation > before.state_generation, "generations stay monotone");
    let refused = rt.signal(child, SignalKind::Resume, None).await.expect_err("refused without the image");
    assert_eq!(refused.code, "image_unavailable", "{refused:?}");
    assert_eq!(row(&rt, child), row_now, "a refused resume changes nothing");
    assert!(!row(&rt, root).status.is_terminal());
    rt.shutdown().await.expect("shutdown");

    let rt = Runtime::open(dir.path(), RuntimeOptions::new().image(puppet()).image(other_puppet()))
        .await
        .expect("reopen with both images");
    let resumed = rt.signal(child, SignalKind::Resume, None).await.expect("resume with the image");
    assert!(!resumed.status.is_terminal(), "{resumed:?}");
    rt.shutdown().await.expect("shutdown");
}

/// A child of `parent` on `image`, launched with a key.
async fn spawn_keyed_on(rt: &Runtime, parent: Pid, image: &str) -> Pid {
    let mut request = launch("on another image", Some(image));
    request.launch_key = Some("other".into());
    match rt.call_as(parent, Call::Spawn(request)).await.expect("launch") {
        CallOk::Spawned(launched) => launched.pid,
        other => panic!("unexpected answer {other:?}"),
    }
}

/// Waits, on telemetry, until `pid` is paused for its image.
async fn until_paused_for_image(
    rt: &Runtime,
    pid: Pid,
    before: &agentvisor_actors::kernel::process::ProcessRow,
) -> agentvisor_actors::kernel::process::ProcessRow {
    let mut events = rt.subscribe();
    loop {
        let now = row(rt, pid);
        if matches!(now.pause_reason, Some(PauseReason::ImageUnavailable { .. })) {
            return now;
        }
        assert!(!now.status.is_terminal(), "{now:?} (was {before:?})");
        events.recv().await.expect("an event");
    }
}

fn other_puppet() -> agentvisor_actors::runtime::program::Image {
    agentvisor_actors::runtime::program::Image::new("puppet.other", |_| {
        agentvisor_actors::runtime::program::program_fn(|_ctx| {
            std::future::pending::<agentvisor_actors::runtime::program::ProgramResult>()
        })
    })
}
