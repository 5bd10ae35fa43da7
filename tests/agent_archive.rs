//! `archive_thread`, model-called compaction: the named turns leave the window for a note
//! with the summary (the model's or the summarizer's), stay readable by number with
//! `read_archive`, are applied when the turn ends (before a fork is handed its copy and before
//! an exec), and keep their numbers in both copies of a fork.

mod agent_support;

use agent_support::config::CODE;
use agent_support::*;
use agentvisor::actors::Status;
use agentvisor::agent::brain::ScriptedTurn;
use agentvisor::agent::telemetry::AgentEvent;
use serde_json::json;

/// The `thread_archived` events of a process: (from, to, messages, summary).
fn archived(
    host: &agentvisor::agent::run::AgentHost,
    pid: agentvisor::actors::Pid,
) -> Vec<(u64, u64, u64, String)> {
    events_of(host, pid)
        .into_iter()
        .filter_map(|r| match r.event {
            AgentEvent::ThreadArchived { from_turn, to_turn, messages, summary, .. } => {
                Some((from_turn, to_turn, messages, summary))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn archived_turns_leave_the_window_for_a_note_and_read_back_by_number() {
    let lead = vec![
        ScriptedTurn::call("write_note", json!({"page": "plan", "text": "alpha-secret"}))
            .with_text("turn one"),
        ScriptedTurn::call("write_note", json!({"page": "log", "text": "beta-detail"})).with_text("turn two"),
        ScriptedTurn::call(
            "archive_thread",
            json!({"from_turn": 1, "to_turn": 2, "summary": "two notes written"}),
        ),
        ScriptedTurn::call("read_archive", json!({"turn": 2}))
            .expect_tool_result("\"from_turn\":1")
            .expect_tool_result("takes effect when this turn ends"),
        ScriptedTurn::text("done")
            .expect_tool_result("\"turn\":2")
            .expect_tool_result("beta-detail")
            .expect_tool_result("turn two"),
    ];
    let (host, requests) = host_recording(CODE, Scripts::new().with("lead", lead));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "keep it short").await;
    assert_eq!(done.result(), json!("done"), "{:?}", done.outcome);

    let asked = requests.lock().expect("requests");
    // The request of turn 3 still shows turns 1 and 2; the request of turn 4 shows the note.
    let before = window_text(&asked[2].window).join("\n");
    assert!(before.contains("alpha-secret") && before.contains("beta-detail"), "{before}");
    let after = window_text(&asked[3].window).join("\n");
    assert!(!after.contains("alpha-secret") && !after.contains("turn two"), "{after}");
    assert!(after.contains("Turns 1 to 2 are archived") && after.contains("two notes written"), "{after}");
    assert!(after.contains("keep it short"), "the goal belongs to no turn and stays: {after}");
    assert!(asked[3].window.len() < asked[2].window.len());

    let events = archived(&host, pid);
    assert_eq!(events, [(1, 2, 4, "two notes written".to_string())]);
}

#[tokio::test]
async fn the_summarizer_writes_the_summary_when_the_model_gives_none() {
    let lead = vec![
        ScriptedTurn::call("add_task", json!({"title": "ship"})),
        ScriptedTurn::call("archive_thread", json!({"from_turn": 1, "to_turn": 1})),
        ScriptedTurn::text("done"),
    ];
    let sum = vec![ScriptedTurn::text("a task was added")];
    let (host, requests) = host_recording(CODE, Scripts::new().with("lead", lead).with("brain:sum", sum));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "go").await;
    assert_eq!(done.result(), json!("done"), "{:?}", done.outcome);
    assert_eq!(archived(&host, pid), [(1, 1, 2, "a task was added".to_string())]);
    let asked = requests.lock().expect("requests");
    let summarizer = asked.iter().find(|a| a.brain == "sum").expect("the summarizer was asked");
    assert!(window_text(&summarizer.window).join("\n").contains("ship"), "it summarized the archived turn");
    let last =
        window_text(&asked.iter().rev().find(|a| a.brain != "sum").expect("a lead turn").window).join("\n");
    assert!(last.contains("Turns 1 to 1 are archived") && last.contains("a task was added"), "{last}");
}

#[tokio::test]
async fn bad_ranges_are_refused_with_what_to_name_instead() {
    let terse = vec![
        ScriptedTurn::call("write_note", json!({"page": "a", "text": "x"})),
        ScriptedTurn::call("archive_thread", json!({"from_turn": 2, "to_turn": 1, "summary": "s"}))
            .with_call("archive_thread", json!({"from_turn": 1, "to_turn": 2, "summary": "s"}))
            .with_call("archive_thread", json!({"from_turn": 1, "to_turn": 1}))
            .with_call("read_archive", json!({"turn": 1}))
            .with_call("archive_thread", json!({"from_turn": 1, "to_turn": 1, "summary": "noted"})),
        ScriptedTurn::call("archive_thread", json!({"from_turn": 1, "to_turn": 1, "summary": "again"}))
            .with_call("read_archive", json!({"turn": 2}))
            .with_call(
                "archive_thread",
                json!({"from_turn": 2, "to_turn": 2, "summary": "s".repeat(20_000)}),
            ),
        ScriptedTurn::text("done")
            .expect_tool_result("turn 1 is not in your window")
            .expect_tool_result("turn 2 is not archived; it is in your window")
            .expect_tool_result("the summary is 20000 bytes; at most 16384"),
    ];
    let host = host(CODE, Scripts::new().with("terse", terse));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "terse", "go").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    let refused: Vec<(String, String)> = refusals(&host, pid).into_iter().map(|r| (r.0, r.2)).collect();
    let messages: Vec<&str> = refused.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(messages.len(), 7, "{refused:?}");
    assert!(messages[0].contains("from_turn 2 is after to_turn 1"), "{}", messages[0]);
    assert!(messages[1].contains("turn 2 is not over: this is turn 2"), "{}", messages[1]);
    assert!(messages[2].contains("give a summary"), "{}", messages[2]);
    assert!(messages[3].contains("turn 1 is not archived; it is in your window"), "{}", messages[3]);
    assert!(messages[4].contains("turn 1 is not in your window"), "{}", messages[4]);
    assert!(messages[5].contains("turn 2 is not archived"), "{}", messages[5]);
    assert!(messages[6].contains("the summary is 20000 bytes"), "{}", messages[6]);
    let codes: Vec<String> = refusals(&host, pid).into_iter().map(|r| r.1).collect();
    assert_eq!(
        codes,
        [
            "archive_refused",
            "archive_refused",
            "archive_refused",
            "not_archived",
            "archive_refused",
            "not_archived",
            "archive_refused"
        ]
    );
    assert_eq!(archived(&host, pid).len(), 1);
}

#[tokio::test]
async fn both_copies_of_a_fork_name_the_same_turns_and_read_the_same_archive() {
    let lead = vec![
        ScriptedTurn::call("write_note", json!({"page": "plan", "text": "first-turn-text"})),
        ScriptedTurn::call("archive_thread", json!({"from_turn": 1, "to_turn": 1, "summary": "planned"})),
        ScriptedTurn::call("fork", json!({"prompt": "side"})),
        ScriptedTurn::call("archive_thread", json!({"from_turn": 2, "to_turn": 3, "summary": "forked"})),
        ScriptedTurn::call("wait_for_subagents", json!({})),
        ScriptedTurn::text("main done"),
    ];
    let side = vec![
        ScriptedTurn::call("read_archive", json!({"turn": 1})),
        ScriptedTurn::call("archive_thread", json!({"from_turn": 2, "to_turn": 3, "summary": "forked"}))
            .expect_tool_result("first-turn-text"),
        ScriptedTurn::call("finish", json!({"result": "side done"})),
    ];
    let host = host(CODE, Scripts::new().with("lead:main", lead).with("lead:side", side));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "main").await;
    assert_eq!(done.result(), json!("main done"), "{:?}", done.outcome);
    let fork = events_of(&host, pid)
        .into_iter()
        .find_map(|r| match r.event {
            AgentEvent::TurnCompleted { calls, .. } if calls.iter().any(|c| c.tool == "fork") => {
                calls[0].result.as_ref().and_then(|r| r["id"].as_str().map(str::to_string))
            }
            _ => None,
        })
        .expect("the fork's id");
    let fork: agentvisor::actors::Pid = fork.parse().expect("pid");
    assert!(refusals(&host, fork).is_empty(), "{:?}", refusals(&host, fork));
    let main = archived(&host, pid);
    let copy = archived(&host, fork);
    assert_eq!(main.len(), 2);
    assert_eq!(copy.len(), 1);
    // Turns 2 and 3 are the same turns in both copies (the one that archived turn 1 and the
    // one that forked); the copy's turn 3 also holds the prompt it was forked with.
    let (main_range, copy_range) = (&main[1], &copy[0]);
    assert_eq!((main_range.0, main_range.1, &main_range.3), (2, 3, &"forked".to_string()));
    assert_eq!((copy_range.0, copy_range.1, &copy_range.3), (2, 3, &"forked".to_string()));
    assert_eq!(copy_range.2, main_range.2 + 1, "{main:?} {copy:?}");
}

