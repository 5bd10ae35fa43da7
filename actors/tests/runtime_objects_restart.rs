//! Object memory across a reopen: metadata, handles, names, roots, skills, clearance and
//! context survive; checkpointed payloads (and every later write to them), goals and results
//! are restored; runtime-local payloads are reported by OID and read as not materialized. And
//! one SIGKILL of a runtime holding objects and a fork: the reopened space passes its checks
//! and is exactly what had been acknowledged.
//!
//! The clean-reopen scenarios run on a `MemoryStore` shared by two `Runtime::start`s and on a
//! SQLite state directory opened twice with `Runtime::open`. Processes paused by the clean
//! shutdown are resumed on open (`resume_after_shutdown`), so the test can call as them again.

mod common;

use agentvisor_actors::kernel::budget::Budget;
use agentvisor_actors::kernel::ids::{Oid, Pid};
use agentvisor_actors::kernel::launch::LaunchRequest;
use agentvisor_actors::kernel::objects::{ForkMode, ObjectSpace, RootSelection, Skill};
use agentvisor_actors::kernel::status::{PauseReason, SignalKind, Status};
use agentvisor_actors::runtime::calls::{CreateObject, ObjectTarget};
use agentvisor_actors::runtime::lock::{self, LockAttempt};
use agentvisor_actors::runtime::program::{Image, ProgramResult, program_fn};
use agentvisor_actors::runtime::{RootSpec, Runtime, RuntimeOptions};
use agentvisor_actors::store::MemoryStore;
use common::interposed::Interposed;
use common::objects::*;
use common::*;
use serde_json::json;
use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the state lives between two runtimes.
enum Backing {
    Memory(Arc<MemoryStore>),
    Sqlite(tempfile::TempDir),
}

impl Backing {
    fn memory() -> Backing {
        Backing::Memory(Arc::new(MemoryStore::new()))
    }

    fn sqlite() -> Backing {
        Backing::Sqlite(tempfile::tempdir().expect("a temporary state directory"))
    }

    /// Opens (or starts) the owning runtime on this state.
    async fn open(&self) -> Runtime {
        let rt = match self {
            Backing::Memory(store) => Runtime::start(store.clone(), options()).await,
            Backing::Sqlite(dir) => {
                // Not while the crash test spawns its child (see `crash::SPAWNING`).
                let attempt = {
                    let _no_spawn = crash::SPAWNING.read().unwrap_or_else(std::sync::PoisonError::into_inner);
                    lock::try_lock(dir.path()).expect("try the directory's lock")
                };
                match attempt {
                    LockAttempt::Owned(lock) => Runtime::open_owned(dir.path(), lock, options()).await,
                    LockAttempt::HeldElsewhere => panic!("no other runtime owns {}", dir.path().display()),
                }
            }
        }
        .expect("open the runtime");
        assert!(!rt.is_read_only());
        assert_space(&rt);
        rt
    }
}

/// Runs a scenario on both backings.
macro_rules! on_both_backings {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            #[tokio::test]
            async fn memory() {
                super::$scenario(super::Backing::memory()).await;
            }
            #[tokio::test]
            async fn sqlite() {
                super::$scenario(super::Backing::sqlite()).await;
            }
        }
    )*};
}

on_both_backings!(
    object_memory_survives_a_reopen,
    checkpointed_payloads_and_later_writes_survive_a_reopen,
    goals_and_results_are_durable,
    a_wait_rearmed_after_a_reopen_grants_the_result_handle,
);

/// A puppet image with a default skill.
fn skilled() -> Image {
    Image::new("skilled", |_| program_fn(|_ctx| std::future::pending::<ProgramResult>()))
        .offers(["read_object"])
        .default_skill("summarise", ["read_object"])
}

fn options() -> RuntimeOptions {
    RuntimeOptions::new().image(puppet()).image(skilled()).resume_after_shutdown(true)
}

