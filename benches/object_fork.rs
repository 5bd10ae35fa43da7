//! `fork_child_process` through the full runtime (the parent's actor call, view planning,
//! the launch's one commit, the child's actor start) from a parent with 10 and with 10,000
//! roots, against `spawn_child_process` from the same parent in the same run.
//!
//! Each parent is a root on the idle image. Its roots are its goal plus objects it created
//! with `create_object(root=true)`, each named (`o00001`, ...), so the 10,000-root parent also
//! has 10,000 names, the namespace limit. The benches, per parent:
//!
//! - `spawn/R`: `spawn_child_process` (a goal-only view); the baseline.
//! - `fork_all_roots/R`: `fork_child_process` in worker mode with the default root selection,
//!   which shares every live parent root (R of them) with the child.
//! - `fork_exact_10/10000`: worker mode with `root_oids` naming 10 of the 10,000 roots.
//! - `fork_exact_10_unnamed/10000` (in-memory runtime only): the same from a parent whose
//!   9,999 created roots have no names, to show what the parent's namespace costs a fork.
//!
//! The child runs the `exit` image. After each timed launch, outside the timer, the parent
//! waits for the child and merges it (`include_child_created=false`), which revokes every
//! handle the child held, so handles do not pile up across iterations. What a collected child
//! keeps (its process row, its goal's tombstone, its roots and names) does pile up; the bench
//! prints how much at the end. A criterion call runs at most 1,000 launches and scales a larger
//! iteration count from them, which keeps each parent far below `CHILDREN_MAX`.
//!
//! `object_fork_planner` runs the kernel's share alone on a pure object space holding the same
//! 10,000-root parents: `plan_spawn_view` / `plan_fork_view` and `materialize_view`, no apply,
//! no store, no actor.
//!
//! Two runtimes: `Runtime::in_memory` (`object_fork_memory`) and a SQLite-backed runtime in a
//! temporary directory (`object_fork_sqlite`, WAL, `synchronous=FULL`: every launch pays an
//! fsync). Building the 10,000-root parent is one durable `create_object` call per root, done
//! once per runtime before any measurement; on SQLite that is one fsync each, 15 to 55 seconds
//! on a small shared machine, most of the bench's one to two minutes.

mod common;

use agentvisor::actors::kernel::ids::{CountingIds, IdSource};
use agentvisor::actors::kernel::launch::LaunchRequest;
use agentvisor::actors::kernel::objects::{
    ChildImage, CreateRequest, ForkMode, ForkViewRequest, ObjectSpace, RootSelection, RootViewRequest,
    SpawnViewRequest,
};
use agentvisor::actors::runtime::Runtime;
use agentvisor::actors::runtime::calls::{Call, CallOk, CreateObject, ForkRequest};
use agentvisor::actors::{ImageId, Oid, Pid};
use criterion::{BenchmarkId, Criterion, SamplingMode, criterion_group, criterion_main};
use std::time::{Duration, Instant};

const SMALL: usize = 10;
const LARGE: usize = 10_000;
const EXACT: usize = 10;
/// Launches actually run per criterion call (see [`launches`]).
const TIMED_MAX: u64 = 1_000;

/// A parent and its roots (its goal first).
struct Parent {
    pid: Pid,
    roots: Vec<Oid>,
}

/// A root process with `roots` roots: its goal and `roots - 1` objects it created, each named
/// if `named`.
async fn parent_with_roots(rt: &Runtime, roots: usize, named: bool) -> Parent {
    let pid = common::root(rt).await;
    let goal = rt.memory(pid).and_then(|m| m.goal_oid).expect("the root has a goal");
    let mut all = vec![goal];
    for i in 1..roots {
        let request = CreateObject {
            name: named.then(|| format!("o{i:05}")),
            payload: serde_json::json!({ "n": i }),
            root: true,
            ..CreateObject::default()
        };
        match rt.call_as(pid, Call::CreateObject(request)).await {
            Ok(CallOk::Created(created)) => all.push(created.oid),
            other => panic!("create_object failed: {other:?}"),
        }
    }
    Parent { pid, roots: all }
}

#[derive(Clone)]
enum Launch {
    Spawn,
    Fork(RootSelection),
}

