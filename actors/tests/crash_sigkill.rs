//! A SIGKILL crash against the real SQLite store.
//!
//! The test re-executes its own binary as a crash child (the fixture pattern of nextest and
//! redb): the child opens a runtime on a temporary state directory, builds a tree with running
//! processes and one blocked in a child wait, prints a ready line once that state is committed,
//! and blocks. The parent reads the line, SIGKILLs the child, reopens the directory in-process
//! and checks recovery: stale `running` rows come back `paused` (`stale_execution`), the waiting
//! parent is re-armed and resumes its saved action when its child ends, no row or grant is lost,
//! and the directory lock is free again.

mod common;

use agentvisor_actors::kernel::budget::Budget;
use agentvisor_actors::kernel::status::{Outcome, PauseReason, Sender, SignalKind, Status, WaitState};
use agentvisor_actors::runtime::calls::WaitResult;
use agentvisor_actors::runtime::lock::{self, LockAttempt};
use agentvisor_actors::runtime::program::{Image, StartKind, program_fn};
use agentvisor_actors::runtime::{Runtime, RuntimeOptions};
use agentvisor_actors::store::ProcessQuery;
use agentvisor_actors::{Epoch, Pid};
use common::*;
use serde_json::json;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use tokio::sync::mpsc;

/// Set in the crash child's environment: the state directory to open.
const CHILD_ENV: &str = "AGENTVISOR_CRASH_CHILD_DIR";
/// Set in the crash child's environment to a pid: instead of building a tree, reopen the
/// directory, resume that (stale) process, and crash with its generation claimed.
const RESUME_ENV: &str = "AGENTVISOR_CRASH_CHILD_RESUME";
/// Starts the crash child's ready line.
const READY: &str = "AGENTVISOR_CRASH_READY";

#[derive(Debug)]
enum WaiterSaw {
    Spawned { waited: Pid, other: Pid },
    Restarted(Option<WaitResult>),
}

/// `waiter`: a fresh execution spawns two puppets and blocks on the first; a restarted one
/// reports the completed wait it was restarted with and exits.
fn waiter(tx: mpsc::UnboundedSender<WaiterSaw>) -> Image {
    Image::new("waiter", move |_start| {
        let tx = tx.clone();
        program_fn(move |ctx| async move {
            match ctx.start_kind().clone() {
                StartKind::Fresh => {
                    let waited = ctx.spawn_child(launch("waited on", Some("puppet"))).await?.pid;
                    let other = ctx.spawn_child(launch("bystander", Some("puppet"))).await?.pid;
                    let _ = tx.send(WaiterSaw::Spawned { waited, other });
                    ctx.wait_child(waited, true).await?;
                    Ok(())
                }
                StartKind::Restarted { completed_wait, .. } => {
                    let _ = tx.send(WaiterSaw::Restarted(completed_wait.map(|w| *w)));
                    ctx.exit(Some(json!({ "recovered": true }))).await?;
                    Ok(())
                }
            }
        })
    })
}

fn options(tx: mpsc::UnboundedSender<WaiterSaw>) -> RuntimeOptions {
    RuntimeOptions::new().image(puppet()).image(waiter(tx))
}

/// The pids the crash child reports.
#[derive(Debug, Clone, Copy)]
struct Tree {
    waiter: Pid,
    waited: Pid,
    other: Pid,
    idle: Pid,
}

/// The crash child's role; does nothing unless run by the crash test.
#[test]
#[ignore = "the crash child: run in a process of its own by sigkill_leaves_a_recoverable_state_directory"]
fn crash_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else { return };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let dir = PathBuf::from(dir);
    match std::env::var(RESUME_ENV) {
        Ok(pid) => runtime.block_on(child_resume(dir, pid.parse().expect("a pid"))),
        Err(_) => runtime.block_on(child_main(dir)),
    }
}

/// Writes the ready line and keeps the runtime (and its directory lock) alive until the
/// parent kills this process.
async fn ready_then_block(words: &[String]) {
    let line = format!("\n{READY} {}\n", words.join(" "));
    let mut out = std::io::stdout().lock();
    out.write_all(line.as_bytes()).expect("write the ready line");
    out.flush().expect("flush");
    drop(out);
    std::future::pending::<()>().await;
}

