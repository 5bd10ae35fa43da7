//! The seat store, through its public surface: both stores run one conformance function (the
//! state model, its refusals and the two realize invariants), then the SQLite store's
//! durability (reopen, schema version, fail-stop, two stores on one file), the failing test
//! double, and a seeded property test over random operation sequences.

mod seeded;

use agentvisor::rig::store::{
    FailingSeatStore, MemorySeatStore, PostgresSeatStore, SEAT_STORE_SCHEMA_VERSION, SeatOperation,
    SeatRecord, SeatStatus, SeatStore, SqliteSeatStore, StoreError,
};
use agentvisor::rig::{Member, MemberId, NativeId, RigId, RigSpec};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{Value, json};
use std::path::Path;

#[path = "../actors/tests/pg_server/mod.rs"]
mod pg_server;

fn member_json(id: &str, runtime: &str, source: Option<&str>) -> Value {
    let mut member = json!({ "id": id, "runtime": runtime, "cwd": "." });
    if let Some(source) = source {
        member["session_source"] = json!({ "mode": "fork", "native_id": source });
    }
    member
}

fn member(id: &str, runtime: &str, source: Option<&str>) -> Member {
    serde_json::from_value(member_json(id, runtime, source)).expect("a member")
}

fn spec(id: &str, members: &[Value]) -> RigSpec {
    serde_json::from_value(json!({ "id": id, "members": members })).expect("a rig spec")
}

fn rig(id: &str) -> RigId {
    serde_json::from_value(json!(id)).expect("a rig id")
}

fn mid(id: &str) -> MemberId {
    serde_json::from_value(json!(id)).expect("a member id")
}

fn token(text: &str) -> NativeId {
    NativeId::from_token(text).expect("a token")
}

fn seat(store: &dyn SeatStore, rig_id: &str, member_id: &str) -> SeatRecord {
    store.seat(&rig(rig_id), &mid(member_id)).expect("read").expect("the seat exists")
}

/// Everything the state model promises, against any store.
fn conformance(store: &dyn SeatStore) {
    happy_path(store);
    illegal_transitions(store);
    realize_invariants(store);
    duplicates_and_unknowns(store);
    usage(store);
}

/// Usage is recorded on a realized seat only, replaces what was recorded, and changes nothing
/// else.
fn usage(store: &dyn SeatStore) {
    use agentvisor::agent::brain::Usage;
    store.create_rig(&spec("usage", &[member_json("a", "claude-code", None)]), "u.yaml").expect("create");
    let spent = Usage { input_tokens: 120, output_tokens: 30, cost_micros: Some(4_200), ..Usage::default() };
    let refused = store.record_usage(&rig("usage"), &mid("a"), &spent);
    assert!(
        matches!(&refused, Err(e @ StoreError::NotRealized { .. }) if e.code() == "not_realized"),
        "{refused:?}"
    );
    assert_eq!(seat(store, "usage", "a").usage, None, "a refused call changes nothing");
    store.resolve(&rig("usage"), &mid("a")).expect("resolve");
    store.realize(&rig("usage"), &mid("a"), &token("usage-session-1"), None).expect("realize");
    store.record_usage(&rig("usage"), &mid("a"), &spent).expect("record");
    let more = Usage { input_tokens: 200, ..spent };
    let after = store.record_usage(&rig("usage"), &mid("a"), &more).expect("record again");
    assert_eq!(after.usage, Some(more));
    let read = seat(store, "usage", "a");
    assert_eq!(read, after);
    assert_eq!((read.status, read.token), (SeatStatus::Realized, Some(token("usage-session-1"))));
}

