//! Property tests of object memory over random sequences of create, fork (all four modes),
//! delegate, read, write, exit (with a result and the release of unmerged children), wait
//! (the result grant) and merge: a child never holds a right its parent lacked; a merge never
//! adopts an object the parent may not hold; after a merge no handle anywhere points at a
//! released object; in speculative and read-only modes the parent's inherited objects are
//! unchanged whatever the child attempts.
//!
//! Every property runs 256 cases from a fixed, printed seed with ChaCha, so a run is
//! reproducible; set `OBJECTS_PROPS_SEED=<n>` to explore another seed. On failure proptest
//! prints the minimal sequence it shrank to (and no failure file is written).

mod seeded;

use agentvisor_actors::kernel::ids::{CountingIds, IdSource, Oid, Pid};
use agentvisor_actors::kernel::objects::flow::first_uncleared;
use agentvisor_actors::kernel::objects::{
    ChildImage, CreateRequest, ForkMode, ForkViewRequest, ObjectChange, ObjectKind, ObjectMeta, ObjectRights,
    ObjectSpace, Owner, RootSelection, RootViewRequest, Skill,
};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::Config;
use std::collections::{BTreeMap, BTreeSet};

const DEFAULT_SEED: u64 = 0x0b1e_c7a1_0000_0002;

fn config() -> Config {
    seeded::config("objects_props", "OBJECTS_PROPS_SEED", DEFAULT_SEED, 256)
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

#[derive(Clone, Debug)]
enum Op {
    Create { actor: Index, labels: u8, ephemeral: bool, root: bool },
    Fork { actor: Index, mode: ForkMode, selection: Selection, clearance: Option<u8>, same_image: bool },
    Delegate { actor: Index, child: Index, object: Index, rights: u8 },
    Write { actor: Index, object: Index, own_handles: bool },
    Read { actor: Index, object: Index },
    Exit { actor: Index },
    Wait { actor: Index, child: Index },
    Merge { actor: Index, child: Index, include_child_created: bool },
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
        4 => (any::<Index>(), 0u8..8, any::<bool>(), any::<bool>())
            .prop_map(|(actor, labels, ephemeral, root)| Op::Create { actor, labels, ephemeral, root }),
        3 => (any::<Index>(), mode(), selection(), prop::option::weighted(0.3, 0u8..8), any::<bool>())
            .prop_map(|(actor, mode, selection, clearance, same_image)| Op::Fork {
                actor, mode, selection, clearance, same_image
            }),
        2 => (any::<Index>(), any::<Index>(), any::<Index>(), 1u8..8)
            .prop_map(|(actor, child, object, rights)| Op::Delegate { actor, child, object, rights }),
        3 => (any::<Index>(), any::<Index>(), any::<bool>())
            .prop_map(|(actor, object, own_handles)| Op::Write { actor, object, own_handles }),
        2 => (any::<Index>(), any::<Index>()).prop_map(|(actor, object)| Op::Read { actor, object }),
        2 => any::<Index>().prop_map(|actor| Op::Exit { actor }),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(actor, child)| Op::Wait { actor, child }),
        3 => (any::<Index>(), any::<Index>(), any::<bool>())
            .prop_map(|(actor, child, include_child_created)| Op::Merge { actor, child, include_child_created }),
    ]
}

fn sequence() -> impl Strategy<Value = (Option<u8>, Vec<Op>)> {
    (prop::option::weighted(0.5, 0u8..8), prop::collection::vec(op(), 1..=64))
}

// ---- the model ------------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct Proc {
    parent: Option<Pid>,
    alive: bool,
    children: Vec<Pid>,
}

/// A parent object a child inherited in a read-only mode, with its metadata as the child's
/// subtree must leave it.
#[derive(Clone, Debug)]
struct Watch {
    child: Pid,
    oid: Oid,
    mode: ForkMode,
    expected: ObjectMeta,
    /// The parent later delegated WRITE on it to the child: the parent's own choice.
    widened: bool,
}

/// Which property a run asserts (the space's own invariants are always asserted).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Property {
    ChildWithinParent,
    MergeAdoptsOnlyHoldable,
    NoDanglingHandles,
    ReadOnlyModesLeaveParentObjects,
}

struct Model {
    space: ObjectSpace,
    ids: CountingIds,
    procs: BTreeMap<Pid, Proc>,
    watches: Vec<Watch>,
    property: Property,
}

