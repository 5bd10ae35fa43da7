//! The Anthropic Messages brain against a scripted server on 127.0.0.1: the exact request
//! (system, tools with input_schema, cache_control, tool_use/tool_result blocks, headers),
//! usage with cache reads and writes priced exactly, streaming events, and 529 retried.

mod http_support;

use agentvisor::agent::brain::{
    AnthropicBrain, AnthropicConfig, AssistantMessage, Brain, Message, Prices, RetryPolicy, ToolCall,
    ToolSpec, TurnRequest,
};
use http_support::{RecordingSleeper, Reply, Server};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

fn window() -> Vec<Message> {
    vec![
        Message::user("Read the notes."),
        Message::Assistant(AssistantMessage {
            text: Some("Reading.".into()),
            tool_calls: vec![ToolCall {
                id: "toolu_1".into(),
                name: "read_file".into(),
                arguments: json!({"path": "/notes"}),
            }],
        }),
        Message::tool_result("toolu_1", "hi"),
        Message::note("a message arrived"),
    ]
}

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "read_file".into(),
            description: "Reads a file.".into(),
            parameters: json!({"type": "object"}),
        },
        ToolSpec {
            name: "finish".into(),
            description: "Ends.".into(),
            parameters: json!({"type": "object"}),
        },
    ]
}

fn answer() -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [
            {"type": "text", "text": "Done reading."},
            {"type": "tool_use", "id": "toolu_2", "name": "finish", "input": {"result": "hi"}}
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 100, "output_tokens": 20, "cache_creation_input_tokens": 1000, "cache_read_input_tokens": 3000}
    })
}

fn prices() -> Prices {
    Prices { input: 3_000_000, output: 15_000_000, cache_read: 300_000, cache_write: 3_750_000 }
}

#[tokio::test]
async fn the_request_is_the_messages_api_shape_with_the_prefix_cached() {
    let server = Server::start(vec![Reply::json(200, &answer())]).await;
    let brain = AnthropicBrain::new(
        AnthropicConfig::new(&server.base_url, "claude-test")
            .with_api_key("sk-ant-test")
            .with_prices(prices())
            .with_retry(RetryPolicy::none()),
    )
    .expect("brain");
    let window = window();
    let tools = tools();
    let turn = brain.turn(TurnRequest::new("You are careful.", &window, &tools)).await.expect("answers");
    let request = &server.requests()[0];
    assert_eq!(request.request_line, "POST /v1/messages HTTP/1.1");
    assert_eq!(request.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("authorization"), None);
    assert_eq!(
        request.body,
        json!({
            "model": "claude-test",
            "max_tokens": 4096,
            "system": [{"type": "text", "text": "You are careful.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Read the notes."}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Reading."},
                    {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "/notes"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "hi"},
                    {"type": "text", "text": "[runtime note] a message arrived"}
                ]}
            ],
            "tools": [
                {"name": "read_file", "description": "Reads a file.", "input_schema": {"type": "object"}},
                {"name": "finish", "description": "Ends.", "input_schema": {"type": "object"},
                 "cache_control": {"type": "ephemeral"}}
            ]
        })
    );
    assert_eq!(turn.message.text.as_deref(), Some("Done reading."));
    assert_eq!(turn.message.tool_calls[0].arguments, json!({"result": "hi"}));
    assert_eq!(turn.finish.as_str(), "tool_calls");
    let u = turn.usage;
    assert_eq!(
        (u.input_tokens, u.output_tokens, u.cached_tokens, u.cache_write_tokens),
        (4100, 20, 3000, 1000)
    );
    // 100 × $3 + 20 × $15 + 3000 × $0.30 + 1000 × $3.75, per million tokens, in micro-dollars.
    assert_eq!(u.cost_micros, Some(300 + 300 + 900 + 3750));
}

#[tokio::test]
async fn a_stream_of_message_events_is_assembled() {
    let event = |name: &str, value: Value| format!("event: {name}\ndata: {value}\n\n");
    let events = vec![
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 50, "output_tokens": 1, "cache_read_input_tokens": 7}}}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        event("ping", json!({"type": "ping"})),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me "}}),
        ),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "look."}}),
        ),
        event("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_9", "name": "read_file", "input": {}}}),
        ),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"path\": "}}),
        ),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "\"/x\"}"}}),
        ),
        event("content_block_stop", json!({"type": "content_block_stop", "index": 1})),
        event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 31}}),
        ),
        event("message_stop", json!({"type": "message_stop"})),
    ];
    let server = Server::start(vec![Reply::Sse(events)]).await;
    let brain = AnthropicBrain::new(
        AnthropicConfig::new(&server.base_url, "claude-test")
            .with_stream(true)
            .with_retry(RetryPolicy::none()),
    )
    .expect("brain");
    let window = vec![Message::user("hi")];
    let turn = brain.turn(TurnRequest::new("", &window, &[])).await.expect("the stream answers");
    assert_eq!(server.requests()[0].body["stream"], json!(true));
    assert!(server.requests()[0].body.get("system").is_none(), "an empty slot sends no system");
    assert_eq!(turn.message.text.as_deref(), Some("Let me look."));
    assert_eq!(turn.message.tool_calls[0].id, "toolu_9");
    assert_eq!(turn.message.tool_calls[0].arguments, json!({"path": "/x"}));
    assert_eq!((turn.usage.input_tokens, turn.usage.output_tokens, turn.usage.cached_tokens), (57, 31, 7));
}

#[tokio::test]
async fn overloaded_529_is_retried_and_an_error_event_is_a_provider_error() {
    let server = Server::start(vec![
        Reply::json(
            529,
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
        Reply::json(200, &answer()),
    ])
    .await;
    let sleeper = Arc::new(RecordingSleeper::default());
    let policy = RetryPolicy::default()
        .with_delays(Duration::from_millis(5), Duration::from_millis(5))
        .with_sleeper(Arc::clone(&sleeper) as Arc<dyn agentvisor::agent::brain::Sleeper>);
    let brain = AnthropicBrain::new(AnthropicConfig::new(&server.base_url, "claude-test").with_retry(policy))
        .expect("brain");
    let window = vec![Message::user("hi")];
    brain.turn(TurnRequest::new("", &window, &[])).await.expect("the retry answers");
    assert_eq!(sleeper.waits().len(), 1);
    assert_eq!(server.requests().len(), 2);

    let events = vec![format!(
        "event: error\ndata: {}\n\n",
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded mid-stream"}})
    )];
    let server = Server::start(vec![Reply::Sse(events)]).await;
    let brain = AnthropicBrain::new(
        AnthropicConfig::new(&server.base_url, "claude-test")
            .with_stream(true)
            .with_retry(RetryPolicy::none()),
    )
    .expect("brain");
    let err = brain.turn(TurnRequest::new("", &window, &[])).await.expect_err("an error event");
    assert_eq!(err.code(), "brain_provider_error");
    assert!(err.to_string().contains("Overloaded mid-stream"), "{err}");
}
