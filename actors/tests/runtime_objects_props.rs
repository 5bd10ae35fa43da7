//! Property tests of object memory through the runtime: random sequences of create, fork (all
//! four modes, random root selections and clearances), write, read, exit (with and without a
//! result), wait and merge, made by puppet processes with `Runtime::call_as`. Refusals are
//! expected; after every step the runtime's space keeps its invariants and:
//! - a child never holds a right its parent lacks on an object from outside its own subtree;
//! - a merge adopts only live, non-goal, non-ephemeral objects the child's process owned, that
//!   the parent is cleared for, and releases everything else the child and its result owned;
//! - no handle anywhere points at a released object;
//! - objects inherited in worker, restricted or speculative mode keep their payload and
//!   metadata whatever the child's subtree attempts.
//!
//! Operations name their process and object as indexes into the current lists (so they stay
//! mostly valid); a third of them go to the most recently launched live process, so that a
//! child's creates, its exit and its parent's wait and merge line up often. Waits and merges
//! pick a (live parent, child) pair, mostly one whose child ended and is not yet collected.
//!
//! The runs come from a fixed, printed seed with ChaCha, so they are reproducible; set
//! `RUNTIME_OBJECTS_PROPS_SEED=<n>` to explore another seed and `RUNTIME_OBJECTS_PROPS_CASES=<n>`
//! for more cases. On failure proptest prints the minimal sequence it shrank to.

mod common;
mod seeded;

use agentvisor_actors::kernel::budget::Budget;
use agentvisor_actors::kernel::ids::{Oid, Pid};
use agentvisor_actors::kernel::launch::LaunchRequest;
use agentvisor_actors::kernel::objects::flow::first_uncleared;
use agentvisor_actors::kernel::objects::{
    ForkMode, ObjectKind, ObjectMeta, ObjectRights, ObjectSpace, Owner, RootSelection,
};
use agentvisor_actors::runtime::calls::{CreateObject, ToolError};
use agentvisor_actors::runtime::{RootSpec, Runtime, RuntimeOptions};
use agentvisor_actors::store::ProcessQuery;
use common::objects::*;
use common::*;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::Config;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

const DEFAULT_SEED: u64 = 0x0b1e_c7a1_0000_0003;
const DEFAULT_CASES: u32 = 256;

fn cases() -> u32 {
    std::env::var("RUNTIME_OBJECTS_PROPS_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(DEFAULT_CASES)
}

fn config() -> Config {
    seeded::config("runtime_objects_props", "RUNTIME_OBJECTS_PROPS_SEED", DEFAULT_SEED, cases())
}

const LABELS: [&str; 3] = ["pii", "secret", "public"];

fn label_set(mask: u8) -> BTreeSet<String> {
    LABELS.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, l)| l.to_string()).collect()
}

// ---- the operations -------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Selection {
    All,
    None,
    Exact(Vec<Index>),
}

/// Who makes a call: the most recently launched live process (so that a child's creates,
/// exit and its parent's merge line up often), or any live process.
#[derive(Clone, Debug)]
enum Who {
    Recent,
    Any(Index),
}

#[derive(Clone, Debug)]
enum Op {
    Create {
        who: Who,
        labels: u8,
        ephemeral: bool,
        root: bool,
    },
    Fork {
        who: Who,
        mode: ForkMode,
        selection: Selection,
        clearance: Option<u8>,
    },
    Write {
        who: Who,
        object: Index,
        own_handles: bool,
    },
    Read {
        who: Who,
        object: Index,
        own_handles: bool,
    },
    Exit {
        who: Who,
        payload: bool,
    },
    /// A live parent and one of its children: an ended one, mostly.
    Wait {
        pair: Index,
        ended_only: bool,
    },
    Merge {
        pair: Index,
        ended_only: bool,
        include_child_created: bool,
    },
}

fn who() -> impl Strategy<Value = Who> {
    prop_oneof![1 => Just(Who::Recent), 2 => any::<Index>().prop_map(Who::Any)]
}

