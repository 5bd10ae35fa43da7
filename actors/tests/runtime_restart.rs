//! Restart and recovery: what survives a clean shutdown and reopen, how rows an earlier runtime
//! left `running` come back, how a suspended child wait is re-armed, and that a second opener of
//! a live state directory only reads.
//!
//! Each scenario runs three times: on one `MemoryStore` shared by two `Runtime::start`s, on a
//! real SQLite state directory opened twice with `Runtime::open`, and on a PostgreSQL database
//! opened twice as a `PostgresStore` (on a multi-threaded runtime, where its reads move off the
//! worker). Rows "left behind by an earlier runtime" are written straight through the `Store`
//! trait while no runtime is open.

mod common;
mod pg_server;

use agentvisor_actors::Pid;
use agentvisor_actors::kernel::budget::Budget;
use agentvisor_actors::kernel::ids::{Epoch, IdSource, ImageId};
use agentvisor_actors::kernel::process::{Event, ProcessRow};
use agentvisor_actors::kernel::status::{
    FailureKind, Outcome, PauseReason, Sender, SignalKind, Status, WaitState,
};
use agentvisor_actors::runtime::calls::{Call, CallOk, ObjectTarget, WaitResult};
use agentvisor_actors::runtime::ids::UuidV7Ids;
use agentvisor_actors::runtime::program::{Image, StartKind, program_fn};
use agentvisor_actors::runtime::{DB_FILE, RecoveryReport, Runtime, RuntimeError, RuntimeOptions};
use agentvisor_actors::store::{Change, MemoryStore, PostgresStore, ProcessQuery, SqliteStore, Store};
use common::*;
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::mpsc;

/// Where the state lives between two runtimes.
enum Backing {
    Memory(Arc<MemoryStore>),
    Sqlite(tempfile::TempDir),
    /// The URL of a database of its own.
    Postgres(String),
}

impl Backing {
    fn memory() -> Backing {
        Backing::Memory(Arc::new(MemoryStore::new()))
    }

    fn sqlite() -> Backing {
        Backing::Sqlite(tempfile::tempdir().expect("a temporary state directory"))
    }

    /// A fresh database, or `None` when the PostgreSQL tests are skipped.
    fn postgres() -> Option<Backing> {
        pg_server::fresh_database().map(Backing::Postgres)
    }

    /// A read-only view of the state, while no runtime is open.
    fn view(&self) -> Arc<dyn Store> {
        match self {
            Backing::Memory(store) => store.clone(),
            Backing::Sqlite(dir) => {
                Arc::new(SqliteStore::open_read_only(&dir.path().join(DB_FILE)).expect("open the view"))
            }
            Backing::Postgres(url) => Arc::new(PostgresStore::open_read_only(url).expect("open the view")),
        }
    }

    /// Opens (or starts) the owning runtime on this state.
    async fn open(&self, options: RuntimeOptions) -> Runtime {
        let rt = match self {
            Backing::Memory(store) => Runtime::start(store.clone(), options).await,
            Backing::Sqlite(dir) => Runtime::open(dir.path(), options).await,
            Backing::Postgres(url) => {
                Runtime::start(Arc::new(PostgresStore::open(url).expect("open the database")), options).await
            }
        }
        .expect("open the runtime");
        assert!(!rt.is_read_only());
        rt
    }

    /// Writes rows as an earlier runtime of epoch 1 would have left them; no runtime is open.
    async fn left_behind(&self, changes: Vec<Change>) {
        async fn write(store: &dyn Store, changes: Vec<Change>) {
            if store.epoch().expect("epoch") == Epoch(0) {
                assert_eq!(store.begin_epoch().expect("begin an epoch"), Epoch(1));
            }
            store.submit(changes).await.expect("write the rows");
        }
        match self {
            Backing::Memory(store) => write(store.as_ref(), changes).await,
            Backing::Sqlite(dir) => {
                let store = SqliteStore::open(&dir.path().join(DB_FILE)).expect("open the store");
                write(&store, changes).await;
                store.close();
            }
            Backing::Postgres(url) => {
                let store = PostgresStore::open(url).expect("open the database");
                write(&store, changes).await;
                store.close();
            }
        }
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
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let Some(backing) = super::Backing::postgres() else { return };
                super::$scenario(backing).await;
            }
        }
    )*};
}