fn names(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn durable(request: CreateObject) -> CreateObject {
    CreateObject { durable: true, ..request }
}

fn as_root(request: CreateObject) -> CreateObject {
    CreateObject { root: true, ..request }
}

/// Every unreleased object of `space` whose payload is not durable, given the durable ones.
fn local_objects(space: &ObjectSpace, durable: &BTreeSet<Oid>) -> BTreeSet<Oid> {
    space.objects().filter(|o| !o.released && !durable.contains(&o.oid)).map(|o| o.oid).collect()
}

async fn object_memory_survives_a_reopen(backing: Backing) {
    let rt = backing.open().await;
    let spec = RootSpec {
        clearance: Some(labels(&["pii", "public", "secret"])),
        goal_labels: labels(&["public"]),
        ..root_spec("skilled", Budget::UNLIMITED)
    };
    let root = rt.spawn_root(spec).await.expect("root");
    let root_goal = rt.memory(root).and_then(|m| m.goal_oid).expect("goal");
    let custom = Skill { name: "custom".into(), allowed_tools: BTreeSet::from(["read_object".to_string()]) };
    load_skills(&rt, root, vec![custom.clone()]).await;
    let kept =
        create_ok(&rt, root, durable(as_root(object(Some("kept"), json!({ "v": "kept" }), &["pii"])))).await;
    let plain = create_ok(&rt, root, as_root(object(Some("plain"), json!("runtime-local"), &[]))).await;
    let hidden = create_ok(&rt, root, object(Some("hidden"), json!("never read"), &["secret"])).await;
    let scratch =
        create_ok(&rt, root, CreateObject { ephemeral: true, ..object(Some("scratch"), json!(0), &[]) })
            .await;
    let narrow = LaunchRequest { clearance: Some(labels(&["pii", "public"])), ..launch("reader", None) };
    let forked =
        fork(&rt, root, narrow, ForkMode::Speculative, RootSelection::AllParentRoots).await.expect("fork");
    let child = forked.pid;
    read(&rt, child, kept).await.expect("the child reads the pii object");
    let child_note = create_ok(&rt, child, as_root(object(Some("note"), json!("tainted"), &[]))).await;
    assert_space(&rt);

    let space = rt.object_space();
    let root_report = rt.memory(root).expect("memory");
    let child_report = rt.memory(child).expect("memory");
    assert_eq!(child_report.context, names(&["pii", "public"]));
    assert_eq!(rt.object(child_note).expect("note").labels, labels(&["pii", "public"]));
    rt.shutdown().await.expect("shutdown");

    let rt = backing.open().await;
    assert_eq!(rt.object_space(), space, "object memory is exactly what was committed");
    assert_eq!(rt.memory(root).as_ref(), Some(&root_report));
    assert_eq!(rt.memory(child).as_ref(), Some(&child_report));
    assert_eq!(rt.memory(root).expect("memory").skills, [custom]);
    assert_eq!(child_report.clearance, Some(names(&["pii", "public"])));
    let inherited = handle_on(&child_report, kept).expect("the speculative view");
    assert_eq!((inherited.rights.clone(), inherited.ephemeral), (names(&["read"]), true));
    assert_eq!(inherited.names, names(&["kept"]));

    let durable_oids = BTreeSet::from([root_goal, forked.view.goal_oid.expect("goal"), kept]);
    let expected = local_objects(&space, &durable_oids);
    assert_eq!(expected, BTreeSet::from([plain, hidden, scratch, child_note]));
    let reported: BTreeSet<Oid> = rt.recovery_report().unmaterialized_oids.iter().copied().collect();
    assert_eq!(reported, expected);
    assert_eq!(rt.recovery_report().unmaterialized_oids.len(), expected.len(), "each OID once");

    // Resumed after the clean shutdown: the processes make calls again.
    assert_eq!(row(&rt, root).status, Status::Running);
    let seen = read_target(&rt, root, ObjectTarget::Name("kept".into())).await.expect("read by name");
    assert_eq!(
        (seen.oid, seen.payload, seen.materialized, seen.durable),
        (kept, Some(json!({ "v": "kept" })), true, true)
    );
    let gone = read(&rt, root, plain).await.expect("a read of a lost payload is not an error");
    assert_eq!((gone.payload, gone.materialized, gone.durable), (None, false, false));
    // A payload that is not there raises nothing: the reader learnt nothing.
    let context_before = rt.memory(root).expect("memory").context;
    assert_eq!(context_before, names(&["pii", "public"]), "the root read kept (pii) just now");
    let unseen = read(&rt, root, hidden).await.expect("read");
    assert_eq!((unseen.materialized, unseen.labels.clone()), (false, names(&["public", "secret"])));
    assert_eq!(rt.memory(root).expect("memory").context, context_before, "not raised by {hidden}");
    assert_eq!(rt.payload(hidden).expect("payload"), None);
    assert_refused(checkpoint(&rt, root, plain).await, "not_materializable", &[&plain.to_string()]);
    let goal = read_target(&rt, child, ObjectTarget::Name("goal".into())).await.expect("the child's goal");
    assert_eq!((goal.payload, goal.materialized), (Some(json!("reader")), true));
    let goal = read(&rt, root, root_goal).await.expect("the root's goal");
    assert_eq!(goal.payload, Some(json!("root on skilled")));
    // Rights survive: the speculative view still refuses writes.
    assert_refused(write(&rt, child, kept, json!("no")).await, "ephemeral_handle", &[&kept.to_string()]);
    // A lost payload can be written afresh.
    write(&rt, root, plain, json!("rewritten")).await.expect("write");
    assert_eq!(read(&rt, root, plain).await.expect("read").payload, Some(json!("rewritten")));
    assert_space(&rt);
    rt.shutdown().await.expect("shutdown");
}

async fn checkpointed_payloads_and_later_writes_survive_a_reopen(backing: Backing) {
    let rt = backing.open().await;
    let root = puppet_root(&rt).await;
    let born_durable = create_ok(&rt, root, durable(as_root(object(Some("d"), json!("d1"), &[])))).await;
    write(&rt, root, born_durable, json!("d2")).await.expect("write");
    let checkpointed = create_ok(&rt, root, as_root(object(Some("c"), json!("c1"), &[]))).await;
    assert!(!read(&rt, root, checkpointed).await.expect("read").durable);
    assert!(checkpoint(&rt, root, checkpointed).await.expect("checkpoint").durable);
    write(&rt, root, checkpointed, json!("c2")).await.expect("a later write");
    let local = create_ok(&rt, root, as_root(object(Some("l"), json!("l1"), &[]))).await;
    write(&rt, root, local, json!("l2")).await.expect("write");
    // A write by another holder (a copy child) of a durable object is durable too.
    let child = fork(&rt, root, launch("copy", None), ForkMode::Copy, RootSelection::AllParentRoots)
        .await
        .expect("fork")
        .pid;
    let by_child = write(&rt, child, born_durable, json!("d3")).await.expect("a copy child writes");
    assert!(by_child.durable);
    assert_space(&rt);
    rt.shutdown().await.expect("shutdown");

    let rt = backing.open().await;
    assert_eq!(rt.recovery_report().unmaterialized_oids, [local]);
    for (oid, value) in [(born_durable, "d3"), (checkpointed, "c2")] {
        let seen = read(&rt, root, oid).await.expect("read");
        assert_eq!(
            (seen.payload, seen.materialized, seen.durable),
            (Some(json!(value)), true, true),
            "{oid}"
        );
    }
    assert_eq!(read(&rt, child, born_durable).await.expect("read").payload, Some(json!("d3")));
    let lost = read(&rt, root, local).await.expect("read");
    assert_eq!((lost.payload, lost.materialized), (None, false));

    // Writes after the reopen: a durable object stays durable; a lost one comes back local.
    assert!(write(&rt, root, checkpointed, json!("c3")).await.expect("write").durable);
    assert!(!write(&rt, root, local, json!("l3")).await.expect("write").durable);
    assert_eq!(read(&rt, root, local).await.expect("read").payload, Some(json!("l3")));
    assert_space(&rt);
    rt.shutdown().await.expect("shutdown");

    let rt = backing.open().await;
    assert_eq!(rt.payload(checkpointed).expect("payload"), Some(json!("c3")));
    assert_eq!(rt.payload(born_durable).expect("payload"), Some(json!("d3")));
    assert_eq!(rt.payload(local).expect("payload"), None);
    assert_eq!(rt.recovery_report().unmaterialized_oids, [local]);
    rt.shutdown().await.expect("shutdown");
}

async fn goals_and_results_are_durable(backing: Backing) {
    let rt = backing.open().await;
    let root = puppet_root(&rt).await;
    let waited = try_spawn(&rt, root, launch("waited on", None)).await.expect("spawn");
    let unwaited = try_spawn(&rt, root, launch("not waited on yet", None)).await.expect("spawn");
    let r1 = exit(&rt, waited.pid, Some(json!({ "first": 1 }))).await.result_oid.expect("a result");
    let r2 = exit(&rt, unwaited.pid, Some(json!({ "second": 2 }))).await.result_oid.expect("a result");
    assert!(wait(&rt, root, waited.pid, false).await.expect("wait").result_handle);
    assert_space(&rt);
    rt.shutdown().await.expect("shutdown");

    let rt = backing.open().await;
    assert!(rt.recovery_report().unmaterialized_oids.is_empty(), "{:?}", rt.recovery_report());
    let first = read(&rt, root, r1).await.expect("the handle survived");
    assert_eq!((first.payload, first.materialized, first.durable), (Some(json!({ "first": 1 })), true, true));
    assert_refused(read(&rt, root, r2).await, "missing_right", &[&r2.to_string()]);
    let late = wait(&rt, root, unwaited.pid, false).await.expect("a wait after the reopen");
    assert!(late.result_handle && late.result_oid == Some(r2), "{late:?}");
    assert_eq!(read(&rt, root, r2).await.expect("read").payload, Some(json!({ "second": 2 })));
    for (launched, goal) in [(&waited, "waited on"), (&unwaited, "not waited on yet")] {
        let oid = launched.view.goal_oid.expect("goal");
        assert_eq!(rt.payload(oid).expect("payload"), Some(json!(goal)));
    }

    // A merge after the reopen releases the result, and the release survives the next one.
    merge(&rt, root, waited.pid, false).await.expect("merge");
    assert_refused(read(&rt, root, r1).await, "object_released", &[&r1.to_string()]);
    let waited_goal = waited.view.goal_oid.expect("goal");
    assert_refused(read(&rt, root, waited_goal).await, "object_released", &[&waited_goal.to_string()]);
    assert_space(&rt);
    rt.shutdown().await.expect("shutdown");
    let rt = backing.open().await;
    // The merged child's memory and what it owned are history: not read at the reopen, read
    // from the store when named, with the same answers as before.
    let at_open = rt.object_space();
    assert!(at_open.process(waited.pid).is_none(), "a collected memory is not loaded at open");
    assert!(at_open.object(r1).is_none() && at_open.object(waited_goal).is_none());
    assert!(at_open.process(unwaited.pid).is_some(), "an unmerged child's memory is live");
    assert_refused(read(&rt, root, waited_goal).await, "object_released", &[&waited_goal.to_string()]);
    assert!(rt.object(r1).expect("a tombstone").released);
    assert_eq!(rt.payload(r1).expect("payload"), None);
    assert_eq!(rt.memory(waited.pid).expect("memory").collected.as_deref(), Some("merged"));
    assert_refused(merge(&rt, root, waited.pid, false).await, "already_merged", &[]);
    assert_eq!(rt.payload(r2).expect("payload"), Some(json!({ "second": 2 })));
    rt.shutdown().await.expect("shutdown");
}

async fn a_wait_rearmed_after_a_reopen_grants_the_result_handle(backing: Backing) {
    let rt = backing.open().await;
    let root = puppet_root(&rt).await;
    let child = spawn(&rt, root, "waited on across a reopen").await;
    let mut events = rt.subscribe();
    {
        // The root blocks in the wait; the host stops listening once it is suspended.
        let waiting = wait(&rt, root, child, true);
        tokio::pin!(waiting);
        tokio::select! {
            answered = &mut waiting => panic!("the wait answered before the child ended: {answered:?}"),
            _ = until_status(&mut events, root, Status::WaitingEvent) => {}
        }
    }
    rt.shutdown().await.expect("shutdown");

    let rt = backing.open().await;
    assert_eq!(row(&rt, root).status, Status::WaitingEvent, "the saved wait survives");
    let mut events = rt.subscribe();
    let result = exit(&rt, child, Some(json!("worth the wait"))).await.result_oid.expect("a result");
    // The re-armed wait completes (one commit with the grant) and the root's program restarts.
    until_status(&mut events, root, Status::Running).await;
    assert_space(&rt);
    assert_eq!(rights_of(&rt, root, result), names(&["read"]));
    let seen = read(&rt, root, result).await.expect("read the result");
    assert_eq!((seen.payload, seen.materialized), (Some(json!("worth the wait")), true));
    rt.shutdown().await.expect("shutdown");
}

/// After a reopen, the first read of a durable object loads its payload from the store. A
/// write by another holder that commits while that load is in flight must win: the read may
/// return the older value (it is ordered before the write), but every later read, and the
/// host, must see the acknowledged write. The interleaving is staged with a store hook that
/// holds the reader between its load and its return; the writer runs on the other worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payload_loaded_during_a_write_does_not_overwrite_the_write() {
    let inner = Arc::new(MemoryStore::new());
    let rt = Runtime::start(inner.clone(), options()).await.expect("start");
    let root = puppet_root(&rt).await;
    let kept = create_ok(&rt, root, durable(as_root(object(Some("kept"), json!("v1"), &[])))).await;
    let child = fork(&rt, root, launch("copy", None), ForkMode::Copy, RootSelection::AllParentRoots)
        .await
        .expect("fork")
        .pid;
    rt.shutdown().await.expect("shutdown");

    let store = Arc::new(Interposed::new(inner));
    let rt = Arc::new(Runtime::start(store.clone(), options()).await.expect("reopen"));
    let (loaded_tx, loaded_rx) = tokio::sync::oneshot::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    store.after_payload(
        kept,
        Box::new(move || {
            let _ = loaded_tx.send(());
            // Holds the reader's actor (one worker) until the write has been acknowledged.
            let _ = go_rx.recv();
        }),
    );
    let reader = tokio::spawn({
        let rt = rt.clone();
        async move { read(&rt, root, kept).await }
    });
    loaded_rx.await.expect("the reader loaded the stored payload");
    let written = write(&rt, child, kept, json!("v2")).await.expect("the copy child writes meanwhile");
    assert!(written.durable);
    go_tx.send(()).expect("release the reader");
    let first = reader.await.expect("the reader's task").expect("read");
    assert!(first.payload == Some(json!("v1")) || first.payload == Some(json!("v2")), "{first:?}");
    let stored = rt.store().payload(kept).expect("read the store").expect("a durable payload");
    assert_eq!(stored.to_json().expect("json"), json!("v2"), "the store has the write");
    assert_eq!(rt.payload(kept).expect("payload"), Some(json!("v2")), "the host sees the acknowledged write");
    let again = read(&rt, root, kept).await.expect("read");
    assert_eq!(again.payload, Some(json!("v2")), "a later read sees the acknowledged write");
    let rt = Arc::try_unwrap(rt).unwrap_or_else(|_| panic!("the runtime is still shared"));
    rt.shutdown().await.expect("shutdown");
}

