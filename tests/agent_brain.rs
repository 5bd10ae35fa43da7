//! Brains through their public surface: the scripted brain's determinism, expectations and
//! exhaustion; the OpenAI-compatible client against a real HTTP server on loopback that each
//! test starts (request shape, replies, usage, every failure as a typed error); the token
//! estimator; and a property test that no response body panics the parser (seed printed; set
//! `AGENT_BRAIN_FUZZ_SEED` to replay another). No test needs the network.

mod http_support;
mod seeded;

use agentvisor::agent::brain::openai::{NOTE_PREFIX, parse_chat_completion};
use agentvisor::agent::brain::tokens;
use agentvisor::agent::brain::{
    AssistantMessage, Brain, BrainError, FinishReason, Message, OpenAiBrain, OpenAiConfig, Script,
    ScriptedBrain, ScriptedTurn, ToolCall, ToolSpec, Turn, TurnRequest, Usage,
};
use http_support::Received;
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

// ---------------------------------------------------------------------------------------------
// Fixtures

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "read_file".into(),
        description: "Reads a file.".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }]
}

/// A window with every kind of message: user, assistant with a tool call, its result, a note.
fn full_window() -> Vec<Message> {
    vec![
        Message::user("list the files"),
        Message::Assistant(AssistantMessage {
            text: Some("looking".into()),
            tool_calls: vec![ToolCall {
                id: "call_a".into(),
                name: "read_file".into(),
                arguments: json!({"path": "/x"}),
            }],
        }),
        Message::tool_result("call_a", "contents of x"),
        Message::note("you were forked at turn 3"),
    ]
}

async fn run(
    brain: &dyn Brain,
    system: &str,
    window: &[Message],
    tools: &[ToolSpec],
) -> Result<Turn, BrainError> {
    brain.turn(TurnRequest::new(system, &window, tools)).await
}

// ---------------------------------------------------------------------------------------------
// The scripted brain

fn demo_script() -> Script {
    Script::new(vec![
        ScriptedTurn::call("read_file", json!({"path": "/notes"})).with_text("reading"),
        ScriptedTurn::text("the notes say hi").expect_tool_result("hi"),
    ])
}

#[tokio::test]
async fn scripted_brain_is_deterministic() {
    let tools = tools();
    let mut outputs = Vec::new();
    for _ in 0..2 {
        let brain = ScriptedBrain::new(demo_script());
        let mut window = vec![Message::user("what do the notes say?")];
        let first = run(&brain, "you are a reader", &window, &tools).await.expect("first turn");
        let call_id = first.message.tool_calls[0].id.clone();
        window.push(first.clone().into_message());
        window.push(Message::tool_result(call_id, "hi there"));
        let second = run(&brain, "you are a reader", &window, &tools).await.expect("second turn");
        outputs.push((first, second));
    }
    assert_eq!(outputs[0], outputs[1], "two runs of one script answer the same");
    let (first, second) = &outputs[0];
    assert_eq!(first.message.text.as_deref(), Some("reading"));
    assert_eq!(first.message.tool_calls[0].id, "call_0_0");
    assert_eq!(first.message.tool_calls[0].arguments, json!({"path": "/notes"}));
    assert_eq!(first.finish, FinishReason::ToolCalls);
    assert_eq!(second.finish, FinishReason::Stop);
    assert_eq!(second.message.text.as_deref(), Some("the notes say hi"));
    // Usage is the estimator's, for the request it was given.
    let window = vec![Message::user("what do the notes say?")];
    let request = TurnRequest::new("you are a reader", &window, &tools);
    assert_eq!(first.usage.input_tokens, tokens::request_tokens(&request));
    assert_eq!(first.usage.output_tokens, tokens::assistant_tokens(&first.message));
    assert_eq!(first.usage.cached_tokens, 0);
}

#[tokio::test]
async fn scripted_brain_reports_exhaustion() {
    let brain = ScriptedBrain::new(Script::new(vec![ScriptedTurn::text("only")]));
    let window = vec![Message::user("go")];
    run(&brain, "", &window, &[]).await.expect("the one turn");
    assert_eq!(brain.remaining(), 0);
    for _ in 0..2 {
        let err = run(&brain, "", &window, &[]).await.expect_err("no turn left");
        assert_eq!(err, BrainError::ScriptExhausted { turns: 1 });
        assert_eq!(err.code(), "brain_script_exhausted");
    }
    assert_eq!(brain.played(), 1);
}