#[tokio::test]
async fn archive_and_exec_in_one_turn_hand_the_successor_the_archived_window() {
    let lead = vec![
        ScriptedTurn::call("write_note", json!({"page": "plan", "text": "old-detail"})),
        ScriptedTurn::call(
            "archive_thread",
            json!({"from_turn": 1, "to_turn": 1, "summary": "the plan is noted"}),
        )
        .with_call("exec", json!({"agent": "helper", "prompt": "carry on"})),
    ];
    let helper = vec![
        ScriptedTurn::call("read_archive", json!({"turn": 1})).expect_tail("carry on"),
        ScriptedTurn::text("helped").expect_tool_result("old-detail"),
    ];
    let (host, requests) = host_recording(CODE, Scripts::new().with("lead", lead).with("helper", helper));
    let runtime = runtime(&host).await;
    let (_, done) = run_root(&host, &runtime, "lead", "go").await;
    assert_eq!((done.profile().as_str(), done.result()), ("helper", json!("helped")), "{:?}", done.outcome);
    let asked = requests.lock().expect("requests");
    let first = asked.iter().find(|a| a.profile == "helper").expect("the helper was asked");
    let text = window_text(&first.window).join("\n");
    assert!(!text.contains("old-detail"), "{text}");
    assert!(text.contains("the plan is noted"), "{text}");
}
