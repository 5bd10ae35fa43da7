//! Durable commits through the SQLite store's group commit, against one transaction per change.
//!
//! Each change set is one small process row. `group_commit/N` runs N tokio tasks, each
//! submitting a change set and awaiting its ticket in a loop, so about N commits are in flight
//! at any moment; one criterion iteration is one change from each submitter (throughput N).
//! `one_commit_per_change/N` is the baseline in the same run: a plain rusqlite connection
//! with the same pragmas (WAL, `synchronous=FULL`) and the same schema doing BEGIN, one
//! INSERT, COMMIT for each of N changes. Both pay a full fsync per transaction; group commit
//! shares it among everything queued.

use agentvisor_actors::kernel::budget::Budget;
use agentvisor_actors::kernel::ids::{CountingIds, IdSource, ImageId};
use agentvisor_actors::kernel::process::ProcessRow;
use agentvisor_actors::store::{Change, SqliteStore, Store};
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const SUBMITTERS: [usize; 3] = [1, 16, 256];

fn row(ids: &mut CountingIds) -> ProcessRow {
    ProcessRow::launched(
        ids.pid(),
        None,
        0,
        ImageId::from("worker"),
        "/work".to_string(),
        "count the words in the corpus".to_string(),
        Budget::default(),
    )
}

/// Commits `iters` change sets from each of `n` concurrent submitters.
async fn group_commit(store: &Arc<SqliteStore>, n: usize, iters: u64, seeds: &AtomicU64) -> Duration {
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..n {
        let store = Arc::clone(store);
        let mut ids = CountingIds::new(seeds.fetch_add(1, Ordering::Relaxed));
        tasks.spawn(async move {
            for _ in 0..iters {
                store.submit(vec![Change::PutProcess(row(&mut ids))]).await.expect("commits");
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("the submitter finished");
    }
    start.elapsed()
}

/// A plain connection to a file with the store's own schema (created by opening a store on it
/// once), with the store's pragmas, so that the baseline writes the same rows into the same
/// tables and indexes and differs only in committing each change alone.
fn baseline_connection(path: &Path) -> rusqlite::Connection {
    drop(SqliteStore::open(path).expect("creates the schema"));
    let conn = rusqlite::Connection::open(path).expect("opens");
    let mode: String =
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)).expect("sets WAL");
    assert_eq!(mode, "wal");
    conn.pragma_update(None, "synchronous", "FULL").expect("sets synchronous");
    conn
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("kernel types encode")
}

/// Commits `n * iters` changes, one transaction each, encoding rows as the store does.
fn one_commit_per_change(conn: &rusqlite::Connection, n: usize, iters: u64, seeds: &AtomicU64) -> Duration {
    let mut ids = CountingIds::new(seeds.fetch_add(1, Ordering::Relaxed));
    let total = n * usize::try_from(iters).expect("iteration counts fit usize");
    let rows: Vec<ProcessRow> = (0..total).map(|_| row(&mut ids)).collect();
    let start = Instant::now();
    for r in rows {
        r.check().expect("a valid row");
        conn.execute_batch("BEGIN IMMEDIATE").expect("begins");
        conn.prepare_cached(
            "INSERT INTO processes (pid, parent, depth, image, cwd, goal, status, wait_state, \
             pause_reason, host_gate, outcome, result_oid, state_generation, epoch, resume_claim, \
             started, account) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
        )
        .expect("prepares")
        .execute(rusqlite::params![
            r.pid.to_string(),
            r.parent.map(|p| p.to_string()),
            i64::from(r.depth),
            r.image.as_str(),
            r.cwd,
            r.goal,
            r.status.as_str(),
            r.wait_state.as_ref().map(json),
            r.pause_reason.as_ref().map(json),
            r.host_gate,
            r.outcome.as_ref().map(json),
            r.result_oid.map(|o| o.to_string()),
            i64::try_from(r.state_generation).expect("small"),
            r.epoch.map(|e| i64::try_from(e.0).expect("small")),
            r.resume_claim.map(|c| i64::try_from(c).expect("small")),
            r.started,
            json(&r.account),
        ])
        .expect("inserts");
        conn.execute_batch("COMMIT").expect("commits");
    }
    start.elapsed()
}

fn store_commit(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = Arc::new(SqliteStore::open(&dir.path().join("agentvisor.db")).expect("opens"));
    let baseline = baseline_connection(&dir.path().join("baseline.db"));
    let seeds = AtomicU64::new(1);

    let mut group = c.benchmark_group("store_commit");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for n in SUBMITTERS {
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("group_commit", n), &n, |b, &n| {
            b.iter_custom(|iters| rt.block_on(group_commit(&store, n, iters, &seeds)));
        });
        group.bench_with_input(BenchmarkId::new("one_commit_per_change", n), &n, |b, &n| {
            b.iter_custom(|iters| one_commit_per_change(&baseline, n, iters, &seeds));
        });
    }
    group.finish();
    println!("group commit transactions: {}", store.commits_so_far());
}

criterion_group!(benches, store_commit);
criterion_main!(benches);
