//! `agentvisor shards`: the shards of a PostgreSQL store, the node serving each and their
//! processes, read from anywhere.

use agentvisor::actors::store::{MAIN_SHARD, ShardInfo, shards};
use anyhow::{Context, bail};
use serde_json::json;
use std::process::ExitCode;

/// Arguments of `agentvisor shards`.
#[derive(clap::Args, Debug)]
pub(crate) struct ShardsArgs {
    /// Print JSON: one object per shard.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(args: ShardsArgs) -> anyhow::Result<ExitCode> {
    let Some(base) = super::stores::base_url() else {
        bail!(
            "`agentvisor shards` lists the shards of a PostgreSQL store: pass --store postgres://… (or set AGENTVISOR_STORE)"
        );
    };
    let found = shards(base).with_context(|| {
        format!("failed to list the shards of {}", super::stores::describe_shard(base, MAIN_SHARD))
    })?;
    if args.json {
        let rows: Vec<_> = found.iter().map(as_json).collect();
        outln!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    if found.is_empty() {
        eprintln!(
            "no shard in {} yet: a command that starts processes creates one",
            super::stores::describe_shard(base, MAIN_SHARD)
        );
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{:<20}  {:<24}  {:>5}  {:>10}  {:>8}  {:>9}",
        "SHARD",
        "NODE",
        "FENCE",
        "LEASE_LEFT",
        "LIVE",
        "PROCESSES"
    );
    for shard in &found {
        let (node, fence, left) = match &shard.owner {
            Some(owner) if shard.is_served() => {
                (owner.node.clone(), owner.fence.to_string(), format!("{} ms", owner.lease_left.as_millis()))
            }
            Some(owner) => (format!("(none; {} last)", owner.node), owner.fence.to_string(), "-".to_string()),
            None => ("(none)".to_string(), "-".to_string(), "-".to_string()),
        };
        outln!(
            "{:<20}  {:<24}  {:>5}  {:>10}  {:>8}  {:>9}",
            shard.name,
            super::output::cell(&node, 24),
            fence,
            left,
            shard.live,
            shard.processes
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn as_json(shard: &ShardInfo) -> serde_json::Value {
    json!({
        "shard": shard.name,
        "node": shard.is_served().then(|| shard.owner.as_ref().map(|o| &o.node)).flatten(),
        "last_node": shard.owner.as_ref().map(|o| &o.node),
        "fence": shard.owner.as_ref().map(|o| o.fence),
        "lease_left_ms": shard.owner.as_ref().map(|o| o.lease_left.as_millis() as u64),
        "live": shard.live,
        "processes": shard.processes,
    })
}
