//! A session's per-turn cost as it grows: one agent on the scripted brain playing N turns of
//! one `add_task` call each (then `finish`), at N = 100 and N = 2,000 in the same run.
//!
//! Throughput is in turns, so criterion prints turns/s for each; the mean cost of a turn is the
//! run's time over N + 1. Flat per-turn cost shows as equal turns/s at both lengths; a cost that
//! grows with the window shows as fewer turns/s at 2,000 (the window is about 4,000 messages at
//! its end). What grows with the window is read out of the profile of this bench: the token
//! estimate (a running total kept per chain node, `agent::window::Weigh`), the checkpoint's
//! snapshot (one link lookup), and the scripted brain's own checks.
//!
//! `long_session_100k/…` is the issue's scale: turns of ten `write_note` calls (eleven
//! messages a turn), N = 10 turns (about 110 messages) and N = 9,100 (about 100,000 messages at
//! the end), so the ratio of their turns/s is the per-turn cost from 100 to 100k messages.
//!
//! `cargo bench --bench long_session -- --noplot`

mod common;

use agentvisor::actors::Outcome;
use agentvisor::actors::runtime::{Runtime, RuntimeOptions};
use agentvisor::agent::brain::{Script, ScriptedTurn};
use agentvisor::agent::window::MemoryChunkStore;
use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

const CONFIG: &str = r#"
brains:
  - {id: s, kind: scripted, script: bench}
default_budget: {tokens: 1000000000000000, turns: 100000}
profiles:
  - id: worker
    brain: s
    window_tokens: 16000000
    capabilities:
      tasks: true
      notebook: true
"#;

/// Calls per turn in the `long_session_100k` group.
const CALLS_PER_LONG_TURN: usize = 10;

/// `turns` turns of one `add_task` call each.
fn task_turns(turns: u64) -> Vec<ScriptedTurn> {
    (0..turns).map(|i| ScriptedTurn::call("add_task", json!({"title": format!("task {i}")}))).collect()
}

/// `turns` turns of [`CALLS_PER_LONG_TURN`] `write_note` calls each.
fn note_turns(turns: u64) -> Vec<ScriptedTurn> {
    (0..turns)
        .map(|t| {
            (0..CALLS_PER_LONG_TURN).fold(ScriptedTurn::text(format!("turn {t}")), |turn, i| {
                turn.with_call("write_note", json!({"page": "log", "text": format!("entry {t}.{i}")}))
            })
        })
        .collect()
}

/// One run of a session of the working turns `turns` makes, then `finish`; its whole time.
async fn session(turns: u64, make: fn(u64) -> Vec<ScriptedTurn>) -> Duration {
    let mut script = make(turns);
    script.push(ScriptedTurn::call("finish", json!({"result": "done"})));
    let host = common::scripted_host(CONFIG, Script::new(script), Arc::new(MemoryChunkStore::new()));
    let rt = Runtime::in_memory(RuntimeOptions::new().image(host.image())).await.expect("runtime");
    let start = Instant::now();
    let pid = rt.spawn_root(host.root_spec("worker", "work").expect("root spec")).await.expect("launch");
    let row = rt.wait_terminal(pid).await.expect("wait terminal");
    let elapsed = start.elapsed();
    assert!(matches!(row.outcome, Some(Outcome::Exited { .. })), "the session ended {:?}", row.outcome);
    rt.shutdown().await.expect("shutdown");
    elapsed
}

/// One group: a short and a long session of the turns `make` makes, each measured for the
/// seconds given with it, throughput in turns.
fn group(
    c: &mut Criterion,
    tokio: &tokio::runtime::Runtime,
    name: &str,
    sessions: [(u64, u64); 2],
    make: fn(u64) -> Vec<ScriptedTurn>,
) {
    let mut group = c.benchmark_group(name);
    group.sampling_mode(SamplingMode::Flat).sample_size(10).warm_up_time(Duration::from_secs(1));
    for (turns, seconds) in sessions {
        group.throughput(Throughput::Elements(turns + 1));
        group.measurement_time(Duration::from_secs(seconds));
        group.bench_function(format!("turns_{turns}"), |b| {
            b.to_async(tokio).iter_custom(|iters| common::timed_runs(iters, move || session(turns, make)))
        });
    }
    group.finish();
}

fn bench(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio");
    group(c, &tokio, "long_session", [(100, 5), (2_000, 20)], task_turns);
    group(c, &tokio, "long_session_100k", [(10, 5), (9_100, 60)], note_turns);
}

criterion_group!(benches, bench);
criterion_main!(benches);
