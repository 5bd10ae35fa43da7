//! A real MCP client (rmcp) driving the real `agentvisor mcp` binary, over stdio or HTTP.

#![allow(dead_code, unreachable_pub, reason = "each test file uses part of the support module")]

use rmcp::model::{CallToolRequestParams, ProgressNotificationParam};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use std::future::Future;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{Mutex, mpsc};

/// How long any one step may take before the test fails: generous, since two cores build and
/// test at once. A deadline only turns a hang into a failure with a message.
pub const DEADLINE: Duration = Duration::from_secs(120);

/// Awaits `fut`, failing the test with `what` if it does not finish within [`DEADLINE`].
pub async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(DEADLINE, fut).await {
        Ok(v) => v,
        Err(_) => panic!("{what} did not happen within {DEADLINE:?}"),
    }
}

/// The client handler: forwards progress notifications to the test.
#[derive(Clone)]
pub struct Watcher {
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
}

impl ClientHandler for Watcher {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }
}

/// One MCP session with the server.
pub struct Session {
    /// The rmcp client.
    pub service: RunningService<RoleClient, Watcher>,
    /// The process the session acts as.
    pub pid: String,
    /// The server's first stderr line (`… owning DIR` or `… attached to the owner of DIR`).
    pub banner: String,
    /// The server's OS pid (stdio only).
    pub os_pid: Option<u32>,
    progress: Mutex<mpsc::UnboundedReceiver<ProgressNotificationParam>>,
}

fn watcher() -> (Watcher, mpsc::UnboundedReceiver<ProgressNotificationParam>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Watcher { progress: tx }, rx)
}

/// The pid in a banner line `agentvisor mcp: process PID …`.
pub fn banner_pid(banner: &str) -> String {
    banner
        .split_whitespace()
        .skip_while(|w| *w != "process")
        .nth(1)
        .unwrap_or_else(|| panic!("no pid in the server's banner {banner:?}"))
        .to_string()
}

/// The `agentvisor` command on `state` with `args` after `mcp`.
pub fn mcp_command(state: &Path, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentvisor"));
    cmd.arg("--state").arg(state).arg("mcp").args(args);
    cmd
}

/// Reads the first stderr line, then keeps draining stderr into the test's stderr.
async fn banner(stderr: impl tokio::io::AsyncRead + Unpin + Send + 'static) -> String {
    let mut lines = BufReader::new(stderr).lines();
    let first = within("the server's first stderr line", lines.next_line())
        .await
        .expect("read the server's stderr")
        .unwrap_or_else(|| panic!("the server exited before printing its banner"));
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("server: {line}");
        }
    });
    first
}

/// Starts `agentvisor --state STATE mcp ARGS` over stdio and connects to it.
pub async fn stdio(state: &Path, args: &[&str]) -> Session {
    let (transport, stderr) = TokioChildProcess::builder(mcp_command(state, args))
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn agentvisor mcp");
    let os_pid = transport.id();
    let banner = banner(stderr.expect("piped stderr")).await;
    assert!(banner.starts_with("agentvisor mcp: process "), "the server did not start: {banner}");
    let (handler, progress) = watcher();
    let service = within("the MCP handshake", handler.serve(transport)).await.expect("initialize");
    Session { pid: banner_pid(&banner), banner, service, os_pid, progress: Mutex::new(progress) }
}

/// Connects a new MCP session to a streamable HTTP server at `url`.
pub async fn http(url: &str, pid: &str) -> Session {
    let (handler, progress) = watcher();
    let transport = StreamableHttpClientTransport::from_uri(url.to_string());
    let service = within("the MCP handshake over HTTP", handler.serve(transport)).await.expect("initialize");
    Session {
        pid: pid.to_string(),
        banner: String::new(),
        service,
        os_pid: None,
        progress: Mutex::new(progress),
    }
}

