//! Durable spawn throughput on the SQLite store with 1, 16 and 256 concurrent spawners,
//! against one commit per change (a plain rusqlite connection with the same pragmas doing one
//! transaction per change) in the same run.
//!
//! A launch is two durable changes (the `runnable` child with the parent's reservation, then
//! the child's start), so the baseline commits twice per spawn.
//!
//! A floor in the same run: bare ractor actors spawned linked under one supervisor per spawner
//! and left idle, as the runtime does with a child's actor, with no store at all
//! (`floor_ractor_spawn_linked_256_spawners`). No durable spawn can be cheaper than the actor
//! it starts.
//!
//! `DURABLE_SPAWN_ONCE=SPAWNERS:COUNT` runs one measurement of COUNT spawns by SPAWNERS
//! spawners (0: the baseline; `floorN`: the ractor floor with N spawners) and prints its time
//! instead of running criterion, so that a syscall counter (`perf stat -e
//! 'syscalls:sys_enter_f*sync'`) around two such runs of different COUNT gives the commits'
//! fsyncs per spawn from their difference.

mod common;

use criterion::{Criterion, Throughput, criterion_group};
use std::time::{Duration, Instant};

fn baseline(iters: u64) -> Duration {
    let dir = tempfile::tempdir().expect("tempdir");
    let conn = rusqlite::Connection::open(dir.path().join("baseline.db")).expect("open");
    conn.pragma_update(None, "journal_mode", "WAL").expect("wal");
    conn.pragma_update(None, "synchronous", "FULL").expect("full");
    conn.execute_batch(
        "CREATE TABLE processes (pid TEXT PRIMARY KEY, status TEXT NOT NULL, row TEXT NOT NULL)",
    )
    .expect("schema");
    // A row of about the size the runtime writes.
    let row = "x".repeat(600);
    let start = Instant::now();
    for i in 0..iters {
        let pid = format!("{i:032}");
        for status in ["runnable", "running"] {
            let tx = conn.unchecked_transaction().expect("begin");
            tx.execute(
                "INSERT INTO processes (pid, status, row) VALUES (?1, ?2, ?3)
                 ON CONFLICT (pid) DO UPDATE SET status = excluded.status, row = excluded.row",
                (&pid, status, &row),
            )
            .expect("insert");
            tx.commit().expect("commit");
        }
    }
    start.elapsed()
}

/// An actor that does nothing: the child's actor without the process behind it.
struct Idle;

impl ractor::Actor for Idle {
    type Msg = ();
    type State = ();
    type Arguments = ();
    async fn pre_start(&self, _: ractor::ActorRef<()>, _: ()) -> Result<(), ractor::ActorProcessingErr> {
        Ok(())
    }
    async fn handle_supervisor_evt(
        &self,
        _: ractor::ActorRef<()>,
        _: ractor::SupervisionEvent,
        _: &mut (),
    ) -> Result<(), ractor::ActorProcessingErr> {
        Ok(())
    }
}

/// The time `spawners` concurrent tasks take to spawn about `iters` idle actors in all, each
/// linked under the task's own supervisor actor, scaled to exactly `iters`; then stops them.
async fn ractor_floor(spawners: usize, iters: u64) -> Duration {
    use ractor::Actor;
    let mut supervisors = Vec::new();
    for _ in 0..spawners {
        supervisors.push(Actor::spawn(None, Idle, ()).await.expect("supervisor").0);
    }
    let per = iters.div_ceil(spawners as u64);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for supervisor in &supervisors {
        let cell = supervisor.get_cell();
        tasks.push(tokio::spawn(async move {
            let mut children = Vec::with_capacity(per as usize);
            for _ in 0..per {
                children.push(Actor::spawn_linked(None, Idle, (), cell.clone()).await.expect("child").0);
            }
            children
        }));
    }
    let mut children = Vec::new();
    for t in tasks {
        children.extend(t.await.expect("spawner"));
    }
    let elapsed = common::scaled(start.elapsed(), iters, per * spawners as u64);
    for child in children {
        child.stop(None);
    }
    for supervisor in supervisors {
        supervisor.stop_and_wait(None, None).await.expect("stop");
    }
    elapsed
}

fn bench(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio");
    let mut group = c.benchmark_group("durable_spawn");
    group.measurement_time(Duration::from_secs(8)).sample_size(10).throughput(Throughput::Elements(1));

    group.bench_function("baseline_one_commit_per_change", |b| b.iter_custom(baseline));
    group.bench_function("floor_ractor_spawn_linked_256_spawners", |b| {
        b.to_async(&tokio).iter_custom(|iters| ractor_floor(256, iters))
    });

    for spawners in [1usize, 16, 256] {
        group.bench_function(format!("agentvisor_{spawners}_spawners"), |b| {
            b.to_async(&tokio).iter_custom(|iters| async move {
                let dir = tempfile::tempdir().expect("tempdir");
                let rt = agentvisor::actors::runtime::Runtime::open(dir.path(), common::options())
                    .await
                    .expect("rt");
                common::spawn_concurrently(rt, spawners, iters).await
            })
        });
    }
    group.finish();
}

/// One measurement as `DURABLE_SPAWN_ONCE=SPAWNERS:COUNT` asks, if it is set: SPAWNERS 0 is
/// the baseline, `floorN` the bare ractor floor with N spawners.
fn once() -> Option<(String, u64)> {
    let spec = std::env::var("DURABLE_SPAWN_ONCE").ok()?;
    let (spawners, count) = spec.split_once(':').expect("DURABLE_SPAWN_ONCE is SPAWNERS:COUNT");
    Some((spawners.to_string(), count.parse().expect("COUNT is a number")))
}

criterion_group!(benches, bench);

fn main() {
    if let Some((spawners, count)) = once() {
        let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio");
        let elapsed = tokio.block_on(async {
            if let Some(floor) = spawners.strip_prefix("floor") {
                return ractor_floor(floor.parse().expect("floorN: N is a number"), count).await;
            }
            let spawners: usize = spawners.parse().expect("SPAWNERS is a number or floorN");
            if spawners == 0 {
                return baseline(count);
            }
            let dir = tempfile::tempdir().expect("tempdir");
            let rt =
                agentvisor::actors::runtime::Runtime::open(dir.path(), common::options()).await.expect("rt");
            common::spawn_concurrently(rt, spawners, count).await
        });
        println!("{count} spawns by {spawners} spawners in {elapsed:?}");
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
