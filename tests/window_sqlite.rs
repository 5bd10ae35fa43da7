//! `SqliteChunkStore` through the public surface: puts (one by one and `put_all`) follow the
//! store contract, a window survives closing and reopening the file, a fork's snapshot writes
//! only its new chunks, a damaged row is refused on restore, and
//! a file from a newer build is refused at open, a file of the previous schema is migrated;
//! and the same window through the PostgreSQL chunk store.
//!
//! The reopen test uses a local message type: `Window<Message>` does not restore yet (see
//! `a_window_of_messages_survives_closing_and_reopening_the_file`).

use agentvisor::agent::brain::{Message, ToolCall};
use agentvisor::agent::window::{
    CHUNK_ITEMS_MAX, ChunkStore, PostgresChunkStore, RestoreError, SqliteChunkStore, Window, WindowSnapshot,
};
use std::path::Path;

#[path = "../actors/tests/pg_server/mod.rs"]
mod pg_server;

const FILE: &str = "chunks.sqlite";

/// 1000 messages of every role, so chunks hold all of the shapes a real window does.
fn conversation(n: usize) -> Window<Message> {
    let mut window = Window::new();
    for i in 0..n {
        let message = match i % 4 {
            0 => Message::user(format!("question {i}")),
            1 => Message::Assistant(agentvisor::agent::brain::AssistantMessage {
                text: Some(format!("let me look ({i})")),
                tool_calls: vec![ToolCall {
                    id: format!("call-{i}"),
                    name: "read_object".into(),
                    arguments: serde_json::json!({"name": "notes", "i": i}),
                }],
            }),
            2 => Message::tool_result(format!("call-{}", i - 1), format!("{{\"payload\": {i}}}")),
            _ => Message::note(format!("note {i}")),
        };
        window.push(message).expect("below the bound");
        if i % 4 == 3 {
            window.next_turn();
        }
    }
    window
}

fn row_count(path: &Path) -> i64 {
    let conn = rusqlite::Connection::open(path).expect("open raw");
    conn.query_row("SELECT COUNT(*) FROM window_chunks", [], |r| r.get(0)).expect("count")
}

/// A second item type: windows are generic over what they hold.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
enum PlainMessage {
    User(String),
    Assistant { text: Option<String>, tool_calls: Vec<(String, String, String)> },
    Tool { tool_call_id: String, text: String },
    Note(String),
}

fn plain_conversation(n: usize) -> Window<PlainMessage> {
    let mut window = Window::new();
    for i in 0..n {
        let message = match i % 4 {
            0 => PlainMessage::User(format!("question {i}")),
            1 => PlainMessage::Assistant {
                text: Some(format!("let me look ({i})")),
                tool_calls: vec![(format!("call-{i}"), "read_object".into(), format!("{{\"i\": {i}}}"))],
            },
            2 => PlainMessage::Tool { tool_call_id: format!("call-{}", i - 1), text: format!("payload {i}") },
            _ => PlainMessage::Note(format!("note {i}")),
        };
        window.push(message).expect("below the bound");
        if i % 4 == 3 {
            window.next_turn();
        }
    }
    window
}

/// Snapshots `window`, closes the store, reopens the file and restores.
fn round_trip_through_the_file<M>(window: &Window<M>) -> Result<Window<M>, RestoreError>
where
    M: Clone + PartialEq + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(FILE);
    let bytes = {
        let store = SqliteChunkStore::open(&path).expect("open");
        let snapshot = window.snapshot(&store).expect("snapshot");
        let chunks = window.len() / CHUNK_ITEMS_MAX;
        assert_eq!(snapshot.chunk_count(), chunks);
        assert_eq!(store.record_count().expect("count"), 2 * chunks as u64, "a chunk and a link each");
        snapshot.encode().expect("encode")
    };
    let store = SqliteChunkStore::open(&path).expect("reopen");
    let snapshot = WindowSnapshot::<M>::decode(&bytes)?;
    Window::restore(snapshot, &store)
}

#[test]
fn a_window_survives_closing_and_reopening_the_file() {
    let window = plain_conversation(1000);
    let restored = round_trip_through_the_file(&window).expect("restore");
    assert_eq!(restored, window);
    assert_eq!(restored.turn(), 250);
    assert_eq!(restored.len(), 1000);
}

/// `Message` is internally tagged (`"role"`) and a tool call's arguments are arbitrary JSON:
/// the chunk items are JSON so that both come back.
#[test]
fn a_window_of_messages_survives_closing_and_reopening_the_file() {
    let window = conversation(1000);
    let restored = round_trip_through_the_file(&window).expect("restore");
    assert_eq!(restored, window);
    assert_eq!(restored.turn(), 250);
}