fn happy_path(store: &dyn SeatStore) {
    let parent = "0b0165d7-cb4d-4650-90de-15c0a1ede9e6";
    let created = store
        .create_rig(
            &spec(
                "happy",
                &[member_json("lead", "native", None), member_json("reviewer", "claude-code", Some(parent))],
            ),
            "rigs/happy.yaml",
        )
        .expect("create");
    assert_eq!(created.id, rig("happy"));
    assert_eq!(created.spec_path, "rigs/happy.yaml");
    assert_eq!(store.rig(&rig("happy")).expect("read"), Some(created.clone()));
    assert!(store.rigs().expect("read").contains(&created));

    // Creating a rig declares its members, in order.
    let seats = store.seats(&rig("happy")).expect("read");
    let members: Vec<&str> = seats.iter().map(|s| s.member.as_str()).collect();
    assert_eq!(members, ["lead", "reviewer"]);
    for s in &seats {
        assert_eq!(s.status, SeatStatus::Declared);
        assert_eq!(s.token, None);
        s.check().expect("invariants");
    }
    let reviewer = seat(store, "happy", "reviewer");
    assert_eq!(reviewer.source, Some(token(parent)), "the declared source is kept as history");
    assert_eq!(reviewer.member().expect("decodes"), member("reviewer", "claude-code", Some(parent)));

    // An expansion adds a seat.
    let added = store.declare(&rig("happy"), &member("tester", "codex", None)).expect("declare");
    assert_eq!(added.status, SeatStatus::Declared);
    assert_eq!(store.seats(&rig("happy")).expect("read").len(), 3);

    let resolved = store.resolve(&rig("happy"), &mid("reviewer")).expect("resolve");
    assert_eq!(resolved.status, SeatStatus::Resolved);
    assert_eq!(resolved.token, None, "resolving writes no token");
    let realized =
        store.realize(&rig("happy"), &mid("reviewer"), &token("new-session-1"), None).expect("realize");
    assert_eq!(realized.status, SeatStatus::Realized);
    assert_eq!(realized.token, Some(token("new-session-1")), "the seat's own new token");
    assert_eq!(realized.source, Some(token(parent)), "the source stays, as history");
    assert!(realized.updated_at_ms >= realized.declared_at_ms);
    assert_eq!(seat(store, "happy", "reviewer"), realized, "what realize returned is what is stored");

    store.resolve(&rig("happy"), &mid("lead")).expect("resolve");
    let native =
        store.realize(&rig("happy"), &mid("lead"), &token("av-session-7"), Some("pid-7")).expect("realize");
    assert_eq!(native.pid.as_deref(), Some("pid-7"));

    // A seat can fail from declared (resolution) or resolved (launch), keeping stderr.
    let failed = store
        .fail(
            &rig("happy"),
            &mid("tester"),
            "resolve_source",
            "codex has no thread t-9",
            Some("error: not found"),
        )
        .expect("fail");
    assert_eq!(failed.status, SeatStatus::Failed);
    assert_eq!(failed.failed_step.as_deref(), Some("resolve_source"));
    assert_eq!(failed.error.as_deref(), Some("codex has no thread t-9"));
    assert_eq!(failed.stderr.as_deref(), Some("error: not found"));
    assert_eq!(failed.token, None, "a failed seat has no token");

    store.declare(&rig("happy"), &member("late", "claude-code", Some(parent))).expect("declare");
    store.resolve(&rig("happy"), &mid("late")).expect("resolve");
    let huge = "x".repeat(200_000) + "the reason";
    let failed =
        store.fail(&rig("happy"), &mid("late"), "fork_launch", "claude exited 1", Some(&huge)).expect("fail");
    let stderr = failed.stderr.expect("kept");
    assert!(stderr.len() <= agentvisor::rig::store::limits::STDERR_BYTES_MAX, "stderr is bounded");
    assert!(stderr.ends_with("the reason"), "the end of stderr is kept");
    assert_eq!(failed.token, None, "the parent's token is not written onto a failed seat");
}

