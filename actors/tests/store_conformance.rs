//! The same assertions against every `Store` implementation: whatever `MemoryStore` does,
//! `SqliteStore` and `PostgresStore` do too. The PostgreSQL cases each get a fresh database on
//! the test server (`pg_server`).

use agentvisor_actors::kernel::budget::Usage;
use agentvisor_actors::kernel::capability::{ConstraintValue, Constraints, Grant, Rights};
use agentvisor_actors::kernel::ids::{CountingIds, Epoch, IdSource, Oid, Pid};
use agentvisor_actors::kernel::mailbox::{MailboxQuery, Message, MessageFilter, MessageId, MessageKind};
use agentvisor_actors::kernel::objects::{
    ChildImage, Collection, CreateRequest, ForkMode, ForkViewRequest, Handle, ObjectChange, ObjectKind,
    ObjectMeta, ObjectRights, ObjectSpace, Owner, ProfileBindRequest, RootSelection, RootViewRequest, Skill,
    ViewApproval, ViewPlan,
};
use agentvisor_actors::kernel::process::Event;
use agentvisor_actors::kernel::status::{FailureKind, Sender, Status};
use agentvisor_actors::store::{
    Change, ChildrenAtStart, CommitReceipt, Envelope, ProcessQuery, Store, StoreError,
};
use serde_json::json;
use std::collections::BTreeSet;

mod pg_server;
mod store_fixtures;

use store_fixtures::{
    commit, every_shape, grant, grant_with_id, launched, message, message_id, pids, put_messages, start, with,
};

// ---- the suite ---------------------------------------------------------------------------

async fn process_rows_round_trip(store: &dyn Store) {
    let mut ids = CountingIds::new(1);
    let rows = every_shape(&mut ids);
    let statuses: BTreeSet<&str> = rows.iter().map(|r| r.status.as_str()).collect();
    assert_eq!(statuses.len(), Status::ALL.len(), "the fixture covers every status");
    commit(store, rows.iter().cloned().map(Change::PutProcess).collect()).await;
    for row in &rows {
        assert_eq!(store.process(row.pid).expect("reads").as_ref(), Some(row));
    }
    assert_eq!(store.process(ids.pid()).expect("reads"), None);

    // A later PutProcess replaces the row, including fields going back to NULL.
    let first = rows[2].clone();
    let next = with(first.clone(), [Event::WaitSatisfied { epoch: Epoch(9), claim: false }]);
    assert!(first.wait_state.is_some() && next.wait_state.is_none());
    commit(store, vec![Change::PutProcess(next.clone())]).await;
    assert_eq!(store.process(next.pid).expect("reads"), Some(next));
}

async fn processes_queries(store: &dyn Store) {
    let mut ids = CountingIds::new(2);
    let a = launched(&mut ids, None);
    let b = with(launched(&mut ids, None), [Event::Fail { kind: FailureKind::Panic, message: "x".into() }]);
    let a1 = with(launched(&mut ids, Some(&a)), [start()]);
    let a2 = with(launched(&mut ids, Some(&a)), [start(), Event::Exit { result_oid: None }]);
    let a3 = launched(&mut ids, Some(&a));
    let a1x = launched(&mut ids, Some(&a1));
    let c = launched(&mut ids, None);
    // Submitted out of pid order, in two change sets: reads come back in pid order anyway.
    let all = [&a, &b, &a1, &a2, &a3, &a1x, &c];
    commit(store, all.iter().rev().take(4).map(|r| Change::PutProcess((*r).clone())).collect()).await;
    commit(store, all.iter().rev().skip(4).map(|r| Change::PutProcess((*r).clone())).collect()).await;

    let q = |parent, roots_only, include_terminal, limit| ProcessQuery {
        parent,
        roots_only,
        include_terminal,
        limit,
        after: None,
    };
    let run = |query| pids(&store.processes(query).expect("reads"));
    assert_eq!(run(q(None, false, true, None)), vec![a.pid, b.pid, a1.pid, a2.pid, a3.pid, a1x.pid, c.pid]);
    assert_eq!(run(q(None, false, false, None)), vec![a.pid, a1.pid, a3.pid, a1x.pid, c.pid]);
    assert_eq!(run(q(None, true, true, None)), vec![a.pid, b.pid, c.pid]);
    assert_eq!(run(q(None, true, false, None)), vec![a.pid, c.pid]);
    assert_eq!(run(q(Some(a.pid), false, true, None)), vec![a1.pid, a2.pid, a3.pid]);
    assert_eq!(run(q(Some(a.pid), false, false, None)), vec![a1.pid, a3.pid]);
    // `parent` wins over `roots_only`.
    assert_eq!(run(q(Some(a.pid), true, true, None)), vec![a1.pid, a2.pid, a3.pid]);
    // Page by page: `after` the last pid of a page, `limit` rows each, every row once.
    for (parent, include_terminal, limit) in
        [(None, true, 2), (None, false, 2), (None, true, 3), (Some(a.pid), true, 1), (Some(a.pid), false, 1)]
    {
        let whole = run(q(parent, false, include_terminal, None));
        let mut paged = Vec::new();
        let mut after = None;
        loop {
            let page = run(ProcessQuery { after, ..q(parent, false, include_terminal, Some(limit)) });
            let Some(last) = page.last().copied() else { break };
            assert!(page.len() <= limit);
            after = Some(last);
            paged.extend(page);
        }
        assert_eq!(paged, whole, "pages of {limit} (parent {parent:?}, terminal {include_terminal})");
    }
    assert_eq!(run(q(Some(a1.pid), false, true, None)), vec![a1x.pid]);
    assert_eq!(run(q(Some(a1x.pid), false, true, None)), Vec::<Pid>::new());
    assert_eq!(run(q(Some(a.pid), false, true, Some(2))), vec![a1.pid, a2.pid]);
    assert_eq!(run(q(Some(a.pid), false, false, Some(1))), vec![a1.pid]);
    assert_eq!(run(q(None, false, true, Some(0))), Vec::<Pid>::new());
    assert_eq!(run(q(None, true, true, Some(usize::MAX))), vec![a.pid, b.pid, c.pid]);
    // Whole rows come back, not just pids.
    let kids = store.processes(q(Some(a.pid), false, true, None)).expect("reads");
    assert_eq!(kids, vec![a1, a2, a3]);
}

