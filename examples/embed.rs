//! Embedding agentvisor: a parent process fans out to three workers, waits on each, and sums
//! their results. Run with `cargo run --example embed`.

use agentvisor::actors::kernel::budget::Budget;
use agentvisor::actors::kernel::capability::{CapabilityRequest, Rights};
use agentvisor::actors::kernel::launch::LaunchRequest;
use agentvisor::actors::runtime::program::{Image, program_fn};
use agentvisor::actors::runtime::{RootSpec, Runtime, RuntimeOptions};
use agentvisor::actors::{ImageId, Status};
use serde_json::json;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // A worker squares the number in its goal and exits with it.
    let worker = Image::new("worker", |_| {
        program_fn(|ctx| async move {
            let n: u64 = ctx.goal().parse().unwrap_or(0);
            ctx.exit(Some(json!({ "square": n * n }))).await?;
            Ok(())
        })
    });
    // The parent launches one worker per number, waits on each, and reads each result.
    let parent = Image::new("parent", |_| {
        program_fn(|ctx| async move {
            let mut children = Vec::new();
            for n in 1..=3 {
                let request = LaunchRequest {
                    goal: n.to_string(),
                    image: Some(ImageId::from("worker")),
                    resource_budget: Some(Budget { tool_calls: Some(10), ..Budget::default() }),
                    ..LaunchRequest::default()
                };
                children.push(ctx.spawn_child(request).await?.pid);
            }
            let mut sum = 0;
            for child in children {
                let done = ctx.wait_child(child, true).await?;
                if done.status == Status::Exited
                    && let Some(oid) = done.result_oid
                {
                    sum +=
                        ctx.read_object(oid).await?.payload.map_or(0, |p| p["square"].as_u64().unwrap_or(0));
                }
            }
            ctx.exit(Some(json!({ "sum": sum }))).await?;
            Ok(())
        })
    });

    let dir = tempfile::tempdir()?;
    let rt = Runtime::open(dir.path(), RuntimeOptions::new().image(worker).image(parent)).await?;
    let grant = |resource: &str, rights| CapabilityRequest {
        resource: resource.into(),
        rights,
        constraints: Default::default(),
        delegable: false,
    };
    let root = rt
        .spawn_root(RootSpec {
            clearance: None,
            goal_labels: Default::default(),
            goal: "sum of squares".into(),
            image: ImageId::from("parent"),
            cwd: "/".into(),
            capabilities: vec![grant("process:spawn", Rights::EXECUTE), grant("image:worker", Rights::READ)],
            budget: Budget { tool_calls: Some(100), ..Budget::default() },
            supervision: None,
        })
        .await?;
    let row = rt.wait_terminal(root).await?;
    let result = rt.payload(row.result_oid.expect("an exit with a payload has a result"))?;
    println!("{} {:?}", row.status, result);
    rt.shutdown().await?;
    Ok(())
}
