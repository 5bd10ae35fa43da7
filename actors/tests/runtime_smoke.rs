//! Smoke test: a parent spawns workers, waits on each, and reads their results.
use agentvisor_actors::kernel::budget::Budget;
use agentvisor_actors::kernel::capability::{CapabilityRequest, Rights};
use agentvisor_actors::kernel::launch::LaunchRequest;
use agentvisor_actors::runtime::program::{Image, program_fn};
use agentvisor_actors::runtime::{RootSpec, Runtime, RuntimeOptions};
use agentvisor_actors::{ImageId, Status};

fn spawn_cap() -> CapabilityRequest {
    CapabilityRequest {
        resource: "process:spawn".into(),
        rights: Rights::EXECUTE,
        constraints: Default::default(),
        delegable: true,
    }
}

#[tokio::test]
async fn parent_spawns_waits_and_reads_result() {
    let worker = Image::new("worker", |_| {
        program_fn(|ctx| async move {
            let n = ctx.goal().len();
            ctx.exit(Some(serde_json::json!({ "len": n }))).await?;
            Ok(())
        })
    });
    let boss = Image::new("boss", |_| {
        program_fn(|ctx| async move {
            let mut total = 0;
            let mut kids = Vec::new();
            for goal in ["a", "bb", "ccc"] {
                let l = ctx
                    .spawn_child(LaunchRequest {
                        goal: goal.into(),
                        image: Some(ImageId::from("worker")),
                        working_directory: None,
                        inherit_capabilities: vec![],
                        inherit_paths: vec![],
                        resource_budget: None,
                        clearance: None,
                        launch_key: None,
                        restart: Default::default(),
                        supervision: None,
                    })
                    .await?;
                assert_eq!(l.status, Status::Runnable);
                kids.push(l.pid);
            }
            for k in kids {
                let w = ctx.wait_child(k, true).await?;
                assert!(w.ready);
                let obj = ctx.read_object(w.result_oid.expect("oid")).await?;
                total += obj.payload.expect("payload")["len"].as_u64().expect("n");
            }
            ctx.exit(Some(serde_json::json!({ "total": total }))).await?;
            Ok(())
        })
    });
    let rt = Runtime::in_memory(RuntimeOptions::new().image(worker).image(boss)).await.expect("rt");
    let mut caps = vec![spawn_cap()];
    caps.push(CapabilityRequest {
        resource: "image:worker".into(),
        rights: Rights::READ,
        constraints: Default::default(),
        delegable: false,
    });
    let pid = rt
        .spawn_root(RootSpec {
            clearance: None,
            goal_labels: Default::default(),
            goal: "count".into(),
            image: ImageId::from("boss"),
            cwd: "/".into(),
            capabilities: caps,
            budget: Budget::UNLIMITED,
            supervision: None,
        })
        .await
        .expect("root");
    let row = rt.wait_terminal(pid).await.expect("wait");
    assert_eq!(row.status, Status::Exited, "{row:?}");
    let obj = rt.payload(row.result_oid.expect("oid")).expect("read").expect("payload");
    assert_eq!(obj["total"], 6);
    rt.shutdown().await.expect("shutdown");
}
