//! `agentvisor agent CONFIG AGENT PROMPT`: runs one root agent of a configuration to its end on
//! the state directory, printing its agent events as they happen, then its result and cost.
//!
//! Windows are kept in `windows.sqlite` and events appended to `agent-events.jsonl` in the
//! state directory (read them again with `agentvisor events`). Scripted brains play the
//! scripts of `--scripts FILE` (a JSON object mapping script names to scripts); OpenAI-style
//! brains read their key from the environment variable the configuration names.

use super::agent_cost::{agent_lines, agent_view};
use agentvisor::actors::Outcome;
use agentvisor::actors::runtime::Runtime;
use agentvisor::agent::brain::Script;
use agentvisor::agent::config::load_path;
use agentvisor::agent::run::{AgentHost, config_brains};
use agentvisor::agent::telemetry::{EVENTS_FILE, Telemetry};
use agentvisor::agent::window::SqliteChunkStore;
use agentvisor::control::ControlServer;
use agentvisor::images::builtin_images;
use anyhow::{Context, bail};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// The chunk store's file in the state directory.
pub(crate) const WINDOWS_FILE: &str = "windows.sqlite";

/// Arguments of `agentvisor agent`.
#[derive(clap::Args, Debug)]
pub(crate) struct AgentArgs {
    /// The agent configuration (YAML or TOML: brains, profiles, machines).
    config: PathBuf,
    /// The profile or machine to launch.
    agent: String,
    /// Its opening prompt.
    prompt: String,
    /// Scripts for scripted brains: a JSON object mapping script names to scripts.
    #[arg(long)]
    scripts: Option<PathBuf>,
}

fn read_scripts(path: Option<&Path>) -> anyhow::Result<HashMap<String, Script>> {
    match path {
        Some(path) => agentvisor::agent::run::read_scripts(path).map_err(anyhow::Error::msg),
        None => Ok(HashMap::new()),
    }
}

pub(crate) async fn run(state: &Path, args: AgentArgs) -> anyhow::Result<ExitCode> {
    let config = match load_path(&args.config) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("{e}");
            return Ok(ExitCode::from(2));
        }
    };
    let scripts = read_scripts(args.scripts.as_deref())?;
    std::fs::create_dir_all(state).with_context(|| format!("failed to create {}", state.display()))?;
    let chunks = SqliteChunkStore::open(state.join(WINDOWS_FILE))
        .with_context(|| format!("failed to open the window store in {}", state.display()))?;
    let telemetry = Telemetry::with_jsonl(state.join(EVENTS_FILE))?;
    let brains = config_brains(&config, scripts);
    let host = AgentHost::new(config, brains, Arc::new(chunks), telemetry.clone());
    let spec = host.root_spec(&args.agent, &args.prompt)?;
    let rt = Runtime::open(state, builtin_images().image(host.image()))
        .await
        .with_context(|| format!("failed to open the state directory {}", state.display()))?;
    if rt.is_read_only() {
        bail!("another agentvisor runtime owns {}; stop it or pass another --state DIR", state.display());
    }
    host.attach_store(rt.store());
    let rt = Arc::new(rt);
    let control = ControlServer::start(Arc::clone(&rt))?;
    let mut events = telemetry.subscribe();
    let root = rt.spawn_root(spec).await?;
    eprintln!("agent {} launched as process {root}", args.agent);
    let row = loop {
        tokio::select! {
            event = events.recv() => match event {
                Ok(record) => eprintln!(
                    "  {} {} {} {}",
                    short(&record.pid),
                    short(&record.agent_id),
                    record.event.type_name(),
                    record.event.summary()
                ),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => eprintln!("  ({n} events not shown)"),
                Err(tokio::sync::broadcast::error::RecvError::Closed) => {}
            },
            row = rt.wait_terminal(root) => break row?,
        }
    };
    println!("status  {}", row.status);
    match &row.outcome {
        Some(Outcome::Exited { result_oid: Some(oid) }) => {
            let payload = rt.payload(*oid)?.unwrap_or_default();
            println!("result  {}", payload.get("result").cloned().unwrap_or_default());
        }
        other => println!("outcome {}", serde_json::to_string(other)?),
    }
    if let Some(view) = agent_view(&rt, root)? {
        for line in agent_lines(&view) {
            println!("{line}");
        }
    }
    control.stop().await;
    if let Ok(rt) = Arc::try_unwrap(rt) {
        rt.shutdown().await?;
    }
    Ok(if row.status == agentvisor::actors::Status::Exited { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The first 8 characters of an id, as the event lines print it.
fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}