fn illegal_transitions(store: &dyn SeatStore) {
    let members: Vec<Value> =
        ["d", "r", "z", "f"].iter().map(|id| member_json(id, "claude-code", Some("src"))).collect();
    store.create_rig(&spec("moves", &members), "moves.yaml").expect("create");
    let r = rig("moves");
    store.resolve(&r, &mid("r")).expect("resolve");
    store.resolve(&r, &mid("z")).expect("resolve");
    store.realize(&r, &mid("z"), &token("z-own"), None).expect("realize");
    store.fail(&r, &mid("f"), "resolve_source", "no such session", None).expect("fail");

    let expect_transition =
        |result: Result<SeatRecord, StoreError>, member: &str, from: SeatStatus, to: SeatStatus| {
            let before = seat(store, "moves", member);
            match result {
                Err(StoreError::Transition(e)) => {
                    assert_eq!((e.member.as_str(), e.from, e.to), (member, from, to));
                    let text = e.to_string();
                    assert!(text.contains(from.as_str()) && text.contains(to.as_str()), "{text}");
                }
                other => panic!("{member}: {from} → {to} was not refused as a transition: {other:?}"),
            }
            assert_eq!(seat(store, "moves", member), before, "a refused move changes nothing");
        };
    use SeatStatus::{Declared, Failed, Realized, Resolved};
    // Declared: only resolve or fail.
    expect_transition(store.realize(&r, &mid("d"), &token("d-own"), None), "d", Declared, Realized);
    // Resolved: not resolved again.
    expect_transition(store.resolve(&r, &mid("r")), "r", Resolved, Resolved);
    // Realized is final.
    expect_transition(store.resolve(&r, &mid("z")), "z", Realized, Resolved);
    expect_transition(store.realize(&r, &mid("z"), &token("z-other"), None), "z", Realized, Realized);
    expect_transition(store.fail(&r, &mid("z"), "late", "too late", None), "z", Realized, Failed);
    // Failed is final.
    expect_transition(store.resolve(&r, &mid("f")), "f", Failed, Resolved);
    expect_transition(store.realize(&r, &mid("f"), &token("f-own"), None), "f", Failed, Realized);
    expect_transition(store.fail(&r, &mid("f"), "again", "again", None), "f", Failed, Failed);
    // And no refused realize left a token behind.
    assert_eq!(seat(store, "moves", "d").token, None);
    assert_eq!(seat(store, "moves", "f").token, None);
    assert_eq!(seat(store, "moves", "z").token, Some(token("z-own")));
}

fn realize_invariants(store: &dyn SeatStore) {
    let members =
        [member_json("a", "claude-code", Some("parent-a")), member_json("b", "codex", Some("parent-b"))];
    store.create_rig(&spec("tokens", &members), "tokens.yaml").expect("create");
    let r = rig("tokens");
    store.resolve(&r, &mid("a")).expect("resolve");
    store.resolve(&r, &mid("b")).expect("resolve");

    // The parent's token is never written onto the new seat.
    let refused = store.realize(&r, &mid("a"), &token("parent-a"), None);
    assert!(
        matches!(&refused, Err(StoreError::TokenIsSource { member, .. }) if member.as_str() == "a"),
        "{refused:?}"
    );
    assert_eq!(refused.as_ref().map_err(StoreError::code).err(), Some("token_is_source"));
    let a = seat(store, "tokens", "a");
    assert_eq!((a.status, a.token), (SeatStatus::Resolved, None), "the refused realize wrote nothing");

    store.realize(&r, &mid("a"), &token("own-a"), None).expect("realize");
    // Another seat's token, in this rig or another, is refused.
    let refused = store.realize(&r, &mid("b"), &token("own-a"), None);
    match &refused {
        Err(StoreError::TokenTaken { member, holder_rig, holder_member, .. }) => {
            assert_eq!((member.as_str(), holder_rig.as_str(), holder_member.as_str()), ("b", "tokens", "a"));
        }
        other => panic!("not refused as taken: {other:?}"),
    }
    let refused = store.realize(&r, &mid("b"), &token("z-own"), None);
    assert!(
        matches!(&refused, Err(StoreError::TokenTaken { holder_rig, .. }) if holder_rig.as_str() == "moves")
    );
    let b = seat(store, "tokens", "b");
    assert_eq!((b.status, b.token), (SeatStatus::Resolved, None));
    // Another seat's source may be this seat's token only if no seat holds it: here b's token
    // is a's source, which is an outside conversation.
    store.realize(&r, &mid("b"), &token("parent-a"), None).expect("a token that is no seat's own");
}

