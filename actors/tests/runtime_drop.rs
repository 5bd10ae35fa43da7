//! A runtime dropped without `shutdown` ends as a crash does: nothing it ran writes to the
//! state after it is gone, its programs' tasks end, and the next owner recovers what it left.

mod common;

use agentvisor_actors::kernel::budget::Budget;
use agentvisor_actors::runtime::calls::SendRequest;
use agentvisor_actors::runtime::program::{Image, program_fn};
use agentvisor_actors::runtime::{Runtime, RuntimeOptions};
use common::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;

/// A program that sends itself messages one after another until a send fails, counting the
/// ones that were answered. It says `sent one` after its first answered send and `ended` when
/// its task ends, whether a send failed or the task was ended from outside.
fn chatter(sent: Arc<AtomicU64>, said: mpsc::UnboundedSender<&'static str>) -> Image {
    Image::new("chatter", move |_| {
        let (sent, said) = (Arc::clone(&sent), said.clone());
        program_fn(move |ctx| async move {
            let _ended = Ended(said.clone());
            loop {
                if ctx.send_message(SendRequest::new(ctx.pid(), "tick")).await.is_err() {
                    let _ = said.send("a send failed");
                    return Ok(());
                }
                if sent.fetch_add(1, Ordering::SeqCst) == 0 {
                    let _ = said.send("sent one");
                }
            }
        })
    })
}

/// Says `ended` when dropped: a program holding it says so when its task ends.
struct Ended(mpsc::UnboundedSender<&'static str>);

impl Drop for Ended {
    fn drop(&mut self) {
        let _ = self.0.send("ended");
    }
}

/// A program that says it started, then waits forever holding an [`Ended`].
fn idler(said: mpsc::UnboundedSender<&'static str>) -> Image {
    Image::new("idler", move |_| {
        let said = said.clone();
        program_fn(move |_ctx| async move {
            let _ended = Ended(said.clone());
            let _ = said.send("started");
            std::future::pending::<()>().await;
            Ok(())
        })
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dropped_runtime_ends_its_programs_tasks() {
    let (said, mut heard) = mpsc::unbounded_channel();
    let rt =
        Runtime::in_memory(RuntimeOptions::new().image(puppet()).image(idler(said))).await.expect("runtime");
    let root = rt.spawn_root(root_spec("idler", Budget::UNLIMITED)).await.expect("root");
    spawn(&rt, root, "an idle child").await;
    assert_eq!(heard.recv().await, Some("started"));
    assert_eq!(heard.recv().await, Some("started"));
    drop(rt);
    // A bound on a hang, not a synchronisation.
    for _ in 0..2 {
        let ended = tokio::time::timeout(Duration::from_secs(60), heard.recv()).await;
        assert_eq!(ended, Ok(Some("ended")), "a program's task outlived the dropped runtime");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dropped_runtime_writes_nothing_more_and_the_next_owner_recovers_its_processes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sent = Arc::new(AtomicU64::new(0));
    let (said, mut heard) = mpsc::unbounded_channel();
    let options = RuntimeOptions::new().image(puppet()).image(chatter(Arc::clone(&sent), said));
    let rt = Runtime::open(dir.path(), options).await.expect("open");
    let root = rt.spawn_root(root_spec("chatter", Budget::UNLIMITED)).await.expect("root");
    assert_eq!(heard.recv().await, Some("sent one"));

    drop(rt);
    // A bound on a hang, not a synchronisation: the dropped runtime ends the program's task,
    // or the program's next send fails first and it returns.
    let ended = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            match heard.recv().await {
                Some("a send failed") => continue,
                other => return other,
            }
        }
    })
    .await;
    assert_eq!(ended, Ok(Some("ended")), "the dropped runtime's program went on sending");
    let answered = sent.load(Ordering::SeqCst);

    let next = Runtime::open(dir.path(), RuntimeOptions::new().image(puppet())).await.expect("reopen");
    assert!(!next.is_read_only(), "the dropped runtime released the state directory");
    assert_eq!(next.recovery_report().stale_paused, [root], "the running root is recovered as stale");
    // Every answered send is there; the one in flight at the drop may have committed unanswered.
    let unread = next.store().unread_count(root).expect("unread");
    assert!((answered..=answered + 1).contains(&unread), "{unread} messages, {answered} answered");
    next.shutdown().await.expect("shutdown");
}