on_both_backings!(
    rows_links_and_outcomes_survive_a_reopen,
    a_stale_running_row_comes_back_paused_and_is_not_replayed,
    a_running_row_with_a_resume_claim_fails_closed,
    recovery_ends_every_live_descendant_of_a_terminal_row,
    a_blocked_child_wait_is_rearmed_across_a_restart,
    a_wait_whose_child_ended_while_no_runtime_ran_completes_on_reopen,
);

/// What a probe program saw when it started.
#[derive(Debug)]
struct Started {
    pid: Pid,
    kind: StartKind,
}

/// An image named `probe` that counts its executions (synchronously, when the runtime creates
/// the program) and reports each start; its program then does nothing.
fn probe(tx: mpsc::UnboundedSender<Started>, count: Arc<AtomicUsize>) -> Image {
    Image::new("probe", move |_start| {
        count.fetch_add(1, Ordering::SeqCst);
        let tx = tx.clone();
        program_fn(move |ctx| async move {
            let _ = tx.send(Started { pid: ctx.pid(), kind: ctx.start_kind().clone() });
            std::future::pending().await
        })
    })
}

/// What the `waiter` image's program reports.
#[derive(Debug)]
enum WaiterSaw {
    Spawned(Pid),
    Restarted(Option<WaitResult>),
}

/// An image named `waiter`: a fresh execution spawns a puppet child and blocks on it; a
/// restarted one reports the wait it was restarted with and exits.
fn waiter(tx: mpsc::UnboundedSender<WaiterSaw>) -> Image {
    Image::new("waiter", move |_start| {
        let tx = tx.clone();
        program_fn(move |ctx| async move {
            match ctx.start_kind().clone() {
                StartKind::Fresh => {
                    let child = ctx.spawn_child(launch("be waited on", Some("puppet"))).await?.pid;
                    let _ = tx.send(WaiterSaw::Spawned(child));
                    ctx.wait_child(child, true).await?;
                    panic!("the first execution's wait must not return: the runtime stops first");
                }
                StartKind::Restarted { completed_wait, .. } => {
                    let _ = tx.send(WaiterSaw::Restarted(completed_wait.map(|w| *w)));
                    ctx.exit(Some(json!({ "restarted": true }))).await?;
                    Ok(())
                }
            }
        })
    })
}

fn options(extra: Vec<Image>) -> RuntimeOptions {
    extra.into_iter().fold(RuntimeOptions::new().image(puppet()), RuntimeOptions::image)
}

fn all_rows(rt: &Runtime) -> Vec<ProcessRow> {
    rt.processes(ProcessQuery { include_terminal: true, ..ProcessQuery::default() }).expect("read rows")
}

/// A `probe` row as an earlier runtime left it, after `events`.
fn left_row(parent: Option<&ProcessRow>, events: Vec<Event>) -> ProcessRow {
    let mut row = ProcessRow::launched(
        UuidV7Ids.pid(),
        parent.map(|p| p.pid),
        parent.map_or(0, |p| p.depth + 1),
        ImageId::from("probe"),
        "/work".into(),
        "left behind".into(),
        Budget::UNLIMITED,
    );
    for event in events {
        row.apply(event).expect("a legal history");
    }
    row
}

fn started() -> Event {
    Event::Start { epoch: Epoch(1) }
}

