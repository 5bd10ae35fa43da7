//! A scripted HTTP/1.1 model server on 127.0.0.1 for the brain tests: it answers each
//! connection with the next scripted reply (a status and body, an event stream, a dropped
//! connection, a stream that stops and holds) and records every request exactly.

#![allow(dead_code, unreachable_pub)]

use agentvisor::agent::brain::Sleeper;
use serde_json::Value;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// One scripted answer.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A status, extra headers and a JSON body.
    Http { status: u16, headers: Vec<(String, String)>, body: String },
    /// Closes the connection without answering.
    Drop,
    /// `200` with `text/event-stream`, the given raw event texts, then closes.
    Sse(Vec<String>),
    /// The same, but holds the connection open after the events (never finishes).
    SseHold(Vec<String>),
}

impl Reply {
    pub fn json(status: u16, body: &Value) -> Reply {
        Reply::Http { status, headers: Vec::new(), body: body.to_string() }
    }

    pub fn status_with(status: u16, headers: &[(&str, &str)], body: &str) -> Reply {
        Reply::Http {
            status,
            headers: headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect(),
            body: body.to_string(),
        }
    }
}

/// An event-stream event with only a `data:` line.
pub fn data(value: &Value) -> String {
    format!("data: {value}\n\n")
}

/// One request as the server received it.
/// The body is JSON (`null` if it is not).
#[derive(Clone, Debug)]
pub struct Received {
    pub request_line: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// A running scripted server.
pub struct Server {
    pub base_url: String,
    pub received: Arc<Mutex<Vec<Received>>>,
    task: JoinHandle<()>,
}

impl Server {
    /// Starts a server answering with `replies` in order (a `500` once they run out).
    pub async fn start(replies: Vec<Reply>) -> Server {
        Server::start_at(replies, "/v1").await
    }

    pub async fn start_at(replies: Vec<Reply>, prefix: &str) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
        let addr = listener.local_addr().expect("a local address");
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&received);
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else { return };
                let log = Arc::clone(&log);
                let replies = Arc::clone(&replies);
                tokio::spawn(async move {
                    let Some(request) = read_request(&mut stream).await else { return };
                    log.lock().expect("log").push(request);
                    let reply = replies.lock().expect("replies").pop_front();
                    answer(&mut stream, reply).await;
                });
            }
        });
        Server { base_url: format!("http://{addr}{prefix}"), received, task }
    }

    pub fn requests(&self) -> Vec<Received> {
        self.received.lock().expect("log").clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(stream: &mut TcpStream, reply: Option<Reply>) {
    let reply = reply.unwrap_or_else(|| Reply::json(500, &serde_json::json!({"error": "script exhausted"})));
    match reply {
        Reply::Drop => {}
        Reply::Http { status, headers, body } => {
            let mut head = format!(
                "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (n, v) in headers {
                head.push_str(&format!("{n}: {v}\r\n"));
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(body.as_bytes()).await;
        }
        Reply::Sse(events) => {
            sse(stream, &events).await;
        }
        Reply::SseHold(events) => {
            sse(stream, &events).await;
            std::future::pending::<()>().await;
        }
    }
    let _ = stream.shutdown().await;
}

async fn sse(stream: &mut TcpStream, events: &[String]) {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
    let _ = stream.write_all(head.as_bytes()).await;
    for event in events {
        let _ = stream.write_all(event.as_bytes()).await;
        let _ = stream.flush().await;
    }
}

/// Reads one request (head and `content-length` body); `None` if the client closed first.
pub async fn read_request(stream: &mut TcpStream) -> Option<Received> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8(data[..head_end].to_vec()).ok()?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize =
        headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = data[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&buf[..n]);
    }
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Received { request_line, headers, body })
}

/// A sleeper that records each wait and returns at once: backoff is checked without
/// spending it.
#[derive(Default)]
pub struct RecordingSleeper {
    pub waits: Mutex<Vec<Duration>>,
}

impl RecordingSleeper {
    pub fn waits(&self) -> Vec<Duration> {
        self.waits.lock().expect("waits").clone()
    }
}

impl Sleeper for RecordingSleeper {
    fn sleep(&self, delay: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        self.waits.lock().expect("waits").push(delay);
        Box::pin(async {})
    }
}

/// A chat completion body.
pub fn completion(message: Value, finish: &str, prompt_tokens: u64, completion_tokens: u64) -> Value {
    serde_json::json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
    })
}

/// A completion that calls `name` with the argument text `arguments` (sent as it is).
pub fn tool_call(id: &str, name: &str, arguments: &str) -> Value {
    completion(
        serde_json::json!({"content": null, "tool_calls": [{"id": id, "type": "function",
            "function": {"name": name, "arguments": arguments}}]}),
        "tool_calls",
        50,
        10,
    )
}
