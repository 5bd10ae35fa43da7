//! Failover on a PostgreSQL store: the time from the owner's death to a new node owning every
//! one of its processes, with 1,000 and 10,000 running processes, against a clean handover of
//! the same tree in the same run (the owner shuts down, pausing its processes, and the next
//! node opens).
//!
//! The owner's death is its writer session ended by the server (what the server does when the
//! owner's process is killed). The time runs from there until the new node's runtime has
//! claimed the store, paused every running process as a stale execution and started: every
//! process then belongs to the new node. The clean handover runs from the old owner's
//! shutdown until the new node has started. Each measurement starts from a tree built afresh
//! in a new database, outside the time.

mod common;
#[path = "../actors/tests/pg_server/mod.rs"]
mod pg_server;

use agentvisor::actors::runtime::Runtime;
use agentvisor::actors::store::{NodeLease, PostgresStore};
use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A long lease: only the owner's death (its session gone) lets the next node in.
const LEASE: Duration = Duration::from_secs(3600);

fn node(name: &str) -> NodeLease {
    NodeLease::new(name, LEASE).expect("a valid lease")
}

/// Opens the store at `url` as node `name` and starts a runtime on it (recovering the tree).
async fn open(url: &str, name: &str) -> Runtime {
    let store = PostgresStore::open_as(url, &node(name)).expect("the node claims the store");
    Runtime::start(Arc::new(store), common::options()).await.expect("the runtime starts")
}

/// Roots of the bench's tree; each has the same number of children.
const ROOTS: usize = 8;

/// A tree of `processes` running processes (a multiple of [`ROOTS`]): [`ROOTS`] roots, each
/// with its share of idle children.
async fn build(url: &str, processes: usize) -> Runtime {
    let rt = Arc::new(open(url, "builder").await);
    let mut roots = Vec::new();
    for _ in 0..ROOTS {
        roots.push(common::root(&rt).await);
    }
    let per = processes / ROOTS - 1;
    let tasks: Vec<_> = roots
        .into_iter()
        .map(|parent| {
            let rt = Arc::clone(&rt);
            tokio::spawn(async move {
                for _ in 0..per {
                    common::spawn(&rt, parent, "idle").await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a spawner");
    }
    Arc::try_unwrap(rt).unwrap_or_else(|_| panic!("the runtime is still shared"))
}

/// The server ends the owner's writer session, as it does when the owner's process dies.
fn kill_owner(url: &str) {
    let url = url.to_string();
    std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
        client
            .batch_execute("SELECT pg_terminate_backend(session_pid, 60000) FROM owner")
            .expect("terminate");
    })
    .join()
    .expect("the kill ran");
}

/// A fresh database with a tree of `processes` running processes, and its owner.
async fn fresh_tree(processes: usize) -> (String, Runtime) {
    let url = pg_server::fresh_database()
        .expect("the PostgreSQL benches need a server; AGENTVISOR_TEST_POSTGRES=skip has none");
    let owner = build(&url, processes).await;
    (url, owner)
}

fn bench(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio");
    let mut group = c.benchmark_group("failover_postgres");
    // One tree per measurement, built outside the time: ten of each, one at a time.
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_millis(1));
    for processes in [1_000usize, 10_000] {
        group.bench_function(format!("clean_handover_{processes}"), |b| {
            b.to_async(&tokio).iter_custom(|iters| async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let (url, old) = fresh_tree(processes).await;
                    let start = Instant::now();
                    old.shutdown().await.expect("a clean shutdown");
                    let next = open(&url, "next").await;
                    total += start.elapsed();
                    assert_eq!(next.recovery_report().live, processes, "every process was taken over");
                    next.shutdown().await.expect("shutdown");
                }
                total
            })
        });
        group.bench_function(format!("failover_{processes}"), |b| {
            b.to_async(&tokio).iter_custom(|iters| async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let (url, dead) = fresh_tree(processes).await;
                    let start = Instant::now();
                    kill_owner(&url);
                    let next = open(&url, "survivor").await;
                    total += start.elapsed();
                    let stale = next.recovery_report().stale_paused.len();
                    assert_eq!(stale, processes, "every running process was claimed, paused as stale");
                    drop(dead);
                    next.shutdown().await.expect("shutdown");
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
