//! The OpenAI-compatible brain against a scripted server on 127.0.0.1: retries (429 with
//! `Retry-After`, 500, a dropped connection), giving up at the bound, a 400 not retried,
//! streaming, and the settings a request carries. Backoff is recorded, never slept.

mod http_support;

use agentvisor::agent::brain::{
    Brain, BrainError, Message, ModelSettings, OpenAiBrain, OpenAiConfig, Progress, RetryNotice, RetryPolicy,
    ToolSpec, TurnObserver, TurnRequest,
};
use http_support::{RecordingSleeper, Reply, Server, completion, data};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Default)]
struct Watch {
    retries: Mutex<Vec<RetryNotice>>,
    progress: Mutex<Vec<Progress>>,
}

impl TurnObserver for Watch {
    fn retrying(&self, notice: &RetryNotice) {
        self.retries.lock().expect("retries").push(notice.clone());
    }
    fn progress(&self, progress: &Progress) {
        self.progress.lock().expect("progress").push(*progress);
    }
}

fn policy(retries: u32, sleeper: &Arc<RecordingSleeper>) -> RetryPolicy {
    RetryPolicy::default()
        .with_retries(retries)
        .with_delays(Duration::from_millis(10), Duration::from_millis(40))
        .with_sleeper(Arc::clone(sleeper) as Arc<dyn agentvisor::agent::brain::Sleeper>)
}

async fn ask(brain: &OpenAiBrain, watch: &Watch) -> Result<agentvisor::agent::brain::Turn, BrainError> {
    let window = vec![Message::user("hello")];
    let tools = vec![ToolSpec {
        name: "read_file".into(),
        description: "Reads a file.".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }];
    brain.turn(TurnRequest::new("Be brief.", &window, &tools).with_observer(watch)).await
}

fn hello() -> Value {
    completion(json!({"content": "hi"}), "stop", 12, 1)
}

#[tokio::test]
async fn a_429_is_retried_after_the_servers_retry_after() {
    let server = Server::start(vec![
        Reply::status_with(429, &[("retry-after", "1")], r#"{"error": {"message": "slow down"}}"#),
        Reply::json(200, &hello()),
    ])
    .await;
    let sleeper = Arc::new(RecordingSleeper::default());
    let brain = OpenAiBrain::new(OpenAiConfig::new(&server.base_url, "m").with_retry(policy(3, &sleeper)))
        .expect("brain");
    let watch = Watch::default();
    let turn = ask(&brain, &watch).await.expect("the second attempt answers");
    assert_eq!(turn.message.text.as_deref(), Some("hi"));
    assert_eq!(sleeper.waits(), [Duration::from_secs(1)], "the wait is the server's Retry-After");
    let retries = watch.retries.lock().expect("retries").clone();
    assert_eq!(retries.len(), 1);
    assert_eq!((retries[0].attempt, retries[0].retry_after, retries[0].code), (1, true, "brain_http_status"));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body, requests[1].body, "a retry sends the same request");
    let attempts: Vec<u32> = watch.progress.lock().expect("progress").iter().map(|p| p.attempt).collect();
    assert_eq!(attempts, [1, 2]);
}

#[tokio::test]
async fn an_http_date_retry_after_in_the_past_means_no_wait() {
    let server = Server::start(vec![
        Reply::status_with(503, &[("retry-after", "Thu, 01 Jan 1970 00:00:00 GMT")], "down"),
        Reply::json(200, &hello()),
    ])
    .await;
    let sleeper = Arc::new(RecordingSleeper::default());
    let brain = OpenAiBrain::new(OpenAiConfig::new(&server.base_url, "m").with_retry(policy(3, &sleeper)))
        .expect("brain");
    ask(&brain, &Watch::default()).await.expect("answers");
    assert_eq!(sleeper.waits(), [Duration::ZERO]);
}

