//! Reopening a state directory whose history is long: a SQLite state holding `REOPEN_FINISHED`
//! (default 100,000) finished processes under 64 live idle roots, each waited for and its
//! memory merged by its parent (as an agent collects a subagent), against a state with 100
//! such processes under the same roots, in the same run.
//!
//! - `owner_reopen`: [`Runtime::open`] as the owner (a new epoch, recovery, the 64 roots'
//!   actors started), timed to the open's return; the runtime is shut down outside the time.
//! - `inspect`: a read-only view ([`Runtime::open_read_only`]) and what `agentvisor inspect`
//!   reads of one finished process: its row, children, grants, mailbox and memory.
//!
//! Each state is built once, before the first measurement; building 100,000 processes takes
//! some seconds. With `REOPEN_KEEP` set, the state directories are kept and named (to time the
//! `agentvisor` commands on them).

mod common;

use agentvisor::actors::Pid;
use agentvisor::actors::kernel::mailbox::MailboxQuery;
use agentvisor::actors::runtime::Runtime;
use agentvisor::actors::store::ProcessQuery;
use criterion::{Criterion, criterion_group, criterion_main};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const ROOTS: usize = 64;

/// Builds a state of `finished` waited-for and merged children under [`ROOTS`] idle roots in `dir`, and
/// returns one of the children.
async fn build(dir: &Path, finished: usize) -> Pid {
    let rt = Arc::new(Runtime::open(dir, common::options()).await.expect("open"));
    let mut roots = Vec::new();
    for _ in 0..ROOTS {
        roots.push(common::root(&rt).await);
    }
    let per = finished.div_ceil(ROOTS);
    let mut tasks = Vec::new();
    for parent in roots {
        let rt = rt.clone();
        tasks.push(tokio::spawn(async move {
            let mut last = None;
            for _ in 0..per {
                let child = common::spawn(&rt, parent, "exit").await;
                common::wait(&rt, parent, child).await;
                common::merge(&rt, parent, child).await;
                last = Some(child);
            }
            last
        }));
    }
    let mut one = None;
    for t in tasks {
        one = t.await.expect("builder").or(one);
    }
    if let Ok(rt) = Arc::try_unwrap(rt) {
        rt.shutdown().await.expect("shutdown");
    }
    one.expect("at least one child")
}

/// What `agentvisor inspect PID` reads of one process, from a read-only view.
fn inspect(dir: &Path, pid: Pid) -> Duration {
    let start = Instant::now();
    let rt = Runtime::open_read_only(dir, common::options()).expect("view");
    let row = rt.process(pid).expect("read").expect("the process is stored");
    assert!(row.status.is_terminal());
    let children = rt
        .processes(ProcessQuery { parent: Some(pid), include_terminal: true, ..ProcessQuery::default() })
        .expect("children");
    let grants = rt.grants_of(pid).expect("grants");
    let mailbox = rt
        .read_mailbox(pid, &MailboxQuery { filter: Default::default(), include_acked: true, limit: 20 })
        .expect("mailbox");
    let memory = rt.memory(pid);
    assert!(memory.as_ref().is_some_and(|m| m.collected.is_some()), "the child's memory reads as merged");
    std::hint::black_box((children, grants, mailbox, memory));
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio");
    let finished: usize =
        std::env::var("REOPEN_FINISHED").ok().and_then(|n| n.parse().ok()).unwrap_or(100_000);
    let mut group = c.benchmark_group("reopen");
    group.sample_size(10).measurement_time(Duration::from_secs(10));
    for (name, count) in [("100", 100), (format!("{finished}").as_str(), finished)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let built = Instant::now();
        let pid = tokio.block_on(build(dir.path(), count));
        eprintln!("reopen: built {count} finished processes in {:.1?}", built.elapsed());
        let path = dir.path().to_path_buf();
        if std::env::var_os("REOPEN_KEEP").is_some() {
            eprintln!("reopen: kept {} (pid {pid})", dir.keep().display());
        }
        group.bench_function(format!("owner_reopen_{name}"), |b| {
            b.to_async(&tokio).iter_custom(|iters| {
                let path = path.clone();
                common::timed_runs(iters, move || {
                    let path = path.clone();
                    async move {
                        let start = Instant::now();
                        let rt = Runtime::open(&path, common::options()).await.expect("reopen");
                        let took = start.elapsed();
                        rt.shutdown().await.expect("shutdown");
                        took
                    }
                })
            })
        });
        group.bench_function(format!("inspect_{name}"), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| inspect(&path, pid)).sum())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
