//! Builders shared by the store test suites: rows of every shape, grants, messages, commit
//! helpers.

#![allow(dead_code, reason = "each test file uses its own subset of these builders")]

use agentvisor_actors::kernel::budget::{Account, Budget, Usage};
use agentvisor_actors::kernel::capability::{Constraints, Grant, Rights};
use agentvisor_actors::kernel::ids::{CountingIds, Epoch, GrantId, IdSource, ImageId, Pid};
use agentvisor_actors::kernel::mailbox::{Message, MessageId, MessageKind};
use agentvisor_actors::kernel::process::{Event, ProcessRow};
use agentvisor_actors::kernel::status::{FailureKind, PauseReason, Sender, SignalKind, WaitState};
use agentvisor_actors::store::{Change, CommitReceipt, Store};

pub(crate) fn launched(ids: &mut CountingIds, parent: Option<&ProcessRow>) -> ProcessRow {
    ProcessRow::launched(
        ids.pid(),
        parent.map(|p| p.pid),
        parent.map_or(0, |p| p.depth + 1),
        ImageId::from("worker"),
        "/work/tree".to_string(),
        "count the words".to_string(),
        Budget::default(),
    )
}

pub(crate) fn with(mut row: ProcessRow, events: impl IntoIterator<Item = Event>) -> ProcessRow {
    for event in events {
        row.apply(event).expect("the test only applies legal events");
    }
    row
}

pub(crate) fn start() -> Event {
    Event::Start { epoch: Epoch(3) }
}

/// One row of every shape a row can take: each status, each wait, pause reason, outcome,
/// sender, failure kind, claims, gates and a non-trivial account.
pub(crate) fn every_shape(ids: &mut CountingIds) -> Vec<ProcessRow> {
    let root = {
        let mut row = launched(ids, None);
        row.account = Account::new(Budget {
            tokens: Some(1_000_000),
            cost_micros: Some(5_000_000),
            tool_calls: Some(300),
            wall_time_ms: Some(3_600_000),
            live_children: Some(12),
        });
        row.account
            .charge(&Usage { tokens: 1200, cost_micros: 340, tool_calls: 3, wall_time_ms: 0 })
            .expect("fits");
        let planned = row.account.plan_child(None, 10).expect("fits");
        row.account.reserve_child(&planned);
        row.account.record_wall_time(1234);
        with(row, [start()])
    };
    let mut rows = vec![root.clone()];
    let child = |ids: &mut CountingIds| launched(ids, Some(&root));
    rows.push(child(ids));
    for wait in [
        WaitState::Child { child_pid: root.pid },
        WaitState::Message { filter: "{\"channel\":\"ops\"}".to_string() },
        WaitState::Tool { tool: "grep".to_string() },
        WaitState::Human { prompt: "ok to ship?".to_string() },
    ] {
        rows.push(with(child(ids), [start(), Event::BeginWait(wait.clone())]));
        // Paused while waiting keeps the wait.
        rows.push(with(child(ids), [start(), Event::BeginWait(wait), Event::Pause(PauseReason::Shutdown)]));
    }
    for reason in [
        PauseReason::Signal { sender: Sender::Process(root.pid), reason: Some("hold".into()) },
        PauseReason::Signal { sender: Sender::Host, reason: None },
        PauseReason::Signal { sender: Sender::Runtime, reason: None },
        PauseReason::Shutdown,
    ] {
        rows.push(with(child(ids), [start(), Event::Pause(reason)]));
    }
    rows.push(with(child(ids), [start(), Event::RecoverStale]));
    rows.push(with(child(ids), [Event::SetGate { reason: "audit".into() }]));
    rows.push(with(
        child(ids),
        [start(), Event::Pause(PauseReason::Shutdown), Event::Resume { epoch: Epoch(4), claim: true }],
    ));
    rows.push(with(
        child(ids),
        [
            start(),
            Event::BeginWait(WaitState::Tool { tool: "t".into() }),
            Event::WaitSatisfied { epoch: Epoch(5), claim: true },
            Event::Progress,
        ],
    ));
    let result = ids.oid();
    rows.push(with(child(ids), [start(), Event::Exit { result_oid: Some(result) }]));
    rows.push(with(child(ids), [start(), Event::Exit { result_oid: None }]));
    for kind in [
        FailureKind::Panic,
        FailureKind::BudgetExhausted,
        FailureKind::ResumeInterrupted,
        FailureKind::LaunchFailed,
        FailureKind::ProgramError,
        FailureKind::InvariantViolation,
    ] {
        rows.push(with(child(ids), [Event::Fail { kind, message: format!("{kind:?} ✗") }]));
    }
    for (signal, reason, sender) in [
        (SignalKind::Cancel, None, Sender::Host),
        (SignalKind::Terminate, Some("enough".to_string()), Sender::Process(root.pid)),
        (SignalKind::Terminate, None, Sender::Runtime),
    ] {
        rows.push(with(child(ids), [start(), Event::Kill { signal, reason, sender }]));
    }
    let grandchild = launched(ids, Some(&rows[1]));
    rows.push(grandchild);
    rows
}

