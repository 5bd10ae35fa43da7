//! Streamable HTTP on a loopback address.

use super::McpError;
use super::server::McpServer;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::future::Future;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// The path the MCP endpoint is served on.
pub const MCP_PATH: &str = "/mcp";

/// Parses `--http ADDR` (`127.0.0.1:8080`, `[::1]:0`, `localhost:8080`) and refuses any
/// address that is not loopback.
pub fn loopback(addr: &str) -> Result<SocketAddr, McpError> {
    let refused = || McpError::NotLoopback { addr: addr.to_string() };
    let resolved: Vec<SocketAddr> = match addr.parse::<SocketAddr>() {
        Ok(a) => vec![a],
        Err(_) => addr.to_socket_addrs().map_err(|_| refused())?.collect(),
    };
    match resolved.first() {
        Some(first) if resolved.iter().all(|a| a.ip().is_loopback()) => Ok(*first),
        _ => Err(refused()),
    }
}

/// Serves `server` on `listener` until `shutdown` completes. Every MCP session over HTTP
/// acts as the same process; a client disconnecting ends its session only.
pub async fn serve(
    server: McpServer,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), McpError> {
    // Cancelled at shutdown, so open event streams end and the graceful shutdown completes.
    let sessions = CancellationToken::new();
    let config = StreamableHttpServerConfig::default().with_cancellation_token(sessions.child_token());
    let service: StreamableHttpService<McpServer, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new().nest_service(MCP_PATH, service);
    let stop = async move {
        shutdown.await;
        sessions.cancel();
    };
    axum::serve(listener, router)
        .with_graceful_shutdown(stop)
        .await
        .map_err(|e| McpError::Transport(e.to_string()))
}
