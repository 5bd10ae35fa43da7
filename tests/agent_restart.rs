//! Durability of the turn loop: an agent on a SQLite runtime whose second turn is in flight
//! when the runtime stops (cleanly, or by SIGKILL of the whole process) continues from its
//! checkpoint after turn 1 on the next open: its window, its task list and notebook are as
//! turn 1 left them, and a note tells it that it was restarted.

mod agent_support;

use agent_support::config::TEAM;
use agent_support::*;
use agentvisor::actors::kernel::status::{PauseReason, SignalKind};
use agentvisor::actors::runtime::{Runtime, RuntimeOptions};
use agentvisor::actors::{Pid, Status};
use agentvisor::agent::brain::{Brain, Script, ScriptedBrain, ScriptedTurn, TurnFuture, TurnRequest};
use agentvisor::agent::run::{AgentError, AgentHost, AgentIdentity};
use agentvisor::agent::window::SqliteChunkStore;
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use tokio::sync::Notify;

/// Where the chunk store lives in the state directory.
const CHUNKS_FILE: &str = "windows.sqlite";

/// Turn 1 of the agent: a task and a notebook page.
fn first_turn() -> ScriptedTurn {
    ScriptedTurn::call("add_task", json!({"title": "survive the restart"}))
        .with_call("write_note", json!({"page": "log", "text": "turn one was here"}))
}

/// A brain that plays `turns`, then, asked for the turn after them, reports that it was asked
/// (the previous turn's checkpoint is committed by then) and never answers.
struct Stalling {
    scripted: ScriptedBrain,
    turns: usize,
    reached: Arc<Notify>,
}

impl Brain for Stalling {
    fn turn<'a>(&'a self, request: TurnRequest<'a>) -> TurnFuture<'a> {
        if self.scripted.played() >= self.turns {
            let reached = Arc::clone(&self.reached);
            return Box::pin(async move {
                reached.notify_one();
                std::future::pending().await
            });
        }
        Box::pin(std::future::ready(self.scripted.play(&request)))
    }
}

/// A host on the chunk store in `dir` whose `lead` plays turn 1 and stalls in turn 2.
fn stalling_host(dir: &Path, reached: Arc<Notify>) -> Arc<AgentHost> {
    let chunks = SqliteChunkStore::open(dir.join(CHUNKS_FILE)).expect("open the chunk store");
    let provider = move |_: &AgentIdentity| -> Result<Arc<dyn Brain>, AgentError> {
        Ok(Arc::new(Stalling {
            scripted: ScriptedBrain::new(Script::new(vec![first_turn()])),
            turns: 1,
            reached: Arc::clone(&reached),
        }))
    };
    host_with(TEAM, Arc::new(provider), Arc::new(chunks))
}

/// Opens the runtime in `dir`, launches `lead`, and returns once its turn 2 is in flight.
async fn run_into_turn_two(dir: &Path) -> (Runtime, Pid) {
    let reached = Arc::new(Notify::new());
    let host = stalling_host(dir, Arc::clone(&reached));
    let runtime = Runtime::open(dir, RuntimeOptions::new().image(host.image())).await.expect("open");
    let pid = runtime.spawn_root(host.root_spec("lead", "keep a log").expect("spec")).await.expect("spawn");
    reached.notified().await;
    (runtime, pid)
}

/// A host on the chunk store in `dir` whose `lead`, continuing at turn 2, checks what it was
/// given and finishes.
fn finishing_host(dir: &Path) -> (Arc<AgentHost>, Requests) {
    let chunks = SqliteChunkStore::open(dir.join(CHUNKS_FILE)).expect("reopen the chunk store");
    let lead = vec![
        first_turn(),
        ScriptedTurn::call("finish", json!({"result": "finished after the restart"}))
            .expect_tail("restarted this agent from its checkpoint after turn 1"),
    ];
    host_recording_on(TEAM, Scripts::new().with("lead", lead), Arc::new(chunks))
}