fn duplicates_and_unknowns(store: &dyn SeatStore) {
    store.create_rig(&spec("dups", &[member_json("one", "terminal", None)]), "dups.yaml").expect("create");
    let r = rig("dups");
    let again = store.create_rig(&spec("dups", &[]), "other.yaml");
    assert!(matches!(&again, Err(StoreError::RigExists { rig }) if rig.as_str() == "dups"), "{again:?}");
    assert_eq!(store.rig(&r).expect("read").expect("kept").spec_path, "dups.yaml", "the first rig is kept");

    let twice = store.declare(&r, &member("one", "codex", None));
    assert!(matches!(&twice, Err(StoreError::DuplicateMember { member, .. }) if member.as_str() == "one"));
    assert_eq!(seat(store, "dups", "one").runtime.as_str(), "terminal", "the first declaration is kept");

    let unknown = store.declare(&rig("nowhere"), &member("x", "codex", None));
    match &unknown {
        Err(StoreError::UnknownRig { rig, known }) => {
            assert_eq!(rig.as_str(), "nowhere");
            assert!(known.contains("dups"), "the refusal lists the known rigs: {known}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(store.resolve(&rig("nowhere"), &mid("x")), Err(StoreError::UnknownRig { .. })));
    assert!(matches!(store.resolve(&r, &mid("x")), Err(StoreError::UnknownSeat { .. })));
    assert!(matches!(store.realize(&r, &mid("x"), &token("t"), None), Err(StoreError::UnknownSeat { .. })));
    assert!(matches!(store.fail(&r, &mid("x"), "s", "e", None), Err(StoreError::UnknownSeat { .. })));
    assert_eq!(store.seat(&r, &mid("x")).expect("read"), None);
    assert_eq!(store.seats(&rig("nowhere")).expect("read"), vec![]);
    assert_eq!(store.rig(&rig("nowhere")).expect("read"), None);

    // A spec naming one member twice creates nothing.
    let doubled = spec("doubled", &[member_json("m", "codex", None), member_json("m", "codex", None)]);
    assert!(matches!(store.create_rig(&doubled, "d.yaml"), Err(StoreError::DuplicateMember { .. })));
    assert_eq!(store.rig(&rig("doubled")).expect("read"), None);
}

#[test]
fn the_memory_store_conforms() {
    conformance(&MemorySeatStore::new());
}

#[test]
fn the_sqlite_store_conforms() {
    let dir = tempfile::tempdir().expect("tempdir");
    conformance(&SqliteSeatStore::open_in(dir.path()).expect("open"));
}

#[test]
fn the_postgres_store_conforms_and_keeps_everything_across_a_reopen() {
    let Some(url) = pg_server::fresh_database() else { return };
    assert!(PostgresSeatStore::open_read_only(&url).expect("a view").is_none(), "no rig ran yet");
    {
        let store = PostgresSeatStore::open(&url).expect("open");
        conformance(&store);
    }
    let store = PostgresSeatStore::open(&url).expect("reopen");
    let view = PostgresSeatStore::open_read_only(&url).expect("a view").expect("the seat tables exist");
    let rigs = store.rigs().expect("rigs");
    assert!(!rigs.is_empty());
    assert_eq!(view.rigs().expect("rigs"), rigs);
    for rig in &rigs {
        assert_eq!(view.seats(&rig.id).expect("seats"), store.seats(&rig.id).expect("seats"));
    }
    let refused = view.create_rig(&spec("from-a-view", &[member_json("a", "codex", None)]), "p.yaml");
    assert!(matches!(refused, Err(StoreError::Backend { .. })), "{refused:?}");
}

#[test]
fn a_failing_store_passing_everything_else_through_conforms() {
    // Failing a read the conformance never makes leaves the rest untouched.
    let store = FailingSeatStore::new(MemorySeatStore::new(), SeatOperation::Rigs);
    happy_path_without_rigs(&store);
    illegal_transitions(&store);
    realize_invariants(&store);
    assert_eq!(store.rigs(), Err(StoreError::Injected { operation: SeatOperation::Rigs }));
}

fn happy_path_without_rigs(store: &dyn SeatStore) {
    store.create_rig(&spec("moves-first", &[member_json("a", "codex", None)]), "p.yaml").expect("create");
    store.resolve(&rig("moves-first"), &mid("a")).expect("resolve");
    store.realize(&rig("moves-first"), &mid("a"), &token("own"), None).expect("realize");
}

#[test]
fn a_seat_whose_token_cannot_be_written_stays_unlaunched() {
    let store = FailingSeatStore::new(MemorySeatStore::new(), SeatOperation::Realize);
    store
        .create_rig(&spec("r", &[member_json("m", "claude-code", Some("parent"))]), "r.yaml")
        .expect("create");
    store.resolve(&rig("r"), &mid("m")).expect("resolve");
    let refused = store.realize(&rig("r"), &mid("m"), &token("new"), None);
    assert_eq!(refused, Err(StoreError::Injected { operation: SeatOperation::Realize }));
    assert_eq!(store.injected_count(), 1);
    let m = seat(store.inner(), "r", "m");
    assert_eq!((m.status, m.token), (SeatStatus::Resolved, None), "not realized, no token, no parent token");
    // The runner then records the failure, which the double passes through.
    let failed = store.fail(&rig("r"), &mid("m"), "persist_token", "failed to write the new token", None);
    assert_eq!(failed.expect("fail").status, SeatStatus::Failed);
}

#[test]
fn reopening_the_sqlite_file_keeps_everything() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("rigs.sqlite");
    let (rigs, seats) = {
        let store = SqliteSeatStore::open(&path).expect("open");
        conformance(&store);
        let rigs = store.rigs().expect("read");
        let seats: Vec<Vec<SeatRecord>> = rigs.iter().map(|r| store.seats(&r.id).expect("read")).collect();
        (rigs, seats)
    };
    let store = SqliteSeatStore::open(&path).expect("reopen");
    assert_eq!(store.rigs().expect("read"), rigs);
    for (r, before) in rigs.iter().zip(&seats) {
        assert_eq!(&store.seats(&r.id).expect("read"), before, "rig {}", r.id);
    }
    // Final states stay final across a reopen; a restore never re-forks.
    let refused = store.resolve(&rig("happy"), &mid("reviewer"));
    assert!(matches!(refused, Err(StoreError::Transition(_))));
    // And the tokens are still one seat's each.
    assert!(matches!(
        store.realize(&rig("tokens"), &mid("a"), &token("new-session-1"), None),
        Err(StoreError::Transition(_))
    ));
}

fn user_version(path: &Path) -> i64 {
    let conn = rusqlite::Connection::open(path).expect("open");
    conn.pragma_query_value(None, "user_version", |r| r.get(0)).expect("user_version")
}

#[test]
fn a_version_1_file_is_upgraded_in_place_and_keeps_its_seats() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("rigs.sqlite");
    // The version 1 schema as that release wrote it, with one realized seat.
    let conn = rusqlite::Connection::open(&path).expect("open");
    conn.execute_batch(
        "CREATE TABLE rigs (id TEXT PRIMARY KEY, spec_path TEXT NOT NULL, spec_json TEXT NOT NULL,
             created_at_ms INTEGER NOT NULL);
         CREATE TABLE seats (rig TEXT NOT NULL REFERENCES rigs (id), member TEXT NOT NULL,
             runtime TEXT NOT NULL, status TEXT NOT NULL, source TEXT NULL, token TEXT NULL,
             failed_step TEXT NULL, error TEXT NULL, stderr TEXT NULL, pid TEXT NULL,
             declared_at_ms INTEGER NOT NULL, updated_at_ms INTEGER NOT NULL, member_json TEXT NOT NULL,
             PRIMARY KEY (rig, member));
         PRAGMA user_version = 1;",
    )
    .expect("a version 1 file");
    let member = member_json("old", "codex", None).to_string();
    let spec_json = json!({"id": "old", "members": [member_json("old", "codex", None)]}).to_string();
    conn.execute("INSERT INTO rigs VALUES ('old', 'old.yaml', ?1, 1)", [&spec_json]).expect("rig");
    conn.execute(
        "INSERT INTO seats VALUES ('old', 'old', 'codex', 'realized', NULL, 'thread-1', NULL, NULL, NULL, NULL, 1, 2, ?1)",
        [&member],
    )
    .expect("seat");
    drop(conn);

    // A read-only view reads it as it is, without upgrading it.
    let view = SqliteSeatStore::open_read_only(&path).expect("a view of a version 1 file");
    assert_eq!(seat(&view, "old", "old").usage, None);
    drop(view);
    assert_eq!(user_version(&path), 1, "a view changes nothing");

    let store = SqliteSeatStore::open(&path).expect("the file opens");
    assert_eq!(user_version(&path), 2);
    let old = seat(&store, "old", "old");
    assert_eq!(
        (old.status, old.token.clone(), old.usage),
        (SeatStatus::Realized, Some(token("thread-1")), None)
    );
    let spent = agentvisor::agent::brain::Usage { input_tokens: 5, ..Default::default() };
    store.record_usage(&rig("old"), &mid("old"), &spent).expect("record");
    drop(store);
    let reopened = SqliteSeatStore::open_read_only(&path).expect("reopen");
    assert_eq!(seat(&reopened, "old", "old").usage, Some(spent));
}