fn mode() -> impl Strategy<Value = ForkMode> {
    prop_oneof![
        Just(ForkMode::Worker),
        Just(ForkMode::Restricted),
        Just(ForkMode::Copy),
        Just(ForkMode::Speculative)
    ]
}

fn selection() -> impl Strategy<Value = Selection> {
    prop_oneof![
        2 => Just(Selection::All),
        1 => Just(Selection::None),
        3 => prop::collection::vec(any::<Index>(), 0..=3).prop_map(Selection::Exact),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (who(), 0u8..8, any::<bool>(), prop::bool::weighted(0.7))
            .prop_map(|(who, labels, ephemeral, root)| Op::Create { who, labels, ephemeral, root }),
        3 => (who(), mode(), selection(), prop::option::weighted(0.3, 0u8..8))
            .prop_map(|(who, mode, selection, clearance)| Op::Fork { who, mode, selection, clearance }),
        3 => (who(), any::<Index>(), any::<bool>())
            .prop_map(|(who, object, own_handles)| Op::Write { who, object, own_handles }),
        2 => (who(), any::<Index>(), any::<bool>())
            .prop_map(|(who, object, own_handles)| Op::Read { who, object, own_handles }),
        2 => (who(), any::<bool>()).prop_map(|(who, payload)| Op::Exit { who, payload }),
        2 => (any::<Index>(), prop::bool::weighted(0.8))
            .prop_map(|(pair, ended_only)| Op::Wait { pair, ended_only }),
        3 => (any::<Index>(), prop::bool::weighted(0.8), any::<bool>())
            .prop_map(|(pair, ended_only, include_child_created)| Op::Merge { pair, ended_only, include_child_created }),
    ]
}

fn sequence() -> impl Strategy<Value = (Option<u8>, Vec<Op>)> {
    (prop::option::weighted(0.5, 0u8..8), prop::collection::vec(op(), 1..=64))
}

// ---- the driver -----------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct Proc {
    parent: Option<Pid>,
    children: Vec<Pid>,
}

/// A parent object a child inherited in a read-only mode, and how it must stay while only the
/// child's subtree acts.
#[derive(Clone, Debug)]
struct Watch {
    child: Pid,
    oid: Oid,
    mode: ForkMode,
    meta: ObjectMeta,
    payload: Option<serde_json::Value>,
}

struct Driver {
    rt: Runtime,
    root: Pid,
    procs: BTreeMap<Pid, Proc>,
    watches: Vec<Watch>,
    /// Every pid, in launch order.
    launched: Vec<Pid>,
    writes: u64,
}

fn pick<T: Copy>(items: &[T], index: &Index) -> Option<T> {
    (!items.is_empty()).then(|| items[index.index(items.len())])
}

fn fail(what: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(what.to_string())
}

impl Driver {
    async fn new(root_clearance: Option<u8>) -> Driver {
        let options = RuntimeOptions::new().image(puppet());
        let rt = Runtime::in_memory(options).await.expect("start a runtime");
        let spec =
            RootSpec { clearance: root_clearance.map(label_set), ..root_spec("puppet", Budget::UNLIMITED) };
        let root = rt.spawn_root(spec).await.expect("a root");
        let procs = BTreeMap::from([(root, Proc { parent: None, children: Vec::new() })]);
        Driver { rt, root, procs, watches: Vec::new(), launched: vec![root], writes: 0 }
    }

    /// Processes whose actor is live (not terminal), from the committed rows.
    fn live(&self) -> Vec<Pid> {
        let query = ProcessQuery { include_terminal: false, ..ProcessQuery::default() };
        self.rt.processes(query).expect("read the store").into_iter().map(|r| r.pid).collect()
    }