async fn child_resume(dir: PathBuf, pid: Pid) {
    let (tx, _rx) = mpsc::unbounded_channel();
    let rt = Runtime::open(&dir, options(tx)).await.expect("open the state directory");
    assert!(!rt.is_read_only());
    // The resume's answer comes after its commit: the claim is durable from here on.
    let resumed = rt.signal(pid, SignalKind::Resume, None).await.expect("resume");
    assert_eq!(resumed.status, Status::Running);
    let r = row(&rt, pid);
    assert_eq!(r.resume_claim, Some(r.state_generation));
    ready_then_block(&[pid.to_string(), r.state_generation.to_string()]).await;
}

async fn child_main(dir: PathBuf) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let rt = Runtime::open(&dir, options(tx)).await.expect("open the state directory");
    assert!(!rt.is_read_only());
    let mut events = rt.subscribe();
    let waiter = rt.spawn_root(root_spec("waiter", Budget::UNLIMITED)).await.expect("waiter");
    let Some(WaiterSaw::Spawned { waited, other }) = rx.recv().await else { panic!("no children") };
    let idle = puppet_root(&rt).await;
    // Telemetry is published after each commit: once these are seen, the state is durable.
    let mut pending: BTreeSet<(Pid, &str)> = BTreeSet::from([
        (waiter, Status::WaitingEvent.as_str()),
        (waited, Status::Running.as_str()),
        (other, Status::Running.as_str()),
        (idle, Status::Running.as_str()),
    ]);
    while !pending.is_empty() {
        if let agentvisor_actors::runtime::telemetry::KernelEvent::ProcessTransition { pid, to, .. } =
            events.recv().await.expect("telemetry")
        {
            pending.remove(&(pid, to.as_str()));
        }
    }
    ready_then_block(&[waiter, waited, other, idle].map(|p| p.to_string())).await;
}

/// Runs the crash child on `dir` (resuming `resume`, if given), waits for its ready line,
/// SIGKILLs it, and returns the words of the ready line.
fn run_and_kill_child(dir: &Path, resume: Option<Pid>) -> Vec<String> {
    let mut envs = vec![(CHILD_ENV, dir.to_string_lossy().to_string())];
    let mut unset = Vec::new();
    match resume {
        Some(pid) => envs.push((RESUME_ENV, pid.to_string())),
        None => unset.push(RESUME_ENV),
    }
    let words = crash::run_until_ready_then_kill("crash_child", &envs, &unset, READY);
    // The OS released the dead owner's lock.
    match lock::try_lock(dir).expect("try the lock") {
        LockAttempt::Owned(held) => drop(held),
        LockAttempt::HeldElsewhere => panic!("the lock is still held after the owner was killed"),
    }
    words
}

fn parse_tree(words: &[String]) -> Tree {
    let pids: Vec<Pid> = words.iter().map(|w| w.parse().expect("a pid")).collect();
    let [waiter, waited, other, idle] = pids[..] else { panic!("bad ready line {words:?}") };
    Tree { waiter, waited, other, idle }
}

#[test]
fn sigkill_leaves_a_recoverable_state_directory() {
    let dir = tempfile::tempdir().expect("a temporary state directory");
    let tree = parse_tree(&run_and_kill_child(dir.path(), None));

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio");
    runtime.block_on(recover_and_check(dir.path(), tree));
}