#[test]
fn a_newer_schema_version_is_refused_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("rigs.sqlite");
    drop(SqliteSeatStore::open(&path).expect("open"));
    assert_eq!(user_version(&path), SEAT_STORE_SCHEMA_VERSION);
    let newer = SEAT_STORE_SCHEMA_VERSION + 1;
    rusqlite::Connection::open(&path)
        .and_then(|c| c.pragma_update(None, "user_version", newer))
        .expect("set the version");
    match SqliteSeatStore::open(&path) {
        Err(e @ StoreError::UnsupportedSchema { .. }) => {
            assert_eq!(e.code(), "unsupported_schema");
            assert!(e.to_string().contains("newer agentvisor"), "{e}");
        }
        other => panic!("not refused: {other:?}"),
    }
    assert_eq!(user_version(&path), newer, "the refused file is left as it was");
}

#[test]
fn after_a_failed_write_the_sqlite_store_refuses_writes_until_reopened() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("rigs.sqlite");
    let store = SqliteSeatStore::open(&path).expect("open");
    store
        .create_rig(&spec("r", &[member_json("a", "codex", None), member_json("b", "codex", None)]), "r.yaml")
        .expect("create");
    // Make the next seat write fail inside SQLite, as a full disk or an I/O error would.
    let other = rusqlite::Connection::open(&path).expect("open");
    other
        .execute_batch(
            "CREATE TRIGGER refuse BEFORE UPDATE ON seats BEGIN SELECT RAISE(ABORT, 'disk gone'); END;",
        )
        .expect("trigger");
    let failed = store.resolve(&rig("r"), &mid("a"));
    assert!(
        matches!(&failed, Err(StoreError::Backend { message }) if message.contains("disk gone")),
        "{failed:?}"
    );
    assert!(store.is_fail_stopped());
    other.execute_batch("DROP TRIGGER refuse;").expect("drop trigger");

    // The cause is gone, but this store still refuses every write; reads keep working.
    let refused = store.resolve(&rig("r"), &mid("b"));
    assert!(
        matches!(&refused, Err(StoreError::FailStopped { message }) if message.contains("disk gone")),
        "{refused:?}"
    );
    assert!(matches!(
        store.declare(&rig("r"), &member("c", "codex", None)),
        Err(StoreError::FailStopped { .. })
    ));
    assert!(matches!(store.create_rig(&spec("s", &[]), "s.yaml"), Err(StoreError::FailStopped { .. })));
    assert_eq!(seat(&store, "r", "a").status, SeatStatus::Declared, "the failed write left nothing");
    drop(store);

    let reopened = SqliteSeatStore::open(&path).expect("reopen");
    assert!(!reopened.is_fail_stopped());
    assert_eq!(reopened.resolve(&rig("r"), &mid("a")).expect("resolve").status, SeatStatus::Resolved);
}

