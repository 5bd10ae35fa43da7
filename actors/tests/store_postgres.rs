//! What only the PostgreSQL store has: one owner per database, group commit on a server,
//! fail-stop when the server drops the writer's connection, schema versioning, and errors that
//! name the database without its password. Each test gets a fresh database (`pg_server`).

use agentvisor_actors::kernel::ids::CountingIds;
use agentvisor_actors::kernel::process::ProcessRow;
use agentvisor_actors::store::{Change, CommitTicket, PostgresStore, Store, StoreError};

mod pg_server;
mod store_fixtures;

fn row(ids: &mut CountingIds) -> ProcessRow {
    store_fixtures::launched(ids, None)
}

/// Runs `statements` on the database `url` names, as the superuser, on a thread of its own (the
/// blocking client may not run inside a tokio runtime).
fn sql(url: &str, statements: &str) {
    let url = url.to_string();
    let statements = statements.to_string();
    std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connects");
        client.batch_execute(&statements).expect("the statements run");
    })
    .join()
    .expect("the statements ran");
}

/// The name of the database in `url`.
fn database_name(url: &str) -> String {
    let path = url.split('?').next().unwrap_or(url);
    path.rsplit('/').next().unwrap_or_default().to_string()
}

async fn resolve_all(tickets: Vec<CommitTicket>) -> Vec<Result<(), StoreError>> {
    let mut out = Vec::new();
    for ticket in tickets {
        out.push(ticket.await.map(drop));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_change_sets_share_one_transaction() {
    let Some(url) = pg_server::fresh_database() else { return };
    let store = PostgresStore::open(&url).expect("opens");
    let before = store.commits_so_far();
    let hold = store.hold_writer();
    let mut ids = CountingIds::new(1);
    let rows: Vec<ProcessRow> = (0..200).map(|_| row(&mut ids)).collect();
    let tickets: Vec<CommitTicket> =
        rows.iter().map(|r| store.submit(vec![Change::PutProcess(r.clone())])).collect();
    drop(hold);
    assert!(resolve_all(tickets).await.iter().all(Result::is_ok));
    assert_eq!(
        store.commits_so_far() - before,
        1,
        "everything queued before the writer started fits one group"
    );
    for r in &rows {
        assert_eq!(store.process(r.pid), Ok(Some(r.clone())));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_runtime_owns_a_database_and_a_view_only_reads() {
    let Some(url) = pg_server::fresh_database() else { return };
    let mut ids = CountingIds::new(2);
    let first = row(&mut ids);
    let owner = PostgresStore::open(&url).expect("opens");
    owner.submit(vec![Change::PutProcess(first.clone())]).await.expect("commits");

    let Err(second) = PostgresStore::open(&url) else { panic!("a second owner was let in") };
    assert!(matches!(&second, StoreError::OwnedElsewhere { path } if !path.is_empty()), "{second:?}");
    let view = PostgresStore::open_read_only(&url).expect("a view opens beside the owner");
    assert!(!view.is_writable());
    assert_eq!(view.process(first.pid), Ok(Some(first.clone())));
    assert_eq!(view.submit(vec![Change::PutProcess(row(&mut ids))]).await, Err(StoreError::ReadOnly));
    assert_eq!(view.begin_epoch(), Err(StoreError::ReadOnly));

    // Closing the owner lets the next one in, which reads everything committed.
    owner.close();
    assert!(!owner.is_writable());
    let next = PostgresStore::open(&url).expect("opens once the owner closed");
    assert_eq!(next.process(first.pid), Ok(Some(first)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_writer_connection_fail_stops_the_store() {
    let Some(url) = pg_server::fresh_database() else { return };
    let Some(admin) = pg_server::server_url() else { return };
    let mut ids = CountingIds::new(3);
    let kept = row(&mut ids);
    let lost = row(&mut ids);
    let store = PostgresStore::open(&url).expect("opens");
    let mut failures = store.failures().expect("the store reports its failures");
    store.submit(vec![Change::PutProcess(kept.clone())]).await.expect("commits");

    // The server ends every session of the database but the admin's: the writer's too.
    let name = database_name(&url);
    sql(
        &admin,
        &format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}' AND pid <> pg_backend_pid()"
        ),
    );
    let refused = store.submit(vec![Change::PutProcess(lost.clone())]).await;
    assert!(matches!(refused, Err(StoreError::Write(_))), "{refused:?}");
    failures.wait_for(Option::is_some).await.expect("the watch reports the fail-stop");
    assert!(!store.is_writable());
    let later = store.submit(vec![Change::PutProcess(row(&mut ids))]).await;
    assert!(matches!(later, Err(StoreError::FailStopped { .. })), "{later:?}");
    // Reads open new connections, and show only what committed.
    assert_eq!(store.process(kept.pid), Ok(Some(kept.clone())));
    assert_eq!(store.process(lost.pid), Ok(None));
    drop(store);

    let reopened = PostgresStore::open(&url).expect("reopens");
    assert!(reopened.is_writable());
    reopened.submit(vec![Change::PutProcess(lost.clone())]).await.expect("commits again");
    assert_eq!(reopened.process(lost.pid), Ok(Some(lost)));
}

#[tokio::test]
async fn a_newer_schema_is_refused() {
    let Some(url) = pg_server::fresh_database() else { return };
    drop(PostgresStore::open(&url).expect("creates the schema"));
    sql(&url, "UPDATE meta SET value = 99 WHERE key = 'schema_version'");
    for opened in [PostgresStore::open(&url).err(), PostgresStore::open_read_only(&url).err()] {
        assert!(matches!(opened, Some(StoreError::SchemaTooNew { found: 99, .. })), "{opened:?}");
    }
}

#[tokio::test]
async fn an_empty_database_opens_read_only_as_being_created() {
    let Some(url) = pg_server::fresh_database() else { return };
    let opened = PostgresStore::open_read_only(&url).err();
    assert!(matches!(opened, Some(StoreError::BeingCreated { .. })), "{opened:?}");
}

#[tokio::test]
async fn an_unreachable_server_is_an_open_error_without_the_password() {
    // Port 1 on loopback: nothing listens there.
    let url = "postgresql://agent:s3cret@127.0.0.1:1/agentvisor?connect_timeout=5";
    let Err(error) = PostgresStore::open(url) else { panic!("opened a store on a closed port") };
    let StoreError::Open { path, message } = &error else { panic!("{error:?}") };
    assert_eq!(path, "postgresql://agent:***@127.0.0.1:1/agentvisor?connect_timeout=5");
    assert!(!error.to_string().contains("s3cret"), "{error}");
    assert!(!message.is_empty());
}