async fn rows_links_and_outcomes_survive_a_reopen(backing: Backing) {
    let rt = backing.open(options(vec![])).await;
    let root = puppet_root(&rt).await;
    let a = spawn(&rt, root, "a").await;
    let result_oid = exit(&rt, a, Some(json!({ "v": 1 }))).await.result_oid.expect("a result");
    let b = spawn(&rt, root, "b").await;
    signal(&rt, root, b, SignalKind::Cancel, Some("why")).await.expect("cancel");
    let c = spawn(&rt, root, "c").await;
    let mut events = rt.subscribe();
    let d = spawn(&rt, c, "d").await;
    until_status(&mut events, d, Status::Running).await;
    let before = all_rows(&rt);
    let grants_before = rt.grants_of(c).expect("grants");
    let first_epoch = rt.epoch();
    rt.shutdown().await.expect("shutdown");

    let rt = backing.open(options(vec![])).await;
    // Every recovered live process is addressable as soon as the runtime is open, however
    // deep (the grandchild's actor is restarted by its parent's).
    let resumed = rt.signal(d, SignalKind::Resume, None).await.expect("resume the grandchild at once");
    assert_eq!(resumed.status, Status::Running);
    rt.signal(d, SignalKind::Pause, None).await.expect("pause it again");
    assert!(rt.epoch() > first_epoch, "a new epoch per owner");
    let report = rt.recovery_report();
    assert_eq!(
        (report.stale_paused.len(), report.failed_closed.len(), report.orphans_killed.len(), report.live),
        (0, 0, 0, 3),
        "{report:?}"
    );
    let after = all_rows(&rt);
    assert_eq!(
        after.iter().map(|r| r.pid).collect::<Vec<_>>(),
        before.iter().map(|r| r.pid).collect::<Vec<_>>()
    );
    for (was, is) in before.iter().zip(&after) {
        assert_eq!(
            (is.parent, is.depth, &is.image, &is.cwd, &is.goal),
            (was.parent, was.depth, &was.image, &was.cwd, &was.goal)
        );
        if was.status.is_terminal() {
            assert_eq!(is, was, "a terminal row never changes");
        } else if is.pid == d {
            assert_eq!(is.status, Status::Paused);
            assert!(matches!(is.pause_reason, Some(PauseReason::Signal { sender: Sender::Host, .. })));
            assert_eq!(is.state_generation, was.state_generation + 3, "shutdown, resume, pause");
        } else {
            assert_eq!(is.status, Status::Paused, "{}", is.pid);
            assert_eq!(is.pause_reason, Some(PauseReason::Shutdown));
            assert_eq!(is.state_generation, was.state_generation + 1);
        }
    }
    assert_eq!(row(&rt, a).outcome, Some(Outcome::Exited { result_oid: Some(result_oid) }));
    assert_eq!(
        row(&rt, b).outcome,
        Some(Outcome::Killed {
            signal: SignalKind::Cancel,
            reason: Some("why".into()),
            sender: Sender::Process(root)
        })
    );
    assert_eq!(row(&rt, d).parent, Some(c));
    assert_eq!(rt.grants_of(c).expect("grants"), grants_before);
    assert!(rt.object(result_oid).is_some_and(|o| !o.released), "the result object survives");
    assert_eq!(rt.payload(result_oid).expect("read"), Some(json!({ "v": 1 })), "a durable payload");

    // The parent, resumed, still sees its children and reads its child's result.
    let resumed = rt.signal(root, SignalKind::Resume, None).await.expect("resume");
    assert_eq!(resumed.status, Status::Running);
    let listed = list(&rt, root, true).await;
    let statuses: Vec<Status> = listed.children.iter().map(|c| c.status).collect();
    assert_eq!(statuses, [Status::Exited, Status::Killed, Status::Paused]);
    // A wait grants the handle the read needs; the handle is durable, the payload too.
    match rt.call_as(root, Call::Wait { child_pid: a, block: false }).await {
        Ok(CallOk::Waited(w)) => assert!(w.ready && w.result_handle, "{w:?}"),
        other => panic!("{other:?}"),
    }
    match rt.call_as(root, Call::ReadObject { target: ObjectTarget::Oid(result_oid) }).await {
        Ok(CallOk::Object(o)) => assert_eq!(o.payload, Some(json!({ "v": 1 }))),
        other => panic!("{other:?}"),
    }
    rt.shutdown().await.expect("shutdown");
}