#[tokio::test]
async fn a_500_and_a_dropped_connection_are_retried_with_jittered_backoff() {
    let server = Server::start(vec![
        Reply::json(500, &json!({"error": "boom"})),
        Reply::Drop,
        Reply::json(200, &hello()),
    ])
    .await;
    let sleeper = Arc::new(RecordingSleeper::default());
    let brain = OpenAiBrain::new(OpenAiConfig::new(&server.base_url, "m").with_retry(policy(3, &sleeper)))
        .expect("brain");
    let watch = Watch::default();
    let turn = ask(&brain, &watch).await.expect("the third attempt answers");
    assert_eq!(turn.message.text.as_deref(), Some("hi"));
    let waits = sleeper.waits();
    assert_eq!(waits.len(), 2);
    assert!(waits[0] <= Duration::from_millis(10) && waits[1] <= Duration::from_millis(20), "{waits:?}");
    let codes: Vec<&str> = watch.retries.lock().expect("retries").iter().map(|r| r.code).collect();
    assert_eq!(codes, ["brain_http_status", "brain_transport"]);
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_server_that_keeps_failing_is_given_up_at_the_bound() {
    let server = Server::start(vec![Reply::json(502, &json!({"error": "bad gateway"})); 5]).await;
    let sleeper = Arc::new(RecordingSleeper::default());
    let brain = OpenAiBrain::new(OpenAiConfig::new(&server.base_url, "m").with_retry(policy(2, &sleeper)))
        .expect("brain");
    let err = ask(&brain, &Watch::default()).await.expect_err("every attempt fails");
    assert_eq!(err.code(), "brain_retries_exhausted", "{err}");
    let BrainError::RetriesExhausted { attempts, last, .. } = &err else { panic!("{err:?}") };
    assert_eq!(*attempts, 3);
    assert_eq!(last.code(), "brain_http_status");
    assert!(err.to_string().contains("3 attempts") && err.to_string().contains("502"), "{err}");
    assert_eq!(server.requests().len(), 3, "one attempt and two retries, no more");
    assert_eq!(sleeper.waits().len(), 2);
}

#[tokio::test]
async fn a_retry_after_past_the_total_bound_gives_up_at_once() {
    let server = Server::start(vec![Reply::status_with(429, &[("retry-after", "3600")], "later"); 2]).await;
    let sleeper = Arc::new(RecordingSleeper::default());
    let brain = OpenAiBrain::new(OpenAiConfig::new(&server.base_url, "m").with_retry(policy(5, &sleeper)))
        .expect("brain");
    let err = ask(&brain, &Watch::default()).await.expect_err("the wait is over the bound");
    assert_eq!(err.code(), "brain_retries_exhausted");
    assert!(err.to_string().contains("would pass"), "{err}");
    assert!(sleeper.waits().is_empty());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_400_is_not_retried() {
    let server = Server::start(vec![
        Reply::json(400, &json!({"error": {"message": "bad request"}})),
        Reply::json(200, &hello()),
    ])
    .await;
    let sleeper = Arc::new(RecordingSleeper::default());
    let brain = OpenAiBrain::new(OpenAiConfig::new(&server.base_url, "m").with_retry(policy(3, &sleeper)))
        .expect("brain");
    let err = ask(&brain, &Watch::default()).await.expect_err("a 400 fails the same way again");
    assert!(matches!(err, BrainError::HttpStatus { status: 400, .. }), "{err:?}");
    assert_eq!(server.requests().len(), 1);
    assert!(sleeper.waits().is_empty());
}

#[tokio::test]
async fn a_dead_server_is_a_transport_failure_after_the_bounded_retries() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let sleeper = Arc::new(RecordingSleeper::default());
    let brain =
        OpenAiBrain::new(OpenAiConfig::new(format!("http://{addr}/v1"), "m").with_retry(policy(2, &sleeper)))
            .expect("brain");
    let err = ask(&brain, &Watch::default()).await.expect_err("nobody listens");
    let BrainError::RetriesExhausted { attempts: 3, last, .. } = &err else { panic!("{err:?}") };
    assert_eq!(last.code(), "brain_transport");
}

fn stream_events() -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        data(
            &json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    vec![
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        chunk(json!({"content": "Reading "}), Value::Null),
        chunk(json!({"content": "it now."}), Value::Null),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_7", "type": "function", "function": {"name": "read_file", "arguments": "{\"pa"}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "th\": \"/notes\"}"}}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
        data(&json!({"id": "c", "object": "chat.completion.chunk", "choices": [],
            "usage": {"prompt_tokens": 77, "completion_tokens": 19, "prompt_tokens_details": {"cached_tokens": 32}}})),
        "data: [DONE]\n\n".to_string(),
    ]
}