/// `live_reads` answers for many processes at once what the reads one by one answer, across
/// more processes than one batch of keys.
async fn live_reads_answer_as_the_reads_one_by_one(store: &dyn Store) {
    let mut ids = CountingIds::new(30);
    let a = launched(&mut ids, None);
    let a1 = with(launched(&mut ids, Some(&a)), [start()]);
    let mut a2 = with(launched(&mut ids, Some(&a)), [start(), Event::Exit { result_oid: None }]);
    a2.account.self_spent.tokens = 5;
    let mut a3 = with(launched(&mut ids, Some(&a)), [start(), Event::Exit { result_oid: None }]);
    a3.account.self_spent.tool_calls = 2;
    a3.account.children_spent.tokens = 7;
    let a1x = launched(&mut ids, Some(&a1));
    let c = launched(&mut ids, None);
    let rows = [&a, &a1, &a2, &a3, &a1x, &c];
    commit(store, rows.iter().rev().map(|r| Change::PutProcess((*r).clone())).collect()).await;
    let (g1, g2, g3) =
        (grant(&mut ids, a.pid, None), grant(&mut ids, a1.pid, None), grant(&mut ids, a.pid, None));
    commit(store, vec![Change::PutGrant(g3), Change::PutGrant(g1), Change::PutGrant(g2)]).await;
    let unread = message(&mut ids, a1.pid, Sender::Host, 1);
    let acked = Message { acked: true, ..message(&mut ids, c.pid, Sender::Host, 2) };
    let elsewhere = message(&mut ids, a2.pid, Sender::Host, 3);
    commit(store, [unread, acked, elsewhere].into_iter().map(Change::PutMessage).collect()).await;

    // Asked: the live rows, and enough unknown pids to take several batches of keys.
    let mut asked = vec![a.pid, a1.pid, a1x.pid, c.pid];
    asked.extend((0..1_100).map(|_| ids.pid()));
    let reads = store.live_reads(&asked).expect("reads");
    for pid in &asked {
        let query = ProcessQuery { parent: Some(*pid), include_terminal: true, ..ProcessQuery::default() };
        let one_by_one: ChildrenAtStart = store.processes(query).expect("reads").into_iter().collect();
        assert_eq!(reads.children.get(pid), Some(&one_by_one), "children of {pid}");
        assert_eq!(reads.grants.get(pid), Some(&store.grants_of(*pid).expect("reads")), "grants of {pid}");
        let has_unread = store.unread_count(*pid).expect("reads") > 0;
        assert_eq!(reads.unread.contains(pid), has_unread, "unread mail of {pid}");
    }
    assert_eq!(reads.children.len(), asked.len());
    assert_eq!(reads.grants.len(), asked.len());
    assert_eq!(reads.unread, [a1.pid].into_iter().collect(), "only a1 of the asked has unread mail");
    let of_a = &reads.children[&a.pid];
    assert_eq!(of_a.live, vec![a1], "the live children's rows");
    assert_eq!((of_a.ended, of_a.total()), (2, 3), "the ended children counted");
    let spent = Usage { tokens: 12, tool_calls: 2, ..Usage::default() };
    assert_eq!(of_a.ended_spent, spent, "what the ended children's subtrees spent, added up");
}

async fn rows_breaking_invariants_are_refused(store: &dyn Store) {
    let mut ids = CountingIds::new(3);
    let fine = launched(&mut ids, None);
    let mut broken = launched(&mut ids, None);
    broken.status = Status::Exited; // terminal without an outcome
    let err = store
        .submit(vec![Change::PutProcess(fine.clone()), Change::PutProcess(broken.clone())])
        .await
        .expect_err("a broken row is refused");
    assert!(matches!(err, StoreError::Corrupt(_)), "{err:?}");
    assert_eq!(store.process(fine.pid).expect("reads"), None, "the whole set is refused");
    assert_eq!(store.process(broken.pid).expect("reads"), None);
    assert!(store.is_writable(), "a refusal is not a failure");
    commit(store, vec![Change::PutProcess(fine.clone())]).await;
    assert_eq!(store.process(fine.pid).expect("reads"), Some(fine));
}

async fn grants_round_trip(store: &dyn Store) {
    let mut ids = CountingIds::new(4);
    let holder = ids.pid();
    let other = ids.pid();
    let mut constraints = Constraints::new();
    constraints.insert("max_calls".into(), ConstraintValue::Max(40));
    constraints
        .insert("models".into(), ConstraintValue::OneOf(["gpt-x".to_string(), "local".to_string()].into()));
    constraints.insert("path_prefix".into(), ConstraintValue::Prefix("/data/in".into()));
    let root = Grant { constraints, rights: Rights::all(), ..grant(&mut ids, other, None) };
    let derived = Grant {
        resource: "provider:openai".into(),
        rights: Rights::EXECUTE,
        delegable: false,
        ..grant(&mut ids, holder, Some(root.id))
    };
    let revoked_host = Grant { live: false, resource: "human".into(), ..grant(&mut ids, holder, None) };
    // Submitted with the later id first: grants_of answers in grant id order.
    commit(
        store,
        vec![
            Change::PutGrant(revoked_host.clone()),
            Change::PutGrant(root.clone()),
            Change::PutGrant(derived.clone()),
        ],
    )
    .await;
    assert_eq!(store.grants_of(holder).expect("reads"), vec![derived.clone(), revoked_host]);
    assert_eq!(store.grants_of(other).expect("reads"), vec![root]);
    assert_eq!(store.grants_of(ids.pid()).expect("reads"), vec![]);
    // PutGrant replaces.
    let narrowed = Grant { rights: Rights::READ, ..derived.clone() };
    commit(store, vec![Change::PutGrant(narrowed.clone())]).await;
    assert_eq!(store.grants_of(holder).expect("reads")[0], narrowed);
}

