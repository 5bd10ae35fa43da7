//! What only the SQLite store has: a file that survives reopening, its pragmas, group commit,
//! fail-stop, the read-only view, schema versioning, and the pair assertion on reads.

use agentvisor_actors::kernel::budget::Budget;
use agentvisor_actors::kernel::capability::{Constraints, Grant, Rights};
use agentvisor_actors::kernel::ids::{CountingIds, Epoch, GrantId, IdSource, ImageId, Pid};
use agentvisor_actors::kernel::process::{Event, ProcessRow};
use agentvisor_actors::limits;
use agentvisor_actors::store::{
    Change, CommitTicket, ENVELOPE_VERSION, Envelope, ObjectOwner, ObjectRecord, ProcessQuery,
    SCHEMA_VERSION, SqliteStore, Store, StoreError,
};
use std::path::{Path, PathBuf};

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
    let object = ObjectRecord {
        oid: ids.oid(),
        owner: ObjectOwner::ProcessResult(parent.pid),
        kind: "process_result".into(),
        payload: Some(Envelope::json(&serde_json::json!({"answer": 42}))),
    };
    let checkpoint = Envelope::bytes(vec![1, 2, 3]);
    {
        let store = open(&f.path);
        assert_eq!(store.begin_epoch(), Ok(Epoch(1)));
        store
            .submit(vec![
                Change::PutProcess(parent.clone()),
                Change::PutProcess(running.clone()),
                Change::PutGrant(grant.clone()),
                Change::PutObject(object.clone()),
                Change::PutCheckpoint { pid: parent.pid, envelope: checkpoint.clone() },
            ])
            .await
            .expect("commits");
    }
    let store = open(&f.path);
    assert_eq!(store.epoch(), Ok(Epoch(1)));
    assert_eq!(store.begin_epoch(), Ok(Epoch(2)));
    assert_eq!(store.process(parent.pid), Ok(Some(parent.clone())));
    assert_eq!(store.process(running.pid), Ok(Some(running.clone())));
    let all = ProcessQuery { include_terminal: true, ..ProcessQuery::default() };
    assert_eq!(store.processes(all), Ok(vec![parent.clone(), running]));
    assert_eq!(store.grants_of(parent.pid), Ok(vec![grant]));
    assert_eq!(store.object(object.oid), Ok(Some(object)));
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
    // WAL is a property of the file: any other connection sees it too.
    let conn = rusqlite::Connection::open(&f.path).expect("opens");
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).expect("reads");
    assert_eq!(mode, "wal");
    let version: i64 = conn
        .query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0))
        .expect("reads");
    assert_eq!(version, i64::from(SCHEMA_VERSION));
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
        .submit(vec![
            Change::PutProcess(r.clone()),
            Change::PutObject(ObjectRecord {
                oid,
                owner: ObjectOwner::Host,
                kind: "blob".into(),
                payload: Some(newer),
            }),
        ])
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
    // A payload envelope from a newer build is refused, not guessed at.
    assert!(matches!(store.object(oid), Err(StoreError::Corrupt(_))));
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
        let query = ProcessQuery { parent, roots_only, include_terminal, limit: Some(10) };
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
    let oid = ids.oid();
    store
        .submit(vec![
            Change::PutProcess(waiting.clone()),
            Change::PutGrant(grant.clone()),
            Change::PutObject(ObjectRecord {
                oid,
                owner: ObjectOwner::ProcessResult(waiting.pid),
                kind: "process_result".into(),
                payload: Some(Envelope::json(&serde_json::json!(7))),
            }),
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
    let (owner_kind, owner_pid, payload): (String, String, Vec<u8>) = conn
        .query_row("SELECT owner_kind, owner_pid, payload FROM objects", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .expect("one object");
    assert_eq!((owner_kind.as_str(), owner_pid), ("process_result", waiting.pid.to_string()));
    // postcard: version 1 (varint), kind 0 = Json (varint), body length 1, body "7".
    assert_eq!(payload, vec![1, 0, 1, b'7']);
    let checkpoint: Vec<u8> =
        conn.query_row("SELECT envelope FROM checkpoints", [], |r| r.get(0)).expect("one checkpoint");
    // version 1, kind 1 = Bytes, body length 3, body.
    assert_eq!(checkpoint, vec![1, 1, 3, 9, 8, 7]);
    let epoch: i64 = conn
        .query_row("SELECT value FROM meta WHERE key = 'epoch'", [], |r| r.get(0))
        .expect("the epoch row");
    assert_eq!(epoch, 0);
}
