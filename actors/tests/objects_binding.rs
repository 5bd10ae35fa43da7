//! Bindings a process makes and lets go of (`kernel::objects::binding`): a profile-bound
//! instance is one object per key, found by every binder, refused outside the binder's image;
//! unbinding a name leaves the object; dropping releases what the dropper owns (every handle
//! revoked) and only lets go of what it does not.

use agentvisor_actors::kernel::ids::{CountingIds, IdSource, Oid, Pid};
use agentvisor_actors::kernel::objects::{
    CreateRequest, ObjectChange, ObjectError, ObjectRights, ObjectSpace, Owner, ProfileBindRequest,
    RootViewRequest,
};
use std::collections::BTreeSet;

const RW: ObjectRights = ObjectRights::READ.union(ObjectRights::WRITE);

struct World {
    space: ObjectSpace,
    ids: CountingIds,
}

impl World {
    fn new() -> Self {
        World { space: ObjectSpace::new(), ids: CountingIds::new(11) }
    }

    fn commit(&mut self, changes: Vec<ObjectChange>) {
        let mut next = self.space.clone();
        next.apply(changes);
        next.check().expect("invariants hold after every approved plan");
        self.space = next;
    }

    fn root(&mut self) -> Pid {
        let request =
            RootViewRequest { clearance: None, goal_labels: BTreeSet::new(), default_skills: Vec::new() };
        let approval = self.space.plan_root_view(&request).expect("root view");
        let pid = self.ids.pid();
        let plan = self.space.materialize_view(approval, pid, &mut self.ids).expect("materialize");
        self.commit(plan.changes);
        pid
    }

    fn bind_as(&mut self, holder: Pid, key: &str, name: &str) -> Result<(Oid, bool), ObjectError> {
        let request =
            ProfileBindRequest { holder, image: "agent".into(), key: key.into(), name: name.into() };
        let plan = self.space.plan_bind_profile(&request, &mut self.ids)?;
        self.commit(plan.changes);
        Ok((plan.oid, plan.created))
    }

    fn bind(&mut self, holder: Pid, key: &str) -> Result<(Oid, bool), ObjectError> {
        self.bind_as(holder, key, "memories")
    }

    fn create(&mut self, holder: Pid, name: &str) -> Oid {
        let request = CreateRequest {
            holder,
            name: Some(name.into()),
            labels: BTreeSet::new(),
            ephemeral: false,
            root: false,
        };
        let plan = self.space.plan_create(&request, &mut self.ids).expect("create");
        self.commit(plan.changes);
        plan.oid
    }

    fn named(&self, pid: Pid, name: &str) -> Option<Oid> {
        self.space.process(pid).and_then(|m| m.namespace.get(name).copied())
    }
}

#[test]
fn every_binder_of_a_key_gets_its_one_instance() {
    let mut w = World::new();
    let (a, b) = (w.root(), w.root());
    let (first, created) = w.bind(a, "agent/researcher/memories").expect("first bind");
    assert!(created);
    let (second, created) = w.bind(b, "agent/researcher/memories").expect("second bind");
    assert!(!created, "the second binder finds the instance");
    assert_eq!(first, second);
    let owner = w.space.object(first).map(|o| o.owner.clone());
    assert_eq!(owner, Some(Owner::Profile("agent/researcher/memories".into())));
    for holder in [a, b] {
        assert_eq!(w.space.rights(holder, first), RW);
        assert_eq!(w.named(holder, "memories"), Some(first));
    }
    assert_eq!(w.bind(a, "agent/researcher/memories").expect("again"), (first, false), "idempotent");
    assert_eq!(w.space.profile_instance("agent/researcher/memories"), Some(first));

    // Another key is another instance; a name bound to a different object is not rebound.
    let refused = w.bind(b, "agent/writer/memories").expect_err("name taken");
    assert_eq!(refused.code(), "name_taken");
    let (other, created) = w.bind_as(b, "agent/writer/memories", "writer").expect("own name");
    assert!(created);
    assert_ne!(other, first);
}

