//! What only the SQLite store has: a file that survives reopening, its pragmas, group commit,
//! fail-stop, the read-only view, schema versioning, and the pair assertion on reads.

use agentvisor_actors::kernel::budget::Budget;
use agentvisor_actors::kernel::capability::{Constraints, Grant, Rights};
use agentvisor_actors::kernel::ids::{CountingIds, Epoch, GrantId, IdSource, ImageId, Oid, Pid};
use agentvisor_actors::kernel::mailbox::{MailboxQuery, Message, MessageFilter, MessageKind};
use agentvisor_actors::kernel::objects::{
    CreateRequest, Handle, ObjectChange, ObjectKind, ObjectMeta, ObjectRights, ObjectSpace, Owner,
    RootViewRequest, Skill, SpawnViewRequest,
};
use agentvisor_actors::kernel::process::{Event, ProcessRow};
use agentvisor_actors::kernel::status::Sender;
use agentvisor_actors::limits;
use agentvisor_actors::store::{
    Change, CommitTicket, ENVELOPE_VERSION, Envelope, ProcessQuery, SCHEMA_VERSION, SqliteStore, Store,
    StoreError,
};
use rusqlite::types::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

mod store_fixtures;

use store_fixtures::{
    V3_OBJECT_TABLES, V7_REBUILT_TABLES, downgrade, downgrade_to_6, message, message_id, put_messages,
    refused_set_in_a_group,
};

fn row(ids: &mut CountingIds) -> ProcessRow {
    ProcessRow::launched(
        ids.pid(),
        None,
        0,
        ImageId::from("worker"),
        "/work".to_string(),
        "goal".to_string(),
        Budget::default(),
    )
}

fn host_grant(ids: &mut CountingIds, holder: Pid, derived_from: Option<GrantId>) -> Grant {
    Grant {
        id: ids.grant(),
        holder,
        resource: "process:spawn".to_string(),
        rights: Rights::EXECUTE,
        constraints: Constraints::new(),
        delegable: true,
        live: true,
        derived_from,
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("agentvisor.db");
    Fixture { _dir: dir, path }
}

fn open(path: &Path) -> SqliteStore {
    SqliteStore::open(path).expect("opens")
}

fn labels(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Object memory as the planners make it, applied to a local space as it goes.
struct Planned {
    space: ObjectSpace,
    changes: Vec<ObjectChange>,
}

impl Planned {
    fn new() -> Self {
        Planned { space: ObjectSpace::new(), changes: Vec::new() }
    }

    fn take(&mut self, changes: Vec<ObjectChange>) {
        self.space.apply(changes.clone());
        self.space.check().expect("the planners keep the invariants");
        self.changes.extend(changes);
    }

    /// A root process's memory: goal labels `pii`, not otherwise cleared, one default skill.
    fn root(&mut self, pid: Pid, ids: &mut CountingIds) -> Oid {
        let request = RootViewRequest {
            clearance: None,
            goal_labels: labels(&["pii"]),
            default_skills: vec![Skill { name: "search".into(), allowed_tools: labels(&["web"]) }],
        };
        let approval = self.space.plan_root_view(&request).expect("a root view");
        let view = self.space.materialize_view(approval, pid, ids).expect("materializes");
        self.take(view.changes);
        view.goal
    }

    fn create(&mut self, request: CreateRequest, ids: &mut CountingIds) -> Oid {
        let plan = self.space.plan_create(&request, ids).expect("creates");
        self.take(plan.changes);
        plan.oid
    }

    /// A root `me` with a goal, a labelled ephemeral root object `notes`, a spawned child that
    /// exited and was released at the root's end, a profile and a host object, and an
    /// ephemeral handle of the root's on the profile object.
    fn a_life(&mut self, ids: &mut CountingIds) -> Life {
        let me = ids.pid();
        let goal = self.root(me, ids);
        let notes = CreateRequest {
            holder: me,
            name: Some("notes".into()),
            labels: labels(&["team:a"]),
            ephemeral: true,
            root: true,
        };
        let notes = self.create(notes, ids);
        let request = SpawnViewRequest {
            parent: me,
            clearance: Some(labels(&["team:a", "pii"])),
            default_skills: vec![],
        };
        let approval = self.space.plan_spawn_view(&request).expect("a spawn view");
        let child = ids.pid();
        let view = self.space.materialize_view(approval, child, ids).expect("materializes");
        self.take(view.changes);
        let result = self.space.plan_exit_result(child, ids).expect("a result");
        self.take(result.changes);
        let release = self.space.release_unmerged_children(me, &[child]).expect("releases");
        self.take(release.changes);
        let profile = ObjectMeta {
            oid: ids.oid(),
            owner: Owner::Profile("team-a".into()),
            kind: ObjectKind::Data,
            labels: BTreeSet::new(),
            ephemeral: false,
            released: false,
        };
        let host = ObjectMeta { oid: ids.oid(), owner: Owner::Host, ..profile.clone() };
        self.take(vec![
            ObjectChange::PutObject(profile.clone()),
            ObjectChange::PutObject(host.clone()),
            ObjectChange::PutHandle(Handle {
                holder: me,
                oid: profile.oid,
                rights: ObjectRights::READ,
                ephemeral: true,
            }),
        ]);
        Life { me, goal, notes, child, child_goal: view.goal, result: result.oid, profile, host }
    }

    /// The changes so far, as one change set, and the space they make.
    fn commit_set(&mut self) -> Vec<Change> {
        vec![Change::Objects(std::mem::take(&mut self.changes))]
    }
}

/// What [`Planned::a_life`] made.
struct Life {
    me: Pid,
    goal: Oid,
    notes: Oid,
    child: Pid,
    child_goal: Oid,
    result: Oid,
    profile: ObjectMeta,
    host: ObjectMeta,
}

async fn resolve_all(tickets: Vec<CommitTicket>) -> Vec<Result<(), StoreError>> {
    let mut out = Vec::with_capacity(tickets.len());
    for ticket in tickets {
        out.push(ticket.await.map(|_| ()));
    }
    out
}

#[tokio::test]
async fn data_survives_close_and_reopen() {
    let f = fixture();
    let mut ids = CountingIds::new(1);
    let parent = row(&mut ids);
    let running = {
        let mut r = row(&mut ids);
        r.apply(Event::Start { epoch: Epoch(1) }).expect("legal");
        r
    };
    let grant = host_grant(&mut ids, parent.pid, None);
    let mut memory = Planned::new();
    memory.root(parent.pid, &mut ids);
    let result = memory.space.plan_exit_result(parent.pid, &mut ids).expect("a result");
    memory.take(result.changes);
    let answer = Envelope::json(&serde_json::json!({"answer": 42}));
    let checkpoint = Envelope::bytes(vec![1, 2, 3]);
    {
        let store = open(&f.path);
        assert_eq!(store.begin_epoch(), Ok(Epoch(1)));
        let mut changes = vec![
            Change::PutProcess(parent.clone()),
            Change::PutProcess(running.clone()),
            Change::PutGrant(grant.clone()),
            Change::PutPayload { oid: result.oid, envelope: answer.clone() },
            Change::PutCheckpoint { pid: parent.pid, envelope: checkpoint.clone() },
        ];
        changes.extend(memory.commit_set());
        store.submit(changes).await.expect("commits");
    }
    let store = open(&f.path);
    assert_eq!(store.epoch(), Ok(Epoch(1)));
    assert_eq!(store.begin_epoch(), Ok(Epoch(2)));
    assert_eq!(store.process(parent.pid), Ok(Some(parent.clone())));
    assert_eq!(store.process(running.pid), Ok(Some(running.clone())));
    let all = ProcessQuery { include_terminal: true, ..ProcessQuery::default() };
    assert_eq!(store.processes(all), Ok(vec![parent.clone(), running]));
    assert_eq!(store.grants_of(parent.pid), Ok(vec![grant]));
    assert_eq!(store.object_space(), Ok(memory.space));
    assert_eq!(store.payload(result.oid), Ok(Some(answer)));
    assert_eq!(store.payload_oids(), Ok(BTreeSet::from([result.oid])));
    assert_eq!(store.checkpoint(parent.pid), Ok(Some(checkpoint)));
    assert!(store.is_writable());
}

#[tokio::test]
async fn close_commits_everything_already_submitted() {
    let f = fixture();
    let mut ids = CountingIds::new(2);
    let rows: Vec<ProcessRow> = (0..50).map(|_| row(&mut ids)).collect();
    let store = open(&f.path);
    let tickets: Vec<CommitTicket> =
        rows.iter().map(|r| store.submit(vec![Change::PutProcess(r.clone())])).collect();
    store.close();
    assert!(resolve_all(tickets).await.iter().all(Result::is_ok));
    assert!(!store.is_writable());
    assert_eq!(store.submit(vec![]).await, Err(StoreError::Closed));
    assert_eq!(store.begin_epoch(), Err(StoreError::Closed));
    // Reads keep working on a closed store.
    assert_eq!(store.process(rows[0].pid), Ok(Some(rows[0].clone())));
    store.close();
    drop(store);
    let reopened = open(&f.path);
    let all = reopened.processes(ProcessQuery::default()).expect("reads");
    assert_eq!(all, rows);
}

#[tokio::test]
async fn wal_and_synchronous_full_are_set() {
    let f = fixture();
    let store = open(&f.path);
    let pragmas = store.writer_pragmas().expect("the writer answers");
    assert_eq!(pragmas.journal_mode, "wal");
    assert_eq!(pragmas.synchronous, 2, "2 is FULL");
    assert!(!pragmas.foreign_keys);
    assert_eq!(pragmas.busy_timeout_ms, 5000);
    assert_eq!(pragmas.temp_store, 2, "2 is MEMORY: savepoint journals are not files");
    assert_eq!(pragmas.cache_size, -32 * 1024, "a group's dirty pages stay in a 32 MiB cache");
    assert_eq!(pragmas.wal_autocheckpoint, i64::from(limits::WAL_CHECKPOINT_PAGES));
    assert!(pragmas.stable_plans, "a cached statement is not prepared again on each use");
    // WAL is a property of the file: any other connection sees it too.
    let conn = rusqlite::Connection::open(&f.path).expect("opens");
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).expect("reads");
    assert_eq!(mode, "wal");
    let version: i64 = conn
        .query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0))
        .expect("reads");
    assert_eq!(version, i64::from(SCHEMA_VERSION));
}

