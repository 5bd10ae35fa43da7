//! `agentvisor console`: a live web page of a state directory — the process tree with each
//! succession drawn as what it is (an exec one box with its incarnations stacked, a fork a
//! linked copy, a machine with its current state highlighted), each agent's conversation,
//! the messages between processes and the rig seats ([docs/console.md](../../../docs/console.md)).
//!
//! The server opens the directory read-only, exactly as `ps` and `inspect` do, and watches its
//! files (inotify): each change to the store, the event file or the seat store rebuilds the
//! snapshot, which every open page receives on its event stream (server-sent events). The
//! page has no polling loop. With `--control`, the page's buttons run the host actions of the
//! command line (`agentvisor signal|gate|ungate`), which reach a live owner through its
//! control socket, so their refusals are the same.

mod auth;
mod control;
mod history;
mod machines;
mod routes;
mod snapshot;
mod watch;

use agentvisor::mcp::http::loopback;
use anyhow::{Context, bail};
use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// Arguments of `agentvisor console`.
#[derive(clap::Args, Debug)]
pub(crate) struct ConsoleArgs {
    /// The address to serve on; loopback unless `--allow-remote` (port 0 picks one).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8844")]
    listen: String,
    /// Serve a non-loopback address. Requires `--token`.
    #[arg(long)]
    allow_remote: bool,
    /// A token every request must carry (`Authorization: Bearer TOKEN` or `?token=TOKEN`).
    #[arg(long, env = "AGENTVISOR_CONSOLE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Show host-action buttons (pause, resume, cancel, terminate, gate, ungate).
    #[arg(long)]
    control: bool,
}

/// What every handler shares.
pub(crate) struct Console {
    /// The state directory watched.
    pub(crate) state: PathBuf,
    /// Whether host actions are served.
    pub(crate) control: bool,
    /// The token requests must carry, if any.
    pub(crate) token: Option<String>,
    /// The newest snapshot and the agent events appended with it.
    pub(crate) frames: watch::Frames,
}

pub(crate) async fn run(state: &Path, args: ConsoleArgs) -> anyhow::Result<ExitCode> {
    let addr = listen_addr(&args)?;
    let state = std::path::absolute(state).with_context(|| format!("bad state path {}", state.display()))?;
    let frames = watch::start(&state).await?;
    let console =
        Arc::new(Console { state: state.clone(), control: args.control, token: args.token, frames });
    let listener =
        tokio::net::TcpListener::bind(addr).await.with_context(|| format!("failed to listen on {addr}"))?;
    let bound = listener.local_addr()?;
    // The first line says where the page is (tests and scripts read it), then stdout is quiet.
    let mode = if console.control { "with host controls" } else { "read-only" };
    outln!("console on http://{bound}/ ({mode}; state {})", state.display());
    std::io::stdout().flush()?;
    let app = routes::router(console);
    tokio::select! {
        served = axum::serve(listener, app) => served.context("the console server failed")?,
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// The address to listen on: loopback, or any address with `--allow-remote` and a token.
fn listen_addr(args: &ConsoleArgs) -> anyhow::Result<SocketAddr> {
    if let Ok(addr) = loopback(&args.listen) {
        return Ok(addr);
    }
    if !args.allow_remote || args.token.is_none() {
        bail!(
            "--listen {}: not a loopback address; the console shows every agent's conversation, so a non-loopback address needs --allow-remote and --token TOKEN",
            args.listen
        );
    }
    args.listen
        .to_socket_addrs()
        .with_context(|| format!("--listen {}: not an address", args.listen))?
        .next()
        .with_context(|| format!("--listen {}: resolves to no address", args.listen))
}
