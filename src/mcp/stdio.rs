//! MCP over stdio: newline-delimited JSON-RPC on stdin and stdout.
//!
//! rmcp ignores a line that is not JSON at all (it answers well-formed JSON of the wrong
//! shape with an Invalid Request error). JSON-RPC 2.0 asks for a Parse error (-32700, `id`
//! null) instead, so this front reads stdin itself: a line that is not JSON, or longer than
//! [`LINE_BYTES_MAX`], is answered with that error and goes no further; every other line is
//! handed to rmcp unchanged. Its answers and the front's errors share one writer, a line at
//! a time, so they never interleave on stdout. Nothing a client writes makes the server
//! panic or changes any state unless rmcp accepts it as a request.

use super::McpError;
use super::server::McpServer;
use crate::control::limits::LINE_BYTES_MAX;
use crate::control::lines::{LineError, read_line};
use rmcp::ServiceExt;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The pipe between the front and rmcp, in bytes (a bound on what one side buffers before
/// the other reads).
const PIPE_BYTES: usize = 64 * 1024;

/// Serves `server` on this process's stdin and stdout until the client closes stdin.
pub async fn serve(server: McpServer) -> Result<(), McpError> {
    serve_on(server, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serves `server` on `input` and `output` until `input` ends.
pub async fn serve_on<R, W>(server: McpServer, input: R, output: W) -> Result<(), McpError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_rmcp, rmcp_in) = tokio::io::duplex(PIPE_BYTES);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(PIPE_BYTES);
    // Complete lines for stdout, from rmcp and from the front. Bounded: a client that does
    // not read its answers slows the server down instead of growing a queue.
    let (lines, mut out) = mpsc::channel::<Vec<u8>>(64);
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(mut line) = out.recv().await {
            line.push(b'\n');
            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                return;
            }
        }
    });
    let answers = tokio::spawn(forward_answers(from_rmcp, lines.clone()));
    let front = tokio::spawn(front(input, to_rmcp, lines));
    let running = server
        .serve((rmcp_in, rmcp_out))
        .await
        .map_err(|e| McpError::Transport(format!("the MCP session did not start: {e}")))?;
    let quit = running.waiting().await;
    front.abort();
    let _ = answers.await;
    let _ = writer.await;
    quit.map(|_| ()).map_err(|e| McpError::Transport(e.to_string()))
}

/// Reads stdin; answers unparsable lines itself and hands the others to rmcp.
async fn front<R: AsyncRead + Unpin>(
    input: R,
    mut to_rmcp: tokio::io::DuplexStream,
    lines: mpsc::Sender<Vec<u8>>,
) {
    let mut input = BufReader::new(input);
    let mut skipping = false;
    loop {
        let line = match read_line(&mut input, LINE_BYTES_MAX).await {
            Ok(Some(line)) => line,
            Ok(None) | Err(LineError::Io(_)) => return, // dropping `to_rmcp` ends the session
            Err(LineError::TooLong { max }) => {
                if !skipping
                    && lines.send(parse_error(&format!("the line is longer than {max} bytes"))).await.is_err()
                {
                    return;
                }
                skipping = true;
                continue;
            }
        };
        if std::mem::take(&mut skipping) {
            continue; // the tail of a line that was too long
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&line) {
            if lines.send(parse_error(&e.to_string())).await.is_err() {
                return;
            }
            continue;
        }
        let mut line = line;
        line.push(b'\n');
        if to_rmcp.write_all(&line).await.is_err() {
            return;
        }
    }
}

/// Copies rmcp's answer lines to the writer.
async fn forward_answers(from_rmcp: tokio::io::DuplexStream, lines: mpsc::Sender<Vec<u8>>) {
    let mut from_rmcp = BufReader::new(from_rmcp);
    // rmcp writes what it serialized; a line is bounded by what it was asked to answer.
    while let Ok(Some(line)) = read_line(&mut from_rmcp, usize::MAX).await {
        if lines.send(line).await.is_err() {
            return;
        }
    }
}

/// A JSON-RPC 2.0 Parse error line.
fn parse_error(detail: &str) -> Vec<u8> {
    let error = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": -32700, "message": format!("Parse error: {detail}") },
    });
    serde_json::to_vec(&error).unwrap_or_default()
}
