//! The code path's cost over the tool-call path, in the same run.
//!
//! - `code_path/tool_calls`: 100 root agents on one in-memory runtime, each playing one turn of
//!   `CALLS` `add_task` tool calls and then a `finish` turn.
//! - `code_path/program`: the same agents making the same `CALLS` calls from one `run_code`
//!   program (a loop), then the same `finish` turn.
//!
//! The ratio program / tool calls is what running the calls from a program costs beyond
//! making them: the interpreter's start (a runtime, a context and the prelude per program, on
//! a thread of its own), the hop to and from that thread per call, and the report. Throughput
//! is in calls (agents × `CALLS`).
//!
//! `cargo bench --bench code_path -- --noplot`

mod common;

use agentvisor::actors::runtime::{Runtime, RuntimeOptions};
use agentvisor::actors::{Outcome, Pid};
use agentvisor::agent::brain::{Script, ScriptedTurn};
use agentvisor::agent::window::MemoryChunkStore;
use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Calls each agent makes in its working turn.
const CALLS: u64 = 50;
/// Agents per run.
const AGENTS: u64 = 100;

const CONFIG: &str = r#"
brains:
  - {id: s, kind: scripted, script: bench}
profiles:
  - id: worker
    brain: s
    window_tokens: 1000000
    capabilities:
      tasks: true
      code: true
"#;

/// The working turn as tool calls, or as one program.
fn script(program: bool) -> Script {
    let working = if program {
        let code = format!("for (let i = 0; i < {CALLS}; i++) await add_task({{title: `task ${{i}}`}});");
        ScriptedTurn::call("run_code", json!({"code": code}))
    } else {
        let mut turn = ScriptedTurn::call("add_task", json!({"title": "task 0"}));
        for i in 1..CALLS {
            turn = turn.with_call("add_task", json!({"title": format!("task {i}")}));
        }
        turn
    };
    Script::new(vec![working, ScriptedTurn::call("finish", json!({"result": "done"}))])
}

async fn run(program: bool) -> Duration {
    let host = common::scripted_host(CONFIG, script(program), Arc::new(MemoryChunkStore::new()));
    let rt = Runtime::in_memory(RuntimeOptions::new().image(host.image())).await.expect("runtime");
    let start = Instant::now();
    let mut pids: Vec<Pid> = Vec::with_capacity(AGENTS as usize);
    for _ in 0..AGENTS {
        pids.push(
            rt.spawn_root(host.root_spec("worker", "add the tasks").expect("root spec"))
                .await
                .expect("launch"),
        );
    }
    for pid in &pids {
        let row = rt.wait_terminal(*pid).await.expect("wait terminal");
        assert!(matches!(row.outcome, Some(Outcome::Exited { .. })), "{pid} ended {:?}", row.outcome);
    }
    let elapsed = start.elapsed();
    rt.shutdown().await.expect("shutdown");
    elapsed
}

fn bench(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio");
    let mut group = c.benchmark_group("code_path");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Elements(AGENTS * CALLS));
    for (name, program) in [("tool_calls", false), ("program", true)] {
        group.bench_function(name, |b| {
            b.to_async(&tokio).iter_custom(|iters| common::timed_runs(iters, move || run(program)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
