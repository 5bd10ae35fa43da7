//! Turn-loop overhead: many concurrent root agents on the scripted brain, against a kernel
//! floor in the same run.
//!
//! - `agent_turns/1000_agents_x_10_turns`: 1 000 root agents on one in-memory runtime, each
//!   with its own `ScriptedBrain` playing 10 turns of `add_task` and then a `finish` turn
//!   (11 turns). Timed from the first launch to the last agent's end.
//! - `agent_turns/baseline_kernel_floor`: 1 000 root processes on a plain image whose program
//!   makes, per turn, the kernel commits an agent turn cannot do without — one `charge` and one
//!   `checkpoint` of as many bytes as an agent's checkpoint (measured before the timings) —
//!   11 times, then exits with a small result. Timed the same way.
//!
//! The ratio agent / baseline is the turn loop's own overhead over the kernel: the window and
//! its snapshot, the brain's task, the module calls and the module objects written at each
//! turn boundary (`agent.history`, `agent.tasks`, `agent.cost`; `agent.identity` once), the
//! inbox read, the system prompt and telemetry. `agent_turns_sqlite/…` is the same pair on
//! the SQLite store (`Runtime::open` on a temporary directory, windows in a
//! `SqliteChunkStore` there) with 100 agents. Throughput is in turns (agents × 11), so
//! criterion prints turns/s as elements/s.
//!
//! Each sample is whole runs (flat sampling, a fresh runtime and host per run).
//!
//! `cargo bench --bench agent_turns -- --noplot`

mod common;

use agentvisor::actors::kernel::budget::{Budget, Usage};
use agentvisor::actors::runtime::program::{Image, program_fn};
use agentvisor::actors::runtime::{RootSpec, Runtime, RuntimeOptions};
use agentvisor::actors::{ImageId, Outcome, Pid};
use agentvisor::agent::brain::{Script, ScriptedTurn};
use agentvisor::agent::run::AgentHost;
use agentvisor::agent::window::{ChunkStore, MemoryChunkStore, SqliteChunkStore};
use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Module-call turns each agent plays before its `finish` turn.
const TURNS: u64 = 10;
/// Agents per run on the in-memory store.
const AGENTS_MEMORY: u64 = 1_000;
/// Agents per run on the SQLite store (fewer, so a run stays short on a small machine).
const AGENTS_SQLITE: u64 = 100;
/// Tokens the floor charges per turn: about what the scripted brain reports for a turn here.
const FLOOR_TOKENS_PER_TURN: u64 = 500;

const CONFIG: &str = r#"
brains:
  - {id: s, kind: scripted, script: bench}
profiles:
  - id: worker
    description: Adds tasks.
    brain: s
    window_tokens: 100000
    capabilities:
      tasks: true
"#;

/// `TURNS` turns of one cheap module call each, then `finish`.
fn script() -> Script {
    let mut turns: Vec<ScriptedTurn> =
        (0..TURNS).map(|i| ScriptedTurn::call("add_task", json!({"title": format!("task {i}")}))).collect();
    turns.push(ScriptedTurn::call("finish", json!({"result": "done"})));
    Script::new(turns)
}

/// A host whose every incarnation gets its own scripted brain at the start of `script()`.
fn host(chunks: Arc<dyn ChunkStore + Send + Sync>) -> Arc<AgentHost> {
    common::scripted_host(CONFIG, script(), chunks)
}

/// The floor's program: per turn one charge and one checkpoint of `checkpoint_bytes`, then an
/// exit with a result.
fn floor_image(checkpoint_bytes: usize) -> Image {
    Image::new("floor", move |_| {
        program_fn(move |ctx| async move {
            for turn in 0..=TURNS {
                ctx.charge(Usage { tokens: FLOOR_TOKENS_PER_TURN, ..Usage::default() }).await?;
                let mut bytes = vec![b'x'; checkpoint_bytes];
                bytes[0] = turn as u8;
                ctx.checkpoint(bytes).await?;
            }
            ctx.exit(Some(json!({"result": "done"}))).await?;
            Ok(())
        })
    })
}

fn floor_root() -> RootSpec {
    RootSpec {
        goal: "kernel floor".into(),
        image: ImageId::from("floor"),
        cwd: "/".into(),
        capabilities: Vec::new(),
        budget: Budget::UNLIMITED,
        clearance: None,
        goal_labels: Default::default(),
        supervision: None,
    }
}