impl Model {
    fn new(root_clearance: Option<u8>, property: Property) -> Self {
        let mut model = Model {
            space: ObjectSpace::new(),
            ids: CountingIds::new(11),
            procs: BTreeMap::new(),
            watches: Vec::new(),
            property,
        };
        let request = RootViewRequest {
            clearance: root_clearance.map(label_set),
            goal_labels: BTreeSet::new(),
            default_skills: vec![skill("a", &["t1"]), skill("b", &["t2"])],
        };
        let approval = model.space.plan_root_view(&request).expect("a root view");
        let pid = model.ids.pid();
        let plan = model.space.materialize_view(approval, pid, &mut model.ids).expect("materialize");
        model.commit(plan.changes);
        model.procs.insert(pid, Proc { parent: None, alive: true, children: Vec::new() });
        model
    }

    fn commit(&mut self, changes: Vec<ObjectChange>) {
        self.space.apply(changes);
        if let Err(error) = self.space.check() {
            panic!("{error}");
        }
    }

    fn live(&self) -> Vec<Pid> {
        self.procs.iter().filter(|(_, p)| p.alive).map(|(pid, _)| *pid).collect()
    }

    fn collected(&self, pid: Pid) -> bool {
        self.space.process(pid).is_some_and(|m| m.collected.is_some())
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

    fn pick<T: Copy>(items: &[T], index: &Index) -> Option<T> {
        (!items.is_empty()).then(|| items[index.index(items.len())])
    }

    fn all_oids(&self) -> Vec<Oid> {
        self.space.objects().map(|o| o.oid).collect()
    }

    fn held_oids(&self, pid: Pid) -> Vec<Oid> {
        self.space.handles_of(pid).map(|h| h.oid).collect()
    }
}

fn skill(name: &str, tools: &[&str]) -> Skill {
    Skill { name: name.into(), allowed_tools: tools.iter().map(|t| t.to_string()).collect() }
}

// ---- running a sequence ---------------------------------------------------------------------

impl Model {
    /// Runs one operation, then asserts the property under test. Refusals are fine (plans are
    /// pure: a refusal changes nothing); what is approved is applied and checked.
    fn step(&mut self, op: &Op) -> Result<(), TestCaseError> {
        // The root never exits: that would end the run. Every other process may.
        let live: Vec<Pid> = match op {
            Op::Exit { .. } => self.live().into_iter().filter(|p| self.procs[p].parent.is_some()).collect(),
            _ => self.live(),
        };
        let Some(actor) = Model::pick(&live, op_actor(op)) else { return Ok(()) };
        match op {
            Op::Create { labels, ephemeral, root, .. } => {
                let request = CreateRequest {
                    holder: actor,
                    name: None,
                    labels: label_set(*labels),
                    ephemeral: *ephemeral,
                    root: *root,
                };
                if let Ok(plan) = self.space.plan_create(&request, &mut self.ids) {
                    self.commit(plan.changes);
                }
            }
            Op::Fork { mode, selection, clearance, same_image, .. } => {
                self.fork(actor, *mode, selection, *clearance, *same_image)?
            }
            Op::Delegate { child, object, rights, .. } => {
                let children = self.live_children(actor);
                let held = self.held_oids(actor);
                let (Some(to), Some(oid)) = (Model::pick(&children, child), Model::pick(&held, object))
                else {
                    return Ok(());
                };
                let rights = ObjectRights::from_bits_truncate(*rights);
                if let Ok(changes) = self.space.plan_delegate(actor, to, oid, rights) {
                    self.commit(changes);
                    let now = self.space.rights(to, oid);
                    for watch in self.watches.iter_mut().filter(|w| w.child == to && w.oid == oid) {
                        if watch.mode == ForkMode::Speculative {
                            prop_assert_eq!(now, ObjectRights::READ, "a speculative view was widened");
                        }
                        watch.widened |= now.contains(ObjectRights::WRITE);
                    }
                }
            }
            Op::Write { object, own_handles, .. } => {
                let oids = if *own_handles { self.held_oids(actor) } else { self.all_oids() };
                let Some(oid) = Model::pick(&oids, object) else { return Ok(()) };
                if let Ok(changes) = self.space.plan_write(actor, oid) {
                    for watch in self.watches.iter().filter(|w| w.oid == oid && !w.widened) {
                        if self.property == Property::ReadOnlyModesLeaveParentObjects {
                            prop_assert!(
                                !self.subtree(watch.child).contains(&actor),
                                "{actor} in the subtree of {} wrote {oid}, inherited {}",
                                watch.child,
                                watch.mode
                            );
                        }
                    }
                    self.commit(changes);
                }
            }
            Op::Read { object, .. } => {
                let oids = self.held_oids(actor);
                let Some(oid) = Model::pick(&oids, object) else { return Ok(()) };
                if let Ok(plan) = self.space.plan_read(actor, oid) {
                    self.commit(plan.changes);
                }
            }
            Op::Exit { .. } => self.exit(actor),
            Op::Wait { child, .. } => {
                let ended = self.ended_children(actor, false);
                let Some(child) = Model::pick(&ended, child) else { return Ok(()) };
                if let Ok(Some(plan)) = self.space.grant_result_handle(actor, child) {
                    self.commit(plan.changes);
                }
            }
            Op::Merge { child, include_child_created, .. } => {
                let ended = self.ended_children(actor, true);
                let Some(child) = Model::pick(&ended, child) else { return Ok(()) };
                self.merge(actor, child, *include_child_created)?;
            }
        }
        self.after(actor)
    }

