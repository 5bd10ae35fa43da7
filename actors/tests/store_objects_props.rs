//! Property test of object memory in the SQLite store: random sequences of the kernel's planner
//! operations (create, fork in all four modes, spawn, delegate, read, write, skill loads, exit
//! with the release of unmerged children, wait, merge), each approved plan applied to a local
//! space and committed as `Change::Objects`, with payloads put on creates and writes. Plans
//! gather into change sets of random size. After the sequence the store is closed and opened
//! again, and it must read back exactly the local space and the payloads still owed.
//!
//! 32 cases of at most 48 steps, ChaCha from a fixed seed that is printed; set
//! `STORE_OBJECTS_PROPS_SEED=<n>` to replay or explore another seed. On failure proptest prints
//! the minimal sequence it shrank to (and no failure file is written).

mod seeded;

use agentvisor_actors::kernel::ids::{CountingIds, IdSource, Oid, Pid};
use agentvisor_actors::kernel::objects::{
    ChildImage, CreateRequest, ForkMode, ForkViewRequest, ObjectChange, ObjectRights, ObjectSpace,
    RootSelection, RootViewRequest, Skill, SpawnViewRequest, ViewApproval,
};
use agentvisor_actors::store::{Change, Envelope, SqliteStore, Store};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::Config;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const DEFAULT_SEED: u64 = 0x5707_e0b1_0000_0003;

fn config() -> Config {
    seeded::config("store_objects_props", "STORE_OBJECTS_PROPS_SEED", DEFAULT_SEED, 32)
}

const LABELS: [&str; 3] = ["pii", "secret", "public"];

fn label_set(mask: u8) -> BTreeSet<String> {
    LABELS.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, l)| l.to_string()).collect()
}

fn skill(name: &str, tools: &[&str]) -> Skill {
    Skill { name: name.into(), allowed_tools: tools.iter().map(|t| t.to_string()).collect() }
}

// ---- the operations -------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Op {
    Create {
        actor: Index,
        labels: u8,
        ephemeral: bool,
        root: bool,
        named: bool,
        payload: bool,
    },
    Fork {
        actor: Index,
        mode: ForkMode,
        all_roots: bool,
        clearance: Option<u8>,
    },
    Spawn {
        actor: Index,
        clearance: Option<u8>,
    },
    Delegate {
        actor: Index,
        child: Index,
        object: Index,
        rights: u8,
    },
    Write {
        actor: Index,
        object: Index,
    },
    Read {
        actor: Index,
        object: Index,
    },
    LoadSkills {
        actor: Index,
        count: usize,
    },
    Exit {
        actor: Index,
    },
    Wait {
        actor: Index,
        child: Index,
    },
    Merge {
        actor: Index,
        child: Index,
        include_child_created: bool,
    },
    /// Commits the plans gathered since the last commit as one change set.
    Commit,
}

fn mode() -> impl Strategy<Value = ForkMode> {
    prop_oneof![
        Just(ForkMode::Worker),
        Just(ForkMode::Restricted),
        Just(ForkMode::Copy),
        Just(ForkMode::Speculative)
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<Index>(), 0u8..8, any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
            |(actor, labels, ephemeral, root, named, payload)| Op::Create {
                actor, labels, ephemeral, root, named, payload
            }
        ),
        3 => (any::<Index>(), mode(), any::<bool>(), prop::option::weighted(0.3, 0u8..8))
            .prop_map(|(actor, mode, all_roots, clearance)| Op::Fork { actor, mode, all_roots, clearance }),
        1 => (any::<Index>(), prop::option::weighted(0.3, 0u8..8))
            .prop_map(|(actor, clearance)| Op::Spawn { actor, clearance }),
        2 => (any::<Index>(), any::<Index>(), any::<Index>(), 1u8..8)
            .prop_map(|(actor, child, object, rights)| Op::Delegate { actor, child, object, rights }),
        2 => (any::<Index>(), any::<Index>()).prop_map(|(actor, object)| Op::Write { actor, object }),
        2 => (any::<Index>(), any::<Index>()).prop_map(|(actor, object)| Op::Read { actor, object }),
        1 => (any::<Index>(), 0usize..3).prop_map(|(actor, count)| Op::LoadSkills { actor, count }),
        2 => any::<Index>().prop_map(|actor| Op::Exit { actor }),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(actor, child)| Op::Wait { actor, child }),
        2 => (any::<Index>(), any::<Index>(), any::<bool>())
            .prop_map(|(actor, child, include_child_created)| Op::Merge { actor, child, include_child_created }),
        3 => Just(Op::Commit),
    ]
}

