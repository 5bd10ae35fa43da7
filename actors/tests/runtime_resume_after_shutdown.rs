//! `RuntimeOptions::resume_after_shutdown`: processes a clean shutdown paused restart from
//! their checkpoint on the next open when asked to, and stay paused otherwise.

mod common;

use agentvisor_actors::kernel::budget::Budget;
use agentvisor_actors::kernel::status::PauseReason;
use agentvisor_actors::runtime::program::{Image, StartKind, program_fn};
use agentvisor_actors::runtime::telemetry::KernelEvent;
use agentvisor_actors::runtime::{Runtime, RuntimeOptions};
use agentvisor_actors::{Pid, Status};
use common::{launch, puppet, root_spec};
use serde_json::json;

/// Fresh: checkpoints, launches a puppet child (the test's signal that the checkpoint is
/// committed), then idles. Restarted: exits with what it restored.
fn checkpointer() -> Image {
    Image::new("checkpointer", |_| {
        program_fn(|ctx| async move {
            match ctx.start_kind() {
                StartKind::Fresh => {
                    ctx.checkpoint(b"step-1".to_vec()).await?;
                    ctx.spawn_child(launch("idle child", Some("puppet"))).await?;
                    std::future::pending::<()>().await;
                    Ok(())
                }
                StartKind::Restarted { .. } => {
                    let restored = ctx.restored_checkpoint().map(|b| String::from_utf8_lossy(b).to_string());
                    ctx.exit(Some(json!({ "restored": restored }))).await?;
                    Ok(())
                }
            }
        })
    })
}

fn options(resume: bool) -> RuntimeOptions {
    RuntimeOptions::new().image(puppet()).image(checkpointer()).resume_after_shutdown(resume)
}

async fn run_until_checkpointed(dir: &std::path::Path) -> Pid {
    let rt = Runtime::open(dir, options(false)).await.expect("open");
    let mut events = rt.subscribe();
    let root = rt.spawn_root(root_spec("checkpointer", Budget::UNLIMITED)).await.expect("root");
    loop {
        match events.recv().await {
            Ok(KernelEvent::ProcessLaunched { parent: Some(p), .. }) if p == root => break,
            Ok(_) => {}
            Err(e) => panic!("telemetry: {e}"),
        }
    }
    rt.shutdown().await.expect("shutdown");
    root
}

#[tokio::test]
async fn shutdown_paused_processes_resume_from_their_checkpoint_when_asked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = run_until_checkpointed(dir.path()).await;
    let rt = Runtime::open(dir.path(), options(true)).await.expect("reopen");
    let row = rt.wait_terminal(root).await.expect("ends");
    assert_eq!(row.status, Status::Exited, "{row:?}");
    let result = rt.payload(row.result_oid.expect("a result")).expect("read");
    assert_eq!(result, Some(json!({ "restored": "step-1" })));
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn shutdown_paused_processes_stay_paused_by_default() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = run_until_checkpointed(dir.path()).await;
    let rt = Runtime::open(dir.path(), options(false)).await.expect("reopen");
    let row = rt.process(root).expect("read").expect("row");
    assert_eq!(row.status, Status::Paused);
    assert_eq!(row.pause_reason, Some(PauseReason::Shutdown));
    rt.shutdown().await.expect("shutdown");
}