    /// Who makes `op`'s call: for a wait or a merge, the parent of the pair it picks. The root
    /// never exits, which would end the run.
    fn actor(&self, op: &Op) -> Option<Pid> {
        let live = self.live();
        let who = match op {
            Op::Wait { pair, ended_only } | Op::Merge { pair, ended_only, .. } => {
                return pick(&self.pairs(*ended_only), pair).map(|(parent, _)| parent);
            }
            Op::Create { who, .. }
            | Op::Fork { who, .. }
            | Op::Write { who, .. }
            | Op::Read { who, .. }
            | Op::Exit { who, .. } => who,
        };
        let actors: Vec<Pid> = match op {
            Op::Exit { .. } => live.into_iter().filter(|p| *p != self.root).collect(),
            _ => live,
        };
        match who {
            Who::Recent => self.launched.iter().rev().copied().find(|p| actors.contains(p)),
            Who::Any(index) => pick(&actors, index),
        }
    }

    /// (live parent, child) pairs; with `ended_only`, only terminal children whose memory is
    /// not yet collected (the pairs a wait or a merge is meant for).
    fn pairs(&self, ended_only: bool) -> Vec<(Pid, Pid)> {
        let live: BTreeSet<Pid> = self.live().into_iter().collect();
        let space = self.rt.object_space();
        let collected = |pid: &Pid| space.process(*pid).is_some_and(|m| m.collected.is_some());
        let mut pairs = Vec::new();
        for parent in &live {
            for child in &self.procs[parent].children {
                if !ended_only || (!live.contains(child) && !collected(child)) {
                    pairs.push((*parent, *child));
                }
            }
        }
        pairs
    }

    fn subtree(&self, root: Pid) -> BTreeSet<Pid> {
        let mut out = BTreeSet::from([root]);
        let mut stack = vec![root];
        while let Some(pid) = stack.pop() {
            for child in &self.procs[&pid].children {
                if out.insert(*child) {
                    stack.push(*child);
                }
            }
        }
        out
    }

    fn candidates(space: &ObjectSpace, actor: Pid, own_handles: bool) -> Vec<Oid> {
        if own_handles {
            space.handles_of(actor).map(|h| h.oid).collect()
        } else {
            space.objects().map(|o| o.oid).collect()
        }
    }

    /// Runs one operation, then checks every property. Refusals are fine.
    async fn step(&mut self, op: &Op) -> Result<(), TestCaseError> {
        let Some(actor) = self.actor(op) else { return Ok(()) };
        let before = self.rt.object_space();
        match op {
            Op::Create { labels, ephemeral, root, .. } => {
                let request = CreateObject {
                    payload: json!({ "created_by": actor.to_string() }),
                    labels: label_set(*labels),
                    ephemeral: *ephemeral,
                    root: *root,
                    ..CreateObject::default()
                };
                let _ = create(&self.rt, actor, request).await;
            }
            Op::Fork { mode, selection, clearance, .. } => {
                self.fork(actor, *mode, selection, *clearance, &before).await?;
            }
            Op::Write { object, own_handles, .. } => {
                let Some(oid) = pick(&Self::candidates(&before, actor, *own_handles), object) else {
                    return Ok(());
                };
                self.writes += 1;
                let written = write(&self.rt, actor, oid, json!({ "write": self.writes })).await;
                if written.is_ok() {
                    let rights = before.rights(actor, oid);
                    let ephemeral = before.handle(actor, oid).is_some_and(|h| h.ephemeral);
                    prop_assert!(
                        rights.contains(ObjectRights::WRITE) && !ephemeral,
                        "{actor} wrote {oid} holding {rights} (ephemeral: {ephemeral})"
                    );
                }
            }
            Op::Read { object, own_handles, .. } => {
                let Some(oid) = pick(&Self::candidates(&before, actor, *own_handles), object) else {
                    return Ok(());
                };
                if let Ok(view) = read(&self.rt, actor, oid).await {
                    prop_assert!(before.rights(actor, oid).contains(ObjectRights::READ));
                    let context = self.rt.memory(actor).map(|m| m.context).unwrap_or_default();
                    for label in &view.labels {
                        prop_assert!(context.contains(label), "a read did not raise the context by {label}");
                    }
                }
            }
            Op::Exit { payload, .. } => {
                let payload = payload.then(|| json!({ "result_of": actor.to_string() }));
                let exited = exit(&self.rt, actor, payload.clone()).await;
                prop_assert_eq!(exited.result_oid.is_some(), payload.is_some());
                self.check_released_at_end(actor)?;
            }
            Op::Wait { pair, ended_only } => {
                let Some((_, child)) = pick(&self.pairs(*ended_only), pair) else { return Ok(()) };
                let waited = wait(&self.rt, actor, child, false).await.map_err(fail)?;
                if waited.result_handle {
                    let oid = waited.result_oid.ok_or_else(|| fail("a handle on no result"))?;
                    prop_assert!(self.rt.object_space().rights(actor, oid).contains(ObjectRights::READ));
                }
            }
            Op::Merge { pair, ended_only, include_child_created } => {
                let Some((_, child)) = pick(&self.pairs(*ended_only), pair) else { return Ok(()) };
                self.merge(actor, child, *include_child_created, &before).await?;
            }
        }
        self.after(actor).await
    }

