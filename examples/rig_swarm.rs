//! Embedding a rig: `examples/rigs/swarm.yaml` run from Rust — its agent hosts loaded and
//! checked, a runtime opened with their images, seat state kept in a SQLite seat store — then
//! each seat's persisted record. Run with `cargo run --example rig_swarm`.

use agentvisor::actors::runtime::{Runtime, RuntimeOptions};
use agentvisor::agent::telemetry::Telemetry;
use agentvisor::agent::window::SqliteChunkStore;
use agentvisor::rig::load_rig;
use agentvisor::rig::run::{Adapters, RigHosts, RigRunner};
use agentvisor::rig::store::{SEAT_STORE_FILE, SeatStore, SqliteSeatStore};
use std::path::Path;
use std::sync::Arc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let spec_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rigs/swarm.yaml");
    let spec = load_rig(&spec_path)?;
    let base = spec_path.parent().unwrap_or(Path::new(".")).to_path_buf();

    let dir = tempfile::tempdir()?;
    let chunks = Arc::new(SqliteChunkStore::open(dir.path().join("windows.sqlite"))?);
    let hosts = RigHosts::load(&spec, &base, chunks, &Telemetry::new())?;
    let rt = Arc::new(Runtime::open(dir.path(), hosts.register(RuntimeOptions::new())).await?);
    let store: Arc<dyn SeatStore> = Arc::new(SqliteSeatStore::open(dir.path().join(SEAT_STORE_FILE))?);
    let runner = RigRunner::new(Arc::clone(&rt), hosts, Arc::clone(&store), Adapters::default(), base);

    let (rig, outcomes) = runner.run(&spec, &spec_path.display().to_string()).await?;
    for outcome in &outcomes {
        println!(
            "{} {} ({}): {}",
            outcome.member,
            outcome.status,
            outcome.origin(),
            outcome.result.clone().unwrap_or_default()
        );
    }
    for seat in store.seats(&rig)? {
        let token = seat.token.map(|t| t.to_string()).unwrap_or_default();
        println!("seat {} {} token {token}", seat.member, seat.status);
    }
    drop(runner);
    if let Ok(rt) = Arc::try_unwrap(rt) {
        rt.shutdown().await?;
    }
    Ok(())
}
