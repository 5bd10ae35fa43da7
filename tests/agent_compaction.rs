//! Compaction of a conversation window: the trigger, where the cut falls (never leaving a tool
//! result first, never cutting the newest message), `truncate`, `summarize` with a scripted
//! summarizer, a failing summarizer that leaves the window as it was, and a fork untouched by
//! its copy's compaction.

use agentvisor::agent::brain::tokens;
use agentvisor::agent::brain::{Expect, Message, Script, ScriptedBrain, ScriptedTurn, ToolCall};
use agentvisor::agent::compaction::{self, CompactionError, Strategy};
use agentvisor::agent::window::Window;
use serde_json::json;
use std::num::NonZeroU32;

fn limit(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).expect("non-zero")
}

fn call(id: &str) -> Message {
    let mut message = Message::assistant_text("let me look");
    if let Message::Assistant(a) = &mut message {
        a.tool_calls.push(ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: json!({"path": "/a"}),
        });
    }
    message
}

/// A conversation of `turns` turns: a question, a tool call, its result, an answer.
fn conversation(turns: usize) -> Window<Message> {
    let mut window = Window::new();
    for i in 0..turns {
        let items = [
            Message::user(format!("question {i}: {}", "words ".repeat(20))),
            call(&format!("call-{i}")),
            Message::tool_result(format!("call-{i}"), format!("result {i}: {}", "data ".repeat(40))),
            Message::assistant_text(format!("answer {i}")),
        ];
        for item in items {
            window.push(item).expect("push");
        }
    }
    window
}

fn messages(window: &Window<Message>) -> Vec<Message> {
    window.iter().cloned().collect()
}

#[test]
fn compaction_starts_past_the_trigger_share_of_the_window() {
    assert_eq!(compaction::trigger_tokens(limit(1000), 80), 800);
    assert!(!compaction::needs_compaction(800, limit(1000), 80));
    assert!(compaction::needs_compaction(801, limit(1000), 80));
    assert_eq!(compaction::trigger_tokens(limit(1000), 100), 1000);
}

#[test]
fn a_cut_never_leaves_a_tool_result_first_nor_takes_the_newest_message() {
    let window = conversation(12);
    let total: u64 = window.iter().map(tokens::message_tokens).sum();
    assert_eq!(compaction::plan_cut(&window, 0, total), None, "it fits: nothing to cut");
    // Every target from nothing to everything: the fewest messages that make it fit, moved
    // past a tool result, and never the newest.
    for target in (0..=total).step_by(7) {
        let Some(cut) = compaction::plan_cut(&window, 0, target) else {
            panic!("target {target} of {total} needs a cut")
        };
        assert!(cut >= 1 && cut < window.len(), "cut {cut} of {}", window.len());
        assert!(
            !matches!(window.get(cut), Some(Message::Tool { .. })),
            "cut {cut} leaves a tool result first"
        );
        let rest: u64 = window.iter().skip(cut).map(tokens::message_tokens).sum();
        let newest_alone = cut == window.len() - 1;
        assert!(rest <= target || newest_alone, "target {target}: {rest} left after cutting {cut}");
        if cut > 1 && !matches!(window.get(cut - 1), Some(Message::Tool { .. })) {
            let one_less: u64 = window.iter().skip(cut - 1).map(tokens::message_tokens).sum();
            assert!(one_less > target, "target {target}: cutting {} would have fitted", cut - 1);
        }
    }
}

#[tokio::test]
async fn truncate_drops_the_oldest_messages_until_the_window_fits() {
    let mut window = conversation(20);
    let before = messages(&window);
    let target = tokens::window_tokens(&window) / 3;
    let done = compaction::compact(&mut window, Strategy::Truncate, 100, target)
        .await
        .expect("compacts")
        .expect("it did not fit");
    assert_eq!(window.len(), before.len() - done.cut);
    assert_eq!(messages(&window), before[done.cut..].to_vec(), "the newest messages, unchanged");
    assert!(done.tokens_after + 100 <= target, "{done:?}");
    assert!(!matches!(window.get(0), Some(Message::Tool { .. })));
    assert_eq!(done.summary_usage, None);
    // Once it fits, there is nothing more to do.
    assert_eq!(compaction::compact(&mut window, Strategy::Truncate, 100, target).await.expect("ok"), None);
}

#[tokio::test]
async fn summarize_replaces_the_oldest_messages_by_a_note_the_summarizer_writes() {
    let mut window = conversation(20);
    let before = messages(&window);
    let summary = ScriptedTurn {
        expect: Expect {
            tail_contains: vec!["question 0:".into(), "[assistant calls read_file]".into()],
            system_contains: vec!["compact an agent's conversation".into()],
            ..Expect::default()
        },
        ..ScriptedTurn::text("The agent read /a twenty times.")
    };
    let brain = ScriptedBrain::new(Script::new(vec![summary]));
    let target = tokens::window_tokens(&window) / 2;
    let done = compaction::compact(&mut window, Strategy::Summarize(&brain), 0, target)
        .await
        .expect("compacts")
        .expect("it did not fit");
    match window.get(0) {
        Some(Message::Note { text }) => {
            assert!(text.contains(&format!("Summary of the {} earlier messages", done.cut)), "{text}");
            assert!(text.ends_with("The agent read /a twenty times."), "{text}");
        }
        other => panic!("expected the summary note first, found {other:?}"),
    }
    assert_eq!(messages(&window)[1..].to_vec(), before[done.cut..].to_vec());
    assert!(done.tokens_after < done.tokens_before, "{done:?}");
    assert!(done.summary_usage.is_some_and(|u| u.output_tokens > 0), "{done:?}");
}

#[tokio::test]
async fn a_failing_summarizer_leaves_the_window_as_it_was() {
    let mut window = conversation(20);
    let before = messages(&window);
    let exhausted = ScriptedBrain::new(Script::new(Vec::new()));
    let target = tokens::window_tokens(&window) / 2;
    let failed = compaction::compact(&mut window, Strategy::Summarize(&exhausted), 0, target).await;
    assert!(matches!(failed, Err(CompactionError::Summarizer(_))), "{failed:?}");
    assert_eq!(messages(&window), before);
}

#[tokio::test]
async fn compacting_a_fork_leaves_the_original_untouched() {
    let original = conversation(20);
    let before = messages(&original);
    let mut copy = original.fork();
    let target = tokens::window_tokens(&copy) / 4;
    compaction::compact(&mut copy, Strategy::Truncate, 0, target).await.expect("compacts");
    assert!(copy.len() < original.len());
    assert_eq!(messages(&original), before);
    assert_eq!(copy.turn(), original.turn(), "the turn counter is carried");
}