/// `checkpoint_object` decides and reads under the stage, so a write is wholly before or
/// wholly after it: checkpointing a durable object written by another holder keeps that write,
/// and it needs no store read (after a reopen the payload may exist only in the store).
#[tokio::test]
async fn a_checkpoint_after_a_write_keeps_the_write_durable() {
    let inner = Arc::new(MemoryStore::new());
    let rt = Runtime::start(inner.clone(), options()).await.expect("start");
    let root = puppet_root(&rt).await;
    let kept = create_ok(&rt, root, durable(as_root(object(Some("kept"), json!("v1"), &[])))).await;
    let child = fork(&rt, root, launch("copy", None), ForkMode::Copy, RootSelection::AllParentRoots)
        .await
        .expect("fork")
        .pid;
    rt.shutdown().await.expect("shutdown");

    let rt = Runtime::start(inner, options()).await.expect("reopen");
    write(&rt, child, kept, json!("v2")).await.expect("the copy child writes");
    let done = checkpoint(&rt, root, kept).await.expect("checkpoint");
    assert!(done.durable);
    let stored = rt.store().payload(kept).expect("read the store").expect("a durable payload");
    assert_eq!(stored.to_json().expect("json"), json!("v2"), "the acknowledged write stays durable");
    assert_eq!(rt.payload(kept).expect("payload"), Some(json!("v2")));
    rt.shutdown().await.expect("shutdown");
}

