//! Command-line parsing and dispatch. Each command lives in its own file.

#[macro_use]
mod output;
mod agent;
mod agent_cost;
#[cfg(feature = "console")]
mod console;
mod demo;
mod events;
mod host_actions;
mod inspect;
mod interrupt;
mod live;
mod logging;
mod mcp;
mod memory;
mod node;
mod node_takeover;
#[cfg(feature = "otel")]
mod otel;
mod owner;
mod ps;
mod recover;
mod restarts;
mod rig;
mod rig_expand;
mod rig_restore;
mod rig_status;
mod run;
mod run_resume;
mod script;
mod shards;
mod sources;
mod stores;
mod transcript;
mod tree;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// agentvisor: a supervision runtime for LLM agent processes.
#[derive(Parser, Debug)]
#[command(name = "agentvisor", version, about)]
pub(crate) struct Cli {
    /// The state directory (a SQLite file and its lock live there).
    #[arg(long, global = true, default_value = "./.agentvisor")]
    pub(crate) state: PathBuf,
    /// Keeps the state in a PostgreSQL database instead of the state directory's SQLite
    /// files: `postgres://user:password@host:port/database`. The state directory still holds
    /// the owner lock, the event log and the control socket.
    #[arg(long, global = true, env = "AGENTVISOR_STORE", value_parser = stores::parse_store_url)]
    pub(crate) store: Option<String>,
    /// The shard of the PostgreSQL store to use: several nodes serve a database's shards at
    /// once, each shard owned by one node (default: the main shard; a command naming a
    /// process finds the shard that holds it).
    #[arg(long, global = true, env = "AGENTVISOR_SHARD")]
    pub(crate) shard: Option<String>,
    /// This runtime's name on a PostgreSQL store shared by several runtimes (its node);
    /// default: the host name and the process id.
    #[arg(long, global = true, env = "AGENTVISOR_NODE")]
    pub(crate) node: Option<String>,
    /// How long this runtime's lease on a PostgreSQL store lasts unless renewed (renewed
    /// every third of it); another node may claim the store once it runs out.
    #[arg(long, global = true, value_name = "MS", default_value_t = 5000)]
    pub(crate) lease_ms: u64,
    /// Arms a store fault for tests: `fail-after:N` or `freeze-after:N` commits.
    #[arg(long, global = true, hide = true)]
    pub(crate) fault: Option<owner::Fault>,
    /// Logs what the runtime does on stderr: `-v` info, `-vv` debug (`RUST_LOG` overrides).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub(crate) verbose: u8,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Runs a real process tree that counts the words of the files under DIR.
    Demo(demo::DemoArgs),
    /// Lists processes.
    Ps(ps::PsArgs),
    /// Shows the process tree.
    Tree(tree::TreeArgs),
    /// Shows one process in full.
    Inspect(inspect::InspectArgs),
    /// Runs a scenario file.
    Script(script::ScriptArgs),
    /// Prints the agent events recorded in the state directory.
    Events(events::EventsArgs),
    /// Prints one agent's conversation, turn by turn, across its incarnations.
    Transcript(transcript::TranscriptArgs),
    /// Runs one root agent of a configuration to its end.
    Agent(agent::AgentArgs),
    /// Runs a rig: every seat of a rig spec, to their end.
    Run(run::RunArgs),
    /// Rig specs: a set of seats run together.
    Rig(rig::RigArgs),
    /// Reopens a state directory whose runtime died: reports what recovery did, leaves it
    /// paused (or, with --resume, resumes it and hosts the tree to its end).
    Recover(recover::RecoverArgs),
    /// Serves the tree kept in a PostgreSQL store (`--store`) as one of several runtimes: waits
    /// while another node owns it, claims it when that node stops or its lease runs out,
    /// resumes what the other left, and serves until stopped (SIGINT or SIGTERM).
    Node(node::NodeArgs),
    /// Lists the shards of the PostgreSQL store (`--store`): the node serving each, its
    /// lease, and its processes.
    Shards(shards::ShardsArgs),
    /// Sends a lifecycle signal to any process as the host: pause, resume, cancel, terminate.
    Signal {
        /// The process: a pid, a unique prefix, or the short id the views print.
        pid: String,
        /// pause, resume, cancel or terminate.
        signal: String,
        /// Why (recorded with the signal).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Sets the host-only resume gate on a process (pausing it).
    Gate {
        /// The process.
        pid: String,
        /// Why the host holds it.
        #[arg(long)]
        reason: String,
    },
    /// Clears the host gate of a process (does not resume it).
    Ungate {
        /// The process.
        pid: String,
    },
    /// Revokes a process's grants on a resource, and everything derived from them.
    Revoke {
        /// The process.
        pid: String,
        /// The resource, e.g. `fs:/data` or `process:spawn`.
        resource: String,
    },
    /// Serves a Model Context Protocol server acting as one process (stdio, or HTTP on
    /// loopback).
    Mcp(mcp::McpArgs),
    /// Serves a live web console of the state directory: the tree, each agent's conversation,
    /// messages and rig seats (loopback; `--control` adds host-action buttons).
    #[cfg(feature = "console")]
    Console(console::ConsoleArgs),
}

impl Command {
    /// The process the command names, if it names one: a command on a PostgreSQL store runs
    /// on the shard that holds it.
    fn pid(&self) -> Option<&str> {
        match self {
            Command::Inspect(args) => Some(args.pid()),
            Command::Signal { pid, .. }
            | Command::Gate { pid, .. }
            | Command::Ungate { pid }
            | Command::Revoke { pid, .. } => Some(pid),
            _ => None,
        }
    }
}

pub(crate) fn main() -> ExitCode {
    let cli = Cli::parse();
    // Declared before the async runtime, so dropped after it: spans still held are flushed
    // last, once every task has ended.
    let _logging = logging::init(cli.verbose);
    if let Some(fault) = cli.fault {
        let _ = owner::FAULT.set(fault);
    }
    if let Err(e) = stores::set_store(cli.store.clone(), cli.shard.clone(), cli.command.pid()) {
        eprintln!("agentvisor: {e:#}");
        return ExitCode::from(2);
    }
    if let Err(e) = stores::set_node_lease(cli.node.clone(), cli.lease_ms) {
        eprintln!("agentvisor: {e}");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("agentvisor: failed to start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Demo(args) => demo::run(&cli.state, args).await,
            Command::Ps(args) => ps::run(&cli.state, args).await,
            Command::Tree(args) => tree::run(&cli.state, args).await,
            Command::Inspect(args) => inspect::run(&cli.state, args).await,
            Command::Script(args) => script::run(&cli.state, args).await,
            Command::Events(args) => events::run(&cli.state, args).await,
            Command::Transcript(args) => transcript::run(&cli.state, args).await,
            Command::Agent(args) => agent::run(&cli.state, args).await,
            Command::Run(args) => run::run(&cli.state, args).await,
            Command::Rig(args) => rig::run(&cli.state, args).await,
            Command::Recover(args) => recover::run(&cli.state, args).await,
            Command::Node(args) => node::run(&cli.state, args).await,
            Command::Shards(args) => shards::run(args).await,
            Command::Signal { pid, signal, reason } => {
                host_actions::run_signal(&cli.state, &pid, &signal, reason).await
            }
            Command::Gate { pid, reason } => host_actions::run_gate(&cli.state, &pid, &reason).await,
            Command::Ungate { pid } => host_actions::run_ungate(&cli.state, &pid).await,
            Command::Revoke { pid, resource } => host_actions::run_revoke(&cli.state, &pid, &resource).await,
            Command::Mcp(args) => mcp::run(&cli.state, args).await,
            #[cfg(feature = "console")]
            Command::Console(args) => console::run(&cli.state, args).await,
        }
    });
    match result {
        Ok(code) => code,
        // The reader of stdout went away (`agentvisor ps | head -1`): a quiet end.
        Err(e) if output::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agentvisor: {e:#}");
            ExitCode::from(1)
        }
    }
}