    async fn fork(
        &mut self,
        parent: Pid,
        mode: ForkMode,
        selection: &Selection,
        clearance: Option<u8>,
        before: &ObjectSpace,
    ) -> Result<(), TestCaseError> {
        let candidates: Vec<Oid> = before.objects().map(|o| o.oid).collect();
        let roots = match selection {
            Selection::All => RootSelection::AllParentRoots,
            Selection::None => RootSelection::NoParentRoots,
            Selection::Exact(picks) => {
                RootSelection::Exact(picks.iter().filter_map(|i| pick(&candidates, i)).collect())
            }
        };
        let request = LaunchRequest { clearance: clearance.map(label_set), ..launch("forked", None) };
        let launched = match fork(&self.rt, parent, request, mode, roots).await {
            Ok(launched) => launched,
            Err(refused) => {
                // A refusal takes no pid and changes no memory.
                prop_assert_eq!(
                    &self.rt.object_space(),
                    before,
                    "the refused fork ({}) changed memory",
                    refused
                );
                return Ok(());
            }
        };
        let child = launched.pid;
        self.procs.insert(child, Proc { parent: Some(parent), children: Vec::new() });
        self.launched.push(child);
        self.procs.get_mut(&parent).ok_or_else(|| fail("unknown parent"))?.children.push(child);
        if mode != ForkMode::Copy {
            for oid in launched.view.roots.iter().skip(1) {
                let meta = self.rt.object(*oid).ok_or_else(|| fail("an inherited object vanished"))?;
                let payload = self.rt.payload(*oid).map_err(fail)?;
                self.watches.push(Watch { child, oid: *oid, mode, meta, payload });
            }
        }
        Ok(())
    }

    async fn merge(
        &mut self,
        parent: Pid,
        child: Pid,
        include: bool,
        before: &ObjectSpace,
    ) -> Result<(), TestCaseError> {
        let already = before.process(child).is_some_and(|m| m.collected.is_some());
        let merged = match merge(&self.rt, parent, child, include).await {
            Err(ToolError { code, message }) => {
                if already {
                    prop_assert!(
                        code == "already_merged" || code == "memory_released",
                        "{}: {}",
                        code,
                        message
                    );
                }
                prop_assert_eq!(&self.rt.object_space(), before, "a refused merge ({}) changed memory", code);
                return Ok(());
            }
            Ok(merged) => merged,
        };
        prop_assert!(!already, "a second merge of {} was approved", child);
        let space = self.rt.object_space();
        let clearance = space.process(parent).and_then(|m| m.clearance.clone());
        for oid in &merged.merged_oids {
            let was = before.object(*oid).ok_or_else(|| fail("an unknown candidate"))?;
            prop_assert_eq!(&was.owner, &Owner::Process(child));
            prop_assert!(!was.released && !was.ephemeral && was.kind == ObjectKind::Data, "{:?}", was);
            let now = space.object(*oid).ok_or_else(|| fail("an adopted object vanished"))?;
            prop_assert!(!now.released);
            prop_assert_eq!(&now.owner, &Owner::Process(parent));
            prop_assert!(
                first_uncleared(clearance.as_ref(), &now.labels).is_none(),
                "adopted {} past the parent's clearance",
                oid
            );
            prop_assert_eq!(space.rights(parent, *oid), ObjectRights::ALL);
        }
        for skipped in &merged.skipped_oids {
            prop_assert!(!merged.merged_oids.contains(&skipped.oid));
        }
        let owned: Vec<Oid> = space
            .owned_by(&Owner::Process(child))
            .chain(space.owned_by(&Owner::ProcessResult(child)))
            .collect();
        for oid in owned {
            prop_assert!(
                space.object(oid).is_some_and(|o| o.released),
                "{} survived the merge unadopted",
                oid
            );
        }
        prop_assert_eq!(space.handles_of(child).count(), 0);
        Ok(())
    }

