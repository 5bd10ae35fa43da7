//! The same assertions against every `Store` implementation: whatever `MemoryStore` does,
//! `SqliteStore` does too.

use agentvisor_actors::kernel::capability::{ConstraintValue, Constraints, Grant, Rights};
use agentvisor_actors::kernel::ids::{CountingIds, Epoch, IdSource, Pid};
use agentvisor_actors::kernel::process::Event;
use agentvisor_actors::kernel::status::{FailureKind, Status};
use agentvisor_actors::store::{
    Change, CommitReceipt, Envelope, ObjectOwner, ObjectRecord, ProcessQuery, Store, StoreError,
};
use std::collections::BTreeSet;

mod store_fixtures;

use store_fixtures::{commit, every_shape, grant, grant_with_id, launched, pids, start, with};

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

    // A source put earlier in the same change set counts as live.
    let fresh = grant(&mut ids, holder, None);
    let child = grant(&mut ids, holder, Some(fresh.id));
    commit(store, vec![Change::PutGrant(fresh), Change::PutGrant(child)]).await;

    // Other change sets still commit, and the store stays writable.
    commit(store, vec![Change::PutProcess(bystander_row.clone())]).await;
    assert_eq!(store.process(bystander_row.pid).expect("reads"), Some(bystander_row));
    assert!(store.is_writable());
}

async fn objects_and_checkpoints(store: &dyn Store) {
    let mut ids = CountingIds::new(7);
    let pid = ids.pid();
    let objects = vec![
        ObjectRecord { oid: ids.oid(), owner: ObjectOwner::Process(pid), kind: "note".into(), payload: None },
        ObjectRecord {
            oid: ids.oid(),
            owner: ObjectOwner::ProcessResult(pid),
            kind: "process_result".into(),
            payload: Some(Envelope::json(&serde_json::json!({"words": 3, "ok": true}))),
        },
        ObjectRecord {
            oid: ids.oid(),
            owner: ObjectOwner::Host,
            kind: "blob".into(),
            payload: Some(Envelope::bytes(vec![0, 1, 2, 255])),
        },
    ];
    commit(store, objects.iter().cloned().map(Change::PutObject).collect()).await;
    for object in &objects {
        assert_eq!(store.object(object.oid).expect("reads").as_ref(), Some(object));
    }
    assert_eq!(store.object(ids.oid()).expect("reads"), None);
    // Replacing drops a payload that the new record does not carry.
    let replaced = ObjectRecord { payload: None, kind: "released".into(), ..objects[1].clone() };
    commit(store, vec![Change::PutObject(replaced.clone())]).await;
    assert_eq!(store.object(replaced.oid).expect("reads"), Some(replaced));
    commit(store, vec![Change::DeleteObject(objects[2].oid), Change::DeleteObject(ids.oid())]).await;
    assert_eq!(store.object(objects[2].oid).expect("reads"), None);

    assert_eq!(store.checkpoint(pid).expect("reads"), None);
    let first = Envelope::bytes(b"turn 1".to_vec());
    let second = Envelope::bytes(vec![7; 70_000]);
    commit(store, vec![Change::PutCheckpoint { pid, envelope: first.clone() }]).await;
    assert_eq!(store.checkpoint(pid).expect("reads"), Some(first));
    commit(store, vec![Change::PutCheckpoint { pid, envelope: second.clone() }]).await;
    assert_eq!(store.checkpoint(pid).expect("reads"), Some(second));
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
    };
}

conformance!(
    process_rows_round_trip,
    processes_queries,
    rows_breaking_invariants_are_refused,
    grants_round_trip,
    revocation_closure_and_receipt,
    source_grant_revoked_rejects_only_that_change_set,
    objects_and_checkpoints,
    epochs,
    empty_change_sets_commit,
);