async fn recover_and_check(dir: &Path, tree: Tree) {
    let Tree { waiter, waited, other, idle } = tree;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let rt = Runtime::open(dir, options(tx)).await.expect("reopen");
    assert!(!rt.is_read_only(), "the reopener owns the directory");
    assert_eq!(rt.epoch(), Epoch(2));
    let report = rt.recovery_report().clone();
    assert_eq!(
        report.stale_paused.iter().copied().collect::<BTreeSet<_>>(),
        BTreeSet::from([waited, other, idle])
    );
    assert!(report.failed_closed.is_empty() && report.orphans_killed.is_empty(), "{report:?}");
    assert_eq!(report.live, 4);

    let rows =
        rt.processes(ProcessQuery { include_terminal: true, ..ProcessQuery::default() }).expect("read");
    assert_eq!(
        rows.iter().map(|r| r.pid).collect::<BTreeSet<_>>(),
        BTreeSet::from([waiter, waited, other, idle]),
        "no row lost"
    );
    assert!(rows.iter().all(|r| r.status != Status::Running && r.check().is_ok()), "{rows:#?}");
    let w = row(&rt, waiter);
    assert_eq!(
        (w.status, w.wait_state),
        (Status::WaitingEvent, Some(WaitState::Child { child_pid: waited }))
    );
    for pid in [waited, other, idle] {
        let r = row(&rt, pid);
        assert_eq!(r.status, Status::Paused);
        assert_eq!(r.pause_reason, Some(PauseReason::StaleExecution { epoch: 1 }), "{pid}");
    }
    assert_eq!(
        (row(&rt, waited).parent, row(&rt, other).parent, row(&rt, idle).parent),
        (Some(waiter), Some(waiter), None)
    );
    for pid in [waiter, waited, idle] {
        let grants = rt.grants_of(pid).expect("grants");
        assert!(grants.iter().any(|g| g.resource == "process:spawn" && g.live), "{pid}: {grants:?}");
    }
    assert!(rx.try_recv().is_err(), "the waiting parent is not restarted before its child ends");

    // The stale child is resumed by hand; when it ends, the parent's saved wait completes and
    // its program restarts with the completed wait.
    rt.signal(waited, SignalKind::Resume, None).await.expect("resume");
    let result_oid = exit(&rt, waited, Some(json!({ "survived": "a SIGKILL" }))).await.result_oid;
    let saw = rx.recv().await.expect("the waiter restarted");
    let WaiterSaw::Restarted(Some(done)) = saw else { panic!("{saw:?}") };
    assert_eq!(
        (done.child_pid, done.ready, done.status, done.result_oid),
        (waited, true, Status::Exited, result_oid)
    );
    let end = rt.wait_terminal(waiter).await.expect("the waiter ends");
    assert_eq!(end.status, Status::Exited);
    assert!(matches!(
        row(&rt, other).outcome,
        Some(Outcome::Killed { sender: Sender::Process(p), .. }) if p == waiter
    ));
    assert_eq!(row(&rt, idle).status, Status::Paused, "never replayed");
    rt.shutdown().await.expect("shutdown");

    let again = Runtime::open(dir, RuntimeOptions::new().image(puppet())).await.expect("reopen again");
    assert!(!again.is_read_only());
    assert_eq!(row(&again, idle).pause_reason, Some(PauseReason::StaleExecution { epoch: 1 }));
    // The waiter ended without merging its child, so the child's memory, result included, was
    // released with the waiter's end: the OID survives as a tombstone, the payload does not.
    let oid = result_oid.expect("a result");
    assert!(again.object(oid).is_some_and(|o| o.released), "{:?}", again.object(oid));
    assert_eq!(again.payload(oid).expect("read"), None);
    again.shutdown().await.expect("shutdown");
}

/// Two crashes: the first leaves a stale execution; the second runtime resumes it (claiming its
/// generation) and is killed before the restarted execution makes durable progress. The next
/// opener fails it closed instead of replaying it, and ends its subtree with it.
#[test]
fn sigkill_after_a_claimed_resume_fails_closed() {
    let dir = tempfile::tempdir().expect("a temporary state directory");
    let tree = parse_tree(&run_and_kill_child(dir.path(), None));
    let words = run_and_kill_child(dir.path(), Some(tree.waited));
    assert_eq!(words[0], tree.waited.to_string());
    let claimed: u64 = words[1].parse().expect("a generation");

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio");
    runtime.block_on(async {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let rt = Runtime::open(dir.path(), options(tx)).await.expect("reopen");
        assert_eq!(rt.epoch(), Epoch(3));
        let report = rt.recovery_report().clone();
        assert_eq!(report.failed_closed, [tree.waited], "{report:?}");
        let r = row(&rt, tree.waited);
        match &r.outcome {
            Some(Outcome::Failed { error_kind, message }) => {
                assert_eq!(*error_kind, agentvisor_actors::kernel::status::FailureKind::ResumeInterrupted);
                assert!(message.contains(&format!("generation {claimed}")), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(r.state_generation, claimed + 1);
        // The waiter's saved wait completes with the failure: its program restarts and sees it.
        let saw = rx.recv().await.expect("the waiter restarted");
        let WaiterSaw::Restarted(Some(done)) = saw else { panic!("{saw:?}") };
        assert_eq!((done.child_pid, done.ready, done.status), (tree.waited, true, Status::Failed));
        assert_eq!(rt.wait_terminal(tree.waiter).await.expect("ends").status, Status::Exited);
        // The rows paused by the first crash are still paused, never replayed.
        assert_eq!(row(&rt, tree.idle).pause_reason, Some(PauseReason::StaleExecution { epoch: 1 }));
        rt.shutdown().await.expect("shutdown");
    });
}