async fn revocation_closure_and_receipt(store: &dyn Store) {
    let mut ids = CountingIds::new(5);
    let (p, q, r) = (ids.pid(), ids.pid(), ids.pid());
    // Ids chosen so that breadth-first, id-ordered siblings differ from insertion order and
    // from depth-first order: root → {c1, c2}, c1 → {g1}, c2 → {g2 (already revoked)}.
    let [root_id, c1_id, c2_id, g1_id, g2_id, bystander_id] = [(); 6].map(|()| ids.grant());
    let root = grant_with_id(root_id, p, None);
    let c1 = grant_with_id(c1_id, q, Some(root_id));
    let c2 = grant_with_id(c2_id, r, Some(root_id));
    let g1 = grant_with_id(g1_id, r, Some(c1_id));
    let g2 = grant_with_id(g2_id, q, Some(c2_id));
    let bystander = grant_with_id(bystander_id, q, None);
    commit(
        store,
        vec![
            Change::PutGrant(root.clone()),
            Change::PutGrant(bystander.clone()),
            Change::PutGrant(c2.clone()),
            Change::PutGrant(g2.clone()),
            Change::PutGrant(c1.clone()),
            Change::PutGrant(g1.clone()),
        ],
    )
    .await;
    let receipt = commit(store, vec![Change::RevokeGrant(g2_id)]).await;
    assert_eq!(receipt.revoked, vec![(g2_id, q)]);

    let receipt = commit(store, vec![Change::RevokeGrant(root_id)]).await;
    assert_eq!(receipt.revoked, vec![(root_id, p), (c1_id, q), (c2_id, r), (g1_id, r)]);
    for holder in [p, q, r] {
        for g in store.grants_of(holder).expect("reads") {
            assert_eq!(g.live, g.id == bystander_id, "{g:?}");
        }
    }
    // Revoking again, or revoking an unknown grant, revokes nothing and is not an error.
    assert_eq!(commit(store, vec![Change::RevokeGrant(root_id)]).await.revoked, vec![]);
    assert_eq!(commit(store, vec![Change::RevokeGrant(ids.grant())]).await.revoked, vec![]);
    // Revoking a middle grant revokes its subtree only; receipts of one change set add up.
    let (s, s1, s2) = (ids.grant(), ids.grant(), ids.grant());
    commit(
        store,
        vec![
            Change::PutGrant(grant_with_id(s, p, None)),
            Change::PutGrant(grant_with_id(s1, q, Some(s))),
            Change::PutGrant(grant_with_id(s2, r, Some(s1))),
        ],
    )
    .await;
    let receipt = commit(store, vec![Change::RevokeGrant(s1), Change::RevokeGrant(s)]).await;
    assert_eq!(receipt.revoked, vec![(s1, q), (s2, r), (s, p)]);
}

async fn source_grant_revoked_rejects_only_that_change_set(store: &dyn Store) {
    let mut ids = CountingIds::new(6);
    let holder = ids.pid();
    let root = grant(&mut ids, holder, None);
    let other_root = grant(&mut ids, holder, None);
    commit(store, vec![Change::PutGrant(root.clone()), Change::PutGrant(other_root.clone())]).await;
    commit(store, vec![Change::RevokeGrant(root.id)]).await;

    let bystander_row = launched(&mut ids, None);
    let late = grant(&mut ids, holder, Some(root.id));
    let err = store
        .submit(vec![Change::PutProcess(bystander_row.clone()), Change::PutGrant(late.clone())])
        .await
        .expect_err("the source is revoked");
    assert_eq!(err, StoreError::SourceGrantRevoked { source_grant: root.id });
    assert_eq!(store.process(bystander_row.pid).expect("reads"), None, "atomic refusal");
    assert!(store.grants_of(holder).expect("reads").iter().all(|g| g.id != late.id));

    // A source that never existed is not live either.
    let missing = ids.grant();
    let err = store.submit(vec![Change::PutGrant(grant(&mut ids, holder, Some(missing)))]).await;
    assert_eq!(err, Err(StoreError::SourceGrantRevoked { source_grant: missing }));

    // A revocation earlier in the same change set counts, and refusing rolls it back.
    let err = store
        .submit(vec![
            Change::RevokeGrant(other_root.id),
            Change::PutGrant(grant(&mut ids, holder, Some(other_root.id))),
        ])
        .await;
    assert_eq!(err, Err(StoreError::SourceGrantRevoked { source_grant: other_root.id }));
    let still = store.grants_of(holder).expect("reads");
    assert!(still.iter().any(|g| g.id == other_root.id && g.live), "the revocation rolled back");

    // So does one that revokes the source's own source: the closure reaches it.
    let top = grant(&mut ids, holder, None);
    let mid = grant(&mut ids, holder, Some(top.id));
    commit(store, vec![Change::PutGrant(top.clone()), Change::PutGrant(mid.clone())]).await;
    let err = store
        .submit(vec![Change::RevokeGrant(top.id), Change::PutGrant(grant(&mut ids, holder, Some(mid.id)))])
        .await;
    assert_eq!(err, Err(StoreError::SourceGrantRevoked { source_grant: mid.id }));

    // A source put earlier in the same change set counts as live.
    let fresh = grant(&mut ids, holder, None);
    let child = grant(&mut ids, holder, Some(fresh.id));
    commit(store, vec![Change::PutGrant(fresh), Change::PutGrant(child)]).await;

    // Other change sets still commit, and the store stays writable.
    commit(store, vec![Change::PutProcess(bystander_row.clone())]).await;
    assert_eq!(store.process(bystander_row.pid).expect("reads"), Some(bystander_row));
    assert!(store.is_writable());
}

// ---- object memory --------------------------------------------------------------------------

fn labels(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn skill(name: &str, tools: &[&str]) -> Skill {
    Skill { name: name.into(), allowed_tools: labels(tools) }
}

fn fork_request(parent: Pid, mode: ForkMode, roots: RootSelection) -> ForkViewRequest {
    let image = ChildImage { same_as_parent: true, ..ChildImage::default() };
    ForkViewRequest { parent, mode, roots, clearance: None, image }
}

fn data_object(oid: Oid, owner: Owner, with: &[&str]) -> ObjectMeta {
    ObjectMeta { oid, owner, kind: ObjectKind::Data, labels: labels(with), ephemeral: false, released: false }
}

/// Object memory driven by the kernel's own planners: every plan's changes are applied to a
/// local space and committed to the store as `Change::Objects`, and after each commit the
/// store reads back exactly the local space.
struct Tracked<'a> {
    store: &'a dyn Store,
    space: ObjectSpace,
    ids: CountingIds,
    commits: usize,
}

impl<'a> Tracked<'a> {
    fn new(store: &'a dyn Store, seed: u64) -> Self {
        Tracked { store, space: ObjectSpace::new(), ids: CountingIds::new(seed), commits: 0 }
    }

    async fn commit(&mut self, changes: Vec<ObjectChange>) {
        self.space.apply(changes.clone());
        self.space.check().expect("the planners keep the invariants");
        commit(self.store, vec![Change::Objects(changes)]).await;
        self.commits += 1;
        let n = self.commits;
        let mut read = self.store.object_space().expect("reads");
        assert_eq!(read, self.space.resident(), "the resident part after commit {n}");
        let pids: Vec<Pid> = self.space.processes().map(|(pid, _)| pid).collect();
        let oids: Vec<Oid> = self.space.objects().map(|o| o.oid).collect();
        read.adopt(self.store.object_memory_of(&pids, &oids).expect("reads the history"));
        assert_eq!(read, self.space, "the resident part and the history after commit {n}");
    }

    async fn launch(&mut self, approval: ViewApproval) -> ViewPlan {
        let pid = self.ids.pid();
        let plan = self.space.materialize_view(approval, pid, &mut self.ids).expect("materializes");
        self.commit(plan.changes.clone()).await;
        plan
    }

    async fn fork(&mut self, parent: Pid, mode: ForkMode, roots: RootSelection) -> ViewPlan {
        let approval = self.space.plan_fork_view(&fork_request(parent, mode, roots)).expect("a fork view");
        self.launch(approval).await
    }