/// Checks that `pid` continued from its checkpoint after turn 1 and finished.
async fn assert_continued(runtime: &Runtime, host: &AgentHost, asked: &Requests, pid: Pid) {
    let done = finished(runtime, pid).await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.result(), json!("finished after the restart"));

    let asked = asked.lock().expect("requests");
    assert_eq!(asked.len(), 1, "only turn 2 is asked again");
    let window = window_text(&asked[0].window);
    assert!(window[0].contains("keep a log"), "{window:#?}");
    assert!(
        window.iter().any(|m| m.contains("add_task") && m.contains("survive the restart")),
        "{window:#?}"
    );
    assert_eq!(window.iter().filter(|m| m.starts_with("[tool]")).count(), 2, "turn 1's results: {window:#?}");
    assert!(window.last().is_some_and(|m| m.contains("restarted")), "{window:#?}");

    let tasks = module(runtime, pid, "agent.tasks");
    assert!(tasks.to_string().contains("survive the restart"), "{tasks}");
    let notebook = module(runtime, pid, "agent.notebook");
    assert!(notebook.to_string().contains("turn one was here"), "{notebook}");
    let events = events_of(host, pid);
    let turns: Vec<u64> = events
        .iter()
        .filter_map(|r| match r.event {
            agentvisor::agent::telemetry::AgentEvent::TurnCompleted { turn, .. } => Some(turn),
            _ => None,
        })
        .collect();
    assert_eq!(turns, [2], "the restarted execution takes turn 2 and no other");
}

#[tokio::test]
async fn a_clean_shutdown_mid_turn_resumes_from_the_last_checkpoint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (runtime, pid) = run_into_turn_two(dir.path()).await;
    runtime.shutdown().await.expect("shutdown");

    let (host, asked) = finishing_host(dir.path());
    let options = RuntimeOptions::new().image(host.image()).resume_after_shutdown(true);
    let runtime = Runtime::open(dir.path(), options).await.expect("reopen");
    assert_continued(&runtime, &host, &asked, pid).await;
    runtime.shutdown().await.expect("shutdown");
}

// ---- a SIGKILL ------------------------------------------------------------------------------

/// Set in the crash child's environment: the state directory to open.
const CHILD_ENV: &str = "AGENTVISOR_AGENT_CRASH_DIR";
/// Starts the crash child's ready line; the pid follows it.
const READY: &str = "AGENTVISOR_AGENT_CRASH_READY";

/// The crash child's role; does nothing unless run by the crash test.
#[test]
#[ignore = "the crash child: run in a process of its own by sigkill_mid_turn_resumes_from_the_last_checkpoint"]
fn agent_crash_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else { return };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        let (_runtime, pid) = run_into_turn_two(&PathBuf::from(dir)).await;
        let mut out = std::io::stdout().lock();
        out.write_all(format!("\n{READY} {pid}\n").as_bytes()).expect("write the ready line");
        out.flush().expect("flush");
        drop(out);
        std::future::pending::<()>().await;
    });
}

/// Runs the crash child on `dir` until it reports its agent in turn 2, SIGKILLs it, and
/// returns the agent's pid.
fn run_child_then_kill(dir: &Path) -> Pid {
    let mut child = Command::new(std::env::current_exe().expect("the test binary"))
        .args(["agent_crash_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the crash child");
    let stdout = child.stdout.take().expect("piped stdout");
    let pid = BufReader::new(stdout)
        .lines()
        .map(|line| line.expect("read the child's stdout"))
        .find_map(|line| line.split_once(READY).map(|(_, rest)| rest.trim().to_string()));
    let Some(pid) = pid else {
        let status = child.wait().expect("wait for the child");
        panic!("the crash child ended ({status}) without reporting ready; its stderr is above");
    };
    child.kill().expect("SIGKILL the child");
    let status = child.wait().expect("reap the child");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9), "killed by SIGKILL: {status}");
    }
    pid.parse().expect("a pid")
}

#[test]
fn sigkill_mid_turn_resumes_from_the_last_checkpoint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid = run_child_then_kill(dir.path());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio");
    runtime.block_on(async {
        let (host, asked) = finishing_host(dir.path());
        let runtime =
            Runtime::open(dir.path(), RuntimeOptions::new().image(host.image())).await.expect("reopen");
        let row = runtime.process(pid).expect("read").expect("the agent's row");
        assert_eq!(row.status, Status::Paused, "{row:?}");
        assert!(matches!(row.pause_reason, Some(PauseReason::StaleExecution { .. })), "{row:?}");
        runtime.signal(pid, SignalKind::Resume, None).await.expect("resume");
        assert_continued(&runtime, &host, &asked, pid).await;
        runtime.shutdown().await.expect("shutdown");
    });
}