#[tokio::test]
async fn scripted_expectation_failure_names_what_was_there_and_does_not_advance() {
    let brain = ScriptedBrain::new(demo_script());
    let mut window = vec![Message::user("go")];
    let first = run(&brain, "", &window, &[]).await.expect("first turn");
    window.push(first.into_message());
    window.push(Message::tool_result("call_0_0", "file not found"));
    let err = run(&brain, "", &window, &[]).await.expect_err("the result lacks \"hi\"");
    assert_eq!(err.code(), "brain_script_expectation");
    let BrainError::ScriptExpectation { turn, expected, found } = &err else { panic!("{err:?}") };
    assert_eq!(*turn, 1);
    assert!(expected.contains("\"hi\""), "{expected}");
    assert!(found.contains("file not found"), "{found}");
    assert_eq!(brain.played(), 1, "a failed turn is not consumed");
    // Only results since the model last spoke count: an older "hi" does not satisfy it.
    window.pop();
    window.insert(0, Message::tool_result("old", "hi from long ago"));
    window.push(Message::tool_result("call_0_0", "still empty"));
    assert!(run(&brain, "", &window, &[]).await.is_err());
    window.push(Message::tool_result("call_0_1", "hi"));
    assert!(run(&brain, "", &window, &[]).await.is_ok());
}

#[tokio::test]
async fn scripted_expectations_on_system_slot_and_tail() {
    let brain = ScriptedBrain::new(Script::new(vec![
        ScriptedTurn::text("ok").expect_system("You are the reviewer").expect_tail("became reviewer"),
    ]));
    let window = vec![Message::user("start"), Message::note("you became reviewer")];
    let err = run(&brain, "You are the writer", &window, &[]).await.expect_err("wrong system slot");
    let BrainError::ScriptExpectation { found, .. } = &err else { panic!("{err:?}") };
    assert!(found.contains("You are the writer"), "{found}");
    let turn = run(&brain, "You are the reviewer.", &window, &[]).await.expect("expectations hold");
    assert_eq!(turn.message.text.as_deref(), Some("ok"));
}

#[tokio::test]
async fn script_loads_from_json_and_refuses_mistakes_by_path() {
    let script = Script::from_json(
        r#"{"turns": [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "/a"}}, {"id": "mine", "name": "list"}]},
            {"expect": {"tool_results_contain": ["a-contents"]}, "text": "done", "finish": "length"}
        ]}"#,
    )
    .expect("a valid script");
    let brain = ScriptedBrain::new(script);
    let mut window = vec![Message::user("go")];
    let first = run(&brain, "", &window, &[]).await.expect("first");
    let ids: Vec<&str> = first.message.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["call_0_0", "mine"]);
    assert_eq!(first.message.tool_calls[1].arguments, json!({}), "arguments default to {{}}");
    window.push(first.into_message());
    window.push(Message::tool_result("call_0_0", "a-contents"));
    let second = run(&brain, "", &window, &[]).await.expect("second");
    assert_eq!(second.finish, FinishReason::Length);

    let err = Script::from_json(r#"{"turns": [{"txt": "typo"}]}"#).expect_err("unknown field");
    assert_eq!(err.code(), "brain_invalid_config");
    assert!(err.to_string().contains("turns[0]"), "{err}");
    assert!(err.to_string().contains("txt"), "{err}");
    let err = Script::from_json(
        r#"{"turns": [{"tool_calls": [{"id": "x", "name": "a"}]}, {"tool_calls": [{"id": "x", "name": "b"}]}]}"#,
    )
    .expect_err("duplicate id");
    assert!(err.to_string().contains("turns[1].tool_calls[0].id"), "{err}");
    assert!(Script::from_json("[]").is_err());
}

#[tokio::test]
async fn brains_are_shared_as_arc_dyn_across_tasks() {
    let brain: Arc<dyn Brain> = Arc::new(ScriptedBrain::new(demo_script()));
    let task = tokio::spawn({
        let brain = Arc::clone(&brain);
        async move {
            let window = vec![Message::user("go")];
            brain.turn(TurnRequest::new("", &window, &[])).await
        }
    });
    let turn = task.await.expect("the task ran").expect("a turn");
    assert_eq!(turn.message.tool_calls.len(), 1);
}