    async fn create(
        &mut self,
        holder: Pid,
        name: Option<&str>,
        with: &[&str],
        ephemeral: bool,
        root: bool,
    ) -> Oid {
        let request =
            CreateRequest { holder, name: name.map(str::to_string), labels: labels(with), ephemeral, root };
        let plan = self.space.plan_create(&request, &mut self.ids).expect("creates");
        self.commit(plan.changes).await;
        plan.oid
    }

    async fn exit(&mut self, pid: Pid) -> Oid {
        let plan = self.space.plan_exit_result(pid, &mut self.ids).expect("a result");
        self.commit(plan.changes).await;
        plan.oid
    }
}

/// A realistic life of object memory (root view, creates, a read, skills, forks in every mode,
/// a copy-mode write, a delegation, profile and host objects, exit, wait, merge, the release
/// at the parent's end, a memory replaced by `PutProcess`): after every commit the store's
/// `object_space()` equals the resident part of the space the changes were applied to, and
/// with the rest read by `object_memory_of`, the whole space.
async fn object_memory_follows_the_planners(store: &dyn Store) {
    assert_eq!(store.object_space().expect("reads"), ObjectSpace::new(), "empty at first");
    let mut m = Tracked::new(store, 30);
    let root_view = RootViewRequest {
        clearance: Some(labels(&["pii", "public"])),
        goal_labels: labels(&["public"]),
        default_skills: vec![skill("search", &["web", "grep"]), skill("write", &["edit"])],
    };
    let approval = m.space.plan_root_view(&root_view).expect("a root view");
    let root = m.launch(approval).await.child;
    let notes = m.create(root, Some("notes"), &["public"], false, true).await;
    let secret = m.create(root, Some("secret"), &["pii"], false, false).await;
    m.create(root, None, &[], true, true).await;
    let read = m.space.plan_read(root, secret).expect("reads");
    m.commit(read.changes).await;
    let load = m.space.plan_load_skills(root, vec![skill("summarize", &["llm"]), skill("search", &["web"])]);
    m.commit(load.expect("loads")).await;

    let worker = m.fork(root, ForkMode::Worker, RootSelection::from_args(None, None)).await.child;
    let speculative = m.fork(root, ForkMode::Speculative, RootSelection::Exact(vec![notes])).await.child;
    let copy = m.fork(root, ForkMode::Copy, RootSelection::Exact(vec![notes, secret])).await.child;
    let restricted = m.fork(root, ForkMode::Restricted, RootSelection::Exact(vec![secret])).await.child;
    let read = m.space.plan_read(copy, secret).expect("reads");
    m.commit(read.changes).await;
    let write = m.space.plan_write(copy, notes).expect("copy mode writes");
    m.commit(write).await;
    assert_eq!(m.space.object(notes).map(|o| o.labels.clone()), Some(labels(&["pii", "public"])));
    let delegate = m.space.plan_delegate(root, worker, secret, ObjectRights::READ | ObjectRights::WRITE);
    m.commit(delegate.expect("delegates")).await;

    let shared = data_object(m.ids.oid(), Owner::Profile("team-a".into()), &["public"]);
    let host = data_object(m.ids.oid(), Owner::Host, &[]);
    let handle = Handle { holder: worker, oid: shared.oid, rights: ObjectRights::READ, ephemeral: false };
    m.commit(vec![
        ObjectChange::PutObject(shared.clone()),
        ObjectChange::PutObject(host),
        ObjectChange::PutHandle(handle),
        ObjectChange::PutName { pid: worker, name: "team notes".into(), oid: shared.oid },
    ])
    .await;

    let made = m.create(worker, Some("made"), &[], false, true).await;
    let other = m.create(worker, None, &["public"], false, false).await;
    m.create(worker, Some("scratch"), &[], true, true).await;
    let result = m.exit(worker).await;
    let wait = m.space.grant_result_handle(root, worker).expect("granted").expect("a result");
    assert_eq!(wait.oid, result);
    m.commit(wait.changes).await;
    let merge = m.space.plan_merge(root, worker, true).expect("merges");
    assert_eq!(merge.merged_oids, vec![made, other]);
    m.commit(merge.changes).await;
    assert_eq!(m.space.process(worker).and_then(|p| p.collected), Some(Collection::Merged));

    m.exit(speculative).await;
    m.exit(copy).await;
    let children = [worker, speculative, copy, restricted];
    let release = m.space.release_unmerged_children(root, &children).expect("releases");
    assert_eq!(release.released_children, vec![speculative, copy, restricted]);
    m.commit(release.changes).await;

    // `PutProcess` replaces the whole memory: names, roots, context, skills start afresh.
    let goal = ObjectMeta { kind: ObjectKind::Goal, ..data_object(m.ids.oid(), Owner::Process(root), &[]) };
    let handle = Handle { holder: root, oid: goal.oid, rights: ObjectRights::ALL, ephemeral: false };
    m.commit(vec![
        ObjectChange::PutObject(goal.clone()),
        ObjectChange::PutHandle(handle),
        ObjectChange::PutProcess { pid: root, goal: goal.oid, clearance: None },
        ObjectChange::PutRoot { pid: root, oid: goal.oid },
    ])
    .await;
    let memory = m.space.process(root).expect("memory").clone();
    assert_eq!(memory.roots.iter().copied().collect::<BTreeSet<_>>(), BTreeSet::from([goal.oid]));
    assert!(memory.namespace.is_empty() && memory.context.is_empty() && memory.skills.is_empty());
    assert_eq!((memory.clearance, memory.collected), (None, None));
}

/// Profile-bound instances, unbinding and drops: two roots bind one key (one instance), one
/// unbinds a name and drops what it owns and what it only holds; after every commit the
/// store's `object_space()` equals the planners' space.
async fn profile_bindings_and_drops_follow_the_planners(store: &dyn Store) {
    let mut m = Tracked::new(store, 40);
    let root_view =
        RootViewRequest { clearance: None, goal_labels: BTreeSet::new(), default_skills: Vec::new() };
    let a = m.launch(m.space.plan_root_view(&root_view).expect("a root view")).await.child;
    let b = m.launch(m.space.plan_root_view(&root_view).expect("a root view")).await.child;
    let bind = |holder: Pid| ProfileBindRequest {
        holder,
        image: "agent".into(),
        key: "agent/keeper/agent.memories".into(),
        name: "agent.memories".into(),
    };
    let first = m.space.plan_bind_profile(&bind(a), &mut m.ids).expect("binds");
    m.commit(first.changes).await;
    let second = m.space.plan_bind_profile(&bind(b), &mut m.ids).expect("binds");
    assert_eq!((second.oid, second.created), (first.oid, false));
    m.commit(second.changes).await;

    let tasks = m.create(a, Some("agent.tasks"), &[], false, false).await;
    let (_, unbind) = m.space.plan_unbind(a, "agent.memories").expect("unbinds");
    m.commit(unbind).await;
    let drop_own = m.space.plan_drop(a, tasks).expect("drops");
    assert!(drop_own.released);
    m.commit(drop_own.changes).await;
    let let_go = m.space.plan_drop(a, first.oid).expect("lets go");
    assert!(!let_go.released);
    m.commit(let_go.changes).await;
    assert_eq!(m.space.profile_instance("agent/keeper/agent.memories"), Some(first.oid));
    assert_eq!(m.space.holders_of(first.oid).collect::<Vec<_>>(), vec![b]);
}