    fn live_children(&self, pid: Pid) -> Vec<Pid> {
        self.procs[&pid].children.iter().copied().filter(|c| self.procs[c].alive).collect()
    }

    /// Ended children; with `collected`, also those already merged or released.
    fn ended_children(&self, pid: Pid, collected: bool) -> Vec<Pid> {
        let ended = self.procs[&pid].children.iter().copied().filter(|c| !self.procs[c].alive);
        ended.filter(|c| collected || !self.collected(*c)).collect()
    }

    fn fork(
        &mut self,
        parent: Pid,
        mode: ForkMode,
        selection: &Selection,
        clearance: Option<u8>,
        same_image: bool,
    ) -> Result<(), TestCaseError> {
        let candidates = self.all_oids();
        let roots = match selection {
            Selection::All => RootSelection::AllParentRoots,
            Selection::None => RootSelection::NoParentRoots,
            Selection::Exact(picks) => {
                RootSelection::Exact(picks.iter().filter_map(|i| Model::pick(&candidates, i)).collect())
            }
        };
        let image = ChildImage {
            same_as_parent: same_image,
            tools: BTreeSet::from(["t1".to_string()]),
            default_skills: vec![skill("d", &["t1"])],
        };
        let request = ForkViewRequest { parent, mode, roots, clearance: clearance.map(label_set), image };
        let Ok(approval) = self.space.plan_fork_view(&request) else { return Ok(()) };
        let child = self.ids.pid();
        let plan = self
            .space
            .materialize_view(approval, child, &mut self.ids)
            .expect("an approved view materializes");
        self.commit(plan.changes);
        self.procs.insert(child, Proc { parent: Some(parent), alive: true, children: Vec::new() });
        if let Some(p) = self.procs.get_mut(&parent) {
            p.children.push(child);
        }
        if mode != ForkMode::Copy {
            for oid in plan.roots.iter().skip(1) {
                let expected = self.space.object(*oid).expect("inherited object").clone();
                self.watches.push(Watch { child, oid: *oid, mode, expected, widened: false });
            }
        }
        Ok(())
    }

    /// Ends `pid` leaves first: each live descendant, then `pid`, makes a result and releases
    /// its unmerged children's memory.
    fn exit(&mut self, pid: Pid) {
        for child in self.live_children(pid) {
            self.exit(child);
        }
        if let Ok(plan) = self.space.plan_exit_result(pid, &mut self.ids) {
            self.commit(plan.changes);
        }
        let children = self.procs[&pid].children.clone();
        let release = self.space.release_unmerged_children(pid, &children).expect("release at the end");
        self.commit(release.changes);
        if let Some(p) = self.procs.get_mut(&pid) {
            p.alive = false;
        }
    }

    fn merge(&mut self, parent: Pid, child: Pid, include: bool) -> Result<(), TestCaseError> {
        let already = self.collected(child);
        let candidates_before = self.space.clone();
        match self.space.plan_merge(parent, child, include) {
            Err(error) => {
                if already {
                    prop_assert!(matches!(error.code(), "already_merged" | "memory_released"), "{error}");
                }
            }
            Ok(plan) => {
                prop_assert!(!already, "a second merge of {child} was approved");
                self.commit(plan.changes);
                if self.property == Property::MergeAdoptsOnlyHoldable {
                    let clearance = self.space.process(parent).and_then(|m| m.clearance.clone());
                    for oid in &plan.merged_oids {
                        let was = candidates_before.object(*oid).expect("candidate");
                        prop_assert_eq!(&was.owner, &Owner::Process(child));
                        prop_assert!(!was.released && !was.ephemeral && was.kind == ObjectKind::Data);
                        let now = self.space.object(*oid).expect("adopted");
                        prop_assert!(!now.released);
                        prop_assert_eq!(&now.owner, &Owner::Process(parent));
                        prop_assert!(
                            first_uncleared(clearance.as_ref(), &now.labels).is_none(),
                            "adopted {oid} past the parent's clearance"
                        );
                        prop_assert_eq!(self.space.rights(parent, *oid), ObjectRights::ALL);
                    }
                    for skipped in &plan.skipped_oids {
                        prop_assert!(!plan.merged_oids.contains(&skipped.oid));
                    }
                }
                if self.property == Property::NoDanglingHandles {
                    for handle in self.space.handles() {
                        let object = self.space.object(handle.oid).expect("handle target");
                        prop_assert!(
                            !object.released,
                            "{:?} points at released {}",
                            handle.holder,
                            handle.oid
                        );
                    }
                    let owned = self
                        .space
                        .owned_by(&Owner::Process(child))
                        .chain(self.space.owned_by(&Owner::ProcessResult(child)));
                    for oid in owned.collect::<Vec<_>>() {
                        prop_assert!(
                            self.space.object(oid).is_some_and(|o| o.released),
                            "{oid} survived the merge"
                        );
                    }
                }
            }
        }
        Ok(())
    }