fn child_request() -> LaunchRequest {
    LaunchRequest {
        goal: "bench child".into(),
        image: Some(ImageId::from("exit")),
        ..LaunchRequest::default()
    }
}

/// Launches one child and returns its pid and how many roots its view has.
async fn launch(rt: &Runtime, parent: Pid, how: &Launch) -> (Pid, usize) {
    let call = match how {
        Launch::Spawn => Call::Spawn(child_request()),
        Launch::Fork(roots) => {
            let fork = ForkRequest { launch: child_request(), mode: ForkMode::Worker, roots: roots.clone() };
            Call::Fork(Box::new(fork))
        }
    };
    match rt.call_as(parent, call).await {
        Ok(CallOk::Spawned(launched)) => (launched.pid, launched.view.roots.len()),
        other => panic!("launch failed: {other:?}"),
    }
}

/// Waits for the child and merges it, which revokes every handle it held.
async fn reap(rt: &Runtime, parent: Pid, child: Pid) {
    common::wait(rt, parent, child).await;
    let merge = Call::Merge { child_pid: child, include_child_created: false };
    match rt.call_as(parent, merge).await {
        Ok(CallOk::Merged(_)) => {}
        other => panic!("merge failed: {other:?}"),
    }
}

/// Times `iters` launches; waiting and merging each child is outside the timer. At most
/// [`TIMED_MAX`] launches run per call and a larger `iters` is scaled from them, so a parent
/// stays far below `CHILDREN_MAX` however fast the machine is.
async fn launches(rt: &Runtime, parent: Pid, how: &Launch, expected_roots: usize, iters: u64) -> Duration {
    let timed = iters.min(TIMED_MAX);
    let mut total = Duration::ZERO;
    for _ in 0..timed {
        let start = Instant::now();
        let (child, roots) = launch(rt, parent, how).await;
        total += start.elapsed();
        assert_eq!(roots, expected_roots, "the child's view has its goal and the selected roots");
        reap(rt, parent, child).await;
    }
    common::scaled(total, iters, timed)
}

/// What collected children leave behind in the object space.
fn report_retained(rt: &Runtime, label: &str) {
    let space = rt.object_space();
    let (mut collected, mut roots, mut names) = (0usize, 0usize, 0usize);
    for (_, memory) in space.processes() {
        if memory.collected.is_some() {
            collected += 1;
            roots += memory.roots.len();
            names += memory.namespace.len();
        }
    }
    println!(
        "{label}: {collected} collected children keep {roots} roots and {names} names; the space holds {} objects and {} handles",
        space.objects().count(),
        space.handles().count(),
    );
}

/// The 10 roots `fork_exact_10` selects: spread through the parent's roots.
fn spread(parent: &Parent) -> Vec<Oid> {
    parent.roots.iter().step_by(parent.roots.len() / EXACT).copied().take(EXACT).collect()
}

fn bench_backend(c: &mut Criterion, tokio: &tokio::runtime::Runtime, label: &str, rt: &Runtime) {
    let building = Instant::now();
    let small = tokio.block_on(parent_with_roots(rt, SMALL, true));
    let large = tokio.block_on(parent_with_roots(rt, LARGE, true));
    println!("{label}: parents with {SMALL} and {LARGE} named roots built in {:.2?}", building.elapsed());
    // Unnamed roots only in memory: another 10,000 durable creates would double the SQLite
    // setup, and what this case isolates (the parent's namespace) is CPU, not store.
    let unnamed = (label == "memory").then(|| tokio.block_on(parent_with_roots(rt, LARGE, false)));

    let mut group = c.benchmark_group(format!("object_fork_{label}"));
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    let mut cases = vec![
        ("spawn", &small, Launch::Spawn, 1),
        ("fork_all_roots", &small, Launch::Fork(RootSelection::AllParentRoots), 1 + SMALL),
        ("spawn", &large, Launch::Spawn, 1),
        ("fork_all_roots", &large, Launch::Fork(RootSelection::AllParentRoots), 1 + LARGE),
        ("fork_exact_10", &large, Launch::Fork(RootSelection::Exact(spread(&large))), 1 + EXACT),
    ];
    if let Some(unnamed) = &unnamed {
        let exact = Launch::Fork(RootSelection::Exact(spread(unnamed)));
        cases.push(("fork_exact_10_unnamed", unnamed, exact, 1 + EXACT));
    }
    for (name, parent, how, expected) in cases {
        let id = BenchmarkId::new(name, parent.roots.len());
        group.bench_function(id, |b| {
            b.to_async(tokio).iter_custom(|iters| launches(rt, parent.pid, &how, expected, iters));
        });
    }
    group.finish();
    report_retained(rt, label);
}