/// The size of `path`'s WAL file in bytes (0 if there is none).
fn wal_bytes(path: &Path) -> u64 {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0)
}

#[tokio::test]
async fn the_wal_stays_bounded_while_the_store_writes_without_pause() {
    let f = fixture();
    let mut ids = CountingIds::new(40);
    let me = ids.pid();
    let store = open(&f.path);
    // A frame is a 4 KiB page and its 24-byte header; the WAL is reused from its start once
    // checkpointed, so its file is as large as it ever grew. One group here dirties at most
    // a few hundred pages.
    let bound = (u64::from(limits::WAL_CHECKPOINT_PAGES) + 1_000) * (4096 + 24);
    let body = "x".repeat(32 * 1024);
    let (mut written, mut seq) = (0u64, 0u64);
    // Three times what the WAL may hold: without checkpoints it would outgrow the bound.
    while written < 3 * bound {
        let tickets: Vec<CommitTicket> = (0..32)
            .map(|_| {
                seq += 1;
                let m = Message { body: body.clone(), ..message(&mut ids, me, Sender::Host, seq) };
                store.submit(vec![Change::PutMessage(m)])
            })
            .collect();
        assert!(resolve_all(tickets).await.iter().all(Result::is_ok));
        written += 32 * body.len() as u64;
        assert!(wal_bytes(&f.path) <= bound, "the WAL grew to {} bytes", wal_bytes(&f.path));
    }
    store.close();
    drop(store);
    let reopened = open(&f.path);
    assert_eq!(reopened.unread_count(me), Ok(seq));
}