#[test]
fn messages_have_no_system_role_and_round_trip() {
    for message in full_window() {
        let value = serde_json::to_value(&message).expect("serializes");
        assert_eq!(value["role"], message.role().as_str());
        assert_eq!(serde_json::from_value::<Message>(value).expect("reads back"), message);
    }
    assert_eq!(
        serde_json::to_value(Message::assistant_text("hi")).expect("serializes"),
        json!({"role": "assistant", "text": "hi"})
    );
    let system = serde_json::from_value::<Message>(json!({"role": "system", "text": "you are…"}));
    assert!(system.is_err(), "a history cannot hold a system prompt");
}

// ---------------------------------------------------------------------------------------------
// The token estimator

#[test]
fn token_estimator_follows_its_documented_rule() {
    assert_eq!(tokens::text_tokens(""), 0);
    assert_eq!(tokens::text_tokens("12345678"), 2);
    assert_eq!(tokens::text_tokens("123456789"), 3);
    let user = Message::user("12345678");
    assert_eq!(tokens::message_tokens(&user), tokens::MESSAGE_OVERHEAD_TOKENS + 2);
    let call = ToolCall { id: "c".into(), name: "abcd".into(), arguments: json!({}) };
    assert_eq!(tokens::tool_call_tokens(&call), tokens::TOOL_CALL_OVERHEAD_TOKENS + 1 + 1);
    let window = vec![user.clone(), user];
    assert_eq!(tokens::window_tokens(&window), 2 * (tokens::MESSAGE_OVERHEAD_TOKENS + 2));
    // The empty system slot costs nothing; a filled one costs one message.
    let empty = TurnRequest::new("", &window, &[]);
    let filled = TurnRequest::new("abcd", &window, &[]);
    assert_eq!(
        tokens::request_tokens(&filled) - tokens::request_tokens(&empty),
        tokens::MESSAGE_OVERHEAD_TOKENS + 1
    );
    assert_eq!(tokens::request_tokens(&empty), tokens::window_tokens(&window) + tokens::REPLY_PRIMING_TOKENS);
}

// ---------------------------------------------------------------------------------------------
// A loopback HTTP server

fn http_response(status: u16, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} Whatever\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

async fn read_request(stream: &mut TcpStream) -> Received {
    http_support::read_request(stream).await.expect("a whole request")
}

/// Starts a server that answers one request with `response`; returns the base URL and what it
/// received.
async fn serve_once(response: Vec<u8>) -> (String, JoinHandle<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let addr = listener.local_addr().expect("a local address");
    let task = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.expect("accept");
        let received = read_request(&mut stream).await;
        stream.write_all(&response).await.expect("write the response");
        stream.shutdown().await.expect("close");
        received
    });
    (format!("http://{addr}/v1"), task)
}

async fn answer(status: u16, body: &str) -> (Result<Turn, BrainError>, Received) {
    answer_with(status, body, |c| c).await
}

async fn answer_with(
    status: u16,
    body: &str,
    configure: impl FnOnce(OpenAiConfig) -> OpenAiConfig,
) -> (Result<Turn, BrainError>, Received) {
    let (base_url, server) = serve_once(http_response(status, body)).await;
    let config = configure(
        OpenAiConfig::new(base_url, "test-model")
            .with_timeout(Duration::from_secs(30))
            .with_retry(agentvisor::agent::brain::RetryPolicy::none()),
    );
    let brain = OpenAiBrain::new(config).expect("a valid configuration");
    let window = full_window();
    let tools = tools();
    let result = run(&brain, "You are a careful reader.", &window, &tools).await;
    (result, server.await.expect("the server task"))
}

fn completion(message: Value, finish: &str) -> String {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127,
                  "prompt_tokens_details": {"cached_tokens": 64}},
    })
    .to_string()
}

// ---------------------------------------------------------------------------------------------
// The OpenAI-compatible brain against the loopback server

