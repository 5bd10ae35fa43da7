//! The turn loop with a real OpenAI-compatible brain against a scripted server on 127.0.0.1:
//! malformed tool calls answered as errors the model corrects, the malformed and repetition
//! guards, budgets (in the middle of a stream, turns, the default cap), and keys checked
//! before launch.

mod agent_support;
mod http_support;

use agentvisor::actors::Outcome;
use agentvisor::actors::Status;
use agentvisor::actors::kernel::status::FailureKind;
use agentvisor::agent::brain::{Brain, OpenAiBrain, OpenAiConfig, RetryPolicy};
use agentvisor::agent::config::{AgentBudget, load_yaml};
use agentvisor::agent::limits::DEFAULT_ROOT_BUDGET;
use agentvisor::agent::run::{AgentError, AgentHost, AgentIdentity, RootBudget, config_brains};
use agentvisor::agent::window::MemoryChunkStore;
use http_support::{Reply, Server, data, tool_call};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

fn yaml(extra: &str) -> String {
    format!(
        "brains:\n  - {{id: b, kind: scripted, script: s}}\nprofiles:\n  - id: solo\n    brain: b\n    window_tokens: 32000\n    capabilities: {{tasks: true}}\n{extra}"
    )
}

fn host(yaml: &str, server: &Server, stream: bool) -> Arc<AgentHost> {
    let brain: Arc<dyn Brain> = Arc::new(
        OpenAiBrain::new(
            OpenAiConfig::new(&server.base_url, "m").with_stream(stream).with_retry(RetryPolicy::none()),
        )
        .expect("brain"),
    );
    let provider = move |_: &AgentIdentity| -> Result<Arc<dyn Brain>, AgentError> { Ok(Arc::clone(&brain)) };
    agent_support::host_with(yaml, Arc::new(provider), Arc::new(MemoryChunkStore::new()))
}

