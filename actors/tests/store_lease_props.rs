//! Property: however nodes open, hang, die and write in turn on the shards of one PostgreSQL
//! database, on each shard only the node holding its latest claim ever commits (no two live
//! nodes own a shard, and what happens on one shard does not disturb another), and every
//! acknowledged change is there at the end, in its shard.

use agentvisor_actors::kernel::ids::CountingIds;
use agentvisor_actors::kernel::process::ProcessRow;
use agentvisor_actors::store::{Change, MAIN_SHARD, NodeLease, PostgresStore, Store, StoreError, shard_url};
use proptest::prelude::*;
use std::time::Duration;

mod pg_server;
mod seeded;
mod store_fixtures;

/// Nodes per shard.
const NODES: usize = 2;
/// The shards the nodes open.
const SHARDS: [&str; 2] = [MAIN_SHARD, "s1"];
/// Every (node, shard) pair, numbered: a node's handle on one shard.
const HANDLES: usize = NODES * SHARDS.len();
const LEASE: Duration = Duration::from_millis(300);

/// The shard handle `h` is on.
fn shard_of(h: usize) -> usize {
    h / NODES
}

/// The name handle `h`'s node has on its shard.
fn name_of(h: usize) -> String {
    format!("n{}", h % NODES)
}

#[derive(Clone, Debug)]
enum Step {
    /// Handle h opens its shard (claims it if it can).
    Open(usize),
    /// Handle h hangs: it renews its lease no more and writes nothing until it wakes.
    Hang(usize),
    /// Handle h wakes from a hang and writes again (its lease is renewed only by its writes).
    Wake(usize),
    /// Handle h's process dies: the server ends its writer's session, and its handle is gone.
    Kill(usize),
    /// A whole lease passes.
    LeasePasses,
}

fn step() -> impl Strategy<Value = Step> {
    let node = 0..HANDLES;
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
    let urls: Vec<String> = SHARDS.iter().map(|shard| shard_url(url, shard).expect("a shard URL")).collect();
    let mut nodes: Vec<Option<Open>> = (0..HANDLES).map(|_| None).collect();
    let mut latest_fence: Vec<u64> =
        urls.iter().map(|url| PostgresStore::owner_of(url).expect("reads").map_or(0, |o| o.fence)).collect();
    let mut ids = CountingIds::new(latest_fence.iter().sum::<u64>() + 1);
    let mut acknowledged: Vec<(usize, ProcessRow)> = Vec::new();
    for step in steps {
        match *step {
            Step::Open(h) if nodes[h].is_none() => {
                let lease = NodeLease::new(name_of(h), LEASE).expect("a valid lease");
                let k = shard_of(h);
                match PostgresStore::open_as(&urls[k], &lease) {
                    Ok(store) => {
                        let fence = store.owner().expect("reads").expect("owned").fence;
                        prop_assert!(fence > latest_fence[k], "a claim did not advance the fence");
                        latest_fence[k] = fence;
                        nodes[h] = Some(Open { store, fence, hung: false });
                    }
                    Err(StoreError::OwnedElsewhere { .. }) => {}
                    Err(other) => prop_assert!(false, "opening failed: {other:?}"),
                }
            }
            Step::Open(_) => {}
            Step::Hang(h) => {
                if let Some(open) = &mut nodes[h] {
                    open.store.stop_renewing();
                    open.hung = true;
                }
            }
            Step::Wake(h) => {
                if let Some(open) = &mut nodes[h] {
                    open.hung = false;
                }
            }
            Step::Kill(h) => {
                if let Some(open) = nodes[h].take() {
                    terminate_writer(urls[shard_of(h)].clone(), &name_of(h), open.fence);
                    drop(open);
                }
            }
            Step::LeasePasses => std::thread::sleep(LEASE + Duration::from_millis(50)),
        }
        // After every step, every handle that does not hang writes.
        for (h, open) in nodes.iter().enumerate() {
            let Some(open) = open.as_ref().filter(|o| !o.hung) else { continue };
            let row = store_fixtures::launched(&mut ids, None);
            match commit.block_on(open.store.submit(vec![Change::PutProcess(row.clone())])) {
                Ok(_) => {
                    let k = shard_of(h);
                    prop_assert_eq!(
                        open.fence,
                        latest_fence[k],
                        "{} committed on shard {} under fence {} after fence {} was claimed",
                        name_of(h),
                        SHARDS[k],
                        open.fence,
                        latest_fence[k]
                    );
                    acknowledged.push((k, row));
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
    for (k, url) in urls.iter().enumerate() {
        let mine: Vec<&ProcessRow> =
            acknowledged.iter().filter(|(at, _)| *at == k).map(|(_, row)| row).collect();
        if mine.is_empty() {
            continue;
        }
        let view = PostgresStore::open_read_only(url).expect("a view opens");
        for row in mine {
            prop_assert_eq!(
                view.process(row.pid),
                Ok(Some(row.clone())),
                "an acknowledged change is missing"
            );
        }
        for (_, row) in acknowledged.iter().filter(|(at, _)| *at != k) {
            prop_assert_eq!(view.process(row.pid), Ok(None), "a change of another shard is in this one");
        }
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

/// Across shards: while node n0 hangs past its lease on the main shard, its handle on s1 keeps
/// writing (and so its lease there); n1 claims the main shard but not s1, and n0's main-shard
/// handle never commits once it wakes.
#[test]
fn a_claim_on_one_shard_leaves_another_alone() {
    let Some(url) = pg_server::fresh_database() else { return };
    let steps = [
        Step::Open(0),
        Step::Open(2),
        Step::Hang(0),
        Step::LeasePasses,
        Step::Open(1),
        Step::Open(3),
        Step::Wake(0),
    ];
    run(&url, &steps).expect("on each shard only the latest claim commits");
    let last = |shard: &str| {
        let owner = PostgresStore::owner_of(&shard_url(&url, shard).expect("a shard URL")).expect("reads");
        owner.map(|o| (o.node, o.fence))
    };
    assert_eq!(last(MAIN_SHARD), Some(("n1".to_string(), 2)), "n1 claimed the main shard after n0's lease");
    assert_eq!(last("s1"), Some(("n0".to_string(), 1)), "s1 stayed n0's: its lease there was renewed");
}
