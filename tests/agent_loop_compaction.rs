//! Compaction from the turn loop: an exec into a profile with a much smaller window compacts
//! before the successor's first turn (truncate, and summarize with a separate summarizer
//! brain whose note opens the window), and a summarizer asked late in an incarnation plays
//! its own script from the start.

mod agent_support;

use agent_support::config::WINDOWS;
use agent_support::*;
use agentvisor::actors::Status;
use agentvisor::agent::brain::{Message, ScriptedTurn};
use agentvisor::agent::telemetry::{AgentEvent, EventRecord};
use serde_json::json;

/// A page of `bytes` bytes of text (about `bytes / 4` tokens).
fn page(bytes: usize) -> String {
    "the plan grows by another line. ".repeat(bytes / 32)
}

/// Two turns that write long notebook pages, then an exec into `target`.
fn long_conversation_then_exec(target: &str) -> Vec<ScriptedTurn> {
    vec![
        ScriptedTurn::call("write_note", json!({"page": "one", "text": page(3200)})),
        ScriptedTurn::call("write_note", json!({"page": "two", "text": page(3200)})),
        ScriptedTurn::call("exec", json!({"agent": target, "prompt": "carry on in a smaller window"})),
    ]
}

/// The events on the stream of the incarnation that runs `profile`, in order.
fn stream_of(events: &[EventRecord], profile: &str) -> Vec<EventRecord> {
    let agent_id = events
        .iter()
        .find_map(|r| match &r.event {
            AgentEvent::AgentSpawned { profile: p, .. } if p == profile => Some(r.agent_id.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no incarnation ran {profile}: {events:#?}"));
    events.iter().filter(|r| r.agent_id == agent_id).cloned().collect()
}

/// Asserts the stream has a `compacted` before its first `turn_completed`, and that turn says so.
fn assert_compacts_first(stream: &[EventRecord]) {
    let compacted = stream.iter().position(|r| matches!(r.event, AgentEvent::Compacted { .. }));
    let first_turn = stream.iter().position(|r| matches!(r.event, AgentEvent::TurnCompleted { .. }));
    let (Some(compacted), Some(first_turn)) = (compacted, first_turn) else {
        panic!("no compaction or no turn on the successor's stream: {stream:#?}")
    };
    assert!(compacted < first_turn, "{stream:#?}");
    let AgentEvent::TurnCompleted { compacted: flagged, .. } = &stream[first_turn].event else {
        unreachable!()
    };
    assert!(flagged, "the first turn reports that the window was compacted before it");
    let AgentEvent::Compacted { tokens_before, tokens_after, cut, .. } = &stream[compacted].event else {
        unreachable!()
    };
    assert!(tokens_after < tokens_before && *cut > 0, "{:?}", stream[compacted].event);
}

#[tokio::test]
async fn exec_into_a_small_window_truncates_before_the_first_turn() {
    let narrow = vec![ScriptedTurn::text("carried on").expect_tail("carry on in a smaller window")];
    let scripts = Scripts::new().with("wide", long_conversation_then_exec("narrow")).with("narrow", narrow);
    let (host, asked) = host_recording(WINDOWS, scripts);
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "wide", "plan it").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!((done.profile().as_str(), done.result()), ("narrow", json!("carried on")));

    let events = events_of(&host, pid);
    assert!(
        !stream_of(&events, "wide").iter().any(|r| matches!(r.event, AgentEvent::Compacted { .. })),
        "the wide window never compacts"
    );
    assert_compacts_first(&stream_of(&events, "narrow"));
    let asked = asked.lock().expect("requests");
    let first = asked.iter().find(|a| a.profile == "narrow").expect("narrow was asked");
    let wide_last = asked.iter().rfind(|a| a.profile == "wide").expect("wide was asked");
    assert!(first.window.len() < wide_last.window.len(), "the oldest messages were cut");
    assert!(!matches!(first.window[0], Message::Tool { .. }), "a cut never leaves a tool result first");
    assert!(
        !window_text(&first.window).iter().any(|m| m.contains("Summary of")),
        "truncate writes no summary"
    );
}

#[tokio::test]
async fn summarize_with_a_separate_brain_opens_the_window_on_its_summary() {
    let squeezed = vec![ScriptedTurn::text("carried on").expect_tail("carry on in a smaller window")];
    let summary = vec![ScriptedTurn::text("SUMMARY: pages one and two hold the plan")];
    let scripts = Scripts::new()
        .with("wide", long_conversation_then_exec("squeezed"))
        .with("squeezed", squeezed)
        .with("brain:sum", summary);
    let (host, asked) = host_recording(WINDOWS, scripts);
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "wide", "plan it").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.profile(), "squeezed");
    assert_compacts_first(&stream_of(&events_of(&host, pid), "squeezed"));

    let asked = asked.lock().expect("requests");
    let summarizer: Vec<&Asked> = asked.iter().filter(|a| a.brain == "sum").collect();
    assert_eq!(summarizer.len(), 1, "one summary was asked for");
    assert_eq!(summarizer[0].profile, "squeezed", "for the incarnation that compacts");
    assert!(summarizer[0].tools.is_empty());
    let first = asked.iter().find(|a| a.profile == "squeezed" && a.brain == "s").expect("squeezed was asked");
    let Message::Note { text } = &first.window[0] else {
        panic!("the window opens on {:?}", first.window[0])
    };
    assert!(text.contains("SUMMARY: pages one and two hold the plan"), "{text}");
    let last = first.window.last().and_then(Message::text).unwrap_or_default();
    assert!(last.contains("You are now squeezed"), "the opening note stays at the tail: {last}");
    let cost = module(&runtime, pid, "agent.cost");
    assert!(cost["by_profile"]["squeezed"]["output_tokens"].as_u64().unwrap_or(0) > 0, "{cost}");
}

#[tokio::test]
async fn a_summarizer_asked_late_in_an_incarnation_plays_its_script_from_the_start() {
    let tight = vec![
        ScriptedTurn::call("write_note", json!({"page": "one", "text": page(4000)})),
        ScriptedTurn::call("write_note", json!({"page": "two", "text": page(4000)})),
        ScriptedTurn::call("write_note", json!({"page": "three", "text": page(4000)})),
        ScriptedTurn::text("done"),
    ];
    let summary = vec![ScriptedTurn::text("SUMMARY: pages written")];
    let scripts = Scripts::new().with("tight", tight).with("brain:sum", summary);
    let (host, asked) = host_recording(WINDOWS, scripts);
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "tight", "write").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.result(), json!("done"));
    let compactions =
        events_of(&host, pid).iter().filter(|r| matches!(r.event, AgentEvent::Compacted { .. })).count();
    assert!(compactions >= 1, "the window compacted on its own");
    assert_eq!(asked.lock().expect("requests").iter().filter(|a| a.brain == "sum").count(), compactions);
}