// ---- a SIGKILL ------------------------------------------------------------------------------

/// Set in the crash child's environment: the state directory to open.
const CHILD_ENV: &str = "AGENTVISOR_OBJECTS_CRASH_DIR";
/// Starts the crash child's ready line.
const READY: &str = "AGENTVISOR_OBJECTS_CRASH_READY";
/// The acknowledged object space, as the crash child saw it, inside the state directory.
const ACKED_FILE: &str = "acknowledged-space.txt";

/// The crash child's role; does nothing unless run by the crash test.
#[test]
#[ignore = "the crash child: run in a process of its own by sigkill_keeps_the_acknowledged_object_memory"]
fn crash_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else { return };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(child_main(PathBuf::from(dir)));
}

/// Builds objects and a fork; every call is answered after its commit, so what it saw when it
/// prints the ready line is durable. Then it blocks until it is killed.
async fn child_main(dir: PathBuf) {
    let rt = Runtime::open(&dir, RuntimeOptions::new().image(puppet())).await.expect("open");
    assert!(!rt.is_read_only());
    let root = puppet_root(&rt).await;
    let kept = create_ok(&rt, root, durable(as_root(object(Some("kept"), json!("k1"), &["pii"])))).await;
    let plain = create_ok(&rt, root, as_root(object(Some("plain"), json!("p1"), &[]))).await;
    let copy = fork(&rt, root, launch("copy", None), ForkMode::Copy, RootSelection::AllParentRoots)
        .await
        .expect("fork")
        .pid;
    write(&rt, copy, kept, json!("k2")).await.expect("a durable write by the copy child");
    read(&rt, copy, kept).await.expect("read");
    let made = create_ok(&rt, copy, durable(object(Some("made"), json!("m1"), &[]))).await;
    let worker = fork(&rt, root, launch("worker", None), ForkMode::Worker, RootSelection::NoParentRoots)
        .await
        .expect("fork")
        .pid;
    let result = exit(&rt, worker, Some(json!("w1"))).await.result_oid.expect("a result");
    assert!(wait(&rt, root, worker, false).await.expect("wait").result_handle);
    assert_space(&rt);
    std::fs::write(dir.join(ACKED_FILE), format!("{:#?}", rt.object_space())).expect("record the space");
    let words = [root, copy, worker]
        .map(|p| p.to_string())
        .into_iter()
        .chain([kept, plain, made, result].map(|o| o.to_string()));
    let line = format!("\n{READY} {}\n", words.collect::<Vec<_>>().join(" "));
    let mut out = std::io::stdout().lock();
    out.write_all(line.as_bytes()).expect("write the ready line");
    out.flush().expect("flush");
    drop(out);
    std::future::pending::<()>().await;
}