/// Memory that no `PutProcess` began (a collection mark or a context alone makes it) has no
/// goal, which breaks an invariant: the store keeps what it was given and reads it back as
/// `Corrupt`, whether it is resident (read at open) or history (read on demand).
async fn object_memory_breaking_an_invariant_reads_back_as_corrupt(store: &dyn Store) {
    let mut ids = CountingIds::new(33);
    let (collected, live) = (ids.pid(), ids.pid());
    let mark = ObjectChange::MarkCollected { pid: collected, how: Collection::Released };
    commit(store, vec![Change::Objects(vec![mark])]).await;
    assert_eq!(store.object_space().expect("history is not read at open"), ObjectSpace::new());
    let read = store.object_memory_of(&[collected], &[]);
    assert!(matches!(read, Err(StoreError::Corrupt(_))), "{read:?}");
    let context = ObjectChange::SetContext { pid: live, labels: labels(&["x"]) };
    commit(store, vec![Change::Objects(vec![context])]).await;
    let read = store.object_space();
    assert!(matches!(read, Err(StoreError::Corrupt(_))), "{read:?}");
}

/// Payloads: put, read back, replaced, listed, and deleted by `ReleaseObject` (in change-set
/// order); a payload needs no metadata of its own.
async fn payloads_round_trip_and_go_with_their_object(store: &dyn Store) {
    let mut ids = CountingIds::new(31);
    let (a, b, c) = (ids.oid(), ids.oid(), ids.oid());
    assert_eq!(store.payload_oids().expect("reads"), BTreeSet::new());
    assert_eq!(store.payload(a).expect("reads"), None);
    let json = Envelope::json(&json!({"words": 3, "ok": true}));
    let bytes = Envelope::bytes(vec![0, 1, 2, 255]);
    let pid = ids.pid();
    commit(
        store,
        vec![
            Change::Objects(vec![
                ObjectChange::PutObject(data_object(a, Owner::Host, &[])),
                ObjectChange::PutObject(data_object(b, Owner::Profile("p".into()), &["x"])),
            ]),
            Change::PutPayload { oid: a, envelope: json.clone() },
            Change::PutPayload { oid: b, envelope: bytes.clone() },
            Change::PutPayload { oid: c, envelope: json.clone() },
        ],
    )
    .await;
    assert_eq!(store.payload(a).expect("reads"), Some(json.clone()));
    assert_eq!(store.payload(b).expect("reads"), Some(bytes.clone()));
    assert_eq!(store.payload(c).expect("reads"), Some(json.clone()));
    assert_eq!(store.payload_oids().expect("reads"), BTreeSet::from([a, b, c]));

    let big = Envelope::bytes(vec![7; 70_000]);
    commit(store, vec![Change::PutPayload { oid: a, envelope: big.clone() }]).await;
    assert_eq!(store.payload(a).expect("reads"), Some(big));

    commit(store, vec![Change::Objects(vec![ObjectChange::ReleaseObject { oid: a }])]).await;
    assert_eq!(store.payload(a).expect("reads"), None);
    assert_eq!(store.payload_oids().expect("reads"), BTreeSet::from([b, c]));
    let space = store.object_space().expect("reads");
    assert_eq!(space.object(a), None, "a tombstone nothing live refers to is history");
    assert_eq!(space.object(b).map(|o| o.released), Some(false));
    let history = store.object_memory_of(&[], &[a]).expect("reads");
    assert_eq!(history.object(a).map(|o| o.released), Some(true), "a tombstone stays");

    // In one change set, order counts: put then release leaves none, release then put one.
    commit(
        store,
        vec![
            Change::PutPayload { oid: b, envelope: json.clone() },
            Change::Objects(vec![
                ObjectChange::ReleaseObject { oid: b },
                ObjectChange::ReleaseObject { oid: c },
            ]),
            Change::PutPayload { oid: c, envelope: bytes.clone() },
        ],
    )
    .await;
    assert_eq!(store.payload(b).expect("reads"), None);
    assert_eq!(store.payload(c).expect("reads"), Some(bytes));
    assert_eq!(store.payload_oids().expect("reads"), BTreeSet::from([c]));
    assert_eq!(store.payload(ids.oid()).expect("reads"), None);
    assert_eq!(store.checkpoint(pid).expect("reads"), None, "payloads are not checkpoints");
}

/// A change set whose `PutGrant` is refused (its source was revoked) commits none of its
/// object changes or payloads; the same changes without it commit.
async fn a_refused_change_set_changes_no_object_memory(store: &dyn Store) {
    let mut ids = CountingIds::new(32);
    let holder = ids.pid();
    let source = grant(&mut ids, holder, None);
    commit(store, vec![Change::PutGrant(source.clone())]).await;
    commit(store, vec![Change::RevokeGrant(source.id)]).await;

    let mut space = ObjectSpace::new();
    let request = RootViewRequest { clearance: None, goal_labels: labels(&["a"]), default_skills: vec![] };
    let approval = space.plan_root_view(&request).expect("a root view");
    let view = space.materialize_view(approval, holder, &mut ids).expect("materializes");
    let mut changes: Vec<Change> = vec![Change::Objects(view.changes.clone())];
    changes.push(Change::PutPayload { oid: view.goal, envelope: Envelope::bytes(b"goal".to_vec()) });
    let late = grant(&mut ids, holder, Some(source.id));
    let mut refused = changes.clone();
    refused.push(Change::PutGrant(late));
    let err = store.submit(refused).await;
    assert_eq!(err, Err(StoreError::SourceGrantRevoked { source_grant: source.id }));
    assert_eq!(store.object_space().expect("reads"), ObjectSpace::new(), "no object change committed");
    assert_eq!(store.payload(view.goal).expect("reads"), None);
    assert_eq!(store.payload_oids().expect("reads"), BTreeSet::new());
    assert!(store.is_writable());

    commit(store, changes).await;
    space.apply(view.changes);
    assert_eq!(store.object_space().expect("reads"), space);
    assert_eq!(store.payload(view.goal).expect("reads"), Some(Envelope::bytes(b"goal".to_vec())));
}