async fn a_stale_running_row_comes_back_paused_and_is_not_replayed(backing: Backing) {
    let root = left_row(None, vec![started()]);
    let child = left_row(Some(&root), vec![started()]);
    backing.left_behind(vec![Change::PutProcess(root.clone()), Change::PutProcess(child.clone())]).await;

    let (tx, mut rx) = mpsc::unbounded_channel();
    let count = Arc::new(AtomicUsize::new(0));
    let rt = backing.open(options(vec![probe(tx, count.clone())])).await;
    let report = rt.recovery_report();
    assert_eq!(
        report.stale_paused.iter().copied().collect::<BTreeSet<_>>(),
        BTreeSet::from([root.pid, child.pid])
    );
    assert!(report.failed_closed.is_empty() && report.orphans_killed.is_empty(), "{report:?}");
    for left in [&root, &child] {
        let r = row(&rt, left.pid);
        assert_eq!(r.status, Status::Paused);
        assert_eq!(r.pause_reason, Some(PauseReason::StaleExecution { epoch: 1 }));
        assert_eq!(r.state_generation, left.state_generation + 1);
        assert_eq!((r.epoch, r.resume_claim), (None, None));
    }
    assert_eq!(count.load(Ordering::SeqCst), 0, "a stale execution is never replayed on reopen");
    assert!(rx.try_recv().is_err());

    // Only an explicit resume restarts it, from its checkpoint, with its generation claimed.
    let resumed = rt.signal(root.pid, SignalKind::Resume, None).await.expect("resume");
    assert_eq!(resumed.status, Status::Running);
    assert_eq!(count.load(Ordering::SeqCst), 1);
    let seen = rx.recv().await.expect("the program started");
    assert_eq!(
        (seen.pid, seen.kind),
        (root.pid, StartKind::Restarted { completed_wait: None, completed_receive: None })
    );
    let r = row(&rt, root.pid);
    assert_eq!(r.resume_claim, Some(r.state_generation), "a restart claims its generation");
    rt.call_as(root.pid, Call::Checkpoint { state: b"progress".to_vec(), writes: Vec::new() })
        .await
        .expect("checkpoint");
    assert_eq!(row(&rt, root.pid).resume_claim, None, "durable progress releases the claim");
    assert_eq!(row(&rt, child.pid).status, Status::Paused, "the child was not resumed");
    assert_eq!(count.load(Ordering::SeqCst), 1, "nor started");
    rt.shutdown().await.expect("shutdown");

    // Nor on a later reopen.
    let (tx, _rx) = mpsc::unbounded_channel();
    let count = Arc::new(AtomicUsize::new(0));
    let rt = backing.open(options(vec![probe(tx, count.clone())])).await;
    assert_eq!(row(&rt, child.pid).pause_reason, Some(PauseReason::StaleExecution { epoch: 1 }));
    assert_eq!(count.load(Ordering::SeqCst), 0);
    rt.shutdown().await.expect("shutdown");
}