#[tokio::test]
async fn concurrent_change_sets_share_one_transaction() {
    let f = fixture();
    let store = open(&f.path);
    let before = store.commits_so_far();
    let hold = store.hold_writer();
    // 8 threads × 25 change sets, all submitted before the writer may start a group.
    let tickets: Vec<(Pid, CommitTicket)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8u64)
            .map(|t| {
                let store = &store;
                s.spawn(move || {
                    let mut ids = CountingIds::new(100 + t);
                    (0..25)
                        .map(|_| {
                            let r = row(&mut ids);
                            (r.pid, store.submit(vec![Change::PutProcess(r)]))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("the submitter ran")).collect()
    });
    assert_eq!(tickets.len(), 200);
    drop(hold);
    let (pids, tickets): (Vec<Pid>, Vec<CommitTicket>) = tickets.into_iter().unzip();
    assert!(resolve_all(tickets).await.iter().all(Result::is_ok));
    let commits = store.commits_so_far() - before;
    assert!(commits < 200, "{commits} transactions for 200 change sets");
    assert_eq!(commits, 1, "everything queued before the writer started fits one group");
    for pid in pids {
        assert!(store.process(pid).expect("reads").is_some());
    }
}

#[tokio::test]
async fn submitting_never_waits_for_the_writer() {
    let f = fixture();
    let store = open(&f.path);
    let mut ids = CountingIds::new(7);
    let rows: Vec<ProcessRow> = (0..10_000).map(|_| row(&mut ids)).collect();
    let hold = store.hold_writer();
    // Far more change sets than the writer takes in one group, all queued while it is held:
    // every submit returns its ticket at once (the runtime submits under its memory lock).
    let tickets: Vec<CommitTicket> =
        rows.iter().map(|r| store.submit(vec![Change::PutProcess(r.clone())])).collect();
    assert_eq!(store.commits_so_far(), 0, "nothing committed while the writer is held");
    drop(hold);
    assert!(resolve_all(tickets).await.iter().all(Result::is_ok));
    assert_eq!(store.processes(ProcessQuery::default()).expect("reads").len(), rows.len());
}

#[tokio::test]
async fn a_group_never_exceeds_its_change_limit_nor_splits_a_change_set() {
    let f = fixture();
    let store = open(&f.path);
    let mut ids = CountingIds::new(3);
    let per_set = limits::GROUP_COMMIT_CHANGES_MAX / 2 - 48;
    let before = store.commits_so_far();
    let hold = store.hold_writer();
    let tickets: Vec<CommitTicket> = (0..3)
        .map(|_| store.submit((0..per_set).map(|_| Change::PutProcess(row(&mut ids))).collect()))
        .collect();
    drop(hold);
    assert!(resolve_all(tickets).await.iter().all(Result::is_ok));
    // Two sets fit the limit together; the third waits for the next group.
    assert_eq!(store.commits_so_far() - before, 2);
    assert_eq!(store.processes(ProcessQuery::default()).expect("reads").len(), 3 * per_set);
}

#[tokio::test]
async fn a_refused_change_set_does_not_affect_its_group() {
    let f = fixture();
    let store = open(&f.path);
    let mut ids = CountingIds::new(4);
    let holder = ids.pid();
    let root = host_grant(&mut ids, holder, None);
    store.submit(vec![Change::PutGrant(root.clone())]).await.expect("commits");
    let derived = host_grant(&mut ids, holder, Some(root.id));
    let bystander = row(&mut ids);
    let before = store.commits_so_far();
    let hold = store.hold_writer();
    let revoke = store.submit(vec![Change::RevokeGrant(root.id)]);
    let late = store.submit(vec![Change::PutGrant(derived.clone())]);
    let other = store.submit(vec![Change::PutProcess(bystander.clone())]);
    drop(hold);
    assert_eq!(revoke.await.expect("commits").revoked, vec![(root.id, holder)]);
    assert_eq!(late.await, Err(StoreError::SourceGrantRevoked { source_grant: root.id }));
    other.await.expect("commits");
    assert_eq!(store.commits_so_far() - before, 1, "one transaction for all three");
    assert_eq!(store.process(bystander.pid), Ok(Some(bystander)));
    assert_eq!(store.grants_of(holder), Ok(vec![Grant { live: false, ..root }]));
    assert!(store.is_writable());
}

#[tokio::test]
async fn a_refused_set_of_several_changes_leaves_nothing_and_the_group_commits_once() {
    let f = fixture();
    let store = open(&f.path);
    refused_set_in_a_group(&store, || store.hold_writer(), || store.commits_so_far()).await;
}

#[tokio::test]
async fn a_failed_commit_stops_every_later_write_until_reopen() {
    let f = fixture();
    let mut ids = CountingIds::new(5);
    let kept = row(&mut ids);
    let lost: Vec<ProcessRow> = (0..3).map(|_| row(&mut ids)).collect();
    {
        let store = open(&f.path);
        store.submit(vec![Change::PutProcess(kept.clone())]).await.expect("commits");
        store.inject_write_failure();
        let hold = store.hold_writer();
        let tickets: Vec<CommitTicket> =
            lost.iter().map(|r| store.submit(vec![Change::PutProcess(r.clone())])).collect();
        drop(hold);
        for result in resolve_all(tickets).await {
            assert!(matches!(result, Err(StoreError::Write(_))), "{result:?}");
        }
        assert!(!store.is_writable());
        let later = store.submit(vec![Change::PutProcess(row(&mut ids))]).await;
        assert!(
            matches!(&later, Err(StoreError::FailStopped { cause }) if cause.contains("injected")),
            "{later:?}"
        );
        assert!(matches!(store.begin_epoch(), Err(StoreError::FailStopped { .. })));
        // Reads still answer, and show only what committed.
        assert_eq!(store.process(kept.pid), Ok(Some(kept.clone())));
        for r in &lost {
            assert_eq!(store.process(r.pid), Ok(None));
        }
    }
    let reopened = open(&f.path);
    assert!(reopened.is_writable());
    assert_eq!(reopened.process(kept.pid), Ok(Some(kept)));
    assert_eq!(reopened.process(lost[0].pid), Ok(None));
    reopened.submit(vec![Change::PutProcess(lost[0].clone())]).await.expect("commits again");
}

#[tokio::test]
async fn the_read_only_view_reads_committed_data_and_refuses_writes() {
    let f = fixture();
    let mut ids = CountingIds::new(6);
    let first = row(&mut ids);
    let second = row(&mut ids);
    let owner = open(&f.path);
    owner.begin_epoch().expect("begins");
    owner.submit(vec![Change::PutProcess(first.clone())]).await.expect("commits");

    let view = SqliteStore::open_read_only(&f.path).expect("opens beside the owner");
    assert!(!view.is_writable());
    assert_eq!(view.process(first.pid), Ok(Some(first.clone())));
    assert_eq!(view.epoch(), Ok(Epoch(1)));
    assert_eq!(view.submit(vec![Change::PutProcess(second.clone())]).await, Err(StoreError::ReadOnly));
    assert_eq!(view.begin_epoch(), Err(StoreError::ReadOnly));
    assert_eq!(view.commits_so_far(), 0);

    // The view follows the owner's later commits.
    owner.submit(vec![Change::PutProcess(second.clone())]).await.expect("commits");
    assert_eq!(view.process(second.pid), Ok(Some(second.clone())));
    drop(view);

    // After the owner is gone, a view still opens and reads.
    drop(owner);
    let view = SqliteStore::open_read_only(&f.path).expect("opens after the owner");
    assert_eq!(view.processes(ProcessQuery::default()), Ok(vec![first, second]));
    assert_eq!(view.epoch(), Ok(Epoch(1)));

    let missing = f.path.with_file_name("missing.db");
    assert!(matches!(SqliteStore::open_read_only(&missing), Err(StoreError::Open { .. })));
    assert!(!missing.exists(), "a read-only open creates nothing");
}

#[tokio::test]
async fn a_newer_schema_is_refused() {
    let f = fixture();
    drop(open(&f.path));
    let conn = rusqlite::Connection::open(&f.path).expect("opens");
    conn.execute("UPDATE meta SET value = ?1 WHERE key = 'schema_version'", [i64::from(SCHEMA_VERSION) + 1])
        .expect("writes");
    drop(conn);
    let too_new = StoreError::SchemaTooNew { found: SCHEMA_VERSION + 1, supported: SCHEMA_VERSION };
    assert_eq!(SqliteStore::open(&f.path).err(), Some(too_new.clone()));
    assert_eq!(SqliteStore::open_read_only(&f.path).err(), Some(too_new));
}

#[tokio::test]
async fn a_file_that_is_not_a_store_is_refused() {
    let f = fixture();
    std::fs::write(&f.path, b"this is not a database, it is a text file of some length").expect("writes");
    assert!(matches!(SqliteStore::open(&f.path), Err(StoreError::Open { .. })));
}

#[tokio::test]
async fn rows_that_break_invariants_on_disk_read_back_as_corrupt() {
    let f = fixture();
    let mut ids = CountingIds::new(7);
    let r = row(&mut ids);
    let oid = ids.oid();
    let store = open(&f.path);
    let newer = Envelope { version: ENVELOPE_VERSION + 1, ..Envelope::bytes(vec![1]) };
    store
        .submit(vec![Change::PutProcess(r.clone()), Change::PutPayload { oid, envelope: newer }])
        .await
        .expect("commits");
    // Damage the row behind the store's back: terminal status without an outcome.
    let conn = rusqlite::Connection::open(&f.path).expect("opens");
    conn.execute("UPDATE processes SET status = 'exited' WHERE pid = ?1", [r.pid.to_string()])
        .expect("writes");
    assert!(matches!(store.process(r.pid), Err(StoreError::Corrupt(_))));
    let all = ProcessQuery { include_terminal: true, ..ProcessQuery::default() };
    assert!(matches!(store.processes(all), Err(StoreError::Corrupt(_))));
    conn.execute("UPDATE processes SET status = 'sleeping' WHERE pid = ?1", [r.pid.to_string()])
        .expect("writes");
    assert!(matches!(store.process(r.pid), Err(StoreError::Corrupt(_))));
    // A payload envelope from a newer build is refused, not guessed at, naming the object.
    let newer = store.payload(oid);
    assert!(matches!(&newer, Err(StoreError::Corrupt(m)) if m.contains(&oid.to_string())), "{newer:?}");
    assert_eq!(store.payload_oids(), Ok(BTreeSet::from([oid])));
}

#[tokio::test]
async fn dropping_a_store_with_commits_in_flight_does_not_panic() {
    let f = fixture();
    let mut ids = CountingIds::new(8);
    let store = open(&f.path);
    let tickets: Vec<CommitTicket> =
        (0..20).map(|_| store.submit(vec![Change::PutProcess(row(&mut ids))])).collect();
    drop(store);
    assert!(resolve_all(tickets).await.iter().all(Result::is_ok));
}

#[tokio::test]
async fn children_queries_read_through_the_parent_index() {
    let f = fixture();
    let mut ids = CountingIds::new(9);
    let store = open(&f.path);
    let parent = row(&mut ids);
    let mut changes = vec![Change::PutProcess(parent.clone())];
    for _ in 0..200 {
        let mut child = ProcessRow::launched(
            ids.pid(),
            Some(parent.pid),
            1,
            ImageId::from("worker"),
            "/work".to_string(),
            "goal".to_string(),
            Budget::default(),
        );
        child
            .apply(Event::Fail {
                kind: agentvisor_actors::kernel::status::FailureKind::Panic,
                message: "x".into(),
            })
            .expect("legal");
        changes.push(Change::PutProcess(child));
    }
    store.submit(changes).await.expect("commits");
    for (include_terminal, roots_only, parent) in
        [(true, false, Some(parent.pid)), (false, false, Some(parent.pid)), (true, true, None)]
    {
        let query = ProcessQuery { parent, roots_only, include_terminal, limit: Some(10), after: None };
        let plan = store.processes_plan(query).expect("explains").join("\n");
        assert!(
            plan.contains("USING INDEX processes_parent")
                || plan.contains("USING INDEX processes_live_parent"),
            "{plan}"
        );
        assert!(!plan.contains("TEMP B-TREE"), "no sort step: the index gives pid order\n{plan}");
    }
    let live = ProcessQuery { parent: Some(parent.pid), ..ProcessQuery::default() };
    let plan = store.processes_plan(live).expect("explains").join("\n");
    assert!(plan.contains("processes_live_parent"), "terminal children are not scanned\n{plan}");
    // The live rows of the whole tree (`ps`, a reopen's recovery) and a page of a listing.
    let plan = store.processes_plan(ProcessQuery::default()).expect("explains").join("\n");
    assert!(plan.contains("USING INDEX processes_live_parent"), "terminal rows are not scanned\n{plan}");
    let page = ProcessQuery {
        include_terminal: true,
        after: Some(parent.pid),
        limit: Some(100),
        ..ProcessQuery::default()
    };
    let plan = store.processes_plan(page).expect("explains").join("\n");
    assert!(plan.contains("(pid>?)"), "a page starts at its key, not at the first row\n{plan}");
    assert!(!plan.contains("TEMP B-TREE"), "no sort step\n{plan}");
}

#[tokio::test]
async fn the_file_holds_the_documented_encodings() {
    let f = fixture();
    let mut ids = CountingIds::new(10);
    let store = open(&f.path);
    let mut waiting = row(&mut ids);
    waiting.apply(Event::Start { epoch: Epoch(7) }).expect("legal");
    waiting
        .apply(Event::BeginWait(agentvisor_actors::kernel::status::WaitState::Tool { tool: "grep".into() }))
        .expect("legal");
    let grant = host_grant(&mut ids, waiting.pid, None);
    store
        .submit(vec![
            Change::PutProcess(waiting.clone()),
            Change::PutGrant(grant.clone()),
            Change::PutCheckpoint { pid: waiting.pid, envelope: Envelope::bytes(vec![9, 8, 7]) },
        ])
        .await
        .expect("commits");
    let conn = rusqlite::Connection::open(&f.path).expect("opens");
    let (pid, status, wait, generation, epoch, started): (String, String, String, i64, i64, i64) = conn
        .query_row(
            "SELECT pid, status, wait_state, state_generation, epoch, started FROM processes",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
        )
        .expect("one row");
    assert_eq!(pid, waiting.pid.to_string());
    assert_eq!(pid, pid.to_lowercase());
    assert_eq!(status, "waiting_event");
    assert_eq!(wait, r#"{"kind":"tool","tool":"grep"}"#);
    assert_eq!((generation, epoch, started), (2, 7, 1));
    let (rights, constraints, live): (i64, String, i64) = conn
        .query_row("SELECT rights, constraints, live FROM grants", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .expect("one grant");
    assert_eq!((rights, constraints.as_str(), live), (4, "{}", 1));
    let checkpoint: Vec<u8> =
        conn.query_row("SELECT envelope FROM checkpoints", [], |r| r.get(0)).expect("one checkpoint");
    // version 1, kind 1 = Bytes, body length 3, body.
    assert_eq!(checkpoint, vec![1, 1, 3, 9, 8, 7]);
    let epoch: i64 = conn
        .query_row("SELECT value FROM meta WHERE key = 'epoch'", [], |r| r.get(0))
        .expect("the epoch row");
    assert_eq!(epoch, 0);
}

// ---- object memory --------------------------------------------------------------------------

/// Every row of a table, as SQL values, in the order `order_by` gives.
fn table_rows(conn: &rusqlite::Connection, table: &str, order_by: &str) -> Vec<Vec<Value>> {
    let mut stmt = conn.prepare(&format!("SELECT * FROM {table} ORDER BY {order_by}")).expect("prepares");
    let width = stmt.column_count();
    stmt.query_map([], |r| (0..width).map(|i| r.get::<_, Value>(i)).collect())
        .expect("reads")
        .collect::<Result<_, _>>()
        .expect("reads")
}

fn text(s: impl ToString) -> Value {
    Value::Text(s.to_string())
}

/// A root with a goal, a labelled ephemeral object with a payload, a handle on a profile
/// object, and a spawned child that exited and was released at the root's end: every column
/// of every object memory table holds the documented encoding, and reads back as the space.
#[tokio::test]
async fn object_rows_hold_the_documented_encodings() {
    let f = fixture();
    let store = open(&f.path);
    let mut ids = CountingIds::new(38);
    let mut m = Planned::new();
    let Life { me, goal, notes, child, child_goal, result, profile, host } = m.a_life(&mut ids);
    let mut changes = m.commit_set();
    changes.push(Change::PutPayload { oid: notes, envelope: Envelope::json(&serde_json::json!(7)) });
    store.submit(changes).await.expect("commits");
    // The released child is history: read on demand, not at open.
    let mut read = store.object_space().expect("reads");
    assert_eq!(read, m.space.resident());
    assert!(read.process(child).is_none());
    read.adopt(store.object_memory_of(&[child], &[]).expect("reads"));
    assert_eq!(read, m.space);

    let conn = rusqlite::Connection::open(&f.path).expect("opens");
    let (no, yes) = (Value::Integer(0), Value::Integer(1));
    let pii = text(r#"["pii"]"#);
    assert_eq!(
        table_rows(&conn, "object_meta", "oid"),
        vec![
            vec![text(goal), text("process"), text(me), text("goal"), pii.clone(), no.clone(), no.clone()],
            vec![
                text(notes),
                text("process"),
                text(me),
                text("data"),
                text(r#"["pii","team:a"]"#),
                yes.clone(),
                no.clone(),
            ],
            vec![
                text(child_goal),
                text("process"),
                text(child),
                text("goal"),
                pii.clone(),
                no.clone(),
                yes.clone()
            ],
            vec![
                text(result),
                text("process_result"),
                text(child),
                text("process_result"),
                pii.clone(),
                no.clone(),
                yes.clone(),
            ],
            vec![
                text(profile.oid),
                text("profile"),
                text("team-a"),
                text("data"),
                text("[]"),
                no.clone(),
                no.clone()
            ],
            vec![text(host.oid), text("host"), Value::Null, text("data"), text("[]"), no.clone(), no.clone()],
        ]
    );
    // rights: read 1, write 2, delegate 4. The child's handles were revoked with its memory.
    assert_eq!(
        table_rows(&conn, "object_handles", "holder, oid"),
        vec![
            vec![text(me), text(goal), Value::Integer(7), no.clone()],
            vec![text(me), text(notes), Value::Integer(7), no.clone()],
            vec![text(me), text(profile.oid), Value::Integer(1), yes.clone()],
        ]
    );
    assert_eq!(
        table_rows(&conn, "object_memory", "pid"),
        vec![
            vec![
                text(me),
                text(goal),
                Value::Null,
                pii.clone(),
                text(r#"[{"name":"search","allowed_tools":["web"]}]"#),
                Value::Null,
            ],
            vec![
                text(child),
                text(child_goal),
                text(r#"["pii","team:a"]"#),
                pii,
                text("[]"),
                text("released")
            ],
        ]
    );
    assert_eq!(
        table_rows(&conn, "object_names", "pid, name"),
        vec![vec![text(me), text("goal"), text(goal)], vec![text(me), text("notes"), text(notes)],]
    );
    // The collected child keeps only its goal root; its names are gone with its memory.
    assert_eq!(
        table_rows(&conn, "object_roots", "pid, oid"),
        vec![vec![text(me), text(goal)], vec![text(me), text(notes)], vec![text(child), text(child_goal)]]
    );
    // postcard: version 1 (varint), kind 0 = Json (varint), body length 1, body "7".
    assert_eq!(
        table_rows(&conn, "object_payloads", "oid"),
        vec![vec![text(notes), Value::Blob(vec![1, 0, 1, b'7'])]]
    );
}

#[tokio::test]
async fn object_rows_that_do_not_decode_read_back_as_corrupt() {
    let f = fixture();
    let store = open(&f.path);
    let mut ids = CountingIds::new(39);
    let me = ids.pid();
    let mut m = Planned::new();
    let goal = m.root(me, &mut ids);
    let request = CreateRequest {
        holder: me,
        name: Some("n".into()),
        labels: labels(&["x"]),
        ephemeral: false,
        root: true,
    };
    let other = m.create(request, &mut ids);
    let mut changes = m.commit_set();
    changes.push(Change::PutPayload { oid: other, envelope: Envelope::bytes(vec![1]) });
    store.submit(changes).await.expect("commits");
    let conn = rusqlite::Connection::open(&f.path).expect("opens");
    for table in V3_OBJECT_TABLES {
        conn.execute_batch(&format!("CREATE TEMP TABLE intact_{table} AS SELECT * FROM {table}"))
            .expect("copies");
    }
    let (me, goal, other) = (me.to_string(), goal.to_string(), other.to_string());
    // (damage, what the error must name)
    let damages = [
        (format!("UPDATE object_meta SET owner_kind = 'martian' WHERE oid = '{other}'"), other.as_str()),
        (format!("UPDATE object_meta SET owner_ref = NULL WHERE oid = '{other}'"), &other),
        (format!("UPDATE object_meta SET owner_kind = 'host' WHERE oid = '{other}'"), &other),
        (format!("UPDATE object_meta SET kind = 'blob' WHERE oid = '{other}'"), &other),
        (format!("UPDATE object_meta SET labels = '{{\"not\": 1}}' WHERE oid = '{other}'"), &other),
        (format!("UPDATE object_meta SET labels = '[1]' WHERE oid = '{other}'"), &other),
        (format!("UPDATE object_meta SET ephemeral = 2 WHERE oid = '{other}'"), &other),
        (format!("UPDATE object_meta SET released = -1 WHERE oid = '{other}'"), &other),
        (format!("UPDATE object_meta SET oid = 'not-a-uuid' WHERE oid = '{other}'"), "not-a-uuid"),
        // Decodes, but a handle now points at a released object: the space's check refuses it.
        (format!("UPDATE object_meta SET released = 1 WHERE oid = '{other}'"), &other),
        (format!("UPDATE object_meta SET kind = 'data' WHERE oid = '{goal}'"), &goal),
        (format!("UPDATE object_handles SET rights = 64 WHERE oid = '{other}'"), &other),
        (format!("UPDATE object_handles SET rights = 0 WHERE oid = '{other}'"), &other),
        (format!("UPDATE object_handles SET ephemeral = 1 WHERE oid = '{other}'"), &other),
        (format!("UPDATE object_handles SET holder = 'nobody' WHERE oid = '{other}'"), "nobody"),
        (format!("UPDATE object_memory SET goal = NULL WHERE pid = '{me}'"), &me),
        (format!("UPDATE object_memory SET goal = NULL, clearance = '[]' WHERE pid = '{me}'"), &me),
        (format!("UPDATE object_memory SET clearance = '[]' WHERE pid = '{me}'"), &me),
        (format!("UPDATE object_memory SET context = 'pii' WHERE pid = '{me}'"), &me),
        (format!("UPDATE object_memory SET skills = '[{{}}]' WHERE pid = '{me}'"), &me),
        (format!("UPDATE object_memory SET collection = 'lost' WHERE pid = '{me}'"), &me),
        (format!("UPDATE object_memory SET collection = 'merged' WHERE pid = '{me}'"), &me),
        (format!("DELETE FROM object_roots WHERE oid = '{goal}'"), &goal),
        (format!("UPDATE object_names SET oid = 'nowhere' WHERE pid = '{me}'"), "nowhere"),
        // A root row moved off its memory: that memory lacks its goal root.
        (format!("UPDATE object_roots SET pid = 'x' WHERE oid = '{goal}'"), &goal),
    ];
    for (damage, named) in &damages {
        conn.execute_batch(damage).expect("damages");
        let read = store.object_space();
        assert!(
            matches!(&read, Err(StoreError::Corrupt(message)) if message.contains(named)),
            "{damage}: {read:?}"
        );
        for table in V3_OBJECT_TABLES {
            conn.execute_batch(&format!(
                "DELETE FROM {table}; INSERT INTO {table} SELECT * FROM intact_{table};"
            ))
            .expect("undoes");
        }
        assert!(store.object_space().is_ok(), "{damage} undone");
    }
    conn.execute_batch(&format!("UPDATE object_payloads SET envelope = x'ff' WHERE oid = '{other}'"))
        .expect("damages");
    let read = store.payload(other.parse().expect("an oid"));
    assert!(matches!(&read, Err(StoreError::Corrupt(m)) if m.contains(&other)), "{read:?}");
    conn.execute_batch(&format!("UPDATE object_payloads SET oid = 'bad' WHERE oid = '{other}'"))
        .expect("damages");
    assert!(matches!(store.payload_oids(), Err(StoreError::Corrupt(_))));
    assert!(store.is_writable());
}

// ---- mailboxes ------------------------------------------------------------------------------

fn all_of(limit: usize) -> MailboxQuery {
    MailboxQuery { filter: MessageFilter::default(), include_acked: true, limit }
}

fn schema_version(path: &Path) -> i64 {
    let conn = rusqlite::Connection::open(path).expect("opens");
    conn.query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0)).expect("reads")
}

fn has_table(path: &Path, name: &str) -> bool {
    let conn = rusqlite::Connection::open(path).expect("opens");
    conn.query_row("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", [name], |r| {
        r.get::<_, i64>(0)
    })
    .expect("reads")
        == 1
}

fn message_indexes(path: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(path).expect("opens");
    let mut stmt = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'messages' ORDER BY name",
        )
        .expect("prepares");
    stmt.query_map([], |r| r.get(0)).expect("reads").collect::<Result<_, _>>().expect("reads")
}

#[tokio::test]
async fn messages_survive_reopen() {
    let f = fixture();
    let mut ids = CountingIds::new(30);
    let (me, parent) = (ids.pid(), ids.pid());
    let first = Message {
        channel: Some("ops".into()),
        payload: Some(serde_json::json!({"k": [1, 2]})),
        labels: vec!["secret".into()],
        ..message(&mut ids, me, Sender::Process(parent), 5)
    };
    let second = Message { reply_to: Some(first.message_id), ..message(&mut ids, me, Sender::Host, 9) };
    {
        let store = open(&f.path);
        put_messages(&store, &[first.clone(), second.clone()]).await;
        store
            .submit(vec![Change::AckMessages { recipient: me, ids: vec![first.message_id] }])
            .await
            .expect("commits");
    }
    let store = open(&f.path);
    let acked_first = Message { acked: true, ..first.clone() };
    assert_eq!(store.message(first.message_id), Ok(Some(acked_first.clone())));
    let page = store.mailbox(me, &all_of(10)).expect("reads");
    assert_eq!(page.messages, vec![acked_first, second.clone()]);
    assert_eq!(store.unread_count(me), Ok(1));
    assert_eq!(store.message_seq_max(), Ok(9));
    // The read-only view reads them too.
    let view = SqliteStore::open_read_only(&f.path).expect("opens");
    assert_eq!(view.message(second.message_id), Ok(Some(second)));
    assert_eq!(view.unread_count(me), Ok(1));
}

#[tokio::test]
async fn a_message_is_written_once() {
    let f = fixture();
    let store = open(&f.path);
    let mut ids = CountingIds::new(31);
    let me = ids.pid();
    // A float that serde_json's default parser reads back one bit off: a redelivery is judged
    // on what is stored, not on what decoding makes of it.
    let m = Message {
        payload: Some(serde_json::json!({"x": 985.6906946328695})),
        ..message(&mut ids, me, Sender::Host, 1)
    };
    store.submit(vec![Change::PutMessage(m.clone())]).await.expect("commits");
    store
        .submit(vec![Change::AckMessages { recipient: me, ids: vec![m.message_id] }])
        .await
        .expect("commits");
    // The same message again (a redelivery) changes nothing: it stays acknowledged.
    store.submit(vec![Change::PutMessage(m.clone())]).await.expect("a redelivery is not an error");
    let stored = store.message(m.message_id).expect("reads").expect("stored");
    assert!(stored.acked);
    assert_eq!(Message { payload: m.payload.clone(), ..stored }, Message { acked: true, ..m.clone() });
    assert_eq!(store.unread_count(me), Ok(0));
    // A different message under the same id is refused, with its whole change set only.
    let bystander = message(&mut ids, me, Sender::Host, 3);
    let hold = store.hold_writer();
    let clash = store.submit(vec![
        Change::PutMessage(message(&mut ids, me, Sender::Host, 2)),
        Change::PutMessage(Message { body: "rewritten".into(), ..m.clone() }),
    ]);
    let other = store.submit(vec![Change::PutMessage(bystander.clone())]);
    drop(hold);
    assert!(matches!(clash.await, Err(StoreError::Corrupt(_))));
    other.await.expect("commits");
    let stored = store.message(m.message_id).expect("reads").expect("stored");
    assert_eq!((stored.body.as_str(), stored.acked), (m.body.as_str(), true));
    assert_eq!(store.message(bystander.message_id), Ok(Some(bystander)));
    assert_eq!(store.message_seq_max(), Ok(3), "the refused set's message (seq 2) is not there either");
    assert_eq!(store.mailbox(me, &all_of(10)).map(|p| p.matched), Ok(2));
    assert!(store.is_writable());
}

#[tokio::test]
async fn a_schema_1_file_is_migrated_on_open() {
    let f = fixture();
    let mut ids = CountingIds::new(32);
    let kept = row(&mut ids);
    {
        let store = open(&f.path);
        store.submit(vec![Change::PutProcess(kept.clone())]).await.expect("commits");
        store.begin_epoch().expect("begins");
    }
    // What the schema-1 build wrote: no messages table, the old objects table.
    let full_indexes = message_indexes(&f.path);
    downgrade(&f.path, 1);
    assert!(!has_table(&f.path, "messages"));
    assert_eq!(schema_version(&f.path), 1);

    // A read-only view reads a schema-1 file as it is: no mailboxes or object memory yet,
    // nothing migrated.
    {
        let view = SqliteStore::open_read_only(&f.path).expect("opens a schema-1 file");
        assert_eq!(view.process(kept.pid), Ok(Some(kept.clone())));
        assert_eq!(view.mailbox(kept.pid, &all_of(10)).map(|p| p.matched), Ok(0));
        assert_eq!(view.message(message_id(&mut ids)), Ok(None));
        assert_eq!(view.unread_count(kept.pid), Ok(0));
        assert_eq!(view.message_seq_max(), Ok(0));
        assert_eq!(view.object_space(), Ok(ObjectSpace::new()));
        assert_eq!(view.payload_oids(), Ok(BTreeSet::new()));
    }
    assert_eq!(schema_version(&f.path), 1);

    let store = open(&f.path);
    assert_eq!(schema_version(&f.path), i64::from(SCHEMA_VERSION));
    assert_eq!(SCHEMA_VERSION, 7);
    assert_eq!(message_indexes(&f.path), full_indexes, "the same indexes as a new file");
    let conn = rusqlite::Connection::open(&f.path).expect("opens");
    for index in ["object_memory_uncollected", "object_meta_unreleased", "object_meta_owner"] {
        let found: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?1",
                [index],
                |r| r.get(0),
            )
            .expect("reads the schema");
        assert_eq!(found, 1, "schema 6 adds {index}");
    }
    drop(conn);
    assert!(!has_table(&f.path, "objects"));
    assert_eq!(store.object_space(), Ok(ObjectSpace::new()));
    assert_eq!(store.process(kept.pid), Ok(Some(kept.clone())));
    assert_eq!(store.epoch(), Ok(Epoch(1)));
    let m = Message { channel: Some("ops".into()), ..message(&mut ids, kept.pid, Sender::Host, 1) };
    store.submit(vec![Change::PutMessage(m.clone())]).await.expect("commits");
    let ops = MailboxQuery {
        filter: MessageFilter { channel: Some("ops".into()), ..MessageFilter::default() },
        include_acked: false,
        limit: 10,
    };
    assert_eq!(store.mailbox(kept.pid, &ops).map(|p| p.messages), Ok(vec![m]));
    drop(store);
    // Opening a migrated file again changes nothing.
    let store = open(&f.path);
    assert_eq!(schema_version(&f.path), i64::from(SCHEMA_VERSION));
    assert_eq!(store.message_seq_max(), Ok(1));
}

#[tokio::test]
async fn a_failed_migration_leaves_the_file_at_schema_1() {
    let f = fixture();
    drop(open(&f.path));
    downgrade(&f.path, 1);
    {
        let conn = rusqlite::Connection::open(&f.path).expect("opens");
        // A table in the way of the last index the migration to schema 2 creates.
        conn.execute_batch("CREATE TABLE messages_seq (x INTEGER);").expect("writes");
    }
    assert!(matches!(SqliteStore::open(&f.path), Err(StoreError::Open { .. })));
    assert_eq!(schema_version(&f.path), 1);
    assert!(!has_table(&f.path, "messages"), "the table created before the failure was rolled back");
    assert!(message_indexes(&f.path).is_empty());
    assert!(has_table(&f.path, "objects"));
}

/// The object memory tables and indexes, as `sqlite_master` has their SQL.
fn object_schema(path: &Path) -> Vec<(String, String)> {
    let conn = rusqlite::Connection::open(path).expect("opens");
    let mut stmt = conn
        .prepare(
            "SELECT name, sql FROM sqlite_master WHERE name LIKE 'object%' AND sql IS NOT NULL ORDER BY name",
        )
        .expect("prepares");
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("reads")
        .collect::<Result<_, _>>()
        .expect("reads")
}

/// Writes the rows a schema-2 build wrote for results: `process_result` objects owned by
/// their process's result, one with a JSON payload and one without.
fn put_legacy_results(path: &Path, with_payload: (Oid, Pid, &Envelope), without: (Oid, Pid)) {
    let conn = rusqlite::Connection::open(path).expect("opens");
    let insert = "INSERT INTO objects (oid, owner_kind, owner_pid, kind, payload) \
                  VALUES (?1, 'process_result', ?2, 'process_result', ?3)";
    let (oid, pid, envelope) = with_payload;
    conn.execute(insert, rusqlite::params![oid.to_string(), pid.to_string(), envelope.encode()])
        .expect("writes");
    let (oid, pid) = without;
    conn.execute(insert, rusqlite::params![oid.to_string(), pid.to_string(), Value::Null]).expect("writes");
}

fn legacy_result(oid: Oid, pid: Pid) -> ObjectMeta {
    ObjectMeta {
        oid,
        owner: Owner::ProcessResult(pid),
        kind: ObjectKind::ProcessResult,
        labels: BTreeSet::new(),
        ephemeral: false,
        released: false,
    }
}

#[tokio::test]
async fn a_schema_2_file_with_results_is_migrated_on_open() {
    let f = fixture();
    let fresh = fixture();
    drop(open(&fresh.path));
    let mut ids = CountingIds::new(40);
    let kept = row(&mut ids);
    let m = message(&mut ids, kept.pid, Sender::Host, 1);
    {
        let store = open(&f.path);
        store
            .submit(vec![Change::PutProcess(kept.clone()), Change::PutMessage(m.clone())])
            .await
            .expect("commits");
    }
    downgrade(&f.path, 2);
    let (answered, silent) = ((ids.oid(), ids.pid()), (ids.oid(), ids.pid()));
    let answer = Envelope::json(&serde_json::json!({"answer": 42}));
    put_legacy_results(&f.path, (answered.0, answered.1, &answer), silent);

    // A read-only view reads a schema-2 file as it is: its results are not object memory yet.
    {
        let view = SqliteStore::open_read_only(&f.path).expect("opens a schema-2 file");
        assert_eq!(view.object_space(), Ok(ObjectSpace::new()));
        assert_eq!(view.payload(answered.0), Ok(None));
        assert_eq!(view.message(m.message_id), Ok(Some(m.clone())));
    }
    assert_eq!(schema_version(&f.path), 2);

    let store = open(&f.path);
    assert_eq!(schema_version(&f.path), i64::from(SCHEMA_VERSION));
    assert!(!has_table(&f.path, "objects"), "the old table is dropped");
    assert_eq!(object_schema(&f.path), object_schema(&fresh.path), "the same tables as a new file");
    let space = store.object_space().expect("reads");
    let objects: Vec<ObjectMeta> = space.objects().cloned().collect();
    assert_eq!(objects, vec![legacy_result(answered.0, answered.1), legacy_result(silent.0, silent.1)]);
    assert_eq!(space.result_of(answered.1), Some(answered.0));
    assert_eq!((space.handles().count(), space.processes().count()), (0, 0));
    assert_eq!(store.payload(answered.0), Ok(Some(answer.clone())));
    assert_eq!(store.payload(silent.0), Ok(None));
    assert_eq!(store.payload_oids(), Ok(BTreeSet::from([answered.0])));
    assert_eq!(store.process(kept.pid), Ok(Some(kept)));
    assert_eq!(store.message(m.message_id), Ok(Some(m)));
    // The migrated memory carries on: a release is committed and read back.
    store
        .submit(vec![Change::Objects(vec![ObjectChange::ReleaseObject { oid: answered.0 }])])
        .await
        .expect("commits");
    drop(store);
    let store = open(&f.path);
    assert_eq!(schema_version(&f.path), i64::from(SCHEMA_VERSION));
    assert_eq!(store.object_space().expect("reads").object(answered.0), None, "history, not read at open");
    let space = store.object_memory_of(&[], &[answered.0]).expect("reads");
    assert_eq!(space.object(answered.0).map(|o| o.released), Some(true));
    assert_eq!(store.payload_oids(), Ok(BTreeSet::new()));
}

/// Whether `table` of the file at `path` is a `WITHOUT ROWID` table.
fn without_rowid(path: &Path, table: &str) -> bool {
    let conn = rusqlite::Connection::open(path).expect("opens");
    let sql: String = conn
        .query_row("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1", [table], |r| r.get(0))
        .expect("the table exists");
    sql.trim_end().ends_with("WITHOUT ROWID")
}

/// A schema-6 file holding object memory (a root, its objects, a child that exited and was
/// released, a handle on a profile object, a payload) is rebuilt `WITHOUT ROWID` on open:
/// every row and index as before, the same tables as a new file, read back as the space.
#[tokio::test]
async fn a_schema_6_file_with_object_memory_is_migrated_on_open() {
    let f = fixture();
    let fresh = fixture();
    drop(open(&fresh.path));
    let mut ids = CountingIds::new(42);
    let mut m = Planned::new();
    let Life { notes, child, profile, .. } = m.a_life(&mut ids);
    let mut changes = m.commit_set();
    let payload = Envelope::json(&serde_json::json!({"notes": 1}));
    changes.push(Change::PutPayload { oid: notes, envelope: payload.clone() });
    {
        let store = open(&f.path);
        store.submit(changes).await.expect("commits");
    }
    let rows_of = |path: &Path| {
        let conn = rusqlite::Connection::open(path).expect("opens");
        V7_REBUILT_TABLES.map(|table| table_rows(&conn, table, "1, 2"))
    };
    let rows = rows_of(&f.path);
    downgrade_to_6(&f.path);
    assert_eq!(schema_version(&f.path), 6);
    assert!(V7_REBUILT_TABLES.iter().all(|table| !without_rowid(&f.path, table)), "rowid tables");
    assert_eq!(rows_of(&f.path), rows, "the schema-6 file holds the same rows");

    let store = open(&f.path);
    assert_eq!(schema_version(&f.path), i64::from(SCHEMA_VERSION));
    assert!(V7_REBUILT_TABLES.iter().all(|table| without_rowid(&f.path, table)), "rebuilt");
    assert!(!without_rowid(&f.path, "object_payloads"), "payloads keep their rowid table");
    assert_eq!(object_schema(&f.path), object_schema(&fresh.path), "the same tables as a new file");
    assert_eq!(rows_of(&f.path), rows, "every row carried over");
    let mut read = store.object_space().expect("reads");
    assert_eq!(read, m.space.resident());
    read.adopt(store.object_memory_of(&[child], &[]).expect("reads"));
    assert_eq!(read, m.space);
    assert_eq!(store.payload(notes), Ok(Some(payload)));
    // The migrated memory carries on: a release is committed and read back.
    store
        .submit(vec![Change::Objects(vec![ObjectChange::ReleaseObject { oid: profile.oid }])])
        .await
        .expect("commits");
    drop(store);
    let store = open(&f.path);
    assert_eq!(schema_version(&f.path), i64::from(SCHEMA_VERSION));
    let space = store.object_memory_of(&[], &[profile.oid]).expect("reads");
    assert_eq!(space.object(profile.oid).map(|o| o.released), Some(true));
}

#[tokio::test]
async fn a_failed_migration_leaves_the_file_at_schema_2_with_its_objects() {
    let f = fixture();
    drop(open(&f.path));
    downgrade(&f.path, 2);
    let mut ids = CountingIds::new(41);
    let answer = Envelope::json(&serde_json::json!(1));
    let (answered, silent) = ((ids.oid(), ids.pid()), (ids.oid(), ids.pid()));
    put_legacy_results(&f.path, (answered.0, answered.1, &answer), silent);
    {
        let conn = rusqlite::Connection::open(&f.path).expect("opens");
        // A table of the same name in the way: the copy into it fails.
        conn.execute_batch("CREATE TABLE object_meta (x INTEGER);").expect("writes");
    }
    assert!(matches!(SqliteStore::open(&f.path), Err(StoreError::Open { .. })));
    assert_eq!(schema_version(&f.path), 2);
    assert!(!has_table(&f.path, "object_handles"), "the tables created before the failure were rolled back");
    let conn = rusqlite::Connection::open(&f.path).expect("opens");
    let rows: i64 = conn.query_row("SELECT COUNT(*) FROM objects", [], |r| r.get(0)).expect("reads");
    assert_eq!(rows, 2, "the old table and its rows are still there");
}

#[tokio::test]
async fn filtered_mailbox_reads_are_driven_by_an_index() {
    let f = fixture();
    let store = open(&f.path);
    let mut ids = CountingIds::new(33);
    let (me, child) = (ids.pid(), ids.pid());
    let anchor = message(&mut ids, me, Sender::Host, 1);
    let mut changes = vec![Change::PutMessage(anchor.clone())];
    for seq in 2..300 {
        changes.push(Change::PutMessage(Message {
            channel: Some(format!("ch{}", seq % 7)),
            correlation_id: Some(format!("c{}", seq % 11)),
            ..message(&mut ids, me, Sender::Process(child), seq)
        }));
    }
    store.submit(changes).await.expect("commits");
    let q = |filter: MessageFilter, include_acked| MailboxQuery { filter, include_acked, limit: 20 };
    let channel = || MessageFilter { channel: Some("ch3".into()), ..MessageFilter::default() };
    let correlation = || MessageFilter { correlation_id: Some("c4".into()), ..MessageFilter::default() };
    let sender = || MessageFilter { sender: Some(Sender::Process(child)), ..MessageFilter::default() };
    let host = || MessageFilter { sender: Some(Sender::Host), ..MessageFilter::default() };
    let reply = || MessageFilter { reply_to: Some(anchor.message_id), ..MessageFilter::default() };
    let ids_only =
        || MessageFilter { message_ids: Some(vec![anchor.message_id]), ..MessageFilter::default() };
    let kind = || MessageFilter { kind: Some(MessageKind::Interrupt), ..MessageFilter::default() };
    // (query, the index that must drive it, whether it reads in seq order without sorting)
    let cases = [
        (q(channel(), false), "messages_channel", true),
        (q(channel(), true), "messages_channel", true),
        (q(correlation(), false), "messages_correlation", true),
        (
            q(MessageFilter { channel: Some("ch3".into()), ..correlation() }, false),
            "messages_correlation",
            true,
        ),
        (q(MessageFilter { kind: Some(MessageKind::Normal), ..channel() }, true), "messages_channel", true),
        (
            q(MessageFilter { sender: Some(Sender::Process(child)), ..channel() }, false),
            "messages_channel",
            true,
        ),
        (q(sender(), true), "messages_sender", true),
        (q(host(), true), "messages_sender", true),
        (q(sender(), false), "messages_unread", true),
        (q(kind(), false), "messages_unread", true),
        (q(MessageFilter::default(), false), "messages_unread", true),
        (q(reply(), false), "messages_reply_to", false),
        (q(MessageFilter { channel: Some("ch3".into()), ..reply() }, true), "messages_reply_to", false),
        (q(ids_only(), false), "sqlite_autoindex_messages_1", true),
        (
            q(MessageFilter { channel: Some("ch3".into()), ..ids_only() }, true),
            "sqlite_autoindex_messages_1",
            true,
        ),
        // Everything, acknowledged included: the whole mailbox matches, sorted by seq.
        (q(MessageFilter::default(), true), "messages_unread", false),
    ];
    for (query, index, ordered) in cases {
        let plan = store.mailbox_plan(me, &query).expect("explains").join("\n");
        assert!(
            plan.contains(&format!("USING INDEX {index}"))
                || plan.contains(&format!("USING COVERING INDEX {index}")),
            "{query:?} should use {index}:\n{plan}"
        );
        assert!(!plan.contains("SCAN"), "{query:?} scans:\n{plan}");
        if ordered {
            assert!(!plan.contains("TEMP B-TREE"), "{query:?} sorts:\n{plan}");
        }
        // And the read itself agrees with the reference semantics.
        let mut want: Vec<Message> = store
            .mailbox(me, &all_of(1000))
            .expect("reads")
            .messages
            .into_iter()
            .filter(|m| (query.include_acked || !m.acked) && query.filter.matches(m))
            .collect();
        let page = store.mailbox(me, &query).expect("reads");
        assert_eq!(page.matched, want.len() as u64, "{query:?}");
        want.truncate(query.limit);
        assert_eq!(page.messages, want, "{query:?}");
    }
    let counters = store.message_counters_plan().expect("explains").join("\n");
    assert!(counters.contains("COVERING INDEX messages_unread"), "{counters}");
    assert!(counters.contains("COVERING INDEX messages_seq"), "{counters}");
    assert!(!counters.contains("SCAN"), "{counters}");
}

#[tokio::test]
async fn message_rows_that_do_not_decode_read_back_as_corrupt() {
    let f = fixture();
    let store = open(&f.path);
    let mut ids = CountingIds::new(34);
    let me = ids.pid();
    let m = message(&mut ids, me, Sender::Host, 1);
    store.submit(vec![Change::PutMessage(m.clone())]).await.expect("commits");
    let conn = rusqlite::Connection::open(&f.path).expect("opens");
    let id = m.message_id.to_string();
    conn.execute_batch("CREATE TEMP TABLE intact AS SELECT * FROM messages").expect("copies");
    for damage in [
        "UPDATE messages SET sender_kind = 'martian' WHERE message_id = ?1",
        "UPDATE messages SET sender_pid = recipient WHERE message_id = ?1",
        "UPDATE messages SET sender_kind = 'process' WHERE message_id = ?1",
        "UPDATE messages SET kind = 'loud' WHERE message_id = ?1",
        "UPDATE messages SET acked = 2 WHERE message_id = ?1",
        "UPDATE messages SET labels = '{\"not\": \"an array\"}' WHERE message_id = ?1",
        "UPDATE messages SET labels = '[1, 2]' WHERE message_id = ?1",
        "UPDATE messages SET payload = 'not json' WHERE message_id = ?1",
        "UPDATE messages SET reply_to = 'not-a-uuid' WHERE message_id = ?1",
        "UPDATE messages SET seq = -5 WHERE message_id = ?1",
        "UPDATE messages SET body = x'00ff' WHERE message_id = ?1",
        "UPDATE messages SET recipient = 'nobody' WHERE message_id = ?1",
    ] {
        conn.execute(damage, [&id]).expect("damages");
        let by_id = store.message(m.message_id);
        assert!(matches!(by_id, Err(StoreError::Corrupt(_))), "{damage}: {by_id:?}");
        if !damage.contains("recipient") && !damage.contains("acked") {
            let page = store.mailbox(me, &all_of(10));
            assert!(matches!(page, Err(StoreError::Corrupt(_))), "{damage}: {page:?}");
        }
        conn.execute_batch("DELETE FROM messages; INSERT INTO messages SELECT * FROM intact")
            .expect("undoes");
        assert_eq!(store.message(m.message_id), Ok(Some(m.clone())), "{damage} undone");
    }
    // A re-put over a damaged row is refused, not a failure of the store.
    conn.execute("UPDATE messages SET kind = 'loud' WHERE message_id = ?1", [&id]).expect("damages");
    assert!(matches!(store.submit(vec![Change::PutMessage(m.clone())]).await, Err(StoreError::Corrupt(_))));
    conn.execute("UPDATE messages SET body = x'00ff' WHERE message_id = ?1", [&id]).expect("damages");
    assert!(matches!(store.submit(vec![Change::PutMessage(m)]).await, Err(StoreError::Corrupt(_))));
    assert!(store.is_writable());
}

#[tokio::test]
async fn message_rows_hold_the_documented_encodings() {
    let f = fixture();
    let store = open(&f.path);
    let mut ids = CountingIds::new(35);
    let (me, parent) = (ids.pid(), ids.pid());
    let first = Message {
        kind: MessageKind::Interrupt,
        channel: Some("ops".into()),
        correlation_id: Some("job-1".into()),
        payload: Some(serde_json::json!({"b": 1, "a": [true, null]})),
        labels: vec!["secret".into(), "team:a".into()],
        ..message(&mut ids, me, Sender::Process(parent), 7)
    };
    let reply = Message { reply_to: Some(first.message_id), ..message(&mut ids, me, Sender::Host, 8) };
    put_messages(&store, &[first.clone(), reply.clone()]).await;
    let conn = rusqlite::Connection::open(&f.path).expect("opens");
    let read = |id: String| -> Vec<Value> {
        conn.query_row(
            "SELECT message_id, recipient, seq, sender_kind, sender_pid, kind, channel, correlation_id, \
             reply_to, body, payload, labels, acked FROM messages WHERE message_id = ?1",
            [id],
            |r| (0..13).map(|i| r.get::<_, Value>(i)).collect(),
        )
        .expect("one row")
    };
    let text = |s: &str| Value::Text(s.to_string());
    assert_eq!(
        read(first.message_id.to_string()),
        vec![
            text(&first.message_id.to_string()),
            text(&me.to_string()),
            Value::Integer(7),
            text("process"),
            text(&parent.to_string()),
            text("interrupt"),
            text("ops"),
            text("job-1"),
            Value::Null,
            text("message 7"),
            text(r#"{"a":[true,null],"b":1}"#),
            text(r#"["secret","team:a"]"#),
            Value::Integer(0),
        ]
    );
    assert_eq!(first.message_id.to_string(), first.message_id.to_string().to_lowercase());
    let got = read(reply.message_id.to_string());
    assert_eq!(got[3..6], [text("host"), Value::Null, text("normal")]);
    assert_eq!(
        got[8..13],
        [text(&first.message_id.to_string()), text("message 8"), Value::Null, text("[]"), Value::Integer(0)]
    );
}

/// Payload floats come back bit-exact: the workspace enables `serde_json`'s `float_roundtrip`
/// (its default parser misses the last bit of about one float in ten, e.g. 985.6906946328695
/// read back as 985.6906946328696).
#[tokio::test]
async fn payload_floats_round_trip_exactly() {
    let f = fixture();
    let store = open(&f.path);
    let mut ids = CountingIds::new(36);
    let me = ids.pid();
    let floats = [985.6906946328695, 212.91890726713459, 1.0715660391465826e-75, 0.1, 1e300];
    let m = Message {
        payload: Some(serde_json::json!({ "floats": floats })),
        ..message(&mut ids, me, Sender::Host, 1)
    };
    store.submit(vec![Change::PutMessage(m.clone())]).await.expect("commits");
    assert_eq!(store.message(m.message_id), Ok(Some(m)));
}

#[tokio::test]
async fn a_schema_3_file_gets_call_keys_on_open_and_keeps_the_first_answer() {
    use agentvisor_actors::store::{CallKey, KeyKind};
    let f = fixture();
    drop(open(&f.path));
    downgrade(&f.path, 3);
    let key = CallKey { caller: "host".into(), kind: KeyKind::Message, key: "k1".into() };
    {
        let view = SqliteStore::open_read_only(&f.path).expect("opens a schema-3 file");
        assert_eq!(view.keyed(&key), Ok(None), "a view reads an older file as it is");
    }
    assert_eq!(schema_version(&f.path), 3);
    let store = open(&f.path);
    assert_eq!(schema_version(&f.path), i64::from(SCHEMA_VERSION));
    assert!(has_table(&f.path, "call_keys"));
    let first = serde_json::json!({"message_id": "first"});
    store.submit(vec![Change::PutKeyed { key: key.clone(), answer: first.clone() }]).await.expect("commits");
    let second = serde_json::json!({"message_id": "second"});
    store.submit(vec![Change::PutKeyed { key: key.clone(), answer: second }]).await.expect("commits");
    assert_eq!(store.keyed(&key), Ok(Some(first.clone())), "a key keeps its first answer");
    drop(store);
    let conn = rusqlite::Connection::open(&f.path).expect("opens");
    let row: (String, String, String, String) = conn
        .query_row("SELECT caller, kind, call_key, answer FROM call_keys", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .expect("one row");
    assert_eq!(
        row,
        ("host".into(), "message".into(), "k1".into(), first.to_string()),
        "the documented encoding"
    );
}

#[tokio::test]
async fn a_schema_4_file_gets_the_restart_column_and_a_view_reads_it_as_it_is() {
    use agentvisor_actors::kernel::restart::{RestartPolicy, RestartState};
    let f = fixture();
    let mut ids = CountingIds::new(40);
    let kept = row(&mut ids);
    {
        let store = open(&f.path);
        store.submit(vec![Change::PutProcess(kept.clone())]).await.expect("commits");
    }
    downgrade(&f.path, 4);
    assert_eq!(schema_version(&f.path), 4);
    {
        let view = SqliteStore::open_read_only(&f.path).expect("opens a schema-4 file");
        let read = view.process(kept.pid).expect("reads").expect("the row");
        assert_eq!(read, kept, "a row without the column reads with the default restart state");
        assert_eq!(view.processes(ProcessQuery::default()).expect("reads").len(), 1);
    }
    assert_eq!(schema_version(&f.path), 4, "a view never migrates");
    let store = open(&f.path);
    assert_eq!(schema_version(&f.path), i64::from(SCHEMA_VERSION));
    let mut restartable = kept.clone();
    restartable.restart = RestartState { policy: RestartPolicy::Permanent, ..RestartState::default() };
    store.submit(vec![Change::PutProcess(restartable.clone())]).await.expect("commits");
    assert_eq!(store.process(kept.pid), Ok(Some(restartable)), "the restart state round-trips");
}