async fn checkpoints_round_trip(store: &dyn Store) {
    let mut ids = CountingIds::new(7);
    let pid = ids.pid();
    assert_eq!(store.checkpoint(pid).expect("reads"), None);
    let first = Envelope::bytes(b"turn 1".to_vec());
    let second = Envelope::bytes(vec![7; 70_000]);
    commit(store, vec![Change::PutCheckpoint { pid, envelope: first.clone() }]).await;
    assert_eq!(store.checkpoint(pid).expect("reads"), Some(first));
    commit(store, vec![Change::PutCheckpoint { pid, envelope: second.clone() }]).await;
    assert_eq!(store.checkpoint(pid).expect("reads"), Some(second));
    assert_eq!(store.checkpoint(ids.pid()).expect("reads"), None);
}

async fn epochs(store: &dyn Store) {
    assert_eq!(store.epoch().expect("reads"), Epoch(0));
    assert_eq!(store.begin_epoch().expect("begins"), Epoch(1));
    assert_eq!(store.begin_epoch().expect("begins"), Epoch(2));
    assert_eq!(store.epoch().expect("reads"), Epoch(2));
}

async fn empty_change_sets_commit(store: &dyn Store) {
    assert_eq!(commit(store, vec![]).await, CommitReceipt::default());
    assert!(store.is_writable());
}

// ---- mailboxes ------------------------------------------------------------------------------

fn everything(limit: usize) -> MailboxQuery {
    MailboxQuery { filter: MessageFilter::default(), include_acked: true, limit }
}

fn ids_of(messages: &[Message]) -> Vec<MessageId> {
    messages.iter().map(|m| m.message_id).collect()
}

async fn messages_round_trip(store: &dyn Store) {
    let mut ids = CountingIds::new(20);
    let (me, parent) = (ids.pid(), ids.pid());
    let first = Message {
        kind: MessageKind::Interrupt,
        channel: Some("ops".into()),
        correlation_id: Some("job-1".into()),
        body: "héllo ✓\n\"quoted\" 'single' \u{0}".into(),
        payload: Some(json!({"words": 3, "ratio": 0.5, "nested": {"ok": true, "list": [1, "two", null]}})),
        labels: vec!["secret".into(), "team:a".into()],
        ..message(&mut ids, me, Sender::Process(parent), 10)
    };
    let from_host = Message {
        reply_to: Some(first.message_id),
        channel: Some(String::new()),
        payload: Some(json!(null)),
        ..message(&mut ids, me, Sender::Host, 11)
    };
    let from_runtime = Message {
        body: String::new(),
        payload: Some(json!("text")),
        ..message(&mut ids, me, Sender::Runtime, 12)
    };
    let from_self_acked = Message {
        acked: true,
        payload: Some(json!([1, 2, 3])),
        labels: vec!["x".into()],
        ..message(&mut ids, me, Sender::Process(me), 13)
    };
    let to_parent = message(&mut ids, parent, Sender::Process(me), 14);
    let all = [first, from_host, from_runtime, from_self_acked, to_parent.clone()];
    assert_eq!(store.message(all[0].message_id).expect("reads"), None);
    commit(store, all.iter().cloned().map(Change::PutMessage).collect()).await;
    for m in &all {
        assert_eq!(store.message(m.message_id).expect("reads").as_ref(), Some(m));
    }
    assert_eq!(store.message(message_id(&mut ids)).expect("reads"), None);
    let page = store.mailbox(me, &everything(100)).expect("reads");
    assert_eq!(page.messages, all[..4].to_vec());
    assert_eq!(page.matched, 4);
    assert_eq!(store.mailbox(parent, &everything(100)).expect("reads").messages, vec![to_parent]);
    assert_eq!(store.mailbox(ids.pid(), &everything(100)).expect("reads").matched, 0);
}

/// A mailbox with every filterable field varied independently, plus a second mailbox with the
/// same shapes that no read of the first may see.
fn filter_fixture(ids: &mut CountingIds, me: Pid, other: Pid, parent: Pid, child: Pid) -> Vec<Message> {
    let anchor = message_id(ids);
    let senders =
        [Sender::Process(parent), Sender::Process(child), Sender::Host, Sender::Runtime, Sender::Process(me)];
    let channels = [None, Some("ops"), Some("chat")];
    let correlations = [None, Some("c1"), Some("c2"), None, Some("c1")];
    let mut out = Vec::new();
    for i in 0..40u64 {
        let recipient = if i % 8 == 7 { other } else { me };
        let k = usize::try_from(i).expect("small");
        let mut m = Message {
            kind: if i % 2 == 0 { MessageKind::Normal } else { MessageKind::Interrupt },
            channel: channels[k % 3].map(str::to_string),
            correlation_id: correlations[k % 5].map(str::to_string),
            reply_to: (i % 4 == 1).then_some(anchor),
            acked: i % 7 == 3,
            // Seqs do not follow submission order.
            ..message(ids, recipient, senders[(k / 2) % 5], 1000 - i * 3 + (i % 3) * 50)
        };
        if i == 0 {
            m.message_id = anchor;
        }
        out.push(m);
    }
    out
}