/// Installs the rustls provider the HTTP client needs (once per test process).
pub fn install_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A tool's answer: its structured content, and whether it is an error.
pub async fn call_on(peer: &rmcp::Peer<RoleClient>, tool: &str, args: Value) -> (Value, bool) {
    let args = match args {
        Value::Object(map) => map,
        Value::Null => Default::default(),
        other => panic!("tool arguments must be an object, not {other}"),
    };
    let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
    let result = within(&format!("an answer to {tool}"), peer.call_tool(params))
        .await
        .unwrap_or_else(|e| panic!("{tool} failed at the protocol level: {e}"));
    let structured = result.structured_content.clone().unwrap_or(Value::Null);
    // The text content is the same JSON.
    let text = result.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone()).unwrap_or_default();
    let parsed: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{tool}'s text is not JSON ({e}): {text}"));
    assert_eq!(parsed, structured, "{tool}: the text content and the structured content differ");
    (structured, result.is_error == Some(true))
}

impl Session {
    /// A tool's answer, which must not be an error.
    pub async fn ok(&self, tool: &str, args: Value) -> Value {
        let (answer, is_error) = call_on(self.service.peer(), tool, args).await;
        assert!(!is_error && answer.get("error").is_none(), "{tool} was refused: {answer}");
        answer
    }

    /// A tool's answer, which must be an error with isError set; its code.
    pub async fn refused(&self, tool: &str, args: Value) -> String {
        let (answer, is_error) = call_on(self.service.peer(), tool, args).await;
        assert!(is_error, "{tool} should have been refused with isError: {answer}");
        answer["error"]["code"].as_str().unwrap_or_else(|| panic!("no error code in {answer}")).to_string()
    }

    /// The next progress notification.
    pub async fn next_progress(&self) -> ProgressNotificationParam {
        let mut rx = self.progress.lock().await;
        within("a progress notification", rx.recv()).await.expect("the session ended before any progress")
    }

    /// Starts a call in its own task (for a call that blocks).
    pub fn spawn_call(&self, tool: &'static str, args: Value) -> tokio::task::JoinHandle<(Value, bool)> {
        let peer = self.service.peer().clone();
        tokio::spawn(async move { call_on(&peer, tool, args).await })
    }

    /// Closes the session as a client does: stdin closes and the server exits (waited for).
    pub async fn close(self) {
        within("the server's exit", self.service.cancel()).await.expect("close the session");
    }
}

/// A long-lived `agentvisor mcp --http 127.0.0.1:0 ARGS` server.
pub struct HttpServer {
    /// The server process.
    pub child: tokio::process::Child,
    /// Its MCP endpoint.
    pub url: String,
    /// The process it acts as.
    pub pid: String,
    /// Its banner.
    pub banner: String,
}

/// Starts an HTTP server on a loopback port the OS picks and reads its address.
pub async fn http_server(state: &Path, args: &[&str]) -> HttpServer {
    let mut all = vec!["--http", "127.0.0.1:0"];
    all.extend_from_slice(args);
    let mut child = mcp_command(state, &all)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn agentvisor mcp --http");
    let banner = banner(child.stderr.take().expect("stderr")).await;
    assert!(banner.starts_with("agentvisor mcp: process "), "the server did not start: {banner}");
    let url = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {banner:?}"))
        .trim_end_matches(',')
        .to_string();
    HttpServer { pid: banner_pid(&banner), url, banner, child }
}

impl HttpServer {
    /// Stops the server with SIGTERM and waits for a clean exit.
    pub async fn terminate(mut self) {
        let id = self.child.id().expect("a running server").to_string();
        let sent = std::process::Command::new("kill").args(["-TERM", &id]).status().expect("kill -TERM");
        assert!(sent.success());
        let status = within("the server's exit after SIGTERM", self.child.wait()).await.expect("wait");
        assert!(status.success(), "the server exited with {status}");
    }

    /// Kills the server with SIGKILL and waits until it is gone.
    pub async fn kill(mut self) {
        self.child.start_kill().expect("SIGKILL");
        within("the server's death", self.child.wait()).await.expect("wait");
    }
}