fn sequence() -> impl Strategy<Value = (Option<u8>, Vec<Op>)> {
    (prop::option::weighted(0.5, 0u8..8), prop::collection::vec(op(), 1..=48))
}

// ---- the model ------------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct Proc {
    parent: Option<Pid>,
    alive: bool,
    children: Vec<Pid>,
}

/// The local space, the processes' tree, the payloads the store owes, and the changes not yet
/// committed.
struct Model {
    space: ObjectSpace,
    ids: CountingIds,
    procs: BTreeMap<Pid, Proc>,
    payloads: BTreeMap<Oid, Envelope>,
    pending: Vec<Change>,
    payload_count: u32,
}

impl Model {
    fn new(root_clearance: Option<u8>) -> Self {
        let mut model = Model {
            space: ObjectSpace::new(),
            ids: CountingIds::new(13),
            procs: BTreeMap::new(),
            payloads: BTreeMap::new(),
            pending: Vec::new(),
            payload_count: 0,
        };
        let request = RootViewRequest {
            clearance: root_clearance.map(label_set),
            goal_labels: BTreeSet::new(),
            default_skills: vec![skill("a", &["t1"]), skill("b", &["t2"])],
        };
        let approval = model.space.plan_root_view(&request).expect("a root view");
        model.launch(None, approval);
        model
    }

    /// Applies an approved plan's changes to the local space and queues them for the store.
    fn take(&mut self, changes: Vec<ObjectChange>) {
        for change in &changes {
            if let ObjectChange::ReleaseObject { oid } = change {
                self.payloads.remove(oid);
            }
        }
        self.space.apply(changes.clone());
        if let Err(error) = self.space.check() {
            panic!("{error}");
        }
        self.pending.push(Change::Objects(changes));
    }

    /// Queues a fresh payload for `oid` (replacing any earlier one).
    fn put_payload(&mut self, oid: Oid) {
        self.payload_count += 1;
        let envelope = if self.payload_count.is_multiple_of(2) {
            Envelope::json(&serde_json::json!({ "n": self.payload_count }))
        } else {
            Envelope::bytes(self.payload_count.to_le_bytes().to_vec())
        };
        self.payloads.insert(oid, envelope.clone());
        self.pending.push(Change::PutPayload { oid, envelope });
    }

    fn launch(&mut self, parent: Option<Pid>, approval: ViewApproval) {
        let child = self.ids.pid();
        let plan = self.space.materialize_view(approval, child, &mut self.ids).expect("an approved view");
        self.take(plan.changes);
        self.procs.insert(child, Proc { parent, alive: true, children: Vec::new() });
        if let Some(p) = parent.and_then(|p| self.procs.get_mut(&p)) {
            p.children.push(child);
        }
    }

    fn live(&self) -> Vec<Pid> {
        self.procs.iter().filter(|(_, p)| p.alive).map(|(pid, _)| *pid).collect()
    }

    fn live_children(&self, pid: Pid) -> Vec<Pid> {
        self.procs[&pid].children.iter().copied().filter(|c| self.procs[c].alive).collect()
    }

    fn ended_children(&self, pid: Pid) -> Vec<Pid> {
        self.procs[&pid].children.iter().copied().filter(|c| !self.procs[c].alive).collect()
    }