#[test]
fn a_refusal_does_not_fail_stop_the_sqlite_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteSeatStore::open_in(dir.path()).expect("open");
    store.create_rig(&spec("r", &[member_json("a", "codex", Some("p"))]), "r.yaml").expect("create");
    assert!(store.realize(&rig("r"), &mid("a"), &token("t"), None).is_err());
    assert!(store.create_rig(&spec("r", &[]), "r.yaml").is_err());
    assert!(!store.is_fail_stopped());
    store.resolve(&rig("r"), &mid("a")).expect("still writable");
}

#[test]
fn two_sqlite_stores_on_one_file_see_each_others_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = SqliteSeatStore::open_in(dir.path()).expect("open");
    let expanding = SqliteSeatStore::open_in(dir.path()).expect("open again");
    running.create_rig(&spec("r", &[member_json("a", "codex", None)]), "r.yaml").expect("create");
    // The other process sees the rig and adds a member.
    assert_eq!(expanding.rigs().expect("read").len(), 1);
    expanding.declare(&rig("r"), &member("b", "claude-code", Some("parent"))).expect("expand");
    assert_eq!(seat(&running, "r", "b").status, SeatStatus::Declared);
    // Each writes from the seat as it is in the file, so the rules hold across them.
    running.resolve(&rig("r"), &mid("b")).expect("resolve");
    assert!(matches!(expanding.resolve(&rig("r"), &mid("b")), Err(StoreError::Transition(_))));
    expanding.resolve(&rig("r"), &mid("a")).expect("resolve");
    running.realize(&rig("r"), &mid("a"), &token("shared"), None).expect("realize");
    assert!(matches!(
        expanding.realize(&rig("r"), &mid("b"), &token("shared"), None),
        Err(StoreError::TokenTaken { .. })
    ));
    assert_eq!(seat(&expanding, "r", "a").token, Some(token("shared")));

    // Writers on both at once, from two threads: every declaration lands once.
    std::thread::scope(|scope| {
        for (store, prefix) in [(&running, "x"), (&expanding, "y")] {
            scope.spawn(move || {
                for i in 0..20 {
                    store
                        .declare(&rig("r"), &member(&format!("{prefix}{i}"), "codex", None))
                        .expect("declare");
                }
            });
        }
    });
    assert_eq!(running.seats(&rig("r")).expect("read").len(), 42);
    assert!(!running.is_fail_stopped() && !expanding.is_fail_stopped());
}