#[test]
fn a_forks_snapshot_writes_only_its_new_chunks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(FILE);
    let store = SqliteChunkStore::open(&path).expect("open");
    let original = conversation(1000);
    original.snapshot(&store).expect("snapshot");
    let before = row_count(&path);
    assert_eq!(before, 2 * (1000 / CHUNK_ITEMS_MAX) as i64, "a chunk and a link each");

    let mut fork = original.fork();
    fork.push(Message::note("you are a fork")).expect("push");
    fork.snapshot(&store).expect("snapshot");
    assert_eq!(row_count(&path), before, "the fork shares every sealed chunk and link");

    // Enough pushes to seal the tail (1000 % 64 = 40 items, plus the note) and one chunk more.
    for i in 0..(2 * CHUNK_ITEMS_MAX - 41) {
        fork.push(Message::user(format!("fork message {i}"))).expect("push");
    }
    assert_eq!(fork.chunk_count(), original.chunk_count() + 2);
    let forked = fork.snapshot(&store).expect("snapshot");
    assert_eq!(row_count(&path), before + 4, "only the two chunks the fork sealed and their links");
    assert_eq!(forked.chunk_count(), original.chunk_count() + 2);
    let shared = original.sealed_chunks().expect("ids");
    let fork_chunks = fork.sealed_chunks().expect("ids");
    assert!(shared.iter().zip(&fork_chunks).all(|(a, b)| a.id() == b.id()));
    // A second snapshot writes nothing: puts are skipped and INSERT OR IGNORE besides.
    original.snapshot(&store).expect("snapshot");
    fork.snapshot(&store).expect("snapshot");
    assert_eq!(row_count(&path), before + 4);
    assert_eq!(Window::restore(forked, &store).expect("restore"), fork);
}

#[test]
fn a_damaged_row_is_refused_on_restore() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(FILE);
    let store = SqliteChunkStore::open(&path).expect("open");
    let window = conversation(1000);
    let snapshot = window.snapshot(&store).expect("snapshot");
    // The first chunk: restore checks each chunk's hash before it decodes it.
    let victim = window.sealed_chunks().expect("ids")[0].id();
    let stored = store.get(&victim).expect("get").expect("stored");
    let mut damaged = stored.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 0x20;
    {
        let raw = rusqlite::Connection::open(&path).expect("open raw");
        let changed = raw
            .execute(
                "UPDATE window_chunks SET bytes = ?1 WHERE id = ?2",
                rusqlite::params![damaged, victim.as_bytes().as_slice()],
            )
            .expect("update");
        assert_eq!(changed, 1);
    }
    assert_eq!(store.get(&victim).expect("get"), Some(damaged), "the store returns what is on disk");
    match Window::restore(snapshot, &store) {
        Err(RestoreError::CorruptChunk { id, .. }) => assert_eq!(id, victim),
        other => panic!("expected a corrupt chunk, got {other:?}"),
    }
}

/// `put_all` stores every record, one already stored and one given twice included, and an
/// empty call stores nothing.
fn put_all_follows_the_contract(store: &dyn ChunkStore) {
    let records: Vec<Vec<u8>> = ["first", "second", "third"].iter().map(|t| t.as_bytes().to_vec()).collect();
    let ids: Vec<_> = records.iter().map(|bytes| agentvisor::agent::window::ChunkId::of(bytes)).collect();
    store.put(ids[0], records[0].clone()).expect("put");
    let mut batch: Vec<_> = ids.iter().copied().zip(records.iter().cloned()).collect();
    batch.push((ids[2], records[2].clone()));
    store.put_all(batch).expect("put_all");
    for (id, bytes) in ids.iter().zip(&records) {
        assert_eq!(store.get(id).expect("get").as_ref(), Some(bytes), "{id} is stored");
    }
    store.put_all(Vec::new()).expect("an empty put_all");
}

#[test]
fn on_postgres_a_window_survives_reopening_and_puts_follow_the_contract() {
    let Some(url) = pg_server::fresh_database() else { return };
    let window = conversation(1000);
    let bytes = {
        let store = PostgresChunkStore::open(&url).expect("open");
        window.snapshot(&store).expect("snapshot").encode().expect("encode")
    };
    let store = PostgresChunkStore::open(&url).expect("reopen");
    let restored = Window::restore(WindowSnapshot::<Message>::decode(&bytes).expect("decode"), &store);
    assert_eq!(restored.expect("restore"), window);

    let chunk = b"some chunk".to_vec();
    let id = agentvisor::agent::window::ChunkId::of(&chunk);
    assert!(!store.contains(&id).expect("contains"));
    assert_eq!(store.get(&id).expect("get"), None);
    store.put(id, chunk.clone()).expect("put");
    store.put(id, chunk.clone()).expect("a second put of the same chunk is fine");
    assert!(store.contains(&id).expect("contains"));
    assert_eq!(store.get(&id).expect("get"), Some(chunk));
    put_all_follows_the_contract(&store);
}