/// Launches `agents` roots from `spec` one after another and waits for every one to end;
/// returns the time from the first launch to the last end. Panics unless each exited.
async fn launch_and_wait(rt: &Runtime, agents: u64, spec: impl Fn() -> RootSpec) -> Duration {
    let mut pids: Vec<Pid> = Vec::with_capacity(agents as usize);
    let start = Instant::now();
    for _ in 0..agents {
        pids.push(rt.spawn_root(spec()).await.expect("a root launches"));
    }
    // One waiter at a time: a process that already ended answers from the store at once, so
    // the loop ends right after the last one, without a thousand telemetry subscribers.
    for pid in &pids {
        let row = rt.wait_terminal(*pid).await.expect("wait terminal");
        assert!(matches!(row.outcome, Some(Outcome::Exited { .. })), "{pid} ended {:?}", row.outcome);
    }
    start.elapsed()
}

/// Where a run keeps its state.
#[derive(Clone, Copy)]
enum Backing {
    Memory,
    Sqlite,
}

async fn runtime(backing: Backing, dir: &Path, options: RuntimeOptions) -> Runtime {
    match backing {
        Backing::Memory => Runtime::in_memory(options).await.expect("runtime"),
        Backing::Sqlite => Runtime::open(dir, options).await.expect("runtime"),
    }
}

fn chunks(backing: Backing, dir: &Path) -> Arc<dyn ChunkStore + Send + Sync> {
    match backing {
        Backing::Memory => Arc::new(MemoryChunkStore::new()),
        Backing::Sqlite => Arc::new(SqliteChunkStore::open(dir.join("windows.sqlite")).expect("chunk store")),
    }
}

/// One run of `agents` agents; the time from the first launch to the last end.
async fn agents_run(backing: Backing, agents: u64) -> Duration {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = host(chunks(backing, dir.path()));
    let rt = runtime(backing, dir.path(), RuntimeOptions::new().image(host.image())).await;
    let elapsed =
        launch_and_wait(&rt, agents, || host.root_spec("worker", "add the tasks").expect("root spec")).await;
    rt.shutdown().await.expect("shutdown");
    elapsed
}

/// One run of `agents` floor processes.
async fn floor_run(backing: Backing, agents: u64, checkpoint_bytes: usize) -> Duration {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = runtime(backing, dir.path(), RuntimeOptions::new().image(floor_image(checkpoint_bytes))).await;
    let elapsed = launch_and_wait(&rt, agents, floor_root).await;
    rt.shutdown().await.expect("shutdown");
    elapsed
}

/// The size of the checkpoint an agent of this bench commits at its last turn (the largest),
/// from one agent run alone.
async fn agent_checkpoint_bytes() -> usize {
    let host = host(Arc::new(MemoryChunkStore::new()));
    let rt = Runtime::in_memory(RuntimeOptions::new().image(host.image())).await.expect("runtime");
    let pid =
        rt.spawn_root(host.root_spec("worker", "add the tasks").expect("root spec")).await.expect("launch");
    let row = rt.wait_terminal(pid).await.expect("wait terminal");
    assert!(matches!(row.outcome, Some(Outcome::Exited { .. })), "the probe agent ended {:?}", row.outcome);
    let envelope = rt.store().checkpoint(pid).expect("store").expect("the agent checkpointed");
    rt.shutdown().await.expect("shutdown");
    envelope.body.len()
}

fn bench(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio");
    let checkpoint_bytes = tokio.block_on(agent_checkpoint_bytes());
    println!(
        "agent_turns: an agent's last checkpoint is {checkpoint_bytes} B; the floor checkpoints that much per turn"
    );

    for (group_name, backing, agents) in [
        ("agent_turns", Backing::Memory, AGENTS_MEMORY),
        ("agent_turns_sqlite", Backing::Sqlite, AGENTS_SQLITE),
    ] {
        let mut group = c.benchmark_group(group_name);
        group
            .sampling_mode(SamplingMode::Flat)
            .sample_size(10)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(5))
            .throughput(Throughput::Elements(agents * (TURNS + 1)));
        group.bench_function(format!("{agents}_agents_x_{TURNS}_turns"), |b| {
            b.to_async(&tokio)
                .iter_custom(|iters| common::timed_runs(iters, move || agents_run(backing, agents)))
        });
        group.bench_function("baseline_kernel_floor", |b| {
            b.to_async(&tokio).iter_custom(|iters| {
                common::timed_runs(iters, move || floor_run(backing, agents, checkpoint_bytes))
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
