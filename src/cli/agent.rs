//! `agentvisor agent CONFIG AGENT PROMPT`: runs one root agent of a configuration to its end on
//! the state directory, printing its agent events as they happen, then its result and cost.
//!
//! Windows are kept in `windows.sqlite` and events appended to `agent-events.jsonl` in the
//! state directory (read them again with `agentvisor events`). Scripted brains play the
//! scripts of `--scripts FILE` (a JSON object mapping script names to scripts); OpenAI-style
//! brains read their key from the environment variable the configuration names.

use super::agent_cost::{agent_lines, agent_view};
use super::sources::{Source, Sources, file_hash};
use agentvisor::actors::Outcome;
use agentvisor::actors::runtime::RuntimeOptions;
use agentvisor::agent::brain::Script;
use agentvisor::agent::config::AgentBudget;
use agentvisor::agent::config::load_path;
use agentvisor::agent::money::parse_usd_micros;
use agentvisor::agent::run::{AgentHost, RootBudget, config_brains};
use agentvisor::agent::telemetry::{EVENTS_FILE, Telemetry};
use agentvisor::control::ControlServer;
use agentvisor::images::builtin_images;
use anyhow::{Context, bail};
use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

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
    #[command(flatten)]
    budget: BudgetArgs,
}

/// Budget flags of a root launch. Each overrides the profile's budget in its dimension;
/// dimensions neither sets get the default cap unless `--unlimited`.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct BudgetArgs {
    /// The most the agent may cost, in dollars ("0.50"; read exactly, six decimals at most).
    #[arg(long, value_name = "USD")]
    max_cost_usd: Option<String>,
    /// The most model tokens (input and output) the agent may use.
    #[arg(long, value_name = "N")]
    max_tokens: Option<u64>,
    /// The most model turns the agent may take.
    #[arg(long, value_name = "N")]
    max_turns: Option<u64>,
    /// The most kernel calls (spawns, messages, waits, object writes) the agent may make.
    #[arg(long, value_name = "N")]
    max_tool_calls: Option<u64>,
    /// No default cap: dimensions neither a flag nor the profile limits are unlimited.
    #[arg(long)]
    unlimited: bool,
}

impl BudgetArgs {
    /// The root budget these flags ask for, or why a flag cannot be read.
    pub(crate) fn root_budget(&self) -> anyhow::Result<RootBudget> {
        let mut limits = AgentBudget::NONE;
        if let Some(usd) = &self.max_cost_usd {
            limits.kernel.cost_micros =
                Some(parse_usd_micros(usd).map_err(|e| anyhow::anyhow!("--max-cost-usd: {e}"))?);
        }
        for (flag, value) in [
            ("--max-tokens", self.max_tokens),
            ("--max-turns", self.max_turns),
            ("--max-tool-calls", self.max_tool_calls),
        ] {
            if value == Some(0) {
                bail!("{flag} 0 would stop the agent before it starts; give at least 1");
            }
        }
        limits.kernel.tokens = self.max_tokens;
        limits.kernel.tool_calls = self.max_tool_calls;
        limits.turns = self.max_turns;
        Ok(RootBudget { limits, unlimited: self.unlimited })
    }
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
    let root_budget = match args.budget.root_budget() {
        Ok(budget) => budget,
        Err(e) => {
            eprintln!("{e}");
            return Ok(ExitCode::from(2));
        }
    };
    let scripts = read_scripts(args.scripts.as_deref())?;
    let brains = match config_brains(&config, scripts) {
        Ok(brains) => brains,
        Err(e) => {
            eprintln!("{e} ({})", e.code());
            return Ok(ExitCode::from(2));
        }
    };
    // The lock first: refused, this command creates no file in a directory another runtime owns.
    let lock = super::owner::take(state)?;
    let chunks = super::stores::chunks(state)?;
    let telemetry = Telemetry::with_jsonl(state.join(EVENTS_FILE))?;
    let host = AgentHost::new(config, brains, chunks, telemetry.clone());
    host.set_root_budget(root_budget);
    let spec = host.root_spec(&args.agent, &args.prompt)?;
    host.set_mcp_link(mcp_link(state)?);
    let images = host.images();
    let source = Source::AgentConfig {
        config: absolute(&args.config),
        config_blake3: file_hash(&args.config)?,
        scripts: args.scripts.as_deref().map(absolute),
    };
    let ids: Vec<String> = images.iter().map(|i| i.id.to_string()).collect();
    Sources::record(state, &ids, &source)?;
    let rt =
        super::owner::open(state, lock, images.into_iter().fold(builtin_images(), RuntimeOptions::image))
            .await?;
    host.attach_store(rt.store());
    let rt = Arc::new(rt);
    let control = ControlServer::start(Arc::clone(&rt))?;
    let mut events = telemetry.subscribe();
    let live = tokio::spawn(super::live::draw_progress(telemetry.clone()));
    let clear = if std::io::stderr().is_terminal() { "\r\x1b[2K" } else { "" };
    let root = rt.spawn_root(spec).await?;
    eprintln!("agent {} launched as process {root}", args.agent);
    let row = loop {
        tokio::select! {
            event = events.recv() => match event {
                Ok(record) => eprintln!(
                    "{clear}  {} {} {} {}",
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
    live.abort();
    eprint!("{clear}");
    outln!("status  {}", row.status);
    match &row.outcome {
        Some(Outcome::Exited { result_oid: Some(oid) }) => {
            let payload = rt.payload(*oid)?.unwrap_or_default();
            outln!("result  {}", payload.get("result").cloned().unwrap_or_default());
        }
        other => outln!("outcome {}", serde_json::to_string(other)?),
    }
    if let Some(view) = agent_view(&rt, root)? {
        for line in agent_lines(&view) {
            outln!("{line}");
        }
    }
    control.stop().await;
    if let Ok(rt) = Arc::try_unwrap(rt) {
        rt.shutdown().await?;
    }
    // The event file is complete when the command returns.
    telemetry.flush();
    Ok(if row.status == agentvisor::actors::Status::Exited { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Where external sessions of agents in `state` get their MCP server: this program's
/// `mcp --state <state> --as <pid>`.
pub(crate) fn mcp_link(state: &Path) -> anyhow::Result<agentvisor::agent::external::McpLink> {
    let program = std::env::current_exe().context("cannot find the agentvisor program's own path")?;
    Ok(agentvisor::agent::external::McpLink { program, state_dir: absolute(state) })
}

/// `path` made absolute (against the current directory), so a record of it is found from
/// anywhere.
pub(crate) fn absolute(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| std::env::current_dir().unwrap_or_default().join(path))
}

/// The first 8 characters of an id, as the event lines print it.
fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}