pub(crate) fn grant(ids: &mut CountingIds, holder: Pid, derived_from: Option<GrantId>) -> Grant {
    grant_with_id(ids.grant(), holder, derived_from)
}

pub(crate) fn grant_with_id(id: GrantId, holder: Pid, derived_from: Option<GrantId>) -> Grant {
    Grant {
        id,
        holder,
        resource: "fs:/data".to_string(),
        rights: Rights::READ | Rights::WRITE,
        constraints: Constraints::new(),
        delegable: true,
        live: true,
        derived_from,
    }
}

pub(crate) async fn commit(store: &dyn Store, changes: Vec<Change>) -> CommitReceipt {
    store.submit(changes).await.expect("the change set commits")
}

pub(crate) fn pids(rows: &[ProcessRow]) -> Vec<Pid> {
    rows.iter().map(|r| r.pid).collect()
}

/// A fresh message id.
pub(crate) fn message_id(ids: &mut CountingIds) -> MessageId {
    MessageId(ids.oid().as_uuid())
}

/// A plain unread message: normal, no channel, correlation, reply, payload or labels.
pub(crate) fn message(ids: &mut CountingIds, recipient: Pid, sender: Sender, seq: u64) -> Message {
    Message {
        message_id: message_id(ids),
        recipient,
        sender,
        seq,
        kind: MessageKind::Normal,
        channel: None,
        correlation_id: None,
        reply_to: None,
        body: format!("message {seq}"),
        payload: None,
        labels: Vec::new(),
        acked: false,
    }
}

/// Puts every message, one change set each, so that several group commits are involved.
pub(crate) async fn put_messages(store: &dyn Store, messages: &[Message]) {
    for m in messages {
        commit(store, vec![Change::PutMessage(m.clone())]).await;
    }
}

// ---- a group with a refused change set ------------------------------------------------------

/// Submits four change sets while `hold_writer` holds the writer, so that they share one
/// transaction: a revocation; a set of two changes (a process row and a grant derived from the
/// grant just revoked), which is refused; a set of two changes that commits; a single row. Then
/// checks every answer and what the store holds (the refused set left nothing of itself, the
/// revocation is reported once, the other sets committed whole) and that one transaction
/// committed them all.
pub(crate) async fn refused_set_in_a_group<'s>(
    store: &'s dyn Store,
    hold_writer: impl FnOnce() -> Option<agentvisor_actors::store::WriterHold<'s>>,
    commits_so_far: impl Fn() -> u64,
) {
    let mut ids = CountingIds::new(5);
    let holder = ids.pid();
    let (revoked_root, live_root) = (grant(&mut ids, holder, None), grant(&mut ids, holder, None));
    commit(store, vec![Change::PutGrant(revoked_root.clone()), Change::PutGrant(live_root.clone())]).await;
    let late = grant(&mut ids, holder, Some(revoked_root.id));
    let kept_grant = grant(&mut ids, holder, Some(live_root.id));
    let (refused_row, kept) =
        (launched(&mut ids, None), [launched(&mut ids, None), launched(&mut ids, None)]);
    let before = commits_so_far();
    let hold = hold_writer();
    let tickets = [
        store.submit(vec![Change::RevokeGrant(revoked_root.id)]),
        store.submit(vec![Change::PutProcess(refused_row.clone()), Change::PutGrant(late)]),
        store.submit(vec![Change::PutProcess(kept[0].clone()), Change::PutGrant(kept_grant.clone())]),
        store.submit(vec![Change::PutProcess(kept[1].clone())]),
    ];
    drop(hold);
    let mut answers = Vec::new();
    for ticket in tickets {
        answers.push(ticket.await);
    }
    assert_eq!(commits_so_far() - before, 1, "one transaction for all four");
    let revoked = answers[0].as_ref().expect("the revocation commits").revoked.clone();
    assert_eq!(revoked, vec![(revoked_root.id, holder)]);
    let refusal = agentvisor_actors::store::StoreError::SourceGrantRevoked { source_grant: revoked_root.id };
    assert_eq!(answers[1].as_ref().map(drop), Err(&refusal));
    assert!(answers[2].is_ok() && answers[3].is_ok(), "{answers:?}");
    assert_eq!(store.process(refused_row.pid), Ok(None), "the refused set left its row");
    for row in &kept {
        assert_eq!(store.process(row.pid), Ok(Some(row.clone())));
    }
    let revoked_root = Grant { live: false, ..revoked_root };
    assert_eq!(store.grants_of(holder), Ok(vec![revoked_root, live_root, kept_grant]));
    assert!(store.is_writable());
}

// ---- older schema versions ------------------------------------------------------------------

