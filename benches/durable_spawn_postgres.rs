//! Durable spawn throughput on the PostgreSQL store with 1, 16 and 256 concurrent spawners,
//! against one commit per change (a plain client doing one transaction per change on a table
//! of the same shape as `durable_spawn`'s baseline) on the same server, in the same run.
//!
//! A launch is two durable changes (the `runnable` child with the parent's reservation, then
//! the child's start), so the baseline commits twice per spawn. Each measurement gets a fresh
//! database on the bench's throwaway server (or on `AGENTVISOR_TEST_POSTGRES`).

mod common;
#[path = "../actors/tests/pg_server/mod.rs"]
mod pg_server;

use agentvisor::actors::runtime::Runtime;
use agentvisor::actors::store::PostgresStore;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn database() -> String {
    pg_server::fresh_database()
        .expect("the PostgreSQL benches need a server; AGENTVISOR_TEST_POSTGRES=skip has none")
}

fn baseline(iters: u64) -> Duration {
    let url = database();
    std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
        client
            .batch_execute(
                "CREATE TABLE processes (pid TEXT PRIMARY KEY, status TEXT NOT NULL, row TEXT NOT NULL)",
            )
            .expect("schema");
        let upsert = client
            .prepare(
                "INSERT INTO processes (pid, status, row) VALUES ($1, $2, $3)
                 ON CONFLICT (pid) DO UPDATE SET status = excluded.status, row = excluded.row",
            )
            .expect("prepare");
        // A row of about the size the runtime writes.
        let row = "x".repeat(600);
        let start = Instant::now();
        for i in 0..iters {
            let pid = format!("{i:032}");
            for status in ["runnable", "running"] {
                let mut tx = client.transaction().expect("begin");
                tx.execute(&upsert, &[&pid, &status, &row]).expect("upsert");
                tx.commit().expect("commit");
            }
        }
        start.elapsed()
    })
    .join()
    .expect("the baseline ran")
}

fn bench(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio");
    let mut group = c.benchmark_group("durable_spawn_postgres");
    group.measurement_time(Duration::from_secs(8)).sample_size(10).throughput(Throughput::Elements(1));

    group.bench_function("baseline_one_commit_per_change", |b| b.iter_custom(baseline));

    for spawners in [1usize, 16, 256] {
        group.bench_function(format!("agentvisor_{spawners}_spawners"), |b| {
            b.to_async(&tokio).iter_custom(|iters| async move {
                let store = PostgresStore::open(&database()).expect("open the store");
                let rt = Runtime::start(Arc::new(store), common::options()).await.expect("rt");
                common::spawn_concurrently(rt, spawners, iters).await
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
