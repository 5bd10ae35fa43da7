//! `merge_child_memory` of a child holding N objects, N = 1,000 and 100,000, against a bare
//! store write of N objects in the same run.
//!
//! The child is a spawned child of a root; it created N ordinary objects, each one of its
//! roots, and the merge runs with `include_child_created=true`, so all N are candidates and all
//! N are adopted. Per adopted object the merge's change set holds a `PutObject` (the new
//! owner) and a `PutHandle` (the parent's read/write/delegate handle); the collection adds a
//! `RevokeHandle` for each handle the child held: 3N + 3 changes in one change set.
//!
//! - `merge/N`: what the runtime's `merge_child` does minus actor messaging: `plan_merge`, the
//!   changes applied to the space and turned into store changes (cloned as the runtime's stage
//!   clones them), one `submit` to a durable `SqliteStore` (WAL, `synchronous=FULL`) that
//!   already holds the parent, the child and its N objects, and the wait for that commit.
//! - `planner/N`: `plan_merge` and `ObjectSpace::apply` of its changes alone, no store: the
//!   kernel's share of `merge/N`. The rest is the store's.
//! - `bare_put_object/N`, the baseline: one change set of N `PutObject` in one `Change::Objects` (a
//!   trivial object: no labels, one owner) submitted to a fresh, empty `SqliteStore` and
//!   awaited: one row written per object, one transaction, one fsync.
//! - `bare_put_object/1`: one such change per change set on a store kept open: the fixed cost
//!   of a commit (mostly its fsync), to read the per-object costs net of it.
//!
//! Every iteration starts from fresh state, built outside the timed part: a clone of the
//! space and, for `merge/N`, a store opened on a fresh copy of a template file that holds the
//! fixture (closed, so the WAL is checkpointed into it). Stores are closed, and spaces dropped,
//! after the timer stops. The throughput is N elements, so criterion's `thrpt` is objects per
//! second; the per-object cost is its inverse.
//!
//! Before each size the bench prints one probe: a one-change commit submitted right behind the
//! merge's change set, and how long it waited. The writer takes a change set whole, however
//! large, so everything submitted behind a merge waits for all of it.
//!
//! The 100,000 case runs 10 samples of one iteration each with a one-iteration warm-up (one to
//! three seconds each, plus setup and closing); criterion's warning that the samples do not
//! fit in the target time is expected. The whole bench takes under a minute on a 2-core
//! machine.

use agentvisor_actors::kernel::ids::{CountingIds, IdSource, Pid};
use agentvisor_actors::kernel::objects::{
    CreateRequest, ObjectChange, ObjectKind, ObjectMeta, ObjectSpace, Owner, RootViewRequest,
    SpawnViewRequest,
};
use agentvisor_actors::store::{Change, SqliteStore, Store};
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

const SIZES: [usize; 2] = [1_000, 100_000];
const DB_FILE: &str = "agentvisor.db";

/// A parent, a child holding `n` created roots, and every change that built them.
struct Fixture {
    n: usize,
    parent: Pid,
    child: Pid,
    space: ObjectSpace,
    /// The changes that built `space`, in order, to load a fresh store with.
    log: Vec<ObjectChange>,
}

fn record(space: &mut ObjectSpace, log: &mut Vec<ObjectChange>, changes: Vec<ObjectChange>) {
    log.extend(changes.iter().cloned());
    space.apply(changes);
}

fn fixture(n: usize) -> Fixture {
    let mut ids = CountingIds::new(1);
    let mut space = ObjectSpace::new();
    let mut log = Vec::new();

    let parent = ids.pid();
    let approval = space.plan_root_view(&RootViewRequest::default()).expect("a root view");
    let view = space.materialize_view(approval, parent, &mut ids).expect("materializes");
    record(&mut space, &mut log, view.changes);

    let child = ids.pid();
    let request = SpawnViewRequest { parent, clearance: None, default_skills: Vec::new() };
    let approval = space.plan_spawn_view(&request).expect("a spawn view");
    let view = space.materialize_view(approval, child, &mut ids).expect("materializes");
    record(&mut space, &mut log, view.changes);

    let create =
        CreateRequest { holder: child, name: None, labels: BTreeSet::new(), ephemeral: false, root: true };
    for _ in 0..n {
        let plan = space.plan_create(&create, &mut ids).expect("creates");
        record(&mut space, &mut log, plan.changes);
    }
    space.check().expect("a valid space");
    Fixture { n, parent, child, space, log }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime")
}