async fn mailbox_filters_alone_and_anded(store: &dyn Store) {
    let mut ids = CountingIds::new(21);
    let (me, other, parent, child) = (ids.pid(), ids.pid(), ids.pid(), ids.pid());
    let all = filter_fixture(&mut ids, me, other, parent, child);
    put_messages(store, &all).await;
    let anchor = all[0].message_id;
    let mut mine: Vec<Message> = all.iter().filter(|m| m.recipient == me).cloned().collect();
    mine.sort_by_key(|m| m.seq);
    let theirs = all.iter().find(|m| m.recipient == other).expect("the other mailbox has messages");
    let picked = vec![
        mine[5].message_id,
        mine[1].message_id,
        theirs.message_id,
        message_id(&mut ids),
        mine[5].message_id,
        mine[12].message_id,
    ];

    let kinds = [None, Some(MessageKind::Interrupt)];
    let senders = [None, Some(Sender::Process(child)), Some(Sender::Host)];
    let channels = [None, Some("ops".to_string())];
    let correlations = [None, Some("c1".to_string())];
    let replies = [None, Some(anchor)];
    let id_lists = [None, Some(picked)];
    let mut checked = 0;
    for kind in kinds {
        for sender in senders {
            for channel in &channels {
                for correlation_id in &correlations {
                    for reply_to in replies {
                        for message_ids in &id_lists {
                            let filter = MessageFilter {
                                kind,
                                sender,
                                channel: channel.clone(),
                                correlation_id: correlation_id.clone(),
                                reply_to,
                                message_ids: message_ids.clone(),
                            };
                            let set = [
                                &filter.kind.is_some(),
                                &filter.sender.is_some(),
                                &filter.channel.is_some(),
                                &filter.correlation_id.is_some(),
                                &filter.reply_to.is_some(),
                                &filter.message_ids.is_some(),
                            ]
                            .iter()
                            .filter(|b| ***b)
                            .count();
                            for include_acked in [false, true] {
                                let expected: Vec<Message> = mine
                                    .iter()
                                    .filter(|m| (include_acked || !m.acked) && filter.matches(m))
                                    .cloned()
                                    .collect();
                                if set == 1 {
                                    // Each filter alone narrows the mailbox without emptying it.
                                    assert!(
                                        !expected.is_empty() && expected.len() < mine.len(),
                                        "{filter:?}"
                                    );
                                }
                                for limit in [0, 1, 3, 1000] {
                                    let query = MailboxQuery { filter: filter.clone(), include_acked, limit };
                                    let page = store.mailbox(me, &query).expect("reads");
                                    let want = &expected[..expected.len().min(limit)];
                                    assert_eq!(page.messages, want, "{query:?}");
                                    assert_eq!(page.matched, expected.len() as u64, "{query:?}");
                                    checked += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    assert_eq!(checked, 2 * 3 * 2 * 2 * 2 * 2 * 2 * 4);

    // A few by hand, so the oracle above is not the only witness.
    let only = |filter: MessageFilter| MailboxQuery { filter, include_acked: true, limit: 1000 };
    let ops = store
        .mailbox(me, &only(MessageFilter { channel: Some("ops".into()), ..Default::default() }))
        .expect("reads");
    assert!(ops.messages.iter().all(|m| m.channel.as_deref() == Some("ops") && m.recipient == me));
    assert!(ops.messages.windows(2).all(|w| w[0].seq < w[1].seq), "oldest first by seq");
    let by_ids = store
        .mailbox(
            me,
            &only(MessageFilter {
                message_ids: Some(vec![
                    mine[5].message_id,
                    theirs.message_id,
                    mine[1].message_id,
                    mine[1].message_id,
                ]),
                ..Default::default()
            }),
        )
        .expect("reads");
    assert_eq!(
        ids_of(&by_ids.messages),
        vec![mine[1].message_id, mine[5].message_id],
        "own mailbox only, no duplicates, seq order"
    );
    assert_eq!(by_ids.matched, 2);
    let none = store
        .mailbox(me, &only(MessageFilter { message_ids: Some(vec![]), ..Default::default() }))
        .expect("reads");
    assert_eq!((none.messages.len(), none.matched), (0, 0), "an empty id list matches nothing");
    let runtime = store
        .mailbox(me, &only(MessageFilter { sender: Some(Sender::Runtime), ..Default::default() }))
        .expect("reads");
    assert!(!runtime.messages.is_empty() && runtime.messages.iter().all(|m| m.sender == Sender::Runtime));
    let answers = store
        .mailbox(
            me,
            &only(MessageFilter {
                reply_to: Some(anchor),
                kind: Some(MessageKind::Interrupt),
                ..Default::default()
            }),
        )
        .expect("reads");
    assert!(!answers.messages.is_empty());
    assert!(answers.messages.iter().all(|m| m.reply_to == Some(anchor) && m.kind == MessageKind::Interrupt));
}

async fn mailbox_order_limit_and_matched(store: &dyn Store) {
    let mut ids = CountingIds::new(22);
    let me = ids.pid();
    // Ids in one order, seqs in another, submitted in a third.
    let mut messages: Vec<Message> =
        [7u64, 3, 9, 1, 5].iter().map(|seq| message(&mut ids, me, Sender::Host, *seq)).collect();
    messages.swap(0, 3);
    commit(store, messages[..2].iter().cloned().map(Change::PutMessage).collect()).await;
    commit(store, messages[2..].iter().cloned().map(Change::PutMessage).collect()).await;
    let mut by_seq = messages.clone();
    by_seq.sort_by_key(|m| m.seq);
    let unread = |limit| MailboxQuery { filter: MessageFilter::default(), include_acked: false, limit };
    let page = store.mailbox(me, &unread(100)).expect("reads");
    assert_eq!(page.messages, by_seq);
    assert_eq!(page.matched, 5);
    let page = store.mailbox(me, &unread(2)).expect("reads");
    assert_eq!(page.messages, by_seq[..2].to_vec());
    assert_eq!(page.matched, 5, "matched counts what was not returned too");
    let page = store.mailbox(me, &unread(0)).expect("reads");
    assert_eq!((page.messages.len(), page.matched), (0, 5));
    let page = store.mailbox(me, &unread(5)).expect("reads");
    assert_eq!((page.messages.len(), page.matched), (5, 5));
    let page = store.mailbox(me, &unread(usize::MAX)).expect("reads");
    assert_eq!((page.messages.len(), page.matched), (5, 5));
    // Acknowledged messages drop out of the default read and its count.
    commit(
        store,
        vec![Change::AckMessages { recipient: me, ids: vec![by_seq[0].message_id, by_seq[1].message_id] }],
    )
    .await;
    let page = store.mailbox(me, &unread(2)).expect("reads");
    assert_eq!(ids_of(&page.messages), ids_of(&by_seq[2..4]));
    assert_eq!(page.matched, 3);
    assert_eq!(store.mailbox(me, &everything(1)).expect("reads").matched, 5);
}

async fn acks_stay_within_the_recipients_mailbox(store: &dyn Store) {
    let mut ids = CountingIds::new(23);
    let (me, other) = (ids.pid(), ids.pid());
    let mine: Vec<Message> = (1..=4).map(|seq| message(&mut ids, me, Sender::Process(other), seq)).collect();
    let theirs: Vec<Message> =
        (5..=6).map(|seq| message(&mut ids, other, Sender::Process(me), seq)).collect();
    put_messages(store, &mine).await;
    put_messages(store, &theirs).await;
    assert_eq!(store.unread_count(me).expect("reads"), 4);
    assert_eq!(store.unread_count(other).expect("reads"), 2);

    // Naming another mailbox acknowledges nothing of mine.
    commit(store, vec![Change::AckMessages { recipient: other, ids: ids_of(&mine) }]).await;
    assert_eq!(store.unread_count(me).expect("reads"), 4);
    assert!(store.mailbox(me, &everything(10)).expect("reads").messages.iter().all(|m| !m.acked));

    // Mine, theirs, an unknown id and a duplicate: only mine change.
    let unknown = message_id(&mut ids);
    let ack = vec![mine[1].message_id, theirs[0].message_id, unknown, mine[1].message_id, mine[3].message_id];
    commit(store, vec![Change::AckMessages { recipient: me, ids: ack.clone() }]).await;
    assert_eq!(store.unread_count(me).expect("reads"), 2);
    assert_eq!(store.unread_count(other).expect("reads"), 2);
    assert_eq!(store.message(theirs[0].message_id).expect("reads").map(|m| m.acked), Some(false));
    // Ack is not deletion.
    let acked = store.message(mine[1].message_id).expect("reads").expect("still there");
    assert_eq!(acked, Message { acked: true, ..mine[1].clone() });
    let page = store.mailbox(me, &everything(10)).expect("reads");
    assert_eq!(page.messages.iter().map(|m| m.acked).collect::<Vec<_>>(), vec![false, true, false, true]);
    let unread = MailboxQuery { filter: MessageFilter::default(), include_acked: false, limit: 10 };
    assert_eq!(
        ids_of(&store.mailbox(me, &unread).expect("reads").messages),
        vec![mine[0].message_id, mine[2].message_id]
    );
    // Acknowledging again, or nothing, changes nothing and is not an error.
    commit(store, vec![Change::AckMessages { recipient: me, ids: ack }]).await;
    commit(store, vec![Change::AckMessages { recipient: me, ids: vec![] }]).await;
    assert_eq!(store.unread_count(me).expect("reads"), 2);

    // A message put and acknowledged in one change set is stored acknowledged.
    let late = message(&mut ids, me, Sender::Host, 7);
    commit(
        store,
        vec![
            Change::PutMessage(late.clone()),
            Change::AckMessages { recipient: me, ids: vec![late.message_id] },
        ],
    )
    .await;
    assert_eq!(store.message(late.message_id).expect("reads"), Some(Message { acked: true, ..late }));
    assert_eq!(store.unread_count(me).expect("reads"), 2);
    assert_eq!(store.unread_count(ids.pid()).expect("reads"), 0);
}

async fn unread_count_and_seq_max(store: &dyn Store) {
    let mut ids = CountingIds::new(24);
    let (a, b) = (ids.pid(), ids.pid());
    assert_eq!(store.message_seq_max().expect("reads"), 0);
    assert_eq!(store.unread_count(a).expect("reads"), 0);
    let messages = vec![
        message(&mut ids, a, Sender::Host, 4),
        Message { acked: true, ..message(&mut ids, b, Sender::Host, 41) },
        message(&mut ids, a, Sender::Runtime, 17),
        message(&mut ids, b, Sender::Process(a), 2),
    ];
    put_messages(store, &messages).await;
    assert_eq!(store.message_seq_max().expect("reads"), 41, "acknowledged messages count too");
    assert_eq!(store.unread_count(a).expect("reads"), 2);
    assert_eq!(store.unread_count(b).expect("reads"), 1);
    commit(store, vec![Change::AckMessages { recipient: a, ids: ids_of(&messages) }]).await;
    assert_eq!(store.unread_count(a).expect("reads"), 0);
    assert_eq!(store.unread_count(b).expect("reads"), 1);
    assert_eq!(store.message_seq_max().expect("reads"), 41);
}

async fn a_refused_change_set_delivers_no_message(store: &dyn Store) {
    let mut ids = CountingIds::new(25);
    let me = ids.pid();
    let delivered = message(&mut ids, me, Sender::Host, 1);
    let mut broken = launched(&mut ids, None);
    broken.status = Status::Exited; // terminal without an outcome
    let err = store
        .submit(vec![Change::PutMessage(delivered.clone()), Change::PutProcess(broken)])
        .await
        .expect_err("a broken row is refused");
    assert!(matches!(err, StoreError::Corrupt(_)), "{err:?}");
    assert_eq!(store.message(delivered.message_id).expect("reads"), None);
    assert_eq!(store.unread_count(me).expect("reads"), 0);
    assert_eq!(store.message_seq_max().expect("reads"), 0);
    commit(store, vec![Change::PutMessage(delivered.clone())]).await;
    assert_eq!(store.message(delivered.message_id).expect("reads"), Some(delivered));
}

// ---- one test per (store, case) -----------------------------------------------------------

macro_rules! conformance {
    ($($case:ident),* $(,)?) => {
        mod memory {
            use agentvisor_actors::store::MemoryStore;
            $(
                #[tokio::test]
                async fn $case() {
                    super::$case(&MemoryStore::new()).await;
                }
            )*
        }
        mod sqlite {
            use agentvisor_actors::store::SqliteStore;
            $(
                #[tokio::test]
                async fn $case() {
                    let dir = tempfile::tempdir().expect("a temporary directory");
                    let store = SqliteStore::open(&dir.path().join("agentvisor.db"))
                        .expect("opens");
                    super::$case(&store).await;
                }
            )*
        }
        mod postgres {
            use agentvisor_actors::store::PostgresStore;
            $(
                #[tokio::test]
                async fn $case() {
                    let Some(url) = super::pg_server::fresh_database() else { return };
                    let store = PostgresStore::open(&url).expect("opens");
                    super::$case(&store).await;
                }
            )*
        }
        /// The same cases on a shard of a database whose main shard another node owns at
        /// the same time: a shard is a store of its own.
        mod postgres_shard {
            use agentvisor_actors::store::{NodeLease, PostgresStore, shard_url};
            $(
                #[tokio::test]
                async fn $case() {
                    let Some(url) = super::pg_server::fresh_database() else { return };
                    let lease = |node: &str| NodeLease::new(node, std::time::Duration::from_secs(5)).expect("a lease");
                    let _main = PostgresStore::open_as(&url, &lease("main")).expect("opens the main shard");
                    let shard = shard_url(&url, "conformance").expect("a shard URL");
                    let store = PostgresStore::open_as(&shard, &lease("shard")).expect("opens the shard");
                    super::$case(&store).await;
                }
            )*
        }
    };
}

conformance!(
    process_rows_round_trip,
    processes_queries,
    live_reads_answer_as_the_reads_one_by_one,
    rows_breaking_invariants_are_refused,
    grants_round_trip,
    revocation_closure_and_receipt,
    source_grant_revoked_rejects_only_that_change_set,
    object_memory_follows_the_planners,
    profile_bindings_and_drops_follow_the_planners,
    object_memory_breaking_an_invariant_reads_back_as_corrupt,
    payloads_round_trip_and_go_with_their_object,
    a_refused_change_set_changes_no_object_memory,
    checkpoints_round_trip,
    epochs,
    empty_change_sets_commit,
    messages_round_trip,
    mailbox_filters_alone_and_anded,
    mailbox_order_limit_and_matched,
    acks_stay_within_the_recipients_mailbox,
    unread_count_and_seq_max,
    a_refused_change_set_delivers_no_message,
);
