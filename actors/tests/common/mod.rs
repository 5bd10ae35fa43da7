//! Helpers shared by the runtime integration tests: images, host-side shorthands for the
//! kernel calls, and telemetry waits (so no test sleeps to synchronise).

#![allow(dead_code, reason = "each test file uses its own subset of these helpers")]

pub(crate) mod crash;
pub(crate) mod interposed;
pub(crate) mod objects;
pub(crate) mod scripted;

use agentvisor_actors::kernel::budget::Budget;
use agentvisor_actors::kernel::capability::{CapabilityRequest, Rights};
use agentvisor_actors::kernel::launch::LaunchRequest;
use agentvisor_actors::kernel::process::ProcessRow;
use agentvisor_actors::kernel::status::SignalKind;
use agentvisor_actors::runtime::calls::{
    Call, CallOk, ChildList, ExitResult, Launched, SignalResult, ToolError, WaitResult,
};
use agentvisor_actors::runtime::program::{Image, ProgramResult, program_fn};
use agentvisor_actors::runtime::telemetry::KernelEvent;
use agentvisor_actors::runtime::{RootSpec, Runtime};
use agentvisor_actors::{ImageId, Pid, Status};
use tokio::sync::broadcast;

/// An image whose program does nothing, forever: tests drive its processes with `call_as`.
pub(crate) fn puppet() -> Image {
    Image::new("puppet", |_| program_fn(|_ctx| std::future::pending::<ProgramResult>()))
}

/// `process:spawn` with execute, delegable.
pub(crate) fn spawn_cap() -> CapabilityRequest {
    CapabilityRequest {
        resource: "process:spawn".into(),
        rights: Rights::EXECUTE,
        constraints: Default::default(),
        delegable: true,
    }
}

/// Read authority on an image, delegable.
pub(crate) fn image_read(image: &str) -> CapabilityRequest {
    CapabilityRequest {
        resource: format!("image:{image}"),
        rights: Rights::READ,
        constraints: Default::default(),
        delegable: true,
    }
}

/// A root on `image` in `/work` with spawn authority, read on the puppet image, and `budget`.
pub(crate) fn root_spec(image: &str, budget: Budget) -> RootSpec {
    RootSpec {
        clearance: None,
        goal_labels: Default::default(),
        goal: format!("root on {image}"),
        image: ImageId::from(image),
        cwd: "/work".into(),
        capabilities: vec![spawn_cap(), image_read("puppet")],
        budget,
        supervision: None,
    }
}

/// Launches a puppet root with no budget.
pub(crate) async fn puppet_root(rt: &Runtime) -> Pid {
    rt.spawn_root(root_spec("puppet", Budget::UNLIMITED)).await.expect("spawn a puppet root")
}

/// A launch request on `image` (default: the parent's) that passes spawn authority on.
pub(crate) fn launch(goal: &str, image: Option<&str>) -> LaunchRequest {
    LaunchRequest {
        goal: goal.into(),
        image: image.map(ImageId::from),
        inherit_capabilities: vec![spawn_cap()],
        ..LaunchRequest::default()
    }
}

/// `spawn_child_process` as `parent`.
pub(crate) async fn try_spawn(
    rt: &Runtime,
    parent: Pid,
    request: LaunchRequest,
) -> Result<Launched, ToolError> {
    match rt.call_as(parent, Call::Spawn(request)).await? {
        CallOk::Spawned(l) => Ok(l),
        other => panic!("spawn answered {other:?}"),
    }
}

/// Spawns a child of `parent` on the parent's image that may spawn in turn.
pub(crate) async fn spawn(rt: &Runtime, parent: Pid, goal: &str) -> Pid {
    try_spawn(rt, parent, launch(goal, None)).await.expect("spawn a child").pid
}

/// `list_child_processes` as `parent`.
pub(crate) async fn list(rt: &Runtime, parent: Pid, include_terminal: bool) -> ChildList {
    match rt.call_as(parent, Call::List { include_terminal }).await {
        Ok(CallOk::Listed(l)) => l,
        other => panic!("list answered {other:?}"),
    }
}

/// `wait_child_process` as `parent`.
pub(crate) async fn wait(
    rt: &Runtime,
    parent: Pid,
    child_pid: Pid,
    block: bool,
) -> Result<WaitResult, ToolError> {
    match rt.call_as(parent, Call::Wait { child_pid, block }).await? {
        CallOk::Waited(w) => Ok(w),
        other => panic!("wait answered {other:?}"),
    }
}

/// `signal_child_process` as `parent`.
pub(crate) async fn signal(
    rt: &Runtime,
    parent: Pid,
    child_pid: Pid,
    signal: SignalKind,
    reason: Option<&str>,
) -> Result<SignalResult, ToolError> {
    let call = Call::Signal { child_pid, signal, reason: reason.map(String::from) };
    match rt.call_as(parent, call).await? {
        CallOk::Signalled(s) => Ok(s),
        other => panic!("signal answered {other:?}"),
    }
}

/// `process_exit` as `pid`.
pub(crate) async fn exit(rt: &Runtime, pid: Pid, payload: Option<serde_json::Value>) -> ExitResult {
    match rt.call_as(pid, Call::Exit { payload }).await {
        Ok(CallOk::Exited(e)) => e,
        other => panic!("exit answered {other:?}"),
    }
}

/// The committed row of `pid`.
pub(crate) fn row(rt: &Runtime, pid: Pid) -> ProcessRow {
    rt.process(pid).expect("read the store").expect("the row exists")
}

/// Waits for the telemetry event saying `pid` entered `status` (published after its commit);
/// returns the generation it reported.
pub(crate) async fn until_status(
    events: &mut broadcast::Receiver<KernelEvent>,
    pid: Pid,
    status: Status,
) -> u64 {
    loop {
        match events.recv().await {
            Ok(KernelEvent::ProcessTransition { pid: p, to, state_generation, .. })
                if p == pid && to == status =>
            {
                return state_generation;
            }
            Ok(_) => {}
            Err(e) => panic!("telemetry ended while waiting for {pid} to be {status}: {e}"),
        }
    }
}

/// Every event already published, without waiting.
pub(crate) fn drain(events: &mut broadcast::Receiver<KernelEvent>) -> Vec<KernelEvent> {
    let mut out = Vec::new();
    loop {
        match events.try_recv() {
            Ok(e) => out.push(e),
            Err(broadcast::error::TryRecvError::Empty) => return out,
            Err(e) => panic!("telemetry: {e}"),
        }
    }
}

/// Rewrites `pid`'s row in the closed state directory `dir` as a crash between its launch and
/// its start leaves it: `runnable`, never started (one generation later). No runtime may own
/// `dir` meanwhile.
pub(crate) async fn leave_never_started(dir: &std::path::Path, pid: Pid) {
    use agentvisor_actors::store::{Change, SqliteStore, Store};
    let store = SqliteStore::open(&dir.join(agentvisor_actors::runtime::DB_FILE)).expect("store");
    let mut left = store.process(pid).expect("read").expect("row");
    left.status = Status::Runnable;
    left.pause_reason = None;
    left.started = false;
    left.epoch = None;
    left.state_generation += 1;
    store.submit(vec![Change::PutProcess(left)]).await.expect("write the row");
}
