//! A model turn larger than the conversation keeps: its text is cut with a note and a call
//! too large to keep is refused, and the agent lives on (no checkpoint is ever too large).

mod agent_support;

use agent_support::relay::{self, Gates};
use agent_support::*;
use agentvisor::actors::Status;
use agentvisor::agent::brain::{Message, ScriptedTurn};
use agentvisor::agent::limits::{ASSISTANT_MESSAGE_BYTES_MAX, ASSISTANT_TEXT_BYTES_MAX};
use serde_json::json;

const WRITER: &str = r#"
brains:
  - {id: s, kind: scripted, script: any}
profiles:
  - id: writer
    brain: s
    window_tokens: 4000000
    budget: {tokens: 100000000}
    capabilities:
      tasks: true
"#;

/// Twenty megabytes of text: more than a checkpoint holds.
fn huge_text() -> String {
    "word ".repeat(4 * 1024 * 1024)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_turn_is_cut_with_a_note_and_the_agent_lives_on() {
    let writer = vec![
        ScriptedTurn::call("add_task", json!({"title": "one"})).with_text(huge_text()),
        ScriptedTurn::call("add_task", json!({"title": "x".repeat(ASSISTANT_MESSAGE_BYTES_MAX)}))
            .with_call("add_task", json!({"title": "two"}))
            .expect_tool_result("\"title\":\"one\""),
        ScriptedTurn::text(huge_text()).expect_tool_result("arguments_too_large"),
    ];
    let (host, log) = relay::host(WRITER, Scripts::new().with("writer", writer), Gates::new());
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "writer", "write").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);

    // The session's result is its last turn's text, cut with the note.
    let result = done.result();
    let result = result.as_str().expect("a text result");
    assert!(result.len() < ASSISTANT_TEXT_BYTES_MAX + 200, "{} bytes", result.len());
    assert!(result.starts_with("word word"), "{}", &result[..40]);
    assert!(result.ends_with("bytes of a turn's text]"), "{}", &result[result.len() - 120..]);

    // What the model read back: its first turn's text cut with the note, the call that was too
    // large recorded without its arguments and refused, the next call of that turn run.
    let windows = log.windows_of(pid);
    let Some(Message::Assistant(first)) = windows[1].iter().find(|m| matches!(m, Message::Assistant(_)))
    else {
        panic!("the first turn is in the window: {:?}", windows[1].len())
    };
    let text = first.text.as_deref().expect("text");
    assert!(text.len() < ASSISTANT_TEXT_BYTES_MAX + 200, "{} bytes", text.len());
    assert!(text.contains("… ["), "the cut is marked");
    let Some(Message::Assistant(second)) =
        windows[2].iter().filter(|m| matches!(m, Message::Assistant(_))).nth(1)
    else {
        panic!("the second turn is in the window")
    };
    assert_eq!(second.tool_calls[0].arguments, json!({}), "the oversized arguments were left out");
    assert_eq!(second.tool_calls[1].arguments, json!({"title": "two"}));
    let results: Vec<&str> = windows[2]
        .iter()
        .filter_map(|m| match m {
            Message::Tool { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(results[1].contains("\"code\":\"arguments_too_large\""), "{}", results[1]);
    assert!(results[2].contains("\"title\":\"two\""), "{}", results[2]);
    let tasks = module(&runtime, pid, "agent.tasks");
    assert_eq!(tasks.to_string().matches("\"title\"").count(), 2, "one and two, never the huge one: {tasks}");
}