    fn held_oids(&self, pid: Pid) -> Vec<Oid> {
        self.space.handles_of(pid).map(|h| h.oid).collect()
    }

    fn pick<T: Copy>(items: &[T], index: &Index) -> Option<T> {
        (!items.is_empty()).then(|| items[index.index(items.len())])
    }
}

// ---- running a sequence ---------------------------------------------------------------------

impl Model {
    /// Runs one operation; refusals change nothing (plans are pure), approvals are taken.
    /// Returns a change set to commit, for `Op::Commit`.
    fn step(&mut self, op: &Op) -> Option<Vec<Change>> {
        if let Op::Commit = op {
            return Some(std::mem::take(&mut self.pending));
        }
        // The root never exits: every other process may.
        let live: Vec<Pid> = match op {
            Op::Exit { .. } => self.live().into_iter().filter(|p| self.procs[p].parent.is_some()).collect(),
            _ => self.live(),
        };
        let actor = Model::pick(&live, op_actor(op)?)?;
        match op {
            Op::Create { labels, ephemeral, root, named, payload, .. } => {
                let name = named.then(|| format!("n{}", self.space.objects().count()));
                let request = CreateRequest {
                    holder: actor,
                    name,
                    labels: label_set(*labels),
                    ephemeral: *ephemeral,
                    root: *root,
                };
                if let Ok(plan) = self.space.plan_create(&request, &mut self.ids) {
                    self.take(plan.changes);
                    if *payload {
                        self.put_payload(plan.oid);
                    }
                }
            }
            Op::Fork { mode, all_roots, clearance, .. } => {
                let roots =
                    if *all_roots { RootSelection::AllParentRoots } else { RootSelection::NoParentRoots };
                let image = ChildImage {
                    same_as_parent: false,
                    tools: BTreeSet::from(["t1".to_string()]),
                    default_skills: vec![skill("d", &["t1"])],
                };
                let request = ForkViewRequest {
                    parent: actor,
                    mode: *mode,
                    roots,
                    clearance: clearance.map(label_set),
                    image,
                };
                if let Ok(approval) = self.space.plan_fork_view(&request) {
                    self.launch(Some(actor), approval);
                }
            }
            Op::Spawn { clearance, .. } => {
                let request = SpawnViewRequest {
                    parent: actor,
                    clearance: clearance.map(label_set),
                    default_skills: vec![skill("s", &["t3"])],
                };
                if let Ok(approval) = self.space.plan_spawn_view(&request) {
                    self.launch(Some(actor), approval);
                }
            }
            Op::Delegate { child, object, rights, .. } => {
                let to = Model::pick(&self.live_children(actor), child)?;
                let oid = Model::pick(&self.held_oids(actor), object)?;
                let rights = ObjectRights::from_bits_truncate(*rights);
                if let Ok(changes) = self.space.plan_delegate(actor, to, oid, rights) {
                    self.take(changes);
                }
            }
            Op::Write { object, .. } => {
                let oid = Model::pick(&self.held_oids(actor), object)?;
                if let Ok(changes) = self.space.plan_write(actor, oid) {
                    self.take(changes);
                    self.put_payload(oid);
                }
            }
            Op::Read { object, .. } => {
                let oid = Model::pick(&self.held_oids(actor), object)?;
                if let Ok(plan) = self.space.plan_read(actor, oid) {
                    self.take(plan.changes);
                }
            }
            Op::LoadSkills { count, .. } => {
                let skills = (0..*count).map(|i| skill(&format!("k{i}"), &["t1", "t2"])).collect();
                if let Ok(changes) = self.space.plan_load_skills(actor, skills) {
                    self.take(changes);
                }
            }
            Op::Exit { .. } => self.exit(actor),
            Op::Wait { child, .. } => {
                let child = Model::pick(&self.ended_children(actor), child)?;
                if let Ok(Some(plan)) = self.space.grant_result_handle(actor, child) {
                    self.take(plan.changes);
                }
            }
            Op::Merge { child, include_child_created, .. } => {
                let child = Model::pick(&self.ended_children(actor), child)?;
                if let Ok(plan) = self.space.plan_merge(actor, child, *include_child_created) {
                    self.take(plan.changes);
                }
            }
            Op::Commit => {}
        }
        None
    }