// The property test: random operation sequences against both stores and a model of what each
// call should answer.

const RIGS: [&str; 2] = ["p", "q"];
const MEMBERS: usize = 5;
const TOKENS: usize = 6;

/// Member `k`'s source: token `k` for even `k`, none for odd.
fn prop_member(k: usize) -> Member {
    let source = k.is_multiple_of(2).then(|| format!("t{k}"));
    member(&format!("m{k}"), if k.is_multiple_of(2) { "claude-code" } else { "native" }, source.as_deref())
}

#[derive(Clone, Debug)]
enum Op {
    Declare(usize, usize),
    Resolve(usize, usize),
    Realize(usize, usize, usize),
    Fail(usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    let r = 0..RIGS.len();
    let m = 0..MEMBERS;
    prop_oneof![
        2 => (r.clone(), m.clone()).prop_map(|(r, m)| Op::Declare(r, m)),
        3 => (r.clone(), m.clone()).prop_map(|(r, m)| Op::Resolve(r, m)),
        4 => (r.clone(), m.clone(), 0..TOKENS).prop_map(|(r, m, t)| Op::Realize(r, m, t)),
        1 => (r, m).prop_map(|(r, m)| Op::Fail(r, m)),
    ]
}

type Snapshot = Vec<SeatRecord>;

fn snapshot(store: &dyn SeatStore) -> Snapshot {
    RIGS.iter().flat_map(|r| store.seats(&rig(r)).expect("read")).collect()
}

/// What the model says `op` should answer on `before`: `None` for success, else the code.
fn expected(before: &Snapshot, op: &Op) -> Option<&'static str> {
    let find = |r: usize, m: usize| {
        before.iter().find(|s| s.rig.as_str() == RIGS[r] && s.member.as_str() == format!("m{m}"))
    };
    match *op {
        Op::Declare(r, m) => find(r, m).map(|_| "duplicate_member"),
        Op::Resolve(r, m) => match find(r, m) {
            None => Some("unknown_seat"),
            Some(s) if s.status != SeatStatus::Declared => Some("illegal_transition"),
            Some(_) => None,
        },
        Op::Realize(r, m, t) => match find(r, m) {
            None => Some("unknown_seat"),
            Some(s) if s.status != SeatStatus::Resolved => Some("illegal_transition"),
            Some(s) if s.source.as_ref().map(NativeId::as_str) == Some(format!("t{t}").as_str()) => {
                Some("token_is_source")
            }
            Some(_)
                if before
                    .iter()
                    .any(|s| s.token.as_ref().map(NativeId::as_str) == Some(&format!("t{t}"))) =>
            {
                Some("token_taken")
            }
            Some(_) => None,
        },
        Op::Fail(r, m) => match find(r, m) {
            None => Some("unknown_seat"),
            Some(s) if s.status.is_final() => Some("illegal_transition"),
            Some(_) => None,
        },
    }
}