#[test]
fn a_key_outside_the_binders_image_is_refused() {
    let mut w = World::new();
    let a = w.root();
    for key in ["other/researcher/memories", "agent", "agent/", "agentx/researcher"] {
        let refused = w.bind(a, key).expect_err(key);
        assert_eq!(refused.code(), "profile_key_outside_image", "{key}: {refused}");
        assert!(refused.to_string().contains("\"agent\""), "{refused}");
    }
    assert_eq!(w.space.objects().count(), 1, "only the goal: a refusal makes nothing");
}

#[test]
fn two_live_instances_of_one_key_break_an_invariant() {
    let mut w = World::new();
    let a = w.root();
    let (first, _) = w.bind(a, "agent/p/memories").expect("bind");
    let mut meta = w.space.object(first).cloned().expect("meta");
    meta.oid = w.ids.oid();
    let mut broken = w.space.clone();
    broken.apply([ObjectChange::PutObject(meta)]);
    let violation = broken.check().expect_err("two live instances");
    assert!(violation.what.contains("2 live instances"), "{violation}");
}

#[test]
fn unbinding_a_name_keeps_the_object_and_the_handle() {
    let mut w = World::new();
    let a = w.root();
    let oid = w.create(a, "tasks");
    let (unbound, changes) = w.space.plan_unbind(a, "tasks").expect("unbind");
    assert_eq!(unbound, oid);
    w.commit(changes);
    assert_eq!(w.named(a, "tasks"), None);
    assert_eq!(w.space.rights(a, oid), ObjectRights::ALL);
    assert_eq!(w.space.plan_unbind(a, "tasks").expect_err("gone").code(), "unknown_name");
}

#[test]
fn dropping_an_owned_object_releases_it_and_revokes_every_handle() {
    let mut w = World::new();
    let (owner, other) = (w.root(), w.root());
    let oid = w.create(owner, "notebook");
    // Any holder: here the other root, given a handle directly.
    w.commit(vec![ObjectChange::PutHandle(agentvisor_actors::kernel::objects::Handle {
        holder: other,
        oid,
        rights: ObjectRights::READ,
        ephemeral: false,
    })]);
    let plan = w.space.plan_drop(owner, oid).expect("drop");
    assert!(plan.released);
    w.commit(plan.changes);
    assert!(w.space.object(oid).is_some_and(|o| o.released));
    assert_eq!(w.space.holders_of(oid).count(), 0);
    assert_eq!(w.named(owner, "notebook"), None);
    assert_eq!(w.space.plan_read(owner, oid).expect_err("released").code(), "object_released");
    assert_eq!(w.space.plan_drop(owner, oid).expect_err("twice").code(), "object_released");
}

#[test]
fn dropping_a_shared_instance_lets_go_of_it_and_leaves_it_to_the_others() {
    let mut w = World::new();
    let (a, b) = (w.root(), w.root());
    let (oid, _) = w.bind(a, "agent/p/memories").expect("a binds");
    w.bind(b, "agent/p/memories").expect("b binds");
    let plan = w.space.plan_drop(a, oid).expect("drop");
    assert!(!plan.released, "a profile's instance is nobody's to release");
    w.commit(plan.changes);
    assert!(w.space.object(oid).is_some_and(|o| !o.released));
    assert_eq!(w.space.rights(a, oid), ObjectRights::empty());
    assert_eq!(w.named(a, "memories"), None);
    assert_eq!(w.space.rights(b, oid), RW);
    assert_eq!(w.space.plan_drop(a, oid).expect_err("not held").code(), "missing_right");
    // A later bind finds the same instance again.
    assert_eq!(w.bind(a, "agent/p/memories").expect("rebind"), (oid, false));
}

#[test]
fn a_goal_is_not_droppable() {
    let mut w = World::new();
    let a = w.root();
    let goal = w.space.process(a).and_then(|m| m.goal).expect("goal");
    assert_eq!(w.space.plan_drop(a, goal).expect_err("goal").code(), "goal_not_droppable");
}