#[tokio::test]
async fn a_stream_is_assembled_with_usage_from_its_final_chunk() {
    let server = Server::start(vec![Reply::Sse(stream_events())]).await;
    let brain = OpenAiBrain::new(
        OpenAiConfig::new(&server.base_url, "m").with_stream(true).with_retry(RetryPolicy::none()),
    )
    .expect("brain");
    let watch = Watch::default();
    let turn = ask(&brain, &watch).await.expect("the stream answers");
    assert_eq!(turn.message.text.as_deref(), Some("Reading it now."));
    assert_eq!(turn.message.tool_calls.len(), 1);
    assert_eq!(turn.message.tool_calls[0].id, "call_7");
    assert_eq!(turn.message.tool_calls[0].arguments, json!({"path": "/notes"}));
    assert_eq!(turn.finish.as_str(), "tool_calls");
    assert_eq!((turn.usage.input_tokens, turn.usage.output_tokens, turn.usage.cached_tokens), (77, 19, 32));
    let body = &server.requests()[0].body;
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    let tokens: Vec<u64> = watch.progress.lock().expect("progress").iter().map(|p| p.output_tokens).collect();
    assert!(
        tokens.len() > 3 && tokens.windows(2).all(|w| w[0] <= w[1]) && tokens[tokens.len() - 1] > 0,
        "{tokens:?}"
    );
}

#[tokio::test]
async fn a_stream_cut_short_is_retried() {
    let mut cut = stream_events();
    cut.truncate(3);
    let server = Server::start(vec![Reply::Sse(cut), Reply::Sse(stream_events())]).await;
    let sleeper = Arc::new(RecordingSleeper::default());
    let brain = OpenAiBrain::new(
        OpenAiConfig::new(&server.base_url, "m").with_stream(true).with_retry(policy(2, &sleeper)),
    )
    .expect("brain");
    let watch = Watch::default();
    let turn = ask(&brain, &watch).await.expect("the second stream answers");
    assert_eq!(turn.message.text.as_deref(), Some("Reading it now."));
    assert_eq!(watch.retries.lock().expect("retries")[0].code, "brain_transport");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn settings_travel_in_the_body_and_headers() {
    let server = Server::start(vec![Reply::json(200, &hello())]).await;
    let settings = ModelSettings {
        max_tokens: Some(256),
        temperature: Some(0.25),
        top_p: Some(0.5),
        stop: vec!["END".into()],
        headers: vec![("x-route".into(), "blue".into())],
        retry: RetryPolicy::none(),
        ..ModelSettings::default()
    };
    let brain =
        OpenAiBrain::new(OpenAiConfig::new(&server.base_url, "m").with_settings(settings).with_api_key("k"))
            .expect("brain");
    ask(&brain, &Watch::default()).await.expect("answers");
    let request = &server.requests()[0];
    assert_eq!(request.request_line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(request.header("x-route"), Some("blue"));
    assert_eq!(request.header("authorization"), Some("Bearer k"));
    let body = &request.body;
    assert_eq!(
        (&body["max_tokens"], &body["temperature"], &body["top_p"], &body["stop"]),
        (&json!(256), &json!(0.25), &json!(0.5), &json!(["END"]))
    );
    assert!(body.get("stream").is_none());
    let refused = OpenAiBrain::new(OpenAiConfig::new(&server.base_url, "m").with_settings(ModelSettings {
        headers: vec![("Authorization".into(), "Bearer other".into())],
        ..ModelSettings::default()
    }))
    .expect_err("a reserved header");
    assert_eq!(refused.code(), "brain_invalid_config");
    assert!(!refused.to_string().contains("other"), "{refused}");
}
