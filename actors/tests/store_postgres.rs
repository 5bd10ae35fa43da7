//! What only the PostgreSQL store has: one owner per database under a lease, claims when the
//! owner dies or its lease runs out, fencing of a node that lost its lease, group commit on a
//! server, fail-stop when the server drops the writer's connection, schema versioning, and
//! errors that name the database without its password. Each test gets a fresh database
//! (`pg_server`).

use agentvisor_actors::kernel::ids::CountingIds;
use agentvisor_actors::kernel::process::ProcessRow;
use agentvisor_actors::store::{Change, CommitTicket, NodeLease, PostgresStore, Store, StoreError};
use std::time::Duration;

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
async fn a_refused_set_of_several_changes_leaves_nothing_and_the_group_commits_once() {
    let Some(url) = pg_server::fresh_database() else { return };
    let store = PostgresStore::open(&url).expect("opens");
    store_fixtures::refused_set_in_a_group(&store, || store.hold_writer(), || store.commits_so_far()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_runtime_owns_a_database_and_a_view_only_reads() {
    let Some(url) = pg_server::fresh_database() else { return };
    let mut ids = CountingIds::new(2);
    let first = row(&mut ids);
    let owner = PostgresStore::open_as(&url, &lease("first", 60_000)).expect("opens");
    owner.submit(vec![Change::PutProcess(first.clone())]).await.expect("commits");

    let Err(second) = PostgresStore::open(&url) else { panic!("a second owner was let in") };
    assert!(
        matches!(&second, StoreError::OwnedElsewhere { path, node, lease_left_ms }
            if !path.is_empty() && node == "first" && *lease_left_ms > 0),
        "{second:?}"
    );
    let info = PostgresStore::owner_of(&url).expect("reads the owner").expect("there is one");
    assert_eq!((info.node.as_str(), info.fence), ("first", 1));
    assert!(info.is_live());
    let view = PostgresStore::open_read_only(&url).expect("a view opens beside the owner");
    assert!(!view.is_writable());
    assert_eq!(view.process(first.pid), Ok(Some(first.clone())));
    assert_eq!(view.submit(vec![Change::PutProcess(row(&mut ids))]).await, Err(StoreError::ReadOnly));
    assert_eq!(view.begin_epoch(), Err(StoreError::ReadOnly));

    // Closing the owner ends its lease at once and lets the next one in, which reads
    // everything committed.
    owner.close();
    assert!(!owner.is_writable());
    assert!(!PostgresStore::owner_is_live(&url).expect("reads the owner"));
    let next = PostgresStore::open(&url).expect("opens once the owner closed");
    assert_eq!(next.process(first.pid), Ok(Some(first)));
    assert_eq!(next.owner().expect("reads the owner").map(|o| o.fence), Some(2));
}

fn lease(node: &str, ms: u64) -> NodeLease {
    NodeLease::new(node, Duration::from_millis(ms)).expect("a valid lease")
}

/// Opens `url` as `node`, trying again each time the owner's lease has run out, at most
/// `tries` times: what `agentvisor node` does while another node owns the database.
fn claim_when_free(url: &str, node: &NodeLease, tries: u32) -> PostgresStore {
    for _ in 0..tries {
        match PostgresStore::open_as(url, node) {
            Ok(store) => return store,
            // The lease ends on the server's clock; its rest is the only thing to wait for.
            Err(StoreError::OwnedElsewhere { lease_left_ms, .. }) => {
                std::thread::sleep(Duration::from_millis(lease_left_ms + 20))
            }
            Err(other) => panic!("{other:?}"),
        }
    }
    panic!("{} never claimed the database", node.node())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_lease_was_taken_has_its_next_write_refused() {
    let Some(url) = pg_server::fresh_database() else { return };
    let mut ids = CountingIds::new(4);
    let (before, after, zombie_write) = (row(&mut ids), row(&mut ids), row(&mut ids));
    let zombie = PostgresStore::open_as(&url, &lease("zombie", 300)).expect("opens");
    zombie.submit(vec![Change::PutProcess(before.clone())]).await.expect("commits");
    let mut failures = zombie.failures().expect("the store reports its failures");

    // The zombie hangs: it renews nothing more, its lease runs out, another node claims.
    zombie.stop_renewing();
    let survivor = tokio::task::block_in_place(|| claim_when_free(&url, &lease("survivor", 300), 50));
    survivor.submit(vec![Change::PutProcess(after.clone())]).await.expect("the new owner commits");

    // The zombie wakes and writes: refused by the fence, and its store stops for good.
    let refused = zombie.submit(vec![Change::PutProcess(zombie_write.clone())]).await;
    let Err(StoreError::LeaseLost(cause)) = &refused else { panic!("{refused:?}") };
    assert!(cause.contains("node survivor holds it now (fence 2)"), "{cause}");
    failures.wait_for(Option::is_some).await.expect("the watch reports the fail-stop");
    assert!(!zombie.is_writable());
    assert_eq!(zombie.begin_epoch().map(drop), Err(StoreError::FailStopped { cause: cause.clone() }));
    assert_eq!(survivor.process(before.pid), Ok(Some(before)));
    assert_eq!(survivor.process(after.pid), Ok(Some(after)));
    assert_eq!(survivor.process(zombie_write.pid), Ok(None), "nothing of the zombie's write landed");
    // Its clean close does not end the survivor's lease.
    zombie.close();
    assert_eq!(
        survivor.owner().expect("reads").map(|o| (o.is_live(), o.node)),
        Some((true, "survivor".into()))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_owner_is_claimed_at_once_by_exactly_one_of_many_nodes() {
    let Some(url) = pg_server::fresh_database() else { return };
    let mut ids = CountingIds::new(5);
    let kept = row(&mut ids);
    // An hour's lease: only the owner's death can let another node in.
    let dead = PostgresStore::open_as(&url, &lease("dead", 3_600_000)).expect("opens");
    dead.submit(vec![Change::PutProcess(kept.clone())]).await.expect("commits");
    // The owner's process dies: the server ends its writer's session.
    sql(&url, "SELECT pg_terminate_backend(session_pid, 10000) FROM owner");
    let claims: Vec<Result<PostgresStore, StoreError>> = tokio::task::block_in_place(|| {
        std::thread::scope(|scope| {
            let tries: Vec<_> = (0..8)
                .map(|i| {
                    let url = &url;
                    scope.spawn(move || PostgresStore::open_as(url, &lease(&format!("n{i}"), 3_600_000)))
                })
                .collect();
            tries.into_iter().map(|t| t.join().expect("the claim ran")).collect()
        })
    });
    let winners: Vec<&PostgresStore> = claims.iter().filter_map(|c| c.as_ref().ok()).collect();
    assert_eq!(
        winners.len(),
        1,
        "exactly one node claims: {claims:?}",
        claims = claims.iter().map(|c| c.as_ref().err()).collect::<Vec<_>>()
    );
    let owner = winners[0].owner().expect("reads").expect("owned");
    assert_eq!(owner.fence, 2);
    for refused in claims.iter().filter_map(|c| c.as_ref().err()) {
        assert!(
            matches!(refused, StoreError::OwnedElsewhere { node, .. } if *node == owner.node),
            "{refused:?}"
        );
    }
    assert_eq!(winners[0].process(kept.pid), Ok(Some(kept)));
    drop(dead);
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
