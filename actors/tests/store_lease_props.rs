//! Property: however nodes open, hang, die and write in turn on one PostgreSQL database, only
//! the node holding the latest claim ever commits (no two live nodes own the store), and every
//! acknowledged change is there at the end.

use agentvisor_actors::kernel::ids::CountingIds;
use agentvisor_actors::kernel::process::ProcessRow;
use agentvisor_actors::store::{Change, NodeLease, PostgresStore, Store, StoreError};
use proptest::prelude::*;
use std::time::Duration;

mod pg_server;
mod seeded;
mod store_fixtures;

const NODES: usize = 2;
const LEASE: Duration = Duration::from_millis(300);

#[derive(Clone, Debug)]
enum Step {
    /// Node i opens the store (claims it if it can).
    Open(usize),
    /// Node i hangs: it renews its lease no more and writes nothing until it wakes.
    Hang(usize),
    /// Node i wakes from a hang and writes again (its lease is renewed only by its writes).
    Wake(usize),
    /// Node i's process dies: the server ends its writer's session, and its handle is gone.
    Kill(usize),
    /// A whole lease passes.
    LeasePasses,
}

fn step() -> impl Strategy<Value = Step> {
    let node = 0..NODES;
    prop_oneof![
        3 => node.clone().prop_map(Step::Open),
        2 => node.clone().prop_map(Step::Hang),
        2 => node.clone().prop_map(Step::Wake),
        1 => node.prop_map(Step::Kill),
        2 => Just(Step::LeasePasses),
    ]
}

fn config() -> proptest::test_runner::Config {
    seeded::config("store_lease_props", "AGENTVISOR_LEASE_SEED", 0x1ea5e, 16)
}

/// A node's open store, the fence it claimed, and whether it hangs.
struct Open {
    store: PostgresStore,
    fence: u64,
    hung: bool,
}

fn run(url: &str, steps: &[Step]) -> Result<(), TestCaseError> {
    let commit = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let mut nodes: Vec<Option<Open>> = (0..NODES).map(|_| None).collect();
    let mut latest_fence = PostgresStore::owner_of(url).expect("reads").map_or(0, |o| o.fence);
    let mut ids = CountingIds::new(latest_fence + 1);
    let mut acknowledged: Vec<ProcessRow> = Vec::new();
    for step in steps {
        match *step {
            Step::Open(i) if nodes[i].is_none() => {
                let lease = NodeLease::new(format!("n{i}"), LEASE).expect("a valid lease");
                match PostgresStore::open_as(url, &lease) {
                    Ok(store) => {
                        let fence = store.owner().expect("reads").expect("owned").fence;
                        prop_assert!(fence > latest_fence, "a claim did not advance the fence");
                        latest_fence = fence;
                        nodes[i] = Some(Open { store, fence, hung: false });
                    }
                    Err(StoreError::OwnedElsewhere { .. }) => {}
                    Err(other) => prop_assert!(false, "opening failed: {other:?}"),
                }
            }
            Step::Open(_) => {}
            Step::Hang(i) => {
                if let Some(open) = &mut nodes[i] {
                    open.store.stop_renewing();
                    open.hung = true;
                }
            }
            Step::Wake(i) => {
                if let Some(open) = &mut nodes[i] {
                    open.hung = false;
                }
            }
            Step::Kill(i) => {
                if let Some(open) = nodes[i].take() {
                    terminate_writer(url.to_string(), &format!("n{i}"), open.fence);
                    drop(open);
                }
            }
            Step::LeasePasses => std::thread::sleep(LEASE + Duration::from_millis(50)),
        }
        // After every step, every node that does not hang writes.
        for (i, open) in nodes.iter().enumerate() {
            let Some(open) = open.as_ref().filter(|o| !o.hung) else { continue };
            let row = store_fixtures::launched(&mut ids, None);
            match commit.block_on(open.store.submit(vec![Change::PutProcess(row.clone())])) {
                Ok(_) => {
                    prop_assert_eq!(
                        open.fence,
                        latest_fence,
                        "node n{} committed under fence {} after fence {} was claimed",
                        i,
                        open.fence,
                        latest_fence
                    );
                    acknowledged.push(row);
                }
                Err(
                    StoreError::LeaseLost(_)
                    | StoreError::FailStopped { .. }
                    | StoreError::Write(_)
                    | StoreError::Closed,
                ) => {}
                Err(other) => prop_assert!(false, "a write failed unexpectedly: {other:?}"),
            }
        }
    }
    if acknowledged.is_empty() {
        return Ok(());
    }
    let view = PostgresStore::open_read_only(url).expect("a view opens");
    for row in &acknowledged {
        prop_assert_eq!(view.process(row.pid), Ok(Some(row.clone())), "an acknowledged change is missing");
    }
    drop(nodes);
    Ok(())
}

/// Ends the writer session of node `node` if it still owns the store under `fence`, as the
/// server does when the node's process dies, and waits until the session is gone. A plain
/// client on a thread of its own (the blocking client may not run inside a runtime).
fn terminate_writer(url: String, node: &str, fence: u64) {
    let node = node.to_string();
    let fence = i64::try_from(fence).expect("a small fence");
    std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connects");
        client
            .execute(
                "SELECT pg_terminate_backend(session_pid, 10000) FROM owner WHERE node = $1 AND fence = $2",
                &[&node, &fence],
            )
            .expect("terminates");
    })
    .join()
    .expect("the statement ran");
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn only_the_latest_claim_ever_commits(steps in prop::collection::vec(step(), 4..16)) {
        let Some(url) = pg_server::fresh_database() else { return Ok(()) };
        run(&url, &steps)?;
    }
}

/// The interleaving the property is about, always run: a node hangs past its lease, another
/// claims the store, the first wakes and writes.
#[test]
fn a_node_that_wakes_after_another_claimed_never_commits() {
    let Some(url) = pg_server::fresh_database() else { return };
    let steps =
        [Step::Open(0), Step::Hang(0), Step::LeasePasses, Step::Open(1), Step::Wake(0), Step::Open(0)];
    run(&url, &steps).expect("only the latest claim commits");
}
