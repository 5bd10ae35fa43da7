//! Command-line parsing and dispatch. Each command lives in its own file.

mod agent;
mod agent_cost;
mod demo;
mod events;
mod inspect;
mod mcp;
mod memory;
mod output;
mod ps;
mod rig;
mod rig_expand;
mod rig_status;
mod run;
mod script;
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
    /// Runs one root agent of a configuration to its end.
    Agent(agent::AgentArgs),
    /// Runs a rig: every seat of a rig spec, to their end.
    Run(run::RunArgs),
    /// Rig specs: a set of seats run together.
    Rig(rig::RigArgs),
    /// Serves a Model Context Protocol server acting as one process (stdio, or HTTP on
    /// loopback).
    Mcp(mcp::McpArgs),
}

pub(crate) fn main() -> ExitCode {
    let cli = Cli::parse();
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
            Command::Agent(args) => agent::run(&cli.state, args).await,
            Command::Run(args) => run::run(&cli.state, args).await,
            Command::Rig(args) => rig::run(&cli.state, args).await,
            Command::Mcp(args) => mcp::run(&cli.state, args).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("agentvisor: {e:#}");
            ExitCode::from(1)
        }
    }
}