    /// After `pid` ended, every child of every process that ended with it had its memory
    /// collected in the same commit.
    fn check_released_at_end(&self, pid: Pid) -> Result<(), TestCaseError> {
        let space = self.rt.object_space();
        for ended in self.subtree(pid) {
            for child in &self.procs[&ended].children {
                let collected = space.process(*child).and_then(|m| m.collected);
                prop_assert!(
                    collected.is_some(),
                    "{}'s child {} kept its memory after its end",
                    ended,
                    child
                );
            }
        }
        Ok(())
    }

    /// The per-step properties.
    async fn after(&mut self, actor: Pid) -> Result<(), TestCaseError> {
        let space = self.rt.object_space();
        if let Err(violation) = space.check() {
            return Err(fail(violation));
        }
        for handle in space.handles() {
            prop_assert!(
                space.object(handle.oid).is_some_and(|o| !o.released),
                "{} holds a handle on released {}",
                handle.holder,
                handle.oid
            );
        }
        // A child never holds a right its parent lacks, on an object from outside its subtree.
        for (child, proc_) in &self.procs {
            let Some(parent) = proc_.parent else { continue };
            if space.process(*child).is_some_and(|m| m.collected.is_some()) {
                prop_assert_eq!(space.handles_of(*child).count(), 0);
                continue;
            }
            let subtree = self.subtree(*child);
            for handle in space.handles_of(*child) {
                let object = space.object(handle.oid).ok_or_else(|| fail("a handle on nothing"))?;
                if object.owner.process().is_some_and(|p| subtree.contains(&p)) {
                    continue;
                }
                let parent_rights = space.rights(parent, handle.oid);
                prop_assert!(
                    parent_rights.contains(handle.rights),
                    "{} holds {} on {} but its parent {} holds {}",
                    child,
                    handle.rights,
                    handle.oid,
                    parent,
                    parent_rights
                );
            }
        }
        // Objects inherited in a read-only mode are unchanged by the child's subtree.
        for i in 0..self.watches.len() {
            let watch = self.watches[i].clone();
            let meta = space.object(watch.oid).cloned().ok_or_else(|| fail("a watched object vanished"))?;
            let payload = self.rt.payload(watch.oid).map_err(fail)?;
            if self.subtree(watch.child).contains(&actor) {
                prop_assert_eq!(
                    &meta,
                    &watch.meta,
                    "{} changed {} (inherited {})",
                    actor,
                    watch.oid,
                    watch.mode
                );
                prop_assert_eq!(
                    &payload,
                    &watch.payload,
                    "{} changed the payload of {} (inherited {})",
                    actor,
                    watch.oid,
                    watch.mode
                );
            }
            // What happens outside the child's subtree is the parent's (or others') to do.
            self.watches[i].meta = meta;
            self.watches[i].payload = payload;
        }
        Ok(())
    }
}

async fn run(root_clearance: Option<u8>, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut driver = Driver::new(root_clearance).await;
    for op in ops {
        driver.step(op).await?;
    }
    driver.rt.shutdown().await.map_err(fail)?;
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// Random sequences through the runtime keep every object-memory property at every step.
    #[test]
    fn random_runtime_sequences_keep_the_object_memory_properties((clearance, ops) in sequence()) {
        let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio");
        tokio.block_on(run(clearance, &ops))?;
    }
}