fn failure(finished: &agent_support::Finished) -> (FailureKind, String) {
    match &finished.outcome {
        Some(Outcome::Failed { error_kind, message }) => (*error_kind, message.clone()),
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// The `tool` messages of a request body.
fn tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn a_call_whose_arguments_are_not_json_goes_back_to_the_model_which_corrects_it() {
    let server = Server::start(vec![
        Reply::json(200, &tool_call("c1", "finish", "{result: oops")),
        Reply::json(200, &tool_call("c2", "finish", r#"{"result": "fixed"}"#)),
    ])
    .await;
    let host = host(&yaml(""), &server, false);
    let rt = agent_support::runtime(&host).await;
    let (_, finished) = agent_support::run_root(&host, &rt, "solo", "go").await;
    assert_eq!(finished.status, Status::Exited, "{:?}", finished.outcome);
    assert_eq!(finished.result(), json!("fixed"));
    let second = &server.requests()[1].body;
    let results = tool_results(second);
    assert_eq!(results.len(), 1);
    assert!(
        results[0].contains("invalid_tool_arguments") && results[0].contains("not valid JSON"),
        "{results:?}"
    );
    let assistant = second["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["role"] == "assistant")
        .expect("the call");
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        json!("{result: oops"),
        "sent back as written"
    );
}

#[tokio::test]
async fn malformed_turns_in_a_row_fail_the_agent_saying_so() {
    let server = Server::start(vec![
        Reply::json(200, &tool_call("c1", "teleport", "{}")),
        Reply::json(200, &tool_call("c2", "list_tasks", "{not json")),
        Reply::json(200, &tool_call("c3", "finish", "{}")),
    ])
    .await;
    let host = host(&yaml("    guards: {malformed_turns: 2}\n"), &server, false);
    let rt = agent_support::runtime(&host).await;
    let (_, finished) = agent_support::run_root(&host, &rt, "solo", "go").await;
    let (kind, message) = failure(&finished);
    assert_eq!(kind, FailureKind::ProgramError);
    assert!(message.contains("malformed_tool_calls") && message.contains("2 turns"), "{message}");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn the_same_call_repeated_draws_one_warning_then_fails_the_agent() {
    let server = Server::start(vec![
        Reply::json(200, &tool_call("c1", "list_tasks", "{}")),
        Reply::json(200, &tool_call("c2", "list_tasks", "{}")),
        Reply::json(200, &tool_call("c3", "list_tasks", "{}")),
        Reply::json(200, &tool_call("c4", "finish", "{}")),
    ])
    .await;
    let host = host(&yaml("    guards: {repeated_calls: 2}\n"), &server, false);
    let rt = agent_support::runtime(&host).await;
    let (_, finished) = agent_support::run_root(&host, &rt, "solo", "go").await;
    let (_, message) = failure(&finished);
    assert!(message.contains("repeated_tool_call") && message.contains("list_tasks"), "{message}");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let results = tool_results(&requests[2].body);
    assert!(!results[0].contains("[runtime note]"), "no warning on the first call");
    assert!(results[1].contains("[runtime note]") && results[1].contains("stops the agent"), "{results:?}");
}

#[tokio::test]
async fn a_token_budget_runs_out_in_the_middle_of_a_stream() {
    let chunk = |text: &str| {
        data(&json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]}))
    };
    let text = "x".repeat(200);
    // Five chunks of 50 estimated tokens each, then the server holds the stream open: only a
    // budget that runs out mid-stream ends this agent.
    let server = Server::start(vec![Reply::SseHold((0..5).map(|_| chunk(&text)).collect())]).await;
    let host = host(&yaml(""), &server, true);
    host.set_root_budget(RootBudget {
        limits: AgentBudget {
            kernel: agentvisor::actors::kernel::budget::Budget { tokens: Some(120), ..Default::default() },
            turns: None,
        },
        unlimited: false,
    });
    let rt = agent_support::runtime(&host).await;
    let (_, finished) = agent_support::run_root(&host, &rt, "solo", "go").await;
    let (kind, message) = failure(&finished);
    assert_eq!(kind, FailureKind::BudgetExhausted, "{message}");
    assert!(message.contains("tokens"), "the message names the dimension: {message}");
}

#[tokio::test]
async fn a_turn_budget_ends_the_agent_budget_exhausted() {
    let server = Server::start(vec![
        Reply::json(200, &tool_call("c1", "list_tasks", "{}")),
        Reply::json(200, &tool_call("c2", "add_task", r#"{"title": "a"}"#)),
        Reply::json(200, &tool_call("c3", "finish", "{}")),
    ])
    .await;
    let host = host(&yaml("    budget: {turns: 2}\n"), &server, false);
    let rt = agent_support::runtime(&host).await;
    let (_, finished) = agent_support::run_root(&host, &rt, "solo", "go").await;
    let (kind, message) = failure(&finished);
    assert_eq!(kind, FailureKind::BudgetExhausted);
    assert!(message.contains("budget turns exhausted"), "{message}");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_root_gets_the_default_cap_unless_unlimited_and_flags_and_profiles_override_it() {
    let config = yaml("    budget: {tokens: 1000}\n  - {id: open, brain: b, window_tokens: 100}\n");
    let server = Server::start(vec![]).await;
    let host = host(&config, &server, false);
    let open = host.root_spec("open", "x").expect("spec").budget;
    assert_eq!(open, DEFAULT_ROOT_BUDGET.kernel, "nothing runs unlimited by accident");
    let solo = host.root_spec("solo", "x").expect("spec").budget;
    assert_eq!(solo.tokens, Some(1000));
    assert_eq!(solo.cost_micros, DEFAULT_ROOT_BUDGET.kernel.cost_micros);
    let mut flags = AgentBudget::NONE;
    flags.kernel.cost_micros = Some(250_000);
    host.set_root_budget(RootBudget { limits: flags, unlimited: true });
    let solo = host.root_spec("solo", "x").expect("spec").budget;
    assert_eq!((solo.tokens, solo.cost_micros, solo.tool_calls), (Some(1000), Some(250_000), None));
    assert_eq!(host.root_spec("open", "x").expect("spec").budget.tokens, None, "--unlimited opts out");
    assert_eq!(host.root_limits("open").turns, None);
}

#[test]
fn an_unset_key_variable_is_refused_before_anything_launches() {
    let config = |var: &str| {
        load_yaml(&format!(
            "brains:\n  - {{id: cloud, kind: anthropic, base_url: 'https://api.anthropic.com/v1', model: m, api_key_env: {var}}}\nprofiles:\n  - {{id: a, brain: cloud, window_tokens: 100}}\n"
        ))
        .expect("valid")
    };
    let err =
        config_brains(&config("AGENTVISOR_TEST_SURELY_UNSET_KEY"), HashMap::new()).err().expect("unset");
    assert_eq!(err.code(), "brain_invalid_config");
    assert_eq!(err.brain, "cloud");
    assert!(
        err.to_string().contains("AGENTVISOR_TEST_SURELY_UNSET_KEY") && err.to_string().contains("not set"),
        "{err}"
    );
    assert!(config_brains(&config("PATH"), HashMap::new()).is_ok(), "a set variable builds");
}

#[tokio::test]
async fn each_retry_of_a_turn_is_a_model_retried_event() {
    let server = Server::start(vec![
        Reply::status_with(429, &[("retry-after", "2")], "slow down"),
        Reply::json(200, &tool_call("c1", "finish", r#"{"result": "ok"}"#)),
    ])
    .await;
    let sleeper = Arc::new(http_support::RecordingSleeper::default());
    let policy = RetryPolicy::default()
        .with_sleeper(Arc::clone(&sleeper) as Arc<dyn agentvisor::agent::brain::Sleeper>);
    let brain: Arc<dyn Brain> = Arc::new(
        OpenAiBrain::new(OpenAiConfig::new(&server.base_url, "m").with_retry(policy)).expect("brain"),
    );
    let provider = move |_: &AgentIdentity| -> Result<Arc<dyn Brain>, AgentError> { Ok(Arc::clone(&brain)) };
    let host = agent_support::host_with(&yaml(""), Arc::new(provider), Arc::new(MemoryChunkStore::new()));
    let rt = agent_support::runtime(&host).await;
    let (pid, finished) = agent_support::run_root(&host, &rt, "solo", "go").await;
    assert_eq!(finished.result(), json!("ok"));
    let retries: Vec<(u32, u64, bool)> = agent_support::events_of(&host, pid)
        .into_iter()
        .filter_map(|r| match r.event {
            agentvisor::agent::telemetry::AgentEvent::ModelRetried {
                attempt, delay_ms, retry_after, ..
            } => Some((attempt, delay_ms, retry_after)),
            _ => None,
        })
        .collect();
    assert_eq!(retries, [(1, 2000, true)]);
    assert_eq!(sleeper.waits(), [std::time::Duration::from_secs(2)]);
}

#[tokio::test]
async fn the_default_cap_is_configurable_in_the_configuration() {
    let config = format!(
        "default_budget: {{tokens: 5000, cost_usd: '0.25', turns: 9}}\n{}",
        yaml("  - {id: open, brain: b, window_tokens: 100}\n")
    );
    let server = Server::start(vec![]).await;
    let host = host(&config, &server, false);
    let open = host.root_limits("open");
    assert_eq!(
        (open.kernel.tokens, open.kernel.cost_micros, open.turns),
        (Some(5000), Some(250_000), Some(9))
    );
    assert_eq!(open.kernel.tool_calls, None, "a dimension the cap leaves out stays open");
    host.set_root_budget(RootBudget { limits: AgentBudget::NONE, unlimited: true });
    assert!(host.root_limits("open").is_unlimited());
    let bad = agentvisor::agent::config::parse_yaml(&format!("default_budget: {{tokens: 0}}\n{}", yaml("")))
        .expect("parses");
    let report = agentvisor::agent::config::check(&bad).expect_err("a zero cap");
    assert_eq!(report.problems()[0].path, "default_budget.tokens");
    assert_eq!(report.problems()[0].code.as_str(), "budget_out_of_range");
}
