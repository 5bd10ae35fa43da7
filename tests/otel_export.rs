//! Built with the `otel` feature only: `agentvisor agent` with `OTEL_EXPORTER_OTLP_ENDPOINT`
//! set exports its spans over OTLP/HTTP. A collector stand-in (axum on 127.0.0.1:0, `POST
//! /v1/traces`) decodes the protobuf requests, and the spans, their nesting and the GenAI
//! attributes of the model requests are checked.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

type Received = Arc<Mutex<Vec<ExportTraceServiceRequest>>>;

/// Serves `POST /v1/traces` on a free loopback port, keeping every decoded request.
async fn collector() -> (String, Received) {
    let received: Received = Arc::default();
    let kept = Arc::clone(&received);
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            let kept = Arc::clone(&kept);
            async move {
                let request =
                    ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf trace request");
                kept.lock().expect("lock").push(request);
                ([("content-type", "application/x-protobuf")], Vec::<u8>::new())
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    (url, received)
}

fn attribute(span: &Span, key: &str) -> Option<Any> {
    span.attributes.iter().find(|kv| kv.key == key).and_then(|kv| kv.value.clone()).and_then(|v| v.value)
}

fn string(span: &Span, key: &str) -> Option<String> {
    match attribute(span, key) {
        Some(Any::StringValue(s)) => Some(s),
        _ => None,
    }
}

fn int(span: &Span, key: &str) -> Option<i64> {
    match attribute(span, key) {
        Some(Any::IntValue(i)) => Some(i),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_and_genai_attributes_reach_an_otlp_collector() {
    let (endpoint, received) = collector().await;
    let work = tempfile::tempdir().expect("tempdir");
    let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/agents");
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentvisor"))
        .arg("--state")
        .arg(work.path().join("state"))
        .arg("agent")
        .arg(examples.join("swarm.yaml"))
        .args(["lead", "Write the report", "--scripts"])
        .arg(examples.join("swarm-scripts.json"))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env_remove("RUST_LOG")
        .output()
        .await
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("INFO"), "exporting spans prints no logs: {stderr}");

    // The binary flushed its spans before it exited, so every request has been answered.
    let requests = received.lock().expect("lock").clone();
    assert!(!requests.is_empty(), "no export request arrived");
    let mut spans: Vec<Span> = Vec::new();
    for request in &requests {
        for resource in &request.resource_spans {
            let service = resource.resource.as_ref().and_then(|r| {
                r.attributes.iter().find(|kv| kv.key == "service.name").and_then(|kv| kv.value.clone())
            });
            assert_eq!(service.and_then(|v| v.value), Some(Any::StringValue("agentvisor".into())));
            spans.extend(resource.scope_spans.iter().flat_map(|s| s.spans.iter().cloned()));
        }
    }
    let named = |name: &str| spans.iter().filter(|s| s.name == name).cloned().collect::<Vec<Span>>();
    let processes = named("agent_process");
    assert_eq!(processes.len(), 3, "the lead, its researcher and its fork");
    let turns = named("agent_turn");
    let calls = named("tool_call");
    assert!(turns.len() >= 6 && calls.len() >= 6, "{} turns, {} calls", turns.len(), calls.len());
    for turn in &turns {
        assert!(processes.iter().any(|p| p.span_id == turn.parent_span_id), "a turn is inside a process");
    }
    for call in &calls {
        assert!(turns.iter().any(|t| t.span_id == call.parent_span_id), "a call is inside a turn");
        assert!(string(call, "tool").is_some());
    }

    let chats = named("chat lead");
    assert_eq!(chats.len(), 5, "the lead's three model requests and its fork's two");
    for chat in &chats {
        let turn =
            turns.iter().find(|t| t.span_id == chat.parent_span_id).expect("a request inside its turn");
        assert_eq!(string(turn, "profile").as_deref(), Some("lead"));
        assert_eq!(chat.kind, 3, "a client span");
        assert_eq!(string(chat, "gen_ai.operation.name").as_deref(), Some("chat"));
        assert_eq!(string(chat, "gen_ai.provider.name").as_deref(), Some("scripted"));
        assert_eq!(string(chat, "gen_ai.system").as_deref(), Some("scripted"));
        assert_eq!(string(chat, "gen_ai.request.model").as_deref(), Some("lead"));
        assert!(int(chat, "gen_ai.usage.input_tokens").is_some_and(|t| t > 0), "{chat:?}");
        assert!(int(chat, "gen_ai.usage.output_tokens").is_some_and(|t| t >= 0), "{chat:?}");
        assert_eq!(string(chat, "gen_ai.response.finish_reasons").as_deref(), Some("tool_calls"));
    }
}