    /// The per-step properties.
    fn after(&mut self, actor: Pid) -> Result<(), TestCaseError> {
        match self.property {
            Property::ChildWithinParent => self.check_child_within_parent(),
            Property::NoDanglingHandles => {
                for handle in self.space.handles() {
                    prop_assert!(!self.space.object(handle.oid).is_some_and(|o| o.released));
                }
                Ok(())
            }
            Property::ReadOnlyModesLeaveParentObjects => {
                for i in 0..self.watches.len() {
                    let watch = self.watches[i].clone();
                    let now = self.space.object(watch.oid).expect("watched object").clone();
                    if self.subtree(watch.child).contains(&actor) && !watch.widened {
                        prop_assert_eq!(
                            &now,
                            &watch.expected,
                            "{} changed {} (inherited {})",
                            actor,
                            watch.oid,
                            watch.mode
                        );
                    }
                    // Changes made outside the child's subtree are the parent's (or others') to make.
                    self.watches[i].expected = now;
                }
                Ok(())
            }
            Property::MergeAdoptsOnlyHoldable => Ok(()),
        }
    }

    /// For every child with live memory, each handle on an object from outside its subtree is
    /// covered by the parent's handle on it.
    fn check_child_within_parent(&self) -> Result<(), TestCaseError> {
        for (child, proc_) in &self.procs {
            let Some(parent) = proc_.parent else { continue };
            if self.collected(*child) {
                prop_assert_eq!(self.space.handles_of(*child).count(), 0);
                continue;
            }
            let subtree = self.subtree(*child);
            for handle in self.space.handles_of(*child) {
                let object = self.space.object(handle.oid).expect("handle target");
                if object.owner.process().is_some_and(|p| subtree.contains(&p)) {
                    continue;
                }
                let parent_rights = self.space.rights(parent, handle.oid);
                prop_assert!(
                    parent_rights.contains(handle.rights),
                    "{child} holds {} on {} but its parent {parent} holds {}",
                    handle.rights,
                    handle.oid,
                    parent_rights
                );
            }
        }
        Ok(())
    }
}

fn op_actor(op: &Op) -> &Index {
    match op {
        Op::Create { actor, .. }
        | Op::Fork { actor, .. }
        | Op::Delegate { actor, .. }
        | Op::Write { actor, .. }
        | Op::Read { actor, .. }
        | Op::Exit { actor }
        | Op::Wait { actor, .. }
        | Op::Merge { actor, .. } => actor,
    }
}

fn run(root_clearance: Option<u8>, ops: &[Op], property: Property) -> Result<(), TestCaseError> {
    let mut model = Model::new(root_clearance, property);
    for op in ops {
        model.step(op)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// Across random sequences, a child never holds a right on an object from outside its own
    /// subtree that its parent lacks.
    #[test]
    fn a_child_never_holds_a_right_its_parent_lacked((clearance, ops) in sequence()) {
        run(clearance, &ops, Property::ChildWithinParent)?;
    }

    /// A merge adopts only live, non-goal, non-ephemeral objects the child's process owned,
    /// that the parent is cleared for; the parent then owns them with every right.
    #[test]
    fn a_merge_never_adopts_an_object_the_parent_may_not_hold((clearance, ops) in sequence()) {
        run(clearance, &ops, Property::MergeAdoptsOnlyHoldable)?;
    }

    /// After every step, and in particular after a merge, no handle points at a released
    /// object, and nothing the merged child or its result owned survives unadopted.
    #[test]
    fn after_a_merge_no_handle_points_at_a_released_object((clearance, ops) in sequence()) {
        run(clearance, &ops, Property::NoDanglingHandles)?;
    }

    /// Objects a child inherited in worker, restricted or speculative mode are unchanged by
    /// anything the child's subtree does, unless the parent itself later delegated WRITE
    /// (never possible for a speculative view).
    #[test]
    fn read_only_and_speculative_modes_leave_inherited_objects_unchanged((clearance, ops) in sequence()) {
        run(clearance, &ops, Property::ReadOnlyModesLeaveParentObjects)?;
    }
}
