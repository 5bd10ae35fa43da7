//! A SIGKILL during a restart, against the real SQLite store.
//!
//! The crash child opens a runtime on a state directory, launches a supervisor (a puppet
//! root) with one permanent child on the scripted image, arms a store freeze after N more
//! commits, and makes the child panic. With N = 1 the child's end commits and the restart's
//! change set never does (the crash lands between them); with N = 2 the restart commits and
//! the new incarnation's start does not. The parent SIGKILLs the child once the freeze fired,
//! reopens the directory, resumes the (stale) supervisor, and checks that the child id has
//! exactly one live incarnation and no incarnation twice: a restart is one change set, and a
//! restart lost to the crash is made by the next owner.

mod common;

use agentvisor_actors::kernel::budget::Budget;
use agentvisor_actors::kernel::launch::LaunchRequest;
use agentvisor_actors::kernel::process::ProcessRow;
use agentvisor_actors::kernel::restart::{RestartPolicy, Supervision};
use agentvisor_actors::kernel::status::{PauseReason, SignalKind};
use agentvisor_actors::runtime::telemetry::KernelEvent;
use agentvisor_actors::runtime::{RootSpec, Runtime, RuntimeOptions};
use agentvisor_actors::store::{InjectedFault, ProcessQuery};
use agentvisor_actors::{ImageId, Pid, Status};
use common::crash::run_until_ready_then_kill;
use common::scripted::{Act, SCRIPTED, Script};
use common::*;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;

const DIR_ENV: &str = "AGENTVISOR_RESTART_CRASH_DIR";
const COMMITS_ENV: &str = "AGENTVISOR_RESTART_CRASH_COMMITS";
const READY: &str = "AGENTVISOR_RESTART_CRASH_READY";

fn options(script: &Script) -> RuntimeOptions {
    RuntimeOptions::new().image(puppet()).image(script.image())
}

#[test]
#[ignore = "the crash child: run in a process of its own by a_crash_during_a_restart_never_doubles_a_child"]
fn restart_crash_child() {
    let Some(dir) = std::env::var_os(DIR_ENV) else { return };
    let commits: u64 = std::env::var(COMMITS_ENV).expect("commits").parse().expect("a number");
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("tokio");
    runtime.block_on(child_main(PathBuf::from(dir), commits));
}

async fn child_main(dir: PathBuf, commits: u64) {
    let script = Script::default();
    let rt = Runtime::open(&dir, options(&script)).await.expect("open");
    let mut events = rt.subscribe();
    let spec = RootSpec {
        capabilities: vec![spawn_cap(), image_read(SCRIPTED)],
        supervision: Some(Supervision::DEFAULT),
        ..root_spec("puppet", Budget::UNLIMITED)
    };
    let root = rt.spawn_root(spec).await.expect("root");
    let request = LaunchRequest {
        goal: "worker".into(),
        image: Some(ImageId::from(SCRIPTED)),
        restart: RestartPolicy::Permanent,
        ..LaunchRequest::default()
    };
    let child = try_spawn(&rt, root, request).await.expect("spawn").pid;
    let mut running = BTreeSet::from([root, child]);
    while !running.is_empty() {
        if let KernelEvent::ProcessTransition { pid, to: Status::Running, .. } =
            events.recv().await.expect("telemetry")
        {
            running.remove(&pid);
        }
    }
    let fired = rt.store().inject_fault_after(commits, InjectedFault::Freeze).expect("a sqlite store");
    script.push("worker", Act::Panic);
    fired.await.expect("the freeze fired");
    let line = format!("\n{READY} {root} {child}\n");
    let mut out = std::io::stdout().lock();
    out.write_all(line.as_bytes()).expect("write");
    out.flush().expect("flush");
    drop(out);
    std::future::pending::<()>().await;
}

fn incarnations(rt: &Runtime, root: Pid) -> Vec<ProcessRow> {
    rt.processes(ProcessQuery { parent: Some(root), include_terminal: true, ..ProcessQuery::default() })
        .expect("children")
}

async fn crash_and_reopen(commits: u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let words = run_until_ready_then_kill(
        "restart_crash_child",
        &[(DIR_ENV, dir.path().display().to_string()), (COMMITS_ENV, commits.to_string())],
        &[],
        READY,
    );
    let root: Pid = words[0].parse().expect("root pid");
    let first: Pid = words[1].parse().expect("child pid");
    let script = Script::default();
    let rt = Runtime::open(dir.path(), options(&script)).await.expect("reopen");
    let before = incarnations(&rt, root);
    let expected_rows = if commits == 1 { 1 } else { 2 };
    assert_eq!(before.len(), expected_rows, "before or after the restart, nothing in between: {before:?}");
    assert_eq!(row(&rt, first).status, Status::Failed);
    let supervisor = row(&rt, root);
    assert!(matches!(supervisor.pause_reason, Some(PauseReason::StaleExecution { .. })), "{supervisor:?}");
    assert_eq!(supervisor.restart.history.len(), expected_rows - 1);

    // Resuming the supervisor makes a restart the crash lost; one already made is not redone.
    let mut events = rt.subscribe();
    rt.signal(root, SignalKind::Resume, None).await.expect("resume");
    if commits == 1 {
        loop {
            if let KernelEvent::ProcessRestarted { parent, old_pid, .. } =
                events.recv().await.expect("telemetry")
                && parent == root
            {
                assert_eq!(old_pid, first);
                break;
            }
        }
    }
    let after = incarnations(&rt, root);
    assert_eq!(after.len(), 2, "one ended incarnation and one live: {after:?}");
    let live: Vec<&ProcessRow> = after.iter().filter(|c| !c.status.is_terminal()).collect();
    assert_eq!(live.len(), 1, "exactly one live incarnation");
    let spec = live[0].restart.spec.as_ref().expect("spec");
    assert_eq!((spec.child_id, spec.incarnation, spec.restart_of), (first, 1, Some(first)));
    assert_eq!(row(&rt, root).restart.history.len(), 1, "one restart recorded");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_between_a_childs_end_and_its_restart_never_doubles_it() {
    crash_and_reopen(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_after_a_restart_committed_keeps_the_one_new_incarnation() {
    crash_and_reopen(2).await;
}