/// The `objects` table as schema versions 1 and 2 had it (frozen: the current schema drops it).
pub(crate) const V1_OBJECTS_TABLE: &str = "CREATE TABLE objects (
    oid        TEXT PRIMARY KEY,
    owner_kind TEXT NOT NULL,
    owner_pid  TEXT NULL,
    kind       TEXT NOT NULL,
    payload    BLOB NULL
);";

/// The tables schema version 3 added for object memory.
pub(crate) const V3_OBJECT_TABLES: [&str; 6] =
    ["object_meta", "object_handles", "object_names", "object_roots", "object_memory", "object_payloads"];

/// The object-memory tables as schema 3 to 6 made them: rowid tables, each text key in an
/// index of its own.
const V6_OBJECT_TABLES: &str = "
CREATE TABLE object_meta (
    oid TEXT PRIMARY KEY, owner_kind TEXT NOT NULL, owner_ref TEXT NULL, kind TEXT NOT NULL,
    labels TEXT NOT NULL, ephemeral INTEGER NOT NULL, released INTEGER NOT NULL);
CREATE TABLE object_handles (
    holder TEXT NOT NULL, oid TEXT NOT NULL, rights INTEGER NOT NULL, ephemeral INTEGER NOT NULL,
    PRIMARY KEY (holder, oid));
CREATE INDEX object_handles_oid ON object_handles (oid, holder);
CREATE TABLE object_names (pid TEXT NOT NULL, name TEXT NOT NULL, oid TEXT NOT NULL, PRIMARY KEY (pid, name));
CREATE TABLE object_roots (pid TEXT NOT NULL, oid TEXT NOT NULL, PRIMARY KEY (pid, oid));
CREATE TABLE object_memory (
    pid TEXT PRIMARY KEY, goal TEXT NULL, clearance TEXT NULL, context TEXT NOT NULL,
    skills TEXT NOT NULL, collection TEXT NULL);
CREATE INDEX object_memory_uncollected ON object_memory (pid) WHERE collection IS NULL;
CREATE INDEX object_meta_unreleased ON object_meta (oid) WHERE released = 0;
CREATE INDEX object_meta_owner ON object_meta (owner_ref);
";

/// The object-memory tables schema 7 rebuilt `WITHOUT ROWID`.
pub(crate) const V7_REBUILT_TABLES: [&str; 5] =
    ["object_meta", "object_handles", "object_names", "object_roots", "object_memory"];

/// Turns a closed store file of the current schema into what a schema-6 build wrote: the
/// object-memory tables rebuilt as rowid tables with the same rows.
pub(crate) fn downgrade_to_6(path: &std::path::Path) {
    let conn = rusqlite::Connection::open(path).expect("opens");
    let mut batch = String::from("BEGIN;\n");
    // The rows aside, the tables dropped with their indexes, made again as schema 6 had them.
    for table in V7_REBUILT_TABLES {
        batch
            .push_str(&format!("CREATE TABLE {table}_rows AS SELECT * FROM {table};\nDROP TABLE {table};\n"));
    }
    batch.push_str(V6_OBJECT_TABLES);
    for table in V7_REBUILT_TABLES {
        batch.push_str(&format!(
            "INSERT INTO {table} SELECT * FROM {table}_rows;\nDROP TABLE {table}_rows;\n"
        ));
    }
    batch.push_str("UPDATE meta SET value = 6 WHERE key = 'schema_version';\nCOMMIT;");
    conn.execute_batch(&batch).expect("rebuilds the schema-6 tables");
}

/// Turns a closed store file into what a build of schema `version` (1 or 2) wrote: the object
/// memory tables give way to the old `objects` table, version 1 also loses its mailboxes
/// (dropping a table drops its indexes), and `schema_version` says `version`. Process rows,
/// grants, checkpoints and the epoch stay as they are: their tables did not change.
pub(crate) fn downgrade(path: &std::path::Path, version: u32) {
    assert!((1..=4).contains(&version), "only schema 1 to 4 came before");
    let conn = rusqlite::Connection::open(path).expect("opens");
    conn.execute_batch("ALTER TABLE processes DROP COLUMN restart;").expect("drops the restart column");
    if version == 4 {
        conn.execute("UPDATE meta SET value = 4 WHERE key = 'schema_version'", []).expect("writes");
        return;
    }
    conn.execute_batch("DROP TABLE call_keys;").expect("drops");
    if version == 3 {
        conn.execute("UPDATE meta SET value = 3 WHERE key = 'schema_version'", []).expect("writes");
        return;
    }
    for table in V3_OBJECT_TABLES {
        conn.execute_batch(&format!("DROP TABLE {table};")).expect("drops");
    }
    conn.execute_batch(V1_OBJECTS_TABLE).expect("creates");
    if version == 1 {
        conn.execute_batch("DROP TABLE messages;").expect("drops");
    }
    conn.execute("UPDATE meta SET value = ?1 WHERE key = 'schema_version'", [i64::from(version)])
        .expect("writes");
}