    /// Ends `pid` leaves first: each live descendant, then `pid`, makes a result (with a
    /// payload) and releases its unmerged children's memory.
    fn exit(&mut self, pid: Pid) {
        for child in self.live_children(pid) {
            self.exit(child);
        }
        if let Ok(plan) = self.space.plan_exit_result(pid, &mut self.ids) {
            self.take(plan.changes);
            self.put_payload(plan.oid);
        }
        let children = self.procs[&pid].children.clone();
        let release = self.space.release_unmerged_children(pid, &children).expect("release at the end");
        self.take(release.changes);
        if let Some(p) = self.procs.get_mut(&pid) {
            p.alive = false;
        }
    }
}

fn op_actor(op: &Op) -> Option<&Index> {
    match op {
        Op::Create { actor, .. }
        | Op::Fork { actor, .. }
        | Op::Spawn { actor, .. }
        | Op::Delegate { actor, .. }
        | Op::Write { actor, .. }
        | Op::Read { actor, .. }
        | Op::LoadSkills { actor, .. }
        | Op::Exit { actor }
        | Op::Wait { actor, .. }
        | Op::Merge { actor, .. } => Some(actor),
        Op::Commit => None,
    }
}

/// What the store must hold: the space (its resident part read at open, the rest on demand),
/// and the payloads of objects not released since.
fn assert_holds(store: &SqliteStore, model: &Model) -> Result<(), TestCaseError> {
    let mut space = store.object_space().map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&space, &model.space.resident(), "the resident part");
    let pids: Vec<Pid> = model.space.processes().map(|(pid, _)| pid).collect();
    let oids: Vec<Oid> = model.space.objects().map(|o| o.oid).collect();
    let history = store.object_memory_of(&pids, &oids).map_err(|e| TestCaseError::fail(e.to_string()))?;
    space.adopt(history);
    prop_assert_eq!(&space, &model.space, "the resident part and the history");
    let oids = store.payload_oids().map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(oids, model.payloads.keys().copied().collect::<BTreeSet<Oid>>());
    for (oid, envelope) in &model.payloads {
        let stored = store.payload(*oid).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(stored.as_ref(), Some(envelope), "payload of {}", oid);
    }
    Ok(())
}

async fn commit(store: &SqliteStore, changes: Vec<Change>) -> Result<(), TestCaseError> {
    store.submit(changes).await.map(|_| ()).map_err(|e| TestCaseError::fail(format!("commit refused: {e}")))
}

async fn run(path: &Path, root_clearance: Option<u8>, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut model = Model::new(root_clearance);
    let store = SqliteStore::open(path).map_err(|e| TestCaseError::fail(e.to_string()))?;
    for op in ops {
        if let Some(changes) = model.step(op) {
            commit(&store, changes).await?;
        }
    }
    commit(&store, std::mem::take(&mut model.pending)).await?;
    assert_holds(&store, &model)?;
    drop(store);
    let reopened = SqliteStore::open(path).map_err(|e| TestCaseError::fail(e.to_string()))?;
    assert_holds(&reopened, &model)
}

proptest! {
    #![proptest_config(config())]

    /// Whatever the planners approve, committed in change sets of any size, the SQLite store
    /// reads back, after a reopen, exactly the space the same changes make in memory (the
    /// resident part at open, the rest when asked for by pid and OID), and
    /// exactly the payloads of objects not released since they were put.
    #[test]
    fn a_reopened_store_reads_back_the_space_its_changes_made((clearance, ops) in sequence()) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio");
        tokio.block_on(run(&dir.path().join("agentvisor.db"), clearance, &ops))?;
    }
}
