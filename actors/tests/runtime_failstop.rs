//! Fail-stop through the runtime: after a failed commit no further change is accepted, nothing
//! half-done is acknowledged, and a reopen continues from the last committed state.

mod common;

use agentvisor_actors::Status;
use agentvisor_actors::runtime::{Runtime, RuntimeOptions};
use agentvisor_actors::store::ProcessQuery;
use common::{launch, puppet, puppet_root, spawn, try_spawn, until_status};

#[tokio::test]
async fn a_failed_commit_stops_every_later_write_until_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = Runtime::open(dir.path(), RuntimeOptions::new().image(puppet())).await.expect("open");
    let mut events = rt.subscribe();
    let root = puppet_root(&rt).await;
    until_status(&mut events, root, Status::Running).await;
    let kept = spawn(&rt, root, "committed before the failure").await;
    until_status(&mut events, kept, Status::Running).await;

    rt.store().inject_write_failure();
    let refused = try_spawn(&rt, root, launch("never acknowledged", None)).await.expect_err("refused");
    assert_eq!(refused.code, "store_failed", "{refused:?}");
    assert!(!rt.store().is_writable());
    // Every later change is refused too, with the first failure named.
    let again = try_spawn(&rt, root, launch("also refused", None)).await.expect_err("refused");
    assert_eq!(again.code, "store_failed");
    assert!(again.message.contains("stopped accepting writes"), "{again:?}");
    rt.shutdown().await.expect("shutdown");

    // A reopen has exactly what was committed: the root and the one child, nothing else.
    let rt = Runtime::open(dir.path(), RuntimeOptions::new().image(puppet())).await.expect("reopen");
    assert!(rt.store().is_writable());
    let children = rt
        .processes(ProcessQuery { parent: Some(root), include_terminal: true, ..ProcessQuery::default() })
        .expect("children");
    assert_eq!(children.iter().map(|c| c.pid).collect::<Vec<_>>(), vec![kept]);
    assert_eq!(children[0].goal, "committed before the failure");
    // The running rows of the failed runtime were never replayed.
    let root_row = rt.process(root).expect("read").expect("row");
    assert_eq!(root_row.status, Status::Paused);
    assert_eq!(root_row.pause_reason.as_ref().map(|r| r.kind()), Some("stale_execution"));
    rt.shutdown().await.expect("shutdown");
}
