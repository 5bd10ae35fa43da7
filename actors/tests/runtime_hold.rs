//! A runtime opened held (`RuntimeOptions::hold`) runs nothing it recovered until the host
//! signals a process or releases the hold: a `runnable` row stays runnable, a saved wait is
//! kept; `release_hold` lets each enter the execution its row calls for.

mod common;

use agentvisor_actors::kernel::status::{SignalKind, Status};
use agentvisor_actors::runtime::telemetry::KernelEvent;
use agentvisor_actors::runtime::{Runtime, RuntimeOptions};
use common::*;

#[tokio::test]
async fn a_held_runtime_starts_nothing_until_released() {
    let dir = tempfile::tempdir().expect("state dir");
    let options = || RuntimeOptions::new().image(puppet());
    let (root, child) = {
        let rt = Runtime::open(dir.path(), options()).await.expect("open");
        let root = puppet_root(&rt).await;
        let child = spawn(&rt, root, "a child").await;
        rt.shutdown().await.expect("shutdown");
        (root, child)
    };
    // As a crash between a launch and its start leaves it.
    leave_never_started(dir.path(), child).await;
    // Held and shut down: an actor's entry runs before any message it handles, so without the
    // hold the child would have started by the shutdown (and been paused by it).
    let generation = {
        let rt = Runtime::open(dir.path(), options().hold(true)).await.expect("open held");
        rt.shutdown().await.expect("shutdown");
        let view = Runtime::open_read_only(dir.path(), options()).expect("view");
        let left = view.process(child).expect("read").expect("row");
        assert_eq!(left.status, Status::Runnable, "{left:?}");
        left.state_generation
    };
    let rt = Runtime::open(dir.path(), options().hold(true)).await.expect("open held");
    assert_eq!(row(&rt, child).state_generation, generation);
    let mut events = rt.subscribe();
    // A signal the host sends acts: the root resumes. Nothing else moves.
    rt.signal(root, SignalKind::Resume, None).await.expect("resume the root");
    assert_eq!(row(&rt, root).status, Status::Running);
    assert_eq!(row(&rt, child).status, Status::Runnable, "held: the runnable child did not start");
    rt.release_hold();
    loop {
        if let Ok(KernelEvent::ProcessTransition { pid, to: Status::Running, .. }) = events.recv().await
            && pid == child
        {
            break;
        }
    }
    assert_eq!(row(&rt, child).status, Status::Running, "released: it started");
    rt.shutdown().await.expect("shutdown");
}
