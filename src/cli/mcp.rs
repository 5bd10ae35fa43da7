//! `agentvisor mcp`: a Model Context Protocol server acting as one process
//! ([docs/mcp.md](../../docs/mcp.md)).

use agentvisor::actors::Pid;
use agentvisor::mcp::root::RootFlags;
use agentvisor::mcp::server::McpServer;
use agentvisor::mcp::session::{self, Identity};
use agentvisor::mcp::{McpError, http, stdio};
use anyhow::Context;
use std::path::Path;
use std::process::ExitCode;

/// Arguments of `agentvisor mcp`.
#[derive(clap::Args, Debug)]
pub(crate) struct McpArgs {
    /// Serve streamable HTTP on this loopback address (e.g. `127.0.0.1:8765`; port 0 picks
    /// one) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// Act as this existing live process instead of a new root. Only the user who owns the
    /// state directory may.
    #[arg(long = "as", value_name = "PID")]
    as_pid: Option<String>,
    #[command(flatten)]
    root: RootFlags,
}

pub(crate) async fn run(state: &Path, args: McpArgs) -> anyhow::Result<ExitCode> {
    let identity = match &args.as_pid {
        Some(_) if args.root.any() => {
            eprintln!(
                "agentvisor mcp: --as acts as an existing process; --config, --goal, --cwd, --image, --grant and --max-* shape a new root and cannot be combined with it"
            );
            return Ok(ExitCode::from(2));
        }
        Some(text) => match text.parse::<Pid>() {
            Ok(pid) => Identity::As(pid),
            Err(e) => {
                eprintln!("agentvisor mcp: --as {text:?}: {e}");
                return Ok(ExitCode::from(2));
            }
        },
        None => {
            let cwd = std::env::current_dir().context("failed to read the current directory")?;
            match args.root.to_request(&cwd) {
                Ok(root) => Identity::NewRoot(root),
                Err(e) => {
                    eprintln!("agentvisor mcp: {e}");
                    return Ok(ExitCode::from(2));
                }
            }
        }
    };
    let addr = match args.http.as_deref().map(http::loopback).transpose() {
        Ok(addr) => addr,
        Err(e) => {
            eprintln!("agentvisor mcp: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let session = match session::open(state, super::stores::url(), identity).await {
        Ok(session) => session,
        Err(e @ (McpError::Refused(_) | McpError::Control(_) | McpError::StateDir { .. })) => {
            eprintln!("agentvisor mcp: {e}");
            return Ok(ExitCode::from(1));
        }
        Err(e) => return Err(e.into()),
    };
    let pid = session.pid;
    let role = if session.is_owner() { "owning" } else { "attached to the owner of" };
    let server = McpServer::new(session.backend.clone(), pid).await?;
    let served = match addr {
        None => {
            eprintln!("agentvisor mcp: process {pid} over stdio, {role} {}", state.display());
            tokio::select! {
                served = stdio::serve(server) => served,
                () = shutdown_signal() => Ok(()),
            }
        }
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("failed to listen on {addr}"))?;
            let local = listener.local_addr()?;
            eprintln!(
                "agentvisor mcp: process {pid} on http://{local}{}, {role} {}",
                http::MCP_PATH,
                state.display()
            );
            http::serve(server, listener, shutdown_signal()).await
        }
    };
    let closed = session.close().await;
    served?;
    if !closed? {
        eprintln!("agentvisor mcp: the runtime was still in use at exit; the next open recovers its rows");
    }
    Ok(ExitCode::SUCCESS)
}

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
}
