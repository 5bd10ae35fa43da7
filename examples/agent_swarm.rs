//! Embedding the agent layer: the swarm of `examples/agents/swarm.yaml` on scripted brains,
//! launched from Rust on a durable runtime, printing each agent event as it happens and the
//! lead's result. Run with `cargo run --example agent_swarm`.

use agentvisor::actors::Outcome;
use agentvisor::actors::runtime::{Runtime, RuntimeOptions};
use agentvisor::agent::config::load_path;
use agentvisor::agent::run::{AgentHost, config_brains, read_scripts};
use agentvisor::agent::telemetry::Telemetry;
use agentvisor::agent::window::SqliteChunkStore;
use std::path::Path;
use std::sync::Arc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/agents");
    // Nothing launches on a configuration the launch check refuses.
    let config = load_path(examples.join("swarm.yaml"))?;
    let scripts = read_scripts(&examples.join("swarm-scripts.json")).map_err(anyhow::Error::msg)?;
    let brains = config_brains(&config, scripts)?;

    let dir = tempfile::tempdir()?;
    let chunks = Arc::new(SqliteChunkStore::open(dir.path().join("windows.sqlite"))?);
    let telemetry = Telemetry::new();
    let host = AgentHost::new(config, brains, chunks, telemetry.clone());
    let rt = Runtime::open(dir.path(), RuntimeOptions::new().image(host.image())).await?;
    host.attach_store(rt.store());

    let mut events = telemetry.subscribe();
    let printer = tokio::spawn(async move {
        while let Ok(record) = events.recv().await {
            println!("{} {} {}", &record.agent_id[..8], record.event.type_name(), record.event.summary());
        }
    });
    let root = rt.spawn_root(host.root_spec("lead", "Write the report.")?).await?;
    let row = rt.wait_terminal(root).await?;
    printer.abort();
    if let Some(Outcome::Exited { result_oid: Some(oid) }) = row.outcome {
        println!("{}: {}", row.status, rt.payload(oid)?.unwrap_or_default()["result"]);
    } else {
        println!("{}: {:?}", row.status, row.outcome);
    }
    rt.shutdown().await?;
    Ok(())
}
