//! Failover on a PostgreSQL store: the time from the owner's death to a new node owning every
//! one of its processes, with 1,000 and 10,000 running processes, against a clean handover of
//! the same tree in the same run (the owner shuts down, pausing its processes, and the next
//! node opens).
//!
//! The owner's death is its writer session ended by the server (what the server does when the
//! owner's process is killed). The time runs from there until the new node's runtime has
//! claimed the store, paused every running process as a stale execution and started: every
//! process then belongs to the new node. The clean handover runs from the old owner's
//! shutdown until the new node has started. Between measurements, every paused process is
//! resumed, so each measurement starts from the same running tree.

mod common;
#[path = "../actors/tests/pg_server/mod.rs"]
mod pg_server;

use agentvisor::actors::Pid;
use agentvisor::actors::kernel::status::SignalKind;
use agentvisor::actors::runtime::Runtime;
use agentvisor::actors::store::{NodeLease, PostgresStore};
use criterion::{Criterion, criterion_group, criterion_main};
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

/// Resumes every paused process, so the tree runs again.
async fn resume_all(rt: &Runtime, paused: Vec<Pid>) {
    let resumes = paused.into_iter().map(|pid| rt.signal(pid, SignalKind::Resume, None));
    for result in futures_util::future::join_all(resumes).await {
        result.expect("a resume");
    }
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

fn bench(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio");
    let mut group = c.benchmark_group("failover_postgres");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    for processes in [1_000usize, 10_000] {
        let url = pg_server::fresh_database()
            .expect("the PostgreSQL benches need a server; AGENTVISOR_TEST_POSTGRES=skip has none");
        let owner = tokio.block_on(build(&url, processes));
        let owner = std::cell::RefCell::new(Some(owner));
        group.bench_function(format!("clean_handover_{processes}"), |b| {
            b.to_async(&tokio).iter_custom(|iters| {
                let (url, owner) = (&url, &owner);
                async move {
                    let mut total = Duration::ZERO;
                    for i in 0..iters {
                        let old = owner.borrow_mut().take().expect("an owner");
                        let start = Instant::now();
                        old.shutdown().await.expect("a clean shutdown");
                        let next = open(url, &format!("clean-{i}")).await;
                        total += start.elapsed();
                        // Shutdown paused every process for the next owner: run them again.
                        let paused = next.processes(Default::default()).expect("rows");
                        resume_all(&next, paused.iter().map(|r| r.pid).collect()).await;
                        *owner.borrow_mut() = Some(next);
                    }
                    total
                }
            })
        });
        group.bench_function(format!("failover_{processes}"), |b| {
            b.to_async(&tokio).iter_custom(|iters| {
                let (url, owner) = (&url, &owner);
                async move {
                    let mut total = Duration::ZERO;
                    for i in 0..iters {
                        let dead = owner.borrow_mut().take().expect("an owner");
                        let start = Instant::now();
                        kill_owner(url);
                        let next = open(url, &format!("survivor-{i}")).await;
                        total += start.elapsed();
                        let stale = next.recovery_report().stale_paused.clone();
                        assert_eq!(stale.len(), processes, "every running process was claimed");
                        drop(dead);
                        resume_all(&next, stale).await;
                        *owner.borrow_mut() = Some(next);
                    }
                    total
                }
            })
        });
        if let Some(rt) = owner.borrow_mut().take() {
            tokio.block_on(rt.shutdown()).expect("shutdown");
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