#[test]
fn put_get_and_contains_follow_the_contract() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteChunkStore::open(dir.path().join(FILE)).expect("open");
    let bytes = b"some chunk".to_vec();
    let id = agentvisor::agent::window::ChunkId::of(&bytes);
    assert!(!store.contains(&id).expect("contains"));
    assert_eq!(store.get(&id).expect("get"), None);
    store.put(id, bytes.clone()).expect("put");
    store.put(id, bytes.clone()).expect("a second put of the same chunk is fine");
    assert!(store.contains(&id).expect("contains"));
    assert_eq!(store.get(&id).expect("get"), Some(bytes));
    assert_eq!(store.record_count().expect("count"), 1);
    put_all_follows_the_contract(&store);
    assert_eq!(store.record_count().expect("count"), 4);
}

#[test]
fn the_file_is_wal_and_a_newer_schema_is_refused() {
    fn is_send_sync<T: Send + Sync>() {}
    is_send_sync::<SqliteChunkStore>();

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(FILE);
    drop(SqliteChunkStore::open(&path).expect("open"));
    let raw = rusqlite::Connection::open(&path).expect("open raw");
    let mode: String = raw.pragma_query_value(None, "journal_mode", |r| r.get(0)).expect("mode");
    assert_eq!(mode, "wal");
    let version: i64 = raw.pragma_query_value(None, "user_version", |r| r.get(0)).expect("version");
    assert_eq!(version, agentvisor::agent::window::CHUNK_STORE_SCHEMA_VERSION);
    let newer = agentvisor::agent::window::CHUNK_STORE_SCHEMA_VERSION + 1;
    raw.pragma_update(None, "user_version", newer).expect("set a newer version");
    drop(raw);
    let error = SqliteChunkStore::open(&path).expect_err("a newer file is refused");
    let text = error.to_string();
    assert!(text.contains(&format!("schema version {newer}")), "{text}");
    assert!(text.contains("newer agentvisor"), "{text}");
}

/// A file of schema version 1 (the chunks kept in a `WITHOUT ROWID` table) is rewritten to
/// version 2 at open: every chunk is still there, a window restores from it, and the table
/// has a rowid, so its key index holds ids only.
#[test]
fn a_version_1_file_is_migrated_with_every_chunk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let current = dir.path().join("current.sqlite");
    let old = dir.path().join(FILE);
    let window = conversation(1000);
    let snapshot = window.snapshot(&SqliteChunkStore::open(&current).expect("open")).expect("snapshot");
    {
        let raw = rusqlite::Connection::open(&old).expect("open raw");
        raw.execute_batch(&format!(
            "CREATE TABLE window_chunks (id BLOB PRIMARY KEY, bytes BLOB NOT NULL) WITHOUT ROWID;
             ATTACH DATABASE '{}' AS current;
             INSERT INTO window_chunks SELECT id, bytes FROM current.window_chunks;
             DETACH DATABASE current;
             PRAGMA user_version = 1;",
            current.display()
        ))
        .expect("write a version 1 file");
    }
    let records = 2 * (window.len() / CHUNK_ITEMS_MAX) as i64;
    assert_eq!(row_count(&old), records);

    let store = SqliteChunkStore::open(&old).expect("a version 1 file opens");
    assert_eq!(store.record_count().expect("count"), records as u64);
    assert_eq!(Window::restore(snapshot, &store).expect("restore from the migrated file"), window);
    drop(store);
    let raw = rusqlite::Connection::open(&old).expect("open raw");
    let version: i64 = raw.pragma_query_value(None, "user_version", |r| r.get(0)).expect("version");
    assert_eq!(version, agentvisor::agent::window::CHUNK_STORE_SCHEMA_VERSION);
    let sql: String = raw
        .query_row("SELECT sql FROM sqlite_master WHERE name = 'window_chunks'", [], |r| r.get(0))
        .expect("the table");
    assert!(!sql.contains("WITHOUT ROWID"), "{sql}");
    let tables: i64 = raw
        .query_row("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'", [], |r| r.get(0))
        .expect("tables");
    assert_eq!(tables, 1, "the version 1 table is gone");
}
