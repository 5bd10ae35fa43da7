//! Targeted tests of object memory (`kernel::objects`): each launch-view rule (root selection,
//! the goal root, the four fork modes, skills), each access rule, data flow, results, and
//! merge with every skip reason, release and refusal, each with its stable code.

use agentvisor_actors::kernel::ids::{CountingIds, IdSource, Oid, Pid};
use agentvisor_actors::kernel::objects::{
    ChildImage, Collection, CreateRequest, DropReason, ForkMode, ForkViewRequest, GOAL_NAME, ObjectChange,
    ObjectError, ObjectKind, ObjectMeta, ObjectRights, ObjectSpace, Owner, RootSelection, RootViewRequest,
    Skill, SkipReason, SpawnViewRequest, ViewPlan,
};
use std::collections::BTreeSet;

const R: ObjectRights = ObjectRights::READ;
const W: ObjectRights = ObjectRights::WRITE;
const D: ObjectRights = ObjectRights::DELEGATE;

fn labels(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn skill(name: &str, tools: &[&str]) -> Skill {
    Skill { name: name.into(), allowed_tools: labels(tools) }
}

/// A space, an id source, and shorthands that plan, check, apply and check again.
struct World {
    space: ObjectSpace,
    ids: CountingIds,
}

impl World {
    fn new() -> Self {
        World { space: ObjectSpace::new(), ids: CountingIds::new(7) }
    }

    fn commit(&mut self, changes: Vec<ObjectChange>) {
        let mut next = self.space.clone();
        next.apply(changes);
        next.check().expect("invariants hold after every approved plan");
        self.space = next;
    }

    fn root(&mut self, clearance: Option<&[&str]>, skills: Vec<Skill>) -> Pid {
        let request = RootViewRequest {
            clearance: clearance.map(labels),
            goal_labels: BTreeSet::new(),
            default_skills: skills,
        };
        let approval = self.space.plan_root_view(&request).expect("root view");
        let pid = self.ids.pid();
        let plan = self.space.materialize_view(approval, pid, &mut self.ids).expect("materialize");
        self.commit(plan.changes);
        pid
    }

    fn create_with(
        &mut self,
        holder: Pid,
        name: Option<&str>,
        with: &[&str],
        ephemeral: bool,
        root: bool,
    ) -> Oid {
        let request =
            CreateRequest { holder, name: name.map(str::to_string), labels: labels(with), ephemeral, root };
        let plan = self.space.plan_create(&request, &mut self.ids).expect("create");
        self.commit(plan.changes);
        plan.oid
    }

    fn create(&mut self, holder: Pid, name: &str, root: bool) -> Oid {
        self.create_with(holder, Some(name), &[], false, root)
    }

    fn fork_request(parent: Pid, mode: ForkMode, roots: RootSelection) -> ForkViewRequest {
        let image = ChildImage { same_as_parent: true, ..ChildImage::default() };
        ForkViewRequest { parent, mode, roots, clearance: None, image }
    }

    fn try_fork_with(&mut self, request: &ForkViewRequest) -> Result<ViewPlan, ObjectError> {
        let approval = self.space.plan_fork_view(request)?;
        let child = self.ids.pid();
        let plan = self.space.materialize_view(approval, child, &mut self.ids)?;
        self.commit(plan.changes.clone());
        Ok(plan)
    }

    fn fork(&mut self, parent: Pid, mode: ForkMode, roots: RootSelection) -> ViewPlan {
        self.try_fork_with(&Self::fork_request(parent, mode, roots)).expect("fork")
    }

    fn spawn(&mut self, parent: Pid, default_skills: Vec<Skill>) -> ViewPlan {
        let request = SpawnViewRequest { parent, clearance: None, default_skills };
        let approval = self.space.plan_spawn_view(&request).expect("spawn view");
        let child = self.ids.pid();
        let plan = self.space.materialize_view(approval, child, &mut self.ids).expect("materialize");
        self.commit(plan.changes.clone());
        plan
    }

    fn write(&mut self, writer: Pid, oid: Oid) -> Result<(), ObjectError> {
        let changes = self.space.plan_write(writer, oid)?;
        self.commit(changes);
        Ok(())
    }

    fn read(&mut self, reader: Pid, oid: Oid) -> Result<BTreeSet<String>, ObjectError> {
        let plan = self.space.plan_read(reader, oid)?;
        self.commit(plan.changes);
        Ok(plan.labels)
    }

    fn exit(&mut self, pid: Pid) -> Oid {
        let plan = self.space.plan_exit_result(pid, &mut self.ids).expect("exit result");
        self.commit(plan.changes);
        plan.oid
    }

    fn wait(&mut self, parent: Pid, child: Pid) -> Oid {
        let plan = self.space.grant_result_handle(parent, child).expect("grant").expect("a result");
        self.commit(plan.changes);
        plan.oid
    }

    fn rights(&self, holder: Pid, oid: Oid) -> ObjectRights {
        self.space.rights(holder, oid)
    }

    fn object(&self, oid: Oid) -> ObjectMeta {
        self.space.object(oid).expect("known object").clone()
    }

    fn roots(&self, pid: Pid) -> BTreeSet<Oid> {
        self.space.process(pid).expect("memory").roots.iter().copied().collect()
    }
}

// ---- launch views ---------------------------------------------------------------------------

#[test]
fn spawn_gives_a_fresh_namespace_with_the_goal_as_the_only_root_and_image_default_skills() {
    let mut w = World::new();
    let parent = w.root(None, vec![skill("parent-skill", &["a"])]);
    w.create(parent, "notes", true);
    let plan = w.spawn(parent, vec![skill("image-default", &["b"])]);
    let memory = w.space.process(plan.child).expect("child memory");
    assert_eq!(plan.roots, vec![plan.goal]);
    assert_eq!(memory.roots.iter().copied().collect::<BTreeSet<_>>(), BTreeSet::from([plan.goal]));
    assert_eq!(memory.namespace.len(), 1);
    assert_eq!(memory.namespace.get(GOAL_NAME), Some(&plan.goal));
    assert_eq!(memory.skills, vec![skill("image-default", &["b"])], "no parent snapshot, image defaults");
    assert_eq!(w.space.handles_of(plan.child).count(), 1, "only the goal");
    let goal = w.object(plan.goal);
    assert_eq!((goal.owner, goal.kind), (Owner::Process(plan.child), ObjectKind::Goal));
}

#[test]
fn an_omitted_root_oids_selects_every_parent_root_and_the_goal_stays_its_own_root() {
    let mut w = World::new();
    let parent = w.root(None, vec![]);
    let a = w.create(parent, "a", true);
    let b = w.create(parent, "b", true);
    let not_root = w.create(parent, "c", false);
    let parent_goal = w.space.process(parent).expect("memory").goal.expect("goal");
    let plan = w.fork(parent, ForkMode::Worker, RootSelection::from_args(None, None));
    let roots = w.roots(plan.child);
    assert_eq!(roots, BTreeSet::from([plan.goal, a, b, parent_goal]));
    assert!(!roots.contains(&not_root));
    assert_eq!(plan.roots[0], plan.goal, "the goal comes first");
    assert_ne!(plan.goal, parent_goal, "the child's goal is a separate root");
    // Names carry over; the child's own goal keeps the name `goal`.
    let memory = w.space.process(plan.child).expect("memory");
    assert_eq!(memory.namespace.get("a"), Some(&a));
    assert_eq!(memory.namespace.get(GOAL_NAME), Some(&plan.goal));
}

#[test]
fn root_oids_empty_is_an_exact_replacement_unlike_omitted() {
    let mut w = World::new();
    let parent = w.root(None, vec![]);
    w.create(parent, "a", true);
    // `root_oids: []` with include_parent_roots=true: still nothing but the goal.
    let empty = w.fork(parent, ForkMode::Worker, RootSelection::from_args(Some(vec![]), Some(true)));
    assert_eq!(w.roots(empty.child), BTreeSet::from([empty.goal]));
    let omitted = w.fork(parent, ForkMode::Worker, RootSelection::from_args(None, None));
    assert_eq!(w.roots(omitted.child).len(), 3, "goal, the parent's goal, a");
    let declined = w.fork(parent, ForkMode::Worker, RootSelection::from_args(None, Some(false)));
    assert_eq!(w.roots(declined.child), BTreeSet::from([declined.goal]));
}

#[test]
fn root_oids_may_name_any_held_object_not_only_roots() {
    let mut w = World::new();
    let parent = w.root(None, vec![]);
    w.create(parent, "a", true);
    let c = w.create(parent, "c", false);
    let plan = w.fork(parent, ForkMode::Worker, RootSelection::Exact(vec![c, c]));
    assert_eq!(plan.roots, vec![plan.goal, c], "duplicates collapse");
}

#[test]
fn worker_inherits_read_and_delegate_only_when_the_parent_holds_delegate() {
    let mut w = World::new();
    let parent = w.root(None, vec![]);
    let a = w.create(parent, "a", true);
    let child = w.fork(parent, ForkMode::Worker, RootSelection::Exact(vec![a])).child;
    assert_eq!(w.rights(child, a), R | D);
    // The child received the object from a restricted parent: no DELEGATE to pass on.
    let restricted = w.fork(parent, ForkMode::Restricted, RootSelection::Exact(vec![a])).child;
    let grandchild = w.fork(restricted, ForkMode::Worker, RootSelection::Exact(vec![a])).child;
    assert_eq!(w.rights(grandchild, a), R);
}

#[test]
fn restricted_inherits_read_only_no_delegate_and_no_skill_projection() {
    let mut w = World::new();
    let parent = w.root(None, vec![skill("search", &["web"])]);
    let a = w.create(parent, "a", true);
    let mut request = World::fork_request(parent, ForkMode::Restricted, RootSelection::Exact(vec![a]));
    request.image.default_skills = vec![skill("base", &["read"])];
    let plan = w.try_fork_with(&request).expect("fork");
    assert_eq!(w.rights(plan.child, a), R);
    assert_eq!(plan.skills, vec![skill("base", &["read"])]);
    assert_eq!(plan.dropped_skills.len(), 1);
    assert_eq!(plan.dropped_skills[0].reason, DropReason::RestrictedMode);
    let error = w.space.plan_delegate(plan.child, parent, a, R).expect_err("no delegate right");
    assert_eq!(error.code(), "missing_right");
    assert_eq!(w.write(plan.child, a).expect_err("read-only").code(), "missing_right");
}

#[test]
fn copy_shares_write_on_the_same_oid_and_a_child_write_is_visible_to_the_parent() {
    let mut w = World::new();
    let parent = w.root(None, vec![]);
    let shared = w.create(parent, "shared", true);
    let secret = w.create_with(parent, Some("secret"), &["pii"], false, false);
    let plan = w.fork(parent, ForkMode::Copy, RootSelection::Exact(vec![shared, secret]));
    let child = plan.child;
    assert_eq!(w.rights(child, shared), R | W | D);
    // The child reads a labelled object, then writes the shared one: the write lands on the
    // OID the parent holds, so the parent sees it (here: the label the write carries).
    w.read(child, secret).expect("read");
    w.write(child, shared).expect("copy mode may write");
    assert_eq!(w.object(shared).labels, labels(&["pii"]));
    assert_eq!(w.rights(parent, shared), ObjectRights::ALL, "the parent's handle is on the same OID");
    assert_eq!(w.read(parent, shared).expect("parent reads"), labels(&["pii"]));
}

#[test]
fn copy_requires_the_parent_to_hold_write_and_the_denial_names_the_oid_and_right() {
    let mut w = World::new();
    let parent = w.root(None, vec![]);
    let a = w.create(parent, "a", true);
    let worker = w.fork(parent, ForkMode::Worker, RootSelection::Exact(vec![a])).child;
    let request = World::fork_request(worker, ForkMode::Copy, RootSelection::Exact(vec![a]));
    let error = w.try_fork_with(&request).expect_err("the worker holds a read-only view");
    assert_eq!(error.code(), "missing_right");
    assert_eq!(error, ObjectError::MissingRight { holder: worker, oid: a, right: W, held: R | D });
    assert!(error.to_string().contains(&a.to_string()) && error.to_string().contains("write"));
    // An object the parent holds no handle on at all: missing read.
    let stranger = w.root(None, vec![]);
    let theirs = w.create(stranger, "theirs", true);
    let request = World::fork_request(parent, ForkMode::Worker, RootSelection::Exact(vec![theirs]));
    let error = w.try_fork_with(&request).expect_err("not held");
    assert_eq!(
        error,
        ObjectError::MissingRight { holder: parent, oid: theirs, right: R, held: ObjectRights::empty() }
    );
}

#[test]
fn speculative_refuses_writes_on_inherited_roots_while_child_created_objects_merge() {
    let mut w = World::new();
    let parent = w.root(None, vec![]);
    let a = w.create(parent, "a", true);
    let before = w.object(a);
    let child = w.fork(parent, ForkMode::Speculative, RootSelection::Exact(vec![a])).child;
    let handle = *w.space.handle(child, a).expect("inherited");
    assert!(handle.ephemeral);
    assert_eq!(handle.rights, R);
    let error = w.write(child, a).expect_err("speculative view");
    assert_eq!(error, ObjectError::EphemeralHandle { holder: child, oid: a });
    assert_eq!(error.code(), "ephemeral_handle");
    // Not even the parent can widen a speculative view.
    let error = w.space.plan_delegate(parent, child, a, W).expect_err("never widened");
    assert_eq!(error.code(), "ephemeral_handle");
    // A grandchild's view of it stays speculative, whatever mode is asked.
    let grandchild = w.fork(child, ForkMode::Worker, RootSelection::Exact(vec![a])).child;
    assert!(w.space.handle(grandchild, a).expect("view").ephemeral);
    // What the child creates is its own and merges.
    let made = w.create(child, "draft", true);
    w.write(child, made).expect("its own object");
    let release = w.space.release_unmerged_children(child, &[grandchild]).expect("release");
    w.commit(release.changes);
    w.exit(child);
    let merge = w.space.plan_merge(parent, child, false).expect("merge");
    assert_eq!(merge.merged_oids, vec![made]);
    assert!(merge.skipped_oids.iter().any(|s| s.oid == a && s.reason == SkipReason::NotChildOwned));
    w.commit(merge.changes);
    assert_eq!(w.object(a), before, "the inherited object is unchanged");
    assert_eq!(w.object(made).owner, Owner::Process(parent));
}

#[test]
fn worker_children_cannot_write_inherited_objects_and_leave_them_unchanged() {
    let mut w = World::new();
    let parent = w.root(None, vec![]);
    let a = w.create(parent, "a", true);
    let before = w.object(a);
    let child = w.fork(parent, ForkMode::Worker, RootSelection::Exact(vec![a])).child;
    assert_eq!(w.write(child, a).expect_err("read-only").code(), "missing_right");
    let error = w.space.plan_delegate(child, parent, a, W).expect_err("cannot give what it lacks");
    assert_eq!(error, ObjectError::MissingRight { holder: child, oid: a, right: W, held: R | D });
    let request = World::fork_request(child, ForkMode::Copy, RootSelection::Exact(vec![a]));
    assert_eq!(w.try_fork_with(&request).expect_err("no write to share").code(), "missing_right");
    assert_eq!(w.object(a), before);
}

#[test]
fn an_all_roots_fork_passes_over_released_roots_but_an_exact_one_is_refused() {
    let mut w = World::new();
    let root = w.root(None, vec![]);
    let a = w.spawn(root, vec![]).child;
    let result = w.exit(a);
    w.wait(root, a);
    let b = w.fork(root, ForkMode::Worker, RootSelection::Exact(vec![result])).child;
    assert!(w.roots(b).contains(&result), "another child's result may be a root");
    let merge = w.space.plan_merge(root, a, false).expect("merge");
    w.commit(merge.changes);
    assert!(w.space.handle(b, result).is_none(), "released with a's memory, b's handle too");
    let plan = w.fork(b, ForkMode::Worker, RootSelection::AllParentRoots);
    assert_eq!(plan.released_roots, vec![result]);
    let request = World::fork_request(b, ForkMode::Worker, RootSelection::Exact(vec![result]));
    assert_eq!(w.try_fork_with(&request).expect_err("released").code(), "object_released");
    // Merging b reports its released root as skipped, `released`.
    let release = w.space.release_unmerged_children(b, &[plan.child]).expect("release");
    w.commit(release.changes);
    w.exit(b);
    let merge = w.space.plan_merge(root, b, false).expect("merge");
    assert!(merge.skipped_oids.iter().any(|s| s.oid == result && s.reason == SkipReason::Released));
    assert_eq!(SkipReason::Released.code(), "released");
}

// ---- skills ---------------------------------------------------------------------------------

#[test]
fn a_same_image_fork_keeps_the_skill_snapshot_and_a_cross_image_fork_reports_what_it_drops() {
    let mut w = World::new();
    let snapshot = vec![skill("search", &["web_search"]), skill("edit", &["write_file", "read_file"])];
    let parent = w.root(None, snapshot.clone());
    let same = w.fork(parent, ForkMode::Worker, RootSelection::NoParentRoots);
    assert_eq!(same.skills, snapshot);
    assert!(same.dropped_skills.is_empty());

    let mut request = World::fork_request(parent, ForkMode::Worker, RootSelection::NoParentRoots);
    request.image = ChildImage {
        same_as_parent: false,
        tools: labels(&["web_search", "read_file"]),
        default_skills: vec![skill("ignored", &["x"])],
    };
    let cross = w.try_fork_with(&request).expect("fork");
    assert_eq!(cross.skills, vec![skill("search", &["web_search"])]);
    assert_eq!(cross.dropped_skills.len(), 1);
    assert_eq!(cross.dropped_skills[0].name, "edit");
    assert_eq!(
        cross.dropped_skills[0].reason,
        DropReason::ToolsNotOffered { tools: vec!["write_file".into()] }
    );
    assert_eq!(cross.dropped_skills[0].reason.code(), "tools_not_offered");
    assert_eq!(w.space.process(cross.child).expect("memory").skills, cross.skills);
}

#[test]
fn skill_snapshots_are_checked() {
    let mut w = World::new();
    let pid = w.root(None, vec![]);
    let twice = vec![skill("a", &["t"]), skill("a", &["u"])];
    assert_eq!(w.space.plan_load_skills(pid, twice).expect_err("duplicate").code(), "invalid_skill");
    let changes = w.space.plan_load_skills(pid, vec![skill("a", &["t"])]).expect("load");
    w.commit(changes);
    assert_eq!(w.space.process(pid).expect("memory").skills, vec![skill("a", &["t"])]);
}

// ---- access and data flow -------------------------------------------------------------------

#[test]
fn create_binds_a_name_gives_the_owner_every_right_and_refuses_bad_names() {
    let mut w = World::new();
    let pid = w.root(None, vec![]);
    let a = w.create_with(pid, Some("a"), &[], true, false);
    let meta = w.object(a);
    assert_eq!((meta.owner, meta.kind, meta.ephemeral), (Owner::Process(pid), ObjectKind::Data, true));
    assert_eq!(w.rights(pid, a), ObjectRights::ALL);
    assert!(!w.roots(pid).contains(&a));
    let request = |name: &str| CreateRequest {
        holder: pid,
        name: Some(name.into()),
        labels: BTreeSet::new(),
        ephemeral: false,
        root: false,
    };
    assert_eq!(w.space.plan_create(&request("a"), &mut w.ids).expect_err("taken").code(), "name_taken");
    assert_eq!(w.space.plan_create(&request(" "), &mut w.ids).expect_err("blank").code(), "invalid_name");
    let mut bad_label = request("b");
    bad_label.labels = labels(&[""]);
    assert_eq!(w.space.plan_create(&bad_label, &mut w.ids).expect_err("label").code(), "invalid_label");
}

#[test]
fn a_refusal_takes_no_id() {
    let mut w = World::new();
    let pid = w.root(None, vec![]);
    let mut probe = w.ids.clone();
    let request = CreateRequest {
        holder: pid,
        name: Some(GOAL_NAME.into()),
        labels: BTreeSet::new(),
        ephemeral: false,
        root: false,
    };
    w.space.plan_create(&request, &mut w.ids).expect_err("goal is bound");
    assert_eq!(w.ids.oid(), probe.oid(), "the refused create took no OID");
}

#[test]
fn reading_raises_the_context_and_creating_carries_it() {
    let mut w = World::new();
    let pid = w.root(Some(&["pii", "finance"]), vec![]);
    let tagged = w.create_with(pid, Some("tagged"), &["pii"], false, false);
    assert!(w.space.process(pid).expect("memory").context.is_empty(), "creating is not reading");
    assert_eq!(w.read(pid, tagged).expect("read"), labels(&["pii"]));
    assert_eq!(w.space.process(pid).expect("memory").context, labels(&["pii"]));
    let derived = w.create(pid, "derived", false);
    assert_eq!(w.object(derived).labels, labels(&["pii"]), "what it creates carries its context");
    let request =
        CreateRequest { holder: pid, name: None, labels: labels(&["secret"]), ephemeral: false, root: false };
    let error = w.space.plan_create(&request, &mut w.ids).expect_err("not cleared");
    assert_eq!(error, ObjectError::LabelNotCleared { holder: pid, label: "secret".into() });
    assert_eq!(error.code(), "flow_denied");
}

#[test]
fn a_fork_to_a_child_not_cleared_for_a_label_is_refused_naming_the_oid_and_label() {
    let mut w = World::new();
    let parent = w.root(Some(&["pii", "public"]), vec![]);
    let tagged = w.create_with(parent, Some("tagged"), &["pii"], false, true);
    let mut request = World::fork_request(parent, ForkMode::Worker, RootSelection::Exact(vec![tagged]));
    request.clearance = Some(labels(&["public"]));
    let error = w.try_fork_with(&request).expect_err("flow");
    assert_eq!(error, ObjectError::ChildFlowDenied { oid: Some(tagged), label: "pii".into() });
    assert!(error.to_string().contains(&tagged.to_string()) && error.to_string().contains("pii"));
    // A clearance only narrows.
    request.clearance = Some(labels(&["public", "other"]));
    assert_eq!(w.try_fork_with(&request).expect_err("wider").code(), "clearance_exceeds");
    // The goal carries the parent's context: a parent that has read `pii` cannot launch a
    // child not cleared for it, even a spawn.
    w.read(parent, tagged).expect("read");
    let spawn = SpawnViewRequest { parent, clearance: Some(labels(&["public"])), default_skills: vec![] };
    let error = w.space.plan_spawn_view(&spawn).expect_err("goal flow");
    assert_eq!(error, ObjectError::ChildFlowDenied { oid: None, label: "pii".into() });
}

#[test]
fn a_write_taints_the_object_and_is_refused_when_a_holder_is_not_cleared() {
    let mut w = World::new();
    let parent = w.root(Some(&["pii", "public"]), vec![]);
    let shared = w.create(parent, "shared", true);
    let tagged = w.create_with(parent, Some("tagged"), &["pii"], false, false);
    let mut request = World::fork_request(parent, ForkMode::Worker, RootSelection::Exact(vec![shared]));
    request.clearance = Some(labels(&["public"]));
    let narrow = w.try_fork_with(&request).expect("fork").child;
    w.read(parent, tagged).expect("read");
    let error = w.write(parent, shared).expect_err("would reach the narrow child");
    assert_eq!(error, ObjectError::FlowDenied { holder: narrow, oid: shared, label: "pii".into() });
    assert!(w.object(shared).labels.is_empty());
}

#[test]
fn delegate_needs_the_delegate_right_every_right_given_and_clearance() {
    let mut w = World::new();
    let parent = w.root(Some(&["pii"]), vec![]);
    let a = w.create(parent, "a", true);
    let tagged = w.create_with(parent, Some("tagged"), &["pii"], false, false);
    let mut request = World::fork_request(parent, ForkMode::Worker, RootSelection::NoParentRoots);
    request.clearance = Some(BTreeSet::new());
    let child = w.try_fork_with(&request).expect("fork").child;
    let changes = w.space.plan_delegate(parent, child, a, R | W).expect("delegate");
    w.commit(changes);
    assert_eq!(w.rights(child, a), R | W);
    w.write(child, a).expect("delegated write");
    let error = w.space.plan_delegate(parent, child, tagged, R).expect_err("flow");
    assert_eq!(error, ObjectError::FlowDenied { holder: child, oid: tagged, label: "pii".into() });
    assert_eq!(w.space.plan_delegate(child, parent, a, R).expect_err("no delegate").code(), "missing_right");
    assert_eq!(w.space.plan_delegate(parent, parent, a, R).expect_err("self").code(), "self_delegation");
    let empty = ObjectRights::empty();
    assert_eq!(w.space.plan_delegate(parent, child, a, empty).expect_err("empty").code(), "empty_rights");
}

// ---- results --------------------------------------------------------------------------------

#[test]
fn exit_makes_a_result_object_that_is_not_a_root_and_wait_grants_read_on_it() {
    let mut w = World::new();
    let parent = w.root(None, vec![]);
    let child = w.spawn(parent, vec![]).child;
    assert!(w.space.grant_result_handle(parent, child).expect("no result yet").is_none());
    let result = w.exit(child);
    let meta = w.object(result);
    assert_eq!((meta.owner, meta.kind), (Owner::ProcessResult(child), ObjectKind::ProcessResult));
    assert!(!w.roots(child).contains(&result));
    assert_eq!(w.space.result_of(child), Some(result));
    let again = w.space.plan_exit_result(child, &mut w.ids).expect_err("one result");
    assert_eq!(again.code(), "result_exists");
    assert_eq!(w.wait(parent, child), result);
    assert_eq!(w.rights(parent, result), R);
}

#[test]
fn wait_is_subject_to_data_flow() {
    let mut w = World::new();
    let parent = w.root(Some(&["pii"]), vec![]);
    let child = w.spawn(parent, vec![]).child;
    let tagged = w.create_with(child, Some("t"), &["pii"], false, false);
    w.read(child, tagged).expect("read");
    let result = w.exit(child);
    assert_eq!(w.object(result).labels, labels(&["pii"]), "a result carries the child's context");
    // Clearances nest (a child's is within its parent's), so a denial needs a label the
    // parent's clearance lacks: one the host put on the result, say.
    let mut labelled = w.space.clone();
    let meta = ObjectMeta { labels: labels(&["pii", "secret"]), ..w.object(result) };
    labelled.apply([ObjectChange::PutObject(meta)]);
    let error = labelled.grant_result_handle(parent, child).expect_err("flow");
    assert_eq!(error, ObjectError::FlowDenied { holder: parent, oid: result, label: "secret".into() });
    w.wait(parent, child);
    assert_eq!(w.rights(parent, result), R);
}

// ---- merge ----------------------------------------------------------------------------------

/// A child with one of each kind of candidate: an inherited parent root, its goal, a created
/// root, a created non-root, an ephemeral root, and a result.
struct MergeFixture {
    w: World,
    parent: Pid,
    child: Pid,
    inherited: Oid,
    goal: Oid,
    made_root: Oid,
    made_other: Oid,
    scratch: Oid,
    result: Oid,
}

fn merge_fixture() -> MergeFixture {
    let mut w = World::new();
    let parent = w.root(None, vec![]);
    let inherited = w.create(parent, "inherited", true);
    let plan = w.fork(parent, ForkMode::Worker, RootSelection::Exact(vec![inherited]));
    let child = plan.child;
    let made_root = w.create(child, "made_root", true);
    let made_other = w.create(child, "made_other", false);
    let scratch = w.create_with(child, Some("scratch"), &[], true, true);
    let result = w.exit(child);
    MergeFixture { w, parent, child, inherited, goal: plan.goal, made_root, made_other, scratch, result }
}

#[test]
fn merge_adopts_roots_and_skips_with_reasons_without_renaming() {
    let MergeFixture { mut w, parent, child, inherited, goal, made_root, made_other, scratch, result } =
        merge_fixture();
    let names_before = w.space.process(parent).expect("memory").namespace.clone();
    let plan = w.space.plan_merge(parent, child, false).expect("merge");
    assert_eq!(plan.merged_oids, vec![made_root]);
    let skipped: BTreeSet<(Oid, SkipReason)> = plan.skipped_oids.iter().map(|s| (s.oid, s.reason)).collect();
    assert_eq!(
        skipped,
        BTreeSet::from([
            (inherited, SkipReason::NotChildOwned),
            (goal, SkipReason::Goal),
            (scratch, SkipReason::Ephemeral),
        ])
    );
    assert_eq!(SkipReason::NotChildOwned.code(), "not_child_owned");
    assert_eq!(
        BTreeSet::from_iter(plan.released_oids.clone()),
        BTreeSet::from([goal, made_other, scratch, result])
    );
    w.commit(plan.changes);
    assert_eq!(w.object(made_root).owner, Owner::Process(parent));
    assert_eq!(w.rights(parent, made_root), ObjectRights::ALL);
    assert_eq!(w.space.process(parent).expect("memory").namespace, names_before, "no renaming");
    assert!(w.object(made_other).released && w.object(result).released);
    assert!(!w.object(inherited).released, "the parent's object stays");
    assert_eq!(w.space.handles_of(child).count(), 0, "the child's handles are stale and revoked");
    assert_eq!(w.space.process(child).expect("memory").collected, Some(Collection::Merged));
}

#[test]
fn include_child_created_also_adopts_the_childs_other_process_objects() {
    let MergeFixture { w, parent, child, made_root, made_other, result, .. } = merge_fixture();
    let plan = w.space.plan_merge(parent, child, true).expect("merge");
    assert_eq!(plan.merged_oids, vec![made_root, made_other]);
    assert!(
        !plan.merged_oids.contains(&result) && !plan.skipped_oids.iter().any(|s| s.oid == result),
        "a result is never a candidate: it is released, unreported"
    );
}

#[test]
fn merge_after_wait_releases_the_waited_result_and_revokes_the_parents_handle() {
    let MergeFixture { mut w, parent, child, result, .. } = merge_fixture();
    assert_eq!(w.wait(parent, child), result);
    assert_eq!(w.rights(parent, result), R);
    let plan = w.space.plan_merge(parent, child, true).expect("merge");
    assert!(plan.released_oids.contains(&result));
    assert!(plan.revoked.contains(&(parent, result)));
    w.commit(plan.changes);
    assert!(w.object(result).released);
    assert!(w.space.handle(parent, result).is_none());
    assert_eq!(w.space.plan_read(parent, result).expect_err("gone").code(), "object_released");
    assert_eq!(w.space.grant_result_handle(parent, child).expect_err("gone").code(), "object_released");
}

#[test]
fn merge_revokes_every_handle_on_a_released_object_whoever_holds_it() {
    let mut w = World::new();
    let parent = w.root(None, vec![]);
    let child = w.spawn(parent, vec![]).child;
    let sibling = w.spawn(parent, vec![]).child;
    let scratch = w.create_with(child, Some("scratch"), &[], true, false);
    // The child hands its scratch to a sibling (who may receive is the runtime's rule).
    let changes = w.space.plan_delegate(child, sibling, scratch, R).expect("delegate");
    w.commit(changes);
    w.exit(child);
    let plan = w.space.plan_merge(parent, child, true).expect("merge");
    assert!(plan.revoked.contains(&(sibling, scratch)));
    w.commit(plan.changes);
    assert!(w.space.handles().all(|h| !w.object(h.oid).released));
    assert!(w.space.handle(sibling, scratch).is_none());
}

#[test]
fn a_second_merge_of_the_same_child_is_refused() {
    let MergeFixture { mut w, parent, child, .. } = merge_fixture();
    let plan = w.space.plan_merge(parent, child, false).expect("merge");
    w.commit(plan.changes);
    let error = w.space.plan_merge(parent, child, true).expect_err("second merge");
    assert_eq!(error, ObjectError::MemoryCollected { pid: child, how: Collection::Merged });
    assert_eq!(error.code(), "already_merged");
}

#[test]
fn a_data_flow_denial_fails_the_whole_merge_and_changes_nothing() {
    let mut w = World::new();
    let parent = w.root(Some(&["pii"]), vec![]);
    let child = w.spawn(parent, vec![]).child;
    let plain = w.create(child, "plain", true);
    let secret = w.create(child, "secret", true);
    // Clearances nest, so a denial needs a label the parent's clearance lacks: one the host
    // put on a child object, say.
    let mut labelled = w.space.clone();
    let meta = ObjectMeta { labels: labels(&["secret"]), ..w.object(secret) };
    labelled.apply([ObjectChange::PutObject(meta)]);
    let before = labelled.clone();
    let error = labelled.plan_merge(parent, child, false).expect_err("flow");
    assert_eq!(error, ObjectError::FlowDenied { holder: parent, oid: secret, label: "secret".into() });
    assert_eq!(error.code(), "flow_denied");
    assert_eq!(labelled, before);
    assert!(!labelled.object(plain).expect("plain").released, "nothing was released");
    assert_eq!(labelled.process(child).expect("memory").collected, None, "a later merge may still run");
}

#[test]
fn a_parent_end_releases_its_unmerged_childrens_memory() {
    let mut w = World::new();
    let parent = w.root(None, vec![]);
    let merged = w.spawn(parent, vec![]).child;
    let unmerged = w.spawn(parent, vec![]).child;
    let kept = w.create(merged, "kept", true);
    let lost = w.create(unmerged, "lost", true);
    w.exit(merged);
    let lost_result = w.exit(unmerged);
    w.wait(parent, unmerged);
    let plan = w.space.plan_merge(parent, merged, false).expect("merge");
    w.commit(plan.changes);
    let release = w.space.release_unmerged_children(parent, &[merged, unmerged]).expect("release");
    assert_eq!(release.released_children, vec![unmerged], "a merged child is passed over");
    assert!(release.released_oids.contains(&lost) && release.released_oids.contains(&lost_result));
    w.commit(release.changes);
    assert!(w.object(lost).released && w.object(lost_result).released);
    assert!(!w.object(kept).released);
    assert!(w.space.handle(parent, lost_result).is_none());
    let error = w.space.plan_merge(parent, unmerged, true).expect_err("released");
    assert_eq!(error.code(), "memory_released");
}

#[test]
fn unknown_ids_limits_and_reused_pids_are_refused_with_their_codes() {
    let mut w = World::new();
    let pid = w.root(None, vec![]);
    let stranger = w.ids.pid();
    let nowhere = w.ids.oid();
    assert_eq!(w.space.plan_read(stranger, nowhere).expect_err("no memory").code(), "unknown_process");
    assert_eq!(w.space.plan_read(pid, nowhere).expect_err("no object").code(), "unknown_object");
    let request = World::fork_request(pid, ForkMode::Worker, RootSelection::Exact(vec![nowhere]));
    assert_eq!(w.try_fork_with(&request).expect_err("no object").code(), "unknown_object");
    let many = vec![nowhere; agentvisor_actors::limits::ROOT_OIDS_MAX + 1];
    let request = World::fork_request(pid, ForkMode::Worker, RootSelection::Exact(many));
    assert_eq!(w.try_fork_with(&request).expect_err("too many").code(), "too_many_entries");
    let request = SpawnViewRequest { parent: pid, clearance: None, default_skills: vec![] };
    let approval = w.space.plan_spawn_view(&request).expect("spawn view");
    assert_eq!(
        w.space.materialize_view(approval, pid, &mut w.ids).expect_err("reused").code(),
        "process_exists"
    );
    assert_eq!(w.space.plan_merge(pid, pid, true).expect_err("self").code(), "self_merge");
}

// ---- persistence ----------------------------------------------------------------------------

#[test]
fn changes_round_trip_through_json_and_postcard_and_replay_to_the_same_space() {
    let MergeFixture { mut w, parent, child, .. } = merge_fixture();
    let plan = w.space.plan_merge(parent, child, true).expect("merge");
    let json = serde_json::to_string(&plan.changes).expect("encode");
    let decoded: Vec<ObjectChange> = serde_json::from_str(&json).expect("decode");
    assert_eq!(decoded, plan.changes);
    let bytes = postcard::to_stdvec(&plan.changes).expect("postcard encode");
    let decoded: Vec<ObjectChange> = postcard::from_bytes(&bytes).expect("postcard decode");
    assert_eq!(decoded, plan.changes);
    let mut replayed = w.space.clone();
    replayed.apply(decoded);
    w.commit(plan.changes);
    assert_eq!(replayed, w.space);
}

#[test]
fn check_catches_a_handle_on_a_released_object() {
    let mut w = World::new();
    let pid = w.root(None, vec![]);
    let a = w.create(pid, "a", false);
    let mut broken = w.space.clone();
    broken.apply([ObjectChange::ReleaseObject { oid: a }]);
    let error = broken.check().expect_err("dangling handle");
    assert_eq!(error.code(), "invariant_violation");
}

#[test]
fn a_delivery_raises_the_context_within_the_clearance_and_a_launch_can_be_undone() {
    let mut w = World::new();
    let open = w.root(None, Vec::new());
    let narrow = w.root(Some(&["public"]), Vec::new());
    let raise = w.space.plan_raise_context(open, &labels(&["pii"])).expect("cleared");
    w.commit(raise);
    assert_eq!(w.space.process(open).expect("memory").context, labels(&["pii"]));
    assert_eq!(w.space.message_labels(open), labels(&["pii"]));
    // Nothing new: nothing to commit.
    assert!(w.space.plan_raise_context(open, &labels(&["pii"])).expect("cleared").is_empty());
    let denied = w.space.plan_raise_context(narrow, &labels(&["pii"])).expect_err("not cleared");
    assert_eq!(denied.code(), "flow_denied");
    assert_eq!(w.space.clearance_of(narrow), Some(vec!["public".to_string()]));

    // A launch view taken back leaves the space as it was.
    let before = w.space.clone();
    let child = w.fork(open, ForkMode::Worker, RootSelection::AllParentRoots);
    assert_ne!(w.space, before);
    w.space.discard_process(child.child);
    assert_eq!(w.space, before);
}