#[tokio::test]
async fn request_has_system_slot_first_tools_model_and_auth() {
    let body = completion(json!({"role": "assistant", "content": "hello"}), "stop");
    let (result, received) =
        answer_with(200, &body, |c| c.with_api_key("sk-test-123").with_max_tokens(256)).await;
    let turn = result.expect("a plain text turn");

    assert_eq!(received.request_line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(received.header("authorization"), Some("Bearer sk-test-123"));
    assert!(received.header("content-type").is_some_and(|v| v.starts_with("application/json")));
    let body = &received.body;
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["max_tokens"], 256);
    let messages = body["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 5, "the system slot plus the four window messages");
    assert_eq!(messages[0], json!({"role": "system", "content": "You are a careful reader."}));
    assert_eq!(messages[1], json!({"role": "user", "content": "list the files"}));
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(messages[2]["content"], "looking");
    let call = &messages[2]["tool_calls"][0];
    assert_eq!(call["id"], "call_a");
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "read_file");
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().expect("arguments travel as a string"))
            .expect("the string holds JSON");
    assert_eq!(arguments, json!({"path": "/x"}));
    assert_eq!(messages[3], json!({"role": "tool", "tool_call_id": "call_a", "content": "contents of x"}));
    assert_eq!(
        messages[4],
        json!({"role": "user", "content": format!("{NOTE_PREFIX}you were forked at turn 3")})
    );
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {
            "name": "read_file",
            "description": "Reads a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        }}])
    );
    let system_count = messages.iter().filter(|m| m["role"] == "system").count();
    assert_eq!(system_count, 1, "the system prompt appears once, first");

    assert_eq!(turn.message, AssistantMessage { text: Some("hello".into()), tool_calls: vec![] });
    assert_eq!(turn.finish, FinishReason::Stop);
    assert_eq!(
        turn.usage,
        Usage {
            input_tokens: 120,
            output_tokens: 7,
            cached_tokens: 64,
            cache_write_tokens: 0,
            cost_micros: None
        }
    );
}

#[tokio::test]
async fn empty_slot_no_key_and_no_tools_send_nothing_for_them() {
    let (base_url, server) =
        serve_once(http_response(200, &completion(json!({"content": "hi"}), "stop"))).await;
    let brain = OpenAiBrain::new(OpenAiConfig::new(base_url, "m")).expect("config");
    let window = vec![Message::user("hello")];
    run(&brain, "", &window, &[]).await.expect("a turn");
    let received = server.await.expect("server");
    assert_eq!(received.header("authorization"), None);
    assert_eq!(received.body["messages"], json!([{"role": "user", "content": "hello"}]));
    assert!(received.body.get("tools").is_none());
    assert!(received.body.get("max_tokens").is_none());
}

#[tokio::test]
async fn tool_call_reply_has_arguments_parsed() {
    let body = completion(
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"/etc/hosts\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "list", "arguments": ""}},
        ]}),
        "tool_calls",
    );
    let (result, _) = answer(200, &body).await;
    let turn = result.expect("a tool call turn");
    assert_eq!(turn.message.text, None);
    assert_eq!(
        turn.message.tool_calls,
        vec![
            ToolCall {
                id: "call_1".into(),
                name: "read_file".into(),
                arguments: json!({"path": "/etc/hosts"})
            },
            ToolCall { id: "call_2".into(), name: "list".into(), arguments: json!({}) },
        ]
    );
    assert_eq!(turn.finish, FinishReason::ToolCalls);
    assert_eq!(turn.usage.input_tokens, 120);
    assert_eq!(turn.usage.output_tokens, 7);
}

#[tokio::test]
async fn missing_usage_is_estimated_not_zero() {
    let body = json!({"choices": [{"message": {"content": "hi"}}]}).to_string();
    let (result, _) = answer(200, &body).await;
    let turn = result.expect("a turn");
    assert_eq!(turn.finish, FinishReason::Stop, "inferred");
    let window = full_window();
    let tools = tools();
    let request = TurnRequest::new("You are a careful reader.", &window, &tools);
    assert_eq!(turn.usage.input_tokens, tokens::request_tokens(&request));
    assert_eq!(turn.usage.output_tokens, tokens::assistant_tokens(&turn.message));
}