#[test]
fn sigkill_keeps_the_acknowledged_object_memory() {
    let dir = tempfile::tempdir().expect("a temporary state directory");
    let envs = [(CHILD_ENV, dir.path().to_string_lossy().to_string())];
    let words = crash::run_until_ready_then_kill("crash_child", &envs, &[], READY);
    match lock::try_lock(dir.path()).expect("try the lock") {
        LockAttempt::Owned(held) => drop(held),
        LockAttempt::HeldElsewhere => panic!("the lock is still held after the owner was killed"),
    }
    let [root, copy, worker]: [Pid; 3] =
        std::array::from_fn(|i| words.get(i).and_then(|w| w.parse().ok()).expect("a pid"));
    let [kept, plain, made, result]: [Oid; 4] =
        std::array::from_fn(|i| words.get(3 + i).and_then(|w| w.parse().ok()).expect("an oid"));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio");
    runtime.block_on(recover_and_check(dir.path(), [root, copy, worker], [kept, plain, made, result]));
}

async fn recover_and_check(
    dir: &Path,
    [root, copy, worker]: [Pid; 3],
    [kept, plain, made, result]: [Oid; 4],
) {
    let acked = std::fs::read_to_string(dir.join(ACKED_FILE)).expect("the acknowledged space");
    let rt = Runtime::open(dir, RuntimeOptions::new().image(puppet())).await.expect("reopen");
    assert!(!rt.is_read_only());
    assert_space(&rt);
    let space = rt.object_space();
    assert_eq!(format!("{space:#?}"), acked, "the reopened space is exactly what was acknowledged");
    let report = rt.recovery_report().clone();
    assert_eq!(report.stale_paused.iter().copied().collect::<BTreeSet<_>>(), BTreeSet::from([root, copy]));
    assert_eq!(report.unmaterialized_oids, [plain], "{report:?}");

    assert_eq!(row(&rt, worker).status, Status::Exited);
    for pid in [root, copy] {
        assert_eq!(row(&rt, pid).pause_reason, Some(PauseReason::StaleExecution { epoch: 1 }));
        assert!(rt.memory(pid).is_some_and(|m| m.collected.is_none()), "{pid}");
    }
    assert_eq!(rights_of(&rt, copy, kept), names(&["read", "write", "delegate"]));
    assert_eq!(rt.memory(copy).expect("memory").context, names(&["pii"]));
    assert_eq!(rights_of(&rt, root, result), names(&["read"]));
    assert_eq!(rt.payload(kept).expect("payload"), Some(json!("k2")), "the acknowledged write");
    assert_eq!(rt.payload(made).expect("payload"), Some(json!("m1")));
    assert_eq!(rt.payload(result).expect("payload"), Some(json!("w1")));
    assert_eq!(rt.payload(plain).expect("payload"), None);

    // The stale root, resumed by hand, reads through its surviving handles.
    rt.signal(root, SignalKind::Resume, None).await.expect("resume");
    let lost = read(&rt, root, plain).await.expect("read");
    assert_eq!((lost.payload, lost.materialized), (None, false));
    assert_eq!(read(&rt, root, result).await.expect("read").payload, Some(json!("w1")));
    // Its end releases its children's memory, as it would have before the crash.
    exit(&rt, root, None).await;
    assert_space(&rt);
    for oid in [made, result] {
        assert!(rt.object(oid).is_some_and(|o| o.released), "{oid}");
    }
    assert!(rt.object(kept).is_some_and(|o| !o.released), "the root's own object stays");
    rt.shutdown().await.expect("shutdown");
}