/// A fresh store in a fresh directory, loaded with `log` in one change set.
fn loaded_store(rt: &tokio::runtime::Runtime, log: &[ObjectChange]) -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open(&dir.path().join(DB_FILE)).expect("opens");
    if !log.is_empty() {
        let changes = vec![Change::Objects(log.to_vec())];
        rt.block_on(store.submit(changes)).expect("loads");
    }
    (dir, store)
}

/// A closed store file holding `log`, to copy for each iteration: loading N objects through
/// the store every iteration would cost about as much as the merge itself.
fn template(rt: &tokio::runtime::Runtime, log: &[ObjectChange]) -> tempfile::TempDir {
    let (dir, store) = loaded_store(rt, log);
    // Closing checkpoints the WAL into the main file, so the file alone is the whole state.
    drop(store);
    dir
}

/// A fresh store opened on a copy of the template's file.
fn store_from(template: &tempfile::TempDir) -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::copy(template.path().join(DB_FILE), dir.path().join(DB_FILE)).expect("copies the template");
    let store = SqliteStore::open(&dir.path().join(DB_FILE)).expect("opens");
    (dir, store)
}

/// `merge_child_memory` minus actor messaging, as `ProcessActor::merge_child` runs it: plan,
/// apply (the stage clones the plan's changes into its change set), submit, await.
fn merge(rt: &tokio::runtime::Runtime, f: &Fixture, template: &tempfile::TempDir, iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let mut space = f.space.clone();
        let (dir, store) = store_from(template);
        let start = Instant::now();
        let plan = space.plan_merge(f.parent, f.child, true).expect("merges");
        let staged: Vec<Change> = vec![Change::Objects(plan.changes.clone())];
        space.apply(plan.changes.clone());
        rt.block_on(store.submit(staged)).expect("commits");
        total += start.elapsed();
        assert_eq!(plan.merged_oids.len(), f.n, "every created object is adopted");
        // Closing the store (joining its writer) happens here, after the timer stopped.
        drop((store, dir, space, plan));
    }
    total
}

/// The kernel's share: `plan_merge` and `ObjectSpace::apply`, no store.
fn planner(f: &Fixture, iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let mut space = f.space.clone();
        let start = Instant::now();
        let plan = space.plan_merge(f.parent, f.child, true).expect("merges");
        let merged = plan.merged_oids.len();
        space.apply(plan.changes);
        total += start.elapsed();
        assert_eq!(merged, f.n, "every created object is adopted");
        drop(space);
    }
    total
}

/// A trivial object: no labels, owned by `owner`.
fn trivial(ids: &mut CountingIds, owner: &Owner) -> ObjectChange {
    ObjectChange::PutObject(ObjectMeta {
        oid: ids.oid(),
        owner: owner.clone(),
        kind: ObjectKind::Data,
        labels: BTreeSet::new(),
        ephemeral: false,
        released: false,
    })
}

/// The baseline: N trivial `PutObject` changes, one change set, into a fresh store.
fn bare_put_object(rt: &tokio::runtime::Runtime, n: usize, iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    for i in 0..iters {
        let mut ids = CountingIds::new(i + 1);
        let owner = Owner::Process(ids.pid());
        let changes = vec![Change::Objects((0..n).map(|_| trivial(&mut ids, &owner)).collect())];
        let (dir, store) = loaded_store(rt, &[]);
        let start = Instant::now();
        rt.block_on(store.submit(changes)).expect("commits");
        total += start.elapsed();
        drop((store, dir));
    }
    total
}