#[tokio::test]
async fn http_error_statuses_are_typed_with_an_excerpt() {
    let (result, _) = answer(401, r#"{"error": {"message": "invalid api key"}}"#).await;
    let err = result.expect_err("401");
    assert_eq!(err.code(), "brain_http_status");
    let BrainError::HttpStatus { status, body_excerpt } = &err else { panic!("{err:?}") };
    assert_eq!(*status, 401);
    assert!(body_excerpt.contains("invalid api key"), "{body_excerpt}");
    assert!(!err.is_retryable());

    let long = "x".repeat(10_000);
    let (result, _) = answer(500, &long).await;
    let err = result.expect_err("500");
    let BrainError::HttpStatus { status, body_excerpt } = &err else { panic!("{err:?}") };
    assert_eq!(*status, 500);
    assert!(body_excerpt.len() <= agentvisor::agent::brain::limits::ERROR_BODY_EXCERPT_BYTES_MAX + 3);
    assert!(err.is_retryable());
}

#[tokio::test]
async fn malformed_bodies_are_typed_errors() {
    let cases: [(&str, &str); 6] = [
        ("this is not json", "not JSON"),
        ("[1, 2]", "expected a JSON object, found an array"),
        (r#"{"id": "x", "usage": {}}"#, "choices"),
        (r#"{"choices": []}"#, "`choices` is empty"),
        (r#"{"choices": [{"finish_reason": "stop"}]}"#, "message"),
        (
            r#"{"choices": [{"message": {"content": "a"}}], "usage": {"prompt_tokens": -3}}"#,
            "usage.prompt_tokens",
        ),
    ];
    for (body, needle) in cases {
        let (result, _) = answer(200, body).await;
        let err = result.expect_err(body);
        assert_eq!(err.code(), "brain_malformed_response", "{body}: {err}");
        assert!(err.to_string().contains(needle), "{body}: {err}");
    }
}

#[tokio::test]
async fn non_json_tool_arguments_are_kept_as_their_text() {
    let body = completion(
        json!({"tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "read_file", "arguments": "{path: /x"}}]}),
        "tool_calls",
    );
    let (result, _) = answer(200, &body).await;
    let turn = result.expect("a malformed call is the turn loop's to answer, not a failed turn");
    let call = &turn.message.tool_calls[0];
    assert_eq!((call.id.as_str(), call.name.as_str()), ("call_9", "read_file"));
    assert_eq!(call.arguments, json!("{path: /x"), "the text the model wrote, as a string");
}

#[tokio::test]
async fn refusals_and_error_objects_are_typed() {
    let body = completion(json!({"content": null, "refusal": "I can't help with that."}), "stop");
    let (result, _) = answer(200, &body).await;
    let err = result.expect_err("refusal");
    assert_eq!(err.code(), "brain_refused");
    assert!(err.to_string().contains("I can't help with that."), "{err}");

    let body = completion(json!({"content": "partial"}), "content_filter");
    let (result, _) = answer(200, &body).await;
    assert_eq!(result.expect_err("filtered").code(), "brain_refused");

    let (result, _) = answer(200, r#"{"error": {"message": "upstream overloaded", "code": 502}}"#).await;
    let err = result.expect_err("error object");
    assert_eq!(err, BrainError::Provider { message: "upstream overloaded".into() });
}

#[tokio::test]
async fn connection_refused_is_a_transport_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let brain = OpenAiBrain::new(
        OpenAiConfig::new(format!("http://{addr}/v1"), "m")
            .with_retry(agentvisor::agent::brain::RetryPolicy::none()),
    )
    .expect("config");
    let window = vec![Message::user("hello")];
    let err = run(&brain, "", &window, &[]).await.expect_err("nobody listens");
    assert_eq!(err.code(), "brain_transport", "{err}");
    let BrainError::Transport { url, .. } = &err else { panic!("{err:?}") };
    assert_eq!(url, &format!("http://{addr}/v1/chat/completions"));
    assert!(err.is_retryable());
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    // Accepts and reads the request, then holds the connection open without answering.
    let _server = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.expect("accept");
        let _received = read_request(&mut stream).await;
        std::future::pending::<()>().await;
    });
    let timeout = Duration::from_millis(300);
    let brain = OpenAiBrain::new(
        OpenAiConfig::new(format!("http://{addr}/v1"), "m")
            .with_timeout(timeout)
            .with_retry(agentvisor::agent::brain::RetryPolicy::none()),
    )
    .expect("config");
    let window = vec![Message::user("hello")];
    let err = run(&brain, "", &window, &[]).await.expect_err("no answer");
    assert_eq!(err, BrainError::Timeout { timeout });
    assert_eq!(err.code(), "brain_timeout");
}

#[test]
fn invalid_configurations_are_refused_without_printing_the_key() {
    let cases = [
        OpenAiConfig::new("not a url", "m"),
        OpenAiConfig::new("ftp://example.com/v1", "m"),
        OpenAiConfig::new("http://127.0.0.1:1/v1", " "),
        OpenAiConfig::new("http://127.0.0.1:1/v1", "m").with_timeout(Duration::ZERO),
        OpenAiConfig::new("http://127.0.0.1:1/v1", "m").with_api_key("secret\nkey"),
    ];
    for config in cases {
        let err = OpenAiBrain::new(config.clone()).expect_err("invalid");
        assert_eq!(err.code(), "brain_invalid_config", "{config:?}: {err}");
        assert!(!err.to_string().contains("secret"), "{err}");
        assert!(!format!("{config:?}").contains("secret"));
    }
    let err = OpenAiConfig::new("http://127.0.0.1:1/v1", "m")
        .with_api_key_from_env("AGENTVISOR_TEST_SURELY_UNSET_VARIABLE")
        .expect_err("unset");
    assert!(err.to_string().contains("AGENTVISOR_TEST_SURELY_UNSET_VARIABLE"), "{err}");
    let brain = OpenAiBrain::new(OpenAiConfig::new("http://localhost:8080/v1/", "m").with_api_key("secret"))
        .expect("a trailing slash is fine");
    assert_eq!(brain.endpoint(), "http://localhost:8080/v1/chat/completions");
    assert!(!format!("{brain:?}").contains("secret"));
}

// ---------------------------------------------------------------------------------------------
// The parser never panics

fn runner() -> TestRunner {
    seeded::runner("agent_brain", "AGENT_BRAIN_FUZZ_SEED", 0xb2a1_4f00, 1024)
}

/// JSON biased towards a completion's field names and shapes, so that deep paths are reached.
fn completion_like() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("choices".to_string()),
        Just("message".to_string()),
        Just("content".to_string()),
        Just("tool_calls".to_string()),
        Just("function".to_string()),
        Just("name".to_string()),
        Just("arguments".to_string()),
        Just("id".to_string()),
        Just("finish_reason".to_string()),
        Just("refusal".to_string()),
        Just("usage".to_string()),
        Just("prompt_tokens".to_string()),
        Just("completion_tokens".to_string()),
        Just("prompt_tokens_details".to_string()),
        Just("cached_tokens".to_string()),
        Just("cost".to_string()),
        Just("error".to_string()),
        Just("text".to_string()),
        "[a-z_]{0,10}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "\\PC{0,16}".prop_map(Value::String),
        Just(Value::String("{\"a\": 1}".into())),
        Just(Value::String("{not json".into())),
        Just(Value::String("content_filter".into())),
    ];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

#[test]
fn no_response_body_panics_the_parser() {
    runner()
        .run(&prop::collection::vec(any::<u8>(), 0..512), |bytes| {
            if let Err(e) = parse_chat_completion(&bytes) {
                prop_assert!(!e.code().is_empty());
                prop_assert!(!e.to_string().is_empty());
            }
            Ok(())
        })
        .expect("arbitrary bytes parse or are refused with a typed error");
    runner()
        .run(&completion_like(), |value| {
            let bytes = value.to_string().into_bytes();
            match parse_chat_completion(&bytes) {
                Ok(c) => prop_assert!(c.message.tool_calls.iter().all(|t| !t.id.is_empty())),
                Err(e) => prop_assert!(!e.code().is_empty()),
            }
            Ok(())
        })
        .expect("completion-shaped JSON parses or is refused with a typed error");
    // The real skeleton around random parts, so that every field's reading is reached.
    let skeleton = (completion_like(), completion_like(), completion_like(), completion_like()).prop_map(
        |(message, calls, finish, usage)| {
            let mut message = message;
            if let Value::Object(m) = &mut message {
                m.insert("tool_calls".into(), json!([{"id": "c", "function": calls}]));
            }
            json!({"choices": [{"message": message, "finish_reason": finish}], "usage": usage})
        },
    );
    runner()
        .run(&skeleton, |value| {
            let _ = parse_chat_completion(value.to_string().as_bytes());
            Ok(())
        })
        .expect("skeleton completions parse or are refused with a typed error");
}