/// A pure object space holding a root with `roots` roots (goal included), named if `named`.
fn kernel_parent(roots: usize, named: bool, ids: &mut CountingIds) -> (ObjectSpace, Parent) {
    let mut space = ObjectSpace::new();
    let pid = ids.pid();
    let approval = space.plan_root_view(&RootViewRequest::default()).expect("a root view");
    let view = space.materialize_view(approval, pid, ids).expect("materializes");
    space.apply(view.changes);
    let mut all = vec![view.goal];
    for i in 1..roots {
        let request = CreateRequest {
            holder: pid,
            name: named.then(|| format!("o{i:05}")),
            labels: Default::default(),
            ephemeral: false,
            root: true,
        };
        let plan = space.plan_create(&request, ids).expect("creates");
        all.push(plan.oid);
        space.apply(plan.changes);
    }
    (space, Parent { pid, roots: all })
}

/// The kernel's share of a launch: view planning and materializing (no apply, so the space
/// does not change between iterations).
fn plan_view(space: &ObjectSpace, parent: Pid, how: &Launch, ids: &mut CountingIds, iters: u64) -> Duration {
    let image = ChildImage { same_as_parent: false, tools: Default::default(), default_skills: Vec::new() };
    let start = Instant::now();
    for _ in 0..iters {
        let approval = match how {
            Launch::Spawn => space.plan_spawn_view(&SpawnViewRequest {
                parent,
                clearance: None,
                default_skills: Vec::new(),
            }),
            Launch::Fork(roots) => space.plan_fork_view(&ForkViewRequest {
                parent,
                mode: ForkMode::Worker,
                roots: roots.clone(),
                clearance: None,
                image: image.clone(),
            }),
        }
        .expect("approved");
        let view = space.materialize_view(approval, ids.pid(), ids).expect("materializes");
        std::hint::black_box(view);
    }
    start.elapsed()
}

/// The planner alone (`plan_spawn_view` / `plan_fork_view` + `materialize_view`) on a pure
/// object space, for the same parents: what of each launch is the kernel's.
fn bench_planner(c: &mut Criterion) {
    let mut ids = CountingIds::new(1);
    let (named_space, named) = kernel_parent(LARGE, true, &mut ids);
    let (unnamed_space, unnamed) = kernel_parent(LARGE, false, &mut ids);
    let mut group = c.benchmark_group("object_fork_planner");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    let cases = [
        ("spawn", &named_space, &named, Launch::Spawn),
        ("fork_all_roots", &named_space, &named, Launch::Fork(RootSelection::AllParentRoots)),
        ("fork_exact_10", &named_space, &named, Launch::Fork(RootSelection::Exact(spread(&named)))),
        (
            "fork_exact_10_unnamed",
            &unnamed_space,
            &unnamed,
            Launch::Fork(RootSelection::Exact(spread(&unnamed))),
        ),
    ];
    for (name, space, parent, how) in cases {
        group.bench_function(BenchmarkId::new(name, parent.roots.len()), |b| {
            b.iter_custom(|iters| plan_view(space, parent.pid, &how, &mut ids, iters));
        });
    }
    group.finish();
}

fn object_fork(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let rt = tokio.block_on(Runtime::in_memory(common::options())).expect("an in-memory runtime");
    bench_backend(c, &tokio, "memory", &rt);
    tokio.block_on(rt.shutdown()).expect("shuts down");

    let dir = tempfile::tempdir().expect("a temporary directory");
    let rt = tokio.block_on(Runtime::open(dir.path(), common::options())).expect("a SQLite runtime");
    bench_backend(c, &tokio, "sqlite", &rt);
    tokio.block_on(rt.shutdown()).expect("shuts down");
}

criterion_group!(benches, bench_planner, object_fork);
criterion_main!(benches);