async fn a_running_row_with_a_resume_claim_fails_closed(backing: Backing) {
    let claimed = left_row(
        None,
        vec![started(), Event::Pause(PauseReason::Shutdown), Event::Resume { epoch: Epoch(1), claim: true }],
    );
    assert_eq!(claimed.resume_claim, Some(3));
    let child = left_row(Some(&claimed), vec![started()]);
    let grandchild = left_row(
        Some(&child),
        vec![started(), Event::Pause(PauseReason::Signal { sender: Sender::Host, reason: None })],
    );
    backing
        .left_behind(vec![
            Change::PutProcess(claimed.clone()),
            Change::PutProcess(child.clone()),
            Change::PutProcess(grandchild.clone()),
        ])
        .await;

    let (tx, mut rx) = mpsc::unbounded_channel();
    let count = Arc::new(AtomicUsize::new(0));
    let rt = backing.open(options(vec![probe(tx, count.clone())])).await;
    assert_eq!(rt.recovery_report().failed_closed, [claimed.pid]);
    let r = row(&rt, claimed.pid);
    match &r.outcome {
        Some(Outcome::Failed { error_kind: FailureKind::ResumeInterrupted, message }) => {
            assert!(message.contains("generation 3"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(r.state_generation, claimed.state_generation + 1);
    assert_eq!(count.load(Ordering::SeqCst), 0, "failing closed replays nothing");
    assert!(rx.try_recv().is_err());

    // Its live descendants end with it, as a parent's end always ends its children; none is
    // left live without an actor.
    for pid in [child.pid, grandchild.pid] {
        let r = row(&rt, pid);
        assert_eq!(r.status, Status::Killed, "{pid} is left {} under a failed parent", r.status);
        assert!(
            matches!(r.outcome, Some(Outcome::Killed { sender: Sender::Runtime, .. })),
            "{:?}",
            r.outcome
        );
    }
    let live = rt.processes(ProcessQuery::default()).expect("read");
    assert!(live.is_empty(), "{live:#?}");
    rt.shutdown().await.expect("shutdown");
}

async fn recovery_ends_every_live_descendant_of_a_terminal_row(backing: Backing) {
    let ended = left_row(None, vec![started(), Event::Exit { result_oid: None }]);
    let orphan = left_row(Some(&ended), vec![started()]);
    let grandchild = left_row(Some(&orphan), vec![started()]);
    let waiting = left_row(
        Some(&orphan),
        vec![started(), Event::BeginWait(WaitState::Child { child_pid: grandchild.pid })],
    );
    let deepest = left_row(Some(&grandchild), vec![]);
    let rows = [&ended, &orphan, &grandchild, &waiting, &deepest];
    backing.left_behind(rows.iter().map(|r| Change::PutProcess((*r).clone())).collect()).await;

    let (tx, _rx) = mpsc::unbounded_channel();
    let count = Arc::new(AtomicUsize::new(0));
    let rt = backing.open(options(vec![probe(tx, count.clone())])).await;
    let report: &RecoveryReport = rt.recovery_report();
    assert_eq!(
        report.orphans_killed.iter().copied().collect::<BTreeSet<_>>(),
        BTreeSet::from([orphan.pid, grandchild.pid, waiting.pid, deepest.pid]),
        "{report:?}"
    );
    for r in &rows[1..] {
        assert_eq!(row(&rt, r.pid).status, Status::Killed, "{} under a terminal parent", r.pid);
    }
    assert_eq!(row(&rt, ended.pid), ended, "the terminal row is untouched");
    assert_eq!(count.load(Ordering::SeqCst), 0);
    assert_eq!(report.live, 0);
    rt.shutdown().await.expect("shutdown");
}

async fn a_blocked_child_wait_is_rearmed_across_a_restart(backing: Backing) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let rt = backing.open(options(vec![waiter(tx)])).await;
    let mut events = rt.subscribe();
    let mut spec = root_spec("waiter", Budget::UNLIMITED);
    spec.goal = "wait for my child".into();
    let parent = rt.spawn_root(spec).await.expect("root");
    let Some(WaiterSaw::Spawned(child)) = rx.recv().await else { panic!("no child") };
    until_status(&mut events, parent, Status::WaitingEvent).await;
    rt.shutdown().await.expect("shutdown");

    let (tx, mut rx) = mpsc::unbounded_channel();
    let rt = backing.open(options(vec![waiter(tx)])).await;
    let p = row(&rt, parent);
    assert_eq!(
        (p.status, p.wait_state.clone()),
        (Status::WaitingEvent, Some(WaitState::Child { child_pid: child }))
    );
    assert_eq!(row(&rt, child).pause_reason, Some(PauseReason::Shutdown));
    assert!(rx.try_recv().is_err(), "nothing restarts the waiting parent before its child ends");

    let mut events = rt.subscribe();
    rt.signal(child, SignalKind::Resume, None).await.expect("resume the child");
    let child_result = exit(&rt, child, Some(json!({ "child": "done" }))).await.result_oid;
    let saw = rx.recv().await.expect("the parent's program restarted");
    let WaiterSaw::Restarted(Some(w)) = saw else { panic!("{saw:?}") };
    assert_eq!((w.child_pid, w.ready, w.status), (child, true, Status::Exited));
    assert_eq!(w.result_oid, child_result);
    assert_eq!(w.outcome, Some(Outcome::Exited { result_oid: child_result }));
    let end = rt.wait_terminal(parent).await.expect("the parent ends");
    assert_eq!(end.status, Status::Exited);
    // The resumed wait was a claimed restart: wait_satisfied then exit, one generation each.
    let transitions: Vec<(&str, u64)> = drain(&mut events)
        .into_iter()
        .filter_map(|e| match e {
            agentvisor_actors::runtime::telemetry::KernelEvent::ProcessTransition {
                pid,
                transition,
                state_generation,
                ..
            } if pid == parent => Some((transition, state_generation)),
            _ => None,
        })
        .collect();
    assert_eq!(transitions, [("wait_satisfied", p.state_generation + 1), ("exit", p.state_generation + 2)]);
    rt.shutdown().await.expect("shutdown");
}

async fn a_wait_whose_child_ended_while_no_runtime_ran_completes_on_reopen(backing: Backing) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let rt = backing.open(options(vec![waiter(tx)])).await;
    let mut events = rt.subscribe();
    let parent = rt.spawn_root(root_spec("waiter", Budget::UNLIMITED)).await.expect("root");
    let Some(WaiterSaw::Spawned(child)) = rx.recv().await else { panic!("no child") };
    until_status(&mut events, parent, Status::WaitingEvent).await;
    rt.shutdown().await.expect("shutdown");

    // The child's end reached the store but nobody resumed the wait (as after a crash between
    // the child's commit and its parent's notice).
    let mut ended = backing.view().process(child).expect("read").expect("row");
    ended.apply(Event::Resume { epoch: Epoch(2), claim: false }).expect("resume");
    ended.apply(Event::Exit { result_oid: None }).expect("exit");
    backing.left_behind(vec![Change::PutProcess(ended)]).await;

    let (tx, mut rx) = mpsc::unbounded_channel();
    let rt = backing.open(options(vec![waiter(tx)])).await;
    let saw = rx.recv().await.expect("the parent's program restarted");
    let WaiterSaw::Restarted(Some(w)) = saw else { panic!("{saw:?}") };
    assert_eq!((w.child_pid, w.ready, w.status), (child, true, Status::Exited));
    assert_eq!(rt.wait_terminal(parent).await.expect("ends").status, Status::Exited);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_second_open_of_a_live_directory_is_read_only_and_recovers_nothing() {
    let dir = tempfile::tempdir().expect("dir");
    let owner = Runtime::open(dir.path(), options(vec![])).await.expect("owner");
    assert!(!owner.is_read_only());
    let root = puppet_root(&owner).await;
    let child = spawn(&owner, root, "c").await;
    let mut events = owner.subscribe();
    let (waited, ()) = tokio::join!(wait(&owner, root, child, true), async {
        until_status(&mut events, root, Status::WaitingEvent).await;

        let viewer = Runtime::open(dir.path(), options(vec![])).await.expect("second opener");
        assert!(viewer.is_read_only());
        assert_eq!(viewer.recovery_report(), &RecoveryReport::default(), "a viewer recovers nothing");
        assert_eq!(viewer.epoch(), owner.epoch(), "a viewer starts no epoch");
        assert!(!viewer.store().is_writable());
        assert_eq!(row(&viewer, root).status, Status::WaitingEvent);
        assert_eq!(row(&viewer, child).status, Status::Running, "a live owner's running row is not stale");
        assert!(matches!(
            viewer.spawn_root(root_spec("puppet", Budget::UNLIMITED)).await,
            Err(RuntimeError::ReadOnly)
        ));
        assert_eq!(
            viewer.signal(child, SignalKind::Pause, None).await.expect_err("read-only").code,
            "read_only"
        );
        let call = viewer.call_as(child, Call::List { include_terminal: false }).await;
        assert_eq!(call.expect_err("read-only").code, "read_only");
        assert!(matches!(viewer.wait_terminal(child).await, Err(RuntimeError::ReadOnly)));
        viewer.shutdown().await.expect("a viewer shuts down trivially");

        // The owner is unaffected.
        assert_eq!(row(&owner, child).status, Status::Running);
        exit(&owner, child, None).await;
    });
    assert!(waited.expect("wait").ready);
    owner.shutdown().await.expect("shutdown");

    let next = Runtime::open(dir.path(), options(vec![])).await.expect("next owner");
    assert!(!next.is_read_only(), "the lock is released with its owner");
    assert_eq!(row(&next, root).pause_reason, Some(PauseReason::Shutdown));
    next.shutdown().await.expect("shutdown");
}