/// The fixed cost of a commit (one transaction, one fsync): one trivial `PutObject` per
/// change set, on one store kept open across iterations.
fn bare_put_one(
    rt: &tokio::runtime::Runtime,
    store: &SqliteStore,
    ids: &mut CountingIds,
    iters: u64,
) -> Duration {
    let owner = Owner::Process(ids.pid());
    let start = Instant::now();
    for _ in 0..iters {
        rt.block_on(store.submit(vec![Change::Objects(vec![trivial(ids, &owner)])])).expect("commits");
    }
    start.elapsed()
}

/// How long a one-change commit submitted right behind the merge's change set waits: the
/// writer takes a change set whole, so the small one queues until the merge has committed.
fn probe_writer(rt: &tokio::runtime::Runtime, f: &Fixture, template: &tempfile::TempDir) {
    let mut space = f.space.clone();
    let (dir, store) = store_from(template);
    let mut ids = CountingIds::new(u64::MAX);
    let owner = Owner::Process(ids.pid());
    let start = Instant::now();
    let plan = space.plan_merge(f.parent, f.child, true).expect("merges");
    let staged: Vec<Change> = vec![Change::Objects(plan.changes.clone())];
    space.apply(plan.changes.clone());
    let merged = store.submit(staged);
    let submitted = start.elapsed();
    let small = Instant::now();
    let one = store.submit(vec![Change::Objects(vec![trivial(&mut ids, &owner)])]);
    let (merge_done, one_done) = rt.block_on(async {
        let merge = async {
            merged.await.expect("commits");
            start.elapsed()
        };
        let one = async {
            one.await.expect("commits");
            small.elapsed()
        };
        tokio::join!(merge, one)
    });
    println!(
        "merge of {}: planned and submitted in {submitted:.2?}, committed after {merge_done:.2?}; \
         a one-change commit submitted behind it resolved after {one_done:.2?}",
        f.n
    );
    drop((store, dir, space));
}

fn object_merge(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("object_merge");
    group.sampling_mode(SamplingMode::Flat).sample_size(10);

    // The per-commit fixed cost, so the per-object costs below can be read net of it.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open(&dir.path().join(DB_FILE)).expect("opens");
    let mut ids = CountingIds::new(1 << 20);
    group.warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(2));
    group.throughput(Throughput::Elements(1));
    group.bench_function(BenchmarkId::new("bare_put_object", 1), |b| {
        b.iter_custom(|iters| bare_put_one(&rt, &store, &mut ids, iters));
    });
    drop((store, dir));

    for n in SIZES {
        let built = Instant::now();
        let f = fixture(n);
        let changes = f.space.plan_merge(f.parent, f.child, true).expect("merges").changes.len();
        let template = template(&rt, &f.log);
        println!(
            "fixture of {n} objects built and loaded into a template store in {:.2?}; \
             the merge is {changes} changes in one change set",
            built.elapsed()
        );
        probe_writer(&rt, &f, &template);
        if n >= 100_000 {
            // One iteration per sample and no warm-up beyond one iteration: each iteration
            // costs seconds. Criterion warns that 10 samples do not fit; that is expected.
            group.warm_up_time(Duration::from_millis(1)).measurement_time(Duration::from_millis(1));
        } else {
            group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
        }
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("merge", n), &f, |b, f| {
            b.iter_custom(|iters| merge(&rt, f, &template, iters));
        });
        group.bench_with_input(BenchmarkId::new("planner", n), &f, |b, f| {
            b.iter_custom(|iters| planner(f, iters));
        });
        group.bench_with_input(BenchmarkId::new("bare_put_object", n), &n, |b, &n| {
            b.iter_custom(|iters| bare_put_object(&rt, n, iters));
        });
    }
    group.finish();
}

criterion_group!(benches, object_merge);
criterion_main!(benches);