fn apply(store: &dyn SeatStore, op: &Op) -> Result<SeatRecord, StoreError> {
    match *op {
        Op::Declare(r, m) => store.declare(&rig(RIGS[r]), &prop_member(m)),
        Op::Resolve(r, m) => store.resolve(&rig(RIGS[r]), &mid(&format!("m{m}"))),
        Op::Realize(r, m, t) => {
            store.realize(&rig(RIGS[r]), &mid(&format!("m{m}")), &token(&format!("t{t}")), Some("pid"))
        }
        Op::Fail(r, m) => {
            store.fail(&rig(RIGS[r]), &mid(&format!("m{m}")), "fork_launch", "exited 1", Some("boom"))
        }
    }
}

fn key(seat: &SeatRecord) -> (String, String) {
    (seat.rig.to_string(), seat.member.to_string())
}

/// How often each answer came up, so the test shows it reached every rule.
type Seen = std::sync::Mutex<std::collections::BTreeMap<&'static str, usize>>;

/// Runs `ops` on `store`, checking after each one.
fn run_ops(store: &dyn SeatStore, ops: &[Op], seen: &Seen) -> Result<(), TestCaseError> {
    // Rig `p` starts with three members declared by its spec; `q` starts empty.
    let first: Vec<Value> = (0..3).map(|k| serde_json::to_value(prop_member(k)).expect("json")).collect();
    for (r, members) in RIGS.iter().zip([first, vec![]]) {
        store.create_rig(&spec(r, &members), "prop.yaml").map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
    for (step, op) in ops.iter().enumerate() {
        let before = snapshot(store);
        let result = apply(store, op);
        let after = snapshot(store);
        let context = format!("step {step}: {op:?} → {result:?}");
        let answer = match (&result, op) {
            (Ok(_), Op::Realize(..)) => "realized",
            (Ok(_), _) => "ok",
            (Err(e), _) => e.code(),
        };
        *seen.lock().expect("not poisoned").entry(answer).or_default() += 1;
        prop_assert_eq!(result.as_ref().err().map(StoreError::code), expected(&before, op), "{}", &context);
        if result.is_err() {
            prop_assert_eq!(&after, &before, "a refused call changed something: {}", &context);
        }
        for seat in &after {
            prop_assert!(seat.check().is_ok(), "{context}: {seat:?}");
            prop_assert!(seat.token.is_none() || seat.token != seat.source, "token is the source: {context}");
            let Some(old) = before.iter().find(|b| key(b) == key(seat)) else {
                prop_assert!(matches!(op, Op::Declare(..)) && seat.token.is_none(), "{}", &context);
                continue;
            };
            if old.status.is_final() {
                prop_assert_eq!(old, seat, "a final seat changed: {}", &context);
            }
            if old.token != seat.token {
                let realized_here = matches!(op, Op::Realize(r, m, _) if (RIGS[*r].to_string(), format!("m{m}")) == key(seat));
                prop_assert!(
                    realized_here && result.is_ok() && old.token.is_none(),
                    "token set by {}",
                    &context
                );
            }
        }
        let tokens: Vec<&NativeId> = after.iter().filter_map(|s| s.token.as_ref()).collect();
        let mut unique = tokens.clone();
        unique.sort();
        unique.dedup();
        prop_assert_eq!(unique.len(), tokens.len(), "a token is two seats': {}", &context);
    }
    Ok(())
}

#[test]
fn random_operation_sequences_keep_the_invariants() {
    let ops = prop::collection::vec(op(), 1..40);
    let seen = Seen::default();
    let mut runner = seeded::runner("rig_store memory", "RIG_STORE_SEED", 0x5ea7_0004, 256);
    runner
        .run(&ops, |ops| run_ops(&MemorySeatStore::new(), &ops, &seen))
        .expect("the memory store keeps the invariants");
    let mut runner = seeded::runner("rig_store sqlite", "RIG_STORE_SEED", 0x5ea7_0004, 16);
    runner
        .run(&ops, |ops| {
            let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
            let store =
                SqliteSeatStore::open_in(dir.path()).map_err(|e| TestCaseError::fail(e.to_string()))?;
            run_ops(&store, &ops, &seen)
        })
        .expect("the sqlite store keeps the invariants");
    let seen = seen.into_inner().expect("not poisoned");
    println!("answers: {seen:?}");
    for answer in
        ["realized", "ok", "token_is_source", "token_taken", "illegal_transition", "duplicate_member"]
    {
        assert!(seen.get(answer).is_some_and(|n| *n > 0), "no case reached {answer}: {seen:?}");
    }
}
