//! Shared fixtures for the runtime benches.
#![allow(dead_code, unreachable_pub)]

use agentvisor::actors::kernel::budget::Budget;
use agentvisor::actors::kernel::capability::{CapabilityRequest, Rights};
use agentvisor::actors::kernel::launch::LaunchRequest;
use agentvisor::actors::runtime::calls::{Call, CallOk};
use agentvisor::actors::runtime::program::{Image, program_fn};
use agentvisor::actors::runtime::{RootSpec, Runtime, RuntimeOptions};
use agentvisor::actors::{ImageId, Pid};

/// A program that does nothing until the host acts as it.
pub fn idle_image() -> Image {
    Image::new("idle", |_| program_fn(|_ctx| std::future::pending()))
}

/// A program that exits at once.
pub fn exit_image() -> Image {
    Image::new("exit", |_| {
        program_fn(|ctx| async move {
            ctx.exit(None).await?;
            Ok(())
        })
    })
}

pub fn options() -> RuntimeOptions {
    RuntimeOptions::new().image(idle_image()).image(exit_image())
}

/// A root on the idle image allowed to launch children on any bench image.
pub async fn root(rt: &Runtime) -> Pid {
    let grant = |resource: &str, rights| CapabilityRequest {
        resource: resource.into(),
        rights,
        constraints: Default::default(),
        delegable: true,
    };
    rt.spawn_root(RootSpec {
        clearance: None,
        goal_labels: Default::default(),
        goal: "bench root".into(),
        image: ImageId::from("idle"),
        cwd: "/".into(),
        capabilities: vec![
            grant("process:spawn", Rights::EXECUTE),
            grant("image:exit", Rights::READ),
            grant("image:idle", Rights::READ),
        ],
        budget: Budget::UNLIMITED,
        supervision: None,
    })
    .await
    .expect("the bench root launches")
}

/// Launches a child of `parent` on `image` as the parent would.
pub async fn spawn(rt: &Runtime, parent: Pid, image: &str) -> Pid {
    let request = LaunchRequest {
        goal: "bench child".into(),
        image: Some(ImageId::from(image)),
        ..LaunchRequest::default()
    };
    match rt.call_as(parent, Call::Spawn(request)).await {
        Ok(CallOk::Spawned(l)) => l.pid,
        other => panic!("spawn failed: {other:?}"),
    }
}

/// The time `spawners` concurrent roots take to launch about `iters` idle children in all,
/// each root one after another, scaled to exactly `iters`; then shuts the runtime down.
pub async fn spawn_concurrently(rt: Runtime, spawners: usize, iters: u64) -> std::time::Duration {
    let rt = std::sync::Arc::new(rt);
    let mut roots = Vec::new();
    for _ in 0..spawners {
        roots.push(root(&rt).await);
    }
    let per = iters.div_ceil(spawners as u64);
    let start = std::time::Instant::now();
    let mut tasks = Vec::new();
    for parent in roots {
        let rt = rt.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..per {
                spawn(&rt, parent, "idle").await;
            }
        }));
    }
    for t in tasks {
        t.await.expect("spawner");
    }
    let elapsed = scaled(start.elapsed(), iters, per * spawners as u64);
    if let Ok(rt) = std::sync::Arc::try_unwrap(rt) {
        rt.shutdown().await.expect("shutdown");
    }
    elapsed
}

/// `elapsed` for `done` iterations scaled to `iters` (rounding up gave each of several
/// spawners the same share, so `done` may exceed `iters`).
pub fn scaled(elapsed: std::time::Duration, iters: u64, done: u64) -> std::time::Duration {
    elapsed.mul_f64(iters as f64 / done as f64)
}

/// Waits (blocking) as `parent` for `child`.
pub async fn wait(rt: &Runtime, parent: Pid, child: Pid) {
    match rt.call_as(parent, Call::Wait { child_pid: child, block: true }).await {
        Ok(CallOk::Waited(w)) => assert!(w.ready),
        other => panic!("wait failed: {other:?}"),
    }
}

/// Merges, as `parent`, the memory of its terminal `child`.
pub async fn merge(rt: &Runtime, parent: Pid, child: Pid) {
    match rt.call_as(parent, Call::Merge { child_pid: child, include_child_created: false }).await {
        Ok(CallOk::Merged(_)) => {}
        other => panic!("merge failed: {other:?}"),
    }
}

/// Resident set size of this process in bytes, from /proc.
pub fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    pages * 4096
}

/// A host on the configuration `yaml` whose every incarnation plays `script` from the turn it
/// has reached, its windows in `chunks`.
pub fn scripted_host(
    yaml: &str,
    script: agentvisor::agent::brain::Script,
    chunks: std::sync::Arc<dyn agentvisor::agent::window::ChunkStore + Send + Sync>,
) -> std::sync::Arc<agentvisor::agent::run::AgentHost> {
    use agentvisor::agent::brain::{Brain, ScriptedBrain};
    use agentvisor::agent::run::{AgentError, AgentHost, AgentIdentity};
    let config =
        agentvisor::agent::config::load_yaml(yaml).expect("the bench configuration passes the launch check");
    let provider = move |identity: &AgentIdentity| -> Result<std::sync::Arc<dyn Brain>, AgentError> {
        Ok(std::sync::Arc::new(ScriptedBrain::new(script.skip(identity.turns_taken))))
    };
    AgentHost::new(
        config,
        std::sync::Arc::new(provider),
        chunks,
        agentvisor::agent::telemetry::Telemetry::new(),
    )
}

/// The time of `iters` whole runs of `run`, added up: the body of an `iter_custom` whose every
/// iteration is a run timed by itself (flat sampling).
pub async fn timed_runs<F, Fut>(iters: u64, mut run: F) -> std::time::Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = std::time::Duration>,
{
    let mut total = std::time::Duration::ZERO;
    for _ in 0..iters {
        total += run().await;
    }
    total
}
