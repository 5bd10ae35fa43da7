//! `agentvisor node`: one of several runtimes serving the tree kept in one PostgreSQL store.
//!
//! A node waits while another owns the store (its lease runs and its writer is connected),
//! trying to claim it every third of a lease, and at once when the owner stops cleanly (it
//! notifies the release, which the waiting node listens for). Once it owns the store it recovers what the
//! last owner left (running processes come back paused as stale executions and are resumed,
//! never replayed; claimed resumes fail closed; waits re-arm; runnable processes start),
//! serves host requests through its control socket and through the database, and runs the
//! tree until SIGINT or SIGTERM. Stopping shuts the runtime down (live processes paused for
//! the next owner) and ends its lease at once, so a waiting node takes over without waiting
//! for the lease to run out. A node that loses its lease (it was frozen or cut off, and
//! another node claimed the store) stops writing and exits with [`LEASE_LOST_EXIT`].
//! `docs/nodes.md` has the timing.

use super::node_takeover::{self, TakeOver};
use super::{recover, stores};
use agentvisor::actors::runtime::RuntimeError;
use agentvisor::actors::store::{PostgresStore, StoreError};
use agentvisor::control::ControlServer;
use agentvisor::control::database::Changes;
use anyhow::bail;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use tokio::signal::unix::{SignalKind, signal};

/// The exit status of a node that lost its lease to another node.
pub(crate) const LEASE_LOST_EXIT: u8 = 3;

/// Arguments of `agentvisor node`.
#[derive(clap::Args, Debug)]
pub(crate) struct NodeArgs {
    /// Also claim every other shard of the database that has live processes and no live
    /// owner, each served by a node process of this one's (see docs/nodes.md).
    #[arg(long)]
    take_over: bool,
    /// Started by the node with this pid to serve a shard it took over: dies with it.
    #[arg(long, hide = true, value_name = "PID")]
    child_of: Option<u32>,
}

pub(crate) async fn run(state: &Path, args: NodeArgs) -> anyhow::Result<ExitCode> {
    if let Some(parent) = args.child_of {
        node_takeover::die_with(parent)?;
    }
    let Some(url) = stores::url() else {
        bail!(
            "`agentvisor node` serves a tree kept in PostgreSQL: pass --store postgres://… (or set AGENTVISOR_STORE)"
        );
    };
    let lease = stores::node_lease();
    let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate()))
    else {
        bail!("the signal handlers could not be installed");
    };
    let mut standing_by = false;
    // Listening before the first attempt: a release after a refused claim is never missed.
    // Without the listener (it could not connect), the attempts every third of a lease remain.
    let mut releases = Changes::releases(url).await.ok();
    let (rt, warnings) = loop {
        match recover::open_recovered(state, true).await {
            Ok(opened) => break opened,
            Err(e) => {
                let Some((owner, left)) = owned_elsewhere(&e) else { return Err(e) };
                if !standing_by {
                    outln!(
                        "node {} standing by: node {owner} owns {} ({left} ms of its lease left)",
                        lease.node(),
                        stores::describe(state)
                    );
                    standing_by = true;
                }
                let released = async {
                    match releases.as_mut() {
                        Some(heard) => heard.next().await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    () = tokio::time::sleep(lease.renew_every()) => {}
                    heard = released => if heard.is_none() { releases = None },
                    _ = int.recv() => return Ok(ExitCode::SUCCESS),
                    _ = term.recv() => return Ok(ExitCode::SUCCESS),
                }
            }
        }
    };
    for line in warnings {
        eprintln!("{line}");
    }
    let fence = PostgresStore::owner_of(url)?.map_or(0, |o| o.fence);
    outln!("node {} owns {} (fence {fence})", lease.node(), stores::describe(state));
    recover::report(&rt, &stores::describe(state), true).await?;
    rt.release_hold();
    let rt = Arc::new(rt);
    let control = ControlServer::start(Arc::clone(&rt))?;
    outln!("node {} serving", lease.node());
    let mut take_over = match (args.take_over, stores::base_url()) {
        (true, Some(base)) => Some(TakeOver::new(base, stores::shard(), lease.clone(), state)),
        _ => None,
    };
    let mut failures = rt.store().failures();
    let mut look = tokio::time::interval(lease.renew_every());
    let lost = loop {
        let failed = async {
            match failures.as_mut() {
                Some(failures) => match failures.wait_for(Option::is_some).await {
                    Ok(cause) => cause.clone(),
                    // The store is gone: stop as on a signal.
                    Err(_) => None,
                },
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = int.recv() => break None,
            _ = term.recv() => break None,
            cause = failed => break cause,
            _ = look.tick(), if take_over.is_some() => {
                if let Some(take_over) = take_over.as_mut() {
                    take_over.look()?;
                }
            }
        }
    };
    if let Some(take_over) = take_over {
        tokio::task::block_in_place(|| take_over.stop());
    }
    control.stop().await;
    if let Some(cause) = lost {
        eprintln!("agentvisor: node {} stopped: {cause}", lease.node());
        return Ok(ExitCode::from(LEASE_LOST_EXIT));
    }
    outln!("node {} stopping: live processes are paused for the next owner", lease.node());
    match Arc::try_unwrap(rt) {
        Ok(rt) => rt.shutdown().await?,
        Err(_) => bail!("the runtime was still in use when the node stopped"),
    }
    outln!("node {} stopped", lease.node());
    Ok(ExitCode::SUCCESS)
}

/// The owning node and what is left of its lease, when `e` is a refusal because another
/// node owns the store.
pub(crate) fn owned_elsewhere(e: &anyhow::Error) -> Option<(String, u64)> {
    e.chain().find_map(|cause| {
        let store =
            cause.downcast_ref::<StoreError>().or_else(|| match cause.downcast_ref::<RuntimeError>() {
                Some(RuntimeError::Store(store)) => Some(store),
                _ => None,
            });
        match store {
            Some(StoreError::OwnedElsewhere { node, lease_left_ms, .. }) => {
                Some((node.clone(), *lease_left_ms))
            }
            _ => None,
        }
    })
}
