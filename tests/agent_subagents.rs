//! Subagents: the roster refusal, a spawned subagent's own profile and fresh window, collecting
//! its result (and keeping it across a merge), and messages both ways between parent and child
//! (normal and interrupt).

mod agent_support;

use agent_support::config::FORKS;
use agent_support::relay::{self, Gates, texts};
use agent_support::*;
use agentvisor::actors::kernel::objects::Owner;
use agentvisor::actors::{Pid, Status};
use agentvisor::agent::brain::{Message, ScriptedTurn};
use agentvisor::agent::run::AgentHost;
use agentvisor::agent::telemetry::{AgentEvent, CallRecord, EventRecord, SpawnVia};
use serde_json::json;
use std::sync::Arc;

/// The subagents spawned (not forked) in this host: (pid, agent_spawned record), in order.
fn spawned(host: &AgentHost) -> Vec<(Pid, EventRecord)> {
    host.telemetry()
        .records()
        .into_iter()
        .filter(|r| matches!(r.event, AgentEvent::AgentSpawned { via: SpawnVia::Spawn, .. }))
        .map(|r| (r.pid.parse().expect("a pid"), EventRecord::clone(&r)))
        .collect()
}

/// The messages `pid`'s stream re-stated: (kind, text).
fn received(host: &AgentHost, pid: Pid) -> Vec<(String, String)> {
    events_of(host, pid)
        .into_iter()
        .filter_map(|r| match r.event {
            AgentEvent::MessageReceived { kind, text, .. } => Some((kind, text)),
            _ => None,
        })
        .collect()
}

/// The calls of `pid`'s turn `turn`, as its `turn_completed` event records them.
fn calls_of_turn(host: &AgentHost, pid: Pid, turn: u64) -> Vec<CallRecord> {
    events_of(host, pid)
        .into_iter()
        .find_map(|r| match r.event {
            AgentEvent::TurnCompleted { turn: t, calls, .. } if t == turn => Some(calls),
            _ => None,
        })
        .unwrap_or_else(|| panic!("turn {turn} of {pid}"))
}

/// Each call's answer: what `ok` makes of its result, or `refused CODE`.
fn answers(calls: &[CallRecord], ok: impl Fn(&serde_json::Value) -> String) -> Vec<String> {
    calls
        .iter()
        .map(|call| match (&call.result, &call.error) {
            (Some(result), None) => ok(result),
            (None, Some(error)) => format!("refused {}", error.code),
            other => panic!("{other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn spawning_off_the_roster_is_refused_listing_the_roster() {
    let lead = vec![
        ScriptedTurn::call("spawn_subagent", json!({"agent": "loner", "prompt": "help"})),
        ScriptedTurn::text("alone").expect_tool_result("not_on_roster"),
    ];
    let host = host(FORKS, Scripts::new().with("lead", lead));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "main").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    let refused = refusals(&host, pid);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!((refused[0].0.as_str(), refused[0].1.as_str()), ("spawn_subagent", "not_on_roster"));
    assert!(refused[0].2.contains("[scout, worker]"), "{}", refused[0].2);
    assert!(spawned(&host).is_empty());
}

#[tokio::test]
async fn a_subagent_runs_its_own_profile_on_a_fresh_window_and_is_collected() {
    let lead = vec![
        ScriptedTurn::call("write_note", json!({"page": "secret", "text": "lead only"}))
            .with_call("spawn_subagent", json!({"agent": "worker", "prompt": "count"})),
        ScriptedTurn::call("wait_for_subagents", json!({"ids": ["{id:0}"]}))
            .expect_tool_result("\"agent\":\"worker\""),
        ScriptedTurn::text("done").expect_tool_result("\"status\":\"exited\"").expect_tool_result("counted"),
    ];
    let worker = vec![
        ScriptedTurn::call("add_task", json!({"title": "one"})).expect_tail("count"),
        ScriptedTurn::text("counted").expect_tool_result("\"title\":\"one\""),
    ];
    let scripts = Scripts::new().with("lead", lead).with("worker", worker);
    let (host, log) = relay::host(FORKS, scripts, Gates::new());
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "main").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.result(), json!("done"));

    let children = spawned(&host);
    assert_eq!(children.len(), 1);
    let (child, record) = &children[0];
    let AgentEvent::AgentSpawned { profile, parent_agent_id, depth, .. } = &record.event else {
        unreachable!()
    };
    assert_eq!(profile, "worker");
    assert_eq!(parent_agent_id.as_deref(), Some(events_of(&host, pid)[0].agent_id.as_str()));
    assert_eq!(*depth, 1);
    // Its window opened on its prompt alone: nothing of the lead's conversation.
    assert_eq!(log.windows_of(*child)[0], vec![Message::user("count")]);
    assert_eq!(finished(&runtime, *child).await.status, Status::Exited);
}

#[tokio::test]
async fn merged_subagents_results_are_answered_and_their_kept_copies_dropped_after_the_checkpoint() {
    let lead = vec![
        ScriptedTurn::call("spawn_subagent", json!({"agent": "worker", "prompt": "count"}))
            .with_call("spawn_subagent", json!({"agent": "worker", "prompt": "count again"})),
        ScriptedTurn::call("wait_for_subagents", json!({"merge": true})),
        ScriptedTurn::text("done").expect_tool_result("counted").expect_tool_result("merged_oids"),
    ];
    let worker = vec![ScriptedTurn::text("counted")];
    let scripts = Scripts::new().with("lead", lead).with("worker", worker);
    let (host, _log) = relay::host(FORKS, scripts, Gates::new());
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "main").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);

    // The results were kept under names of the lead's own before the merges released the
    // workers', and those copies went once the turn's checkpoint was in: the names are
    // unbound and the objects released.
    let space = runtime.object_space();
    let names: Vec<&String> = space.process(pid).expect("the lead's memory").namespace.keys().collect();
    assert!(!names.iter().any(|n| n.starts_with("agent.subagent_result.")), "{names:?}");
    let released: Vec<_> = space
        .owned_by(&Owner::Process(pid))
        .filter_map(|oid| space.object(oid))
        .filter(|meta| meta.released)
        .collect();
    assert_eq!(released.len(), 2, "the two kept results, released: {released:?}");
}

#[tokio::test]
async fn a_message_to_parent_reaches_the_parents_window() {
    let lead = vec![
        ScriptedTurn::call("spawn_subagent", json!({"agent": "scout", "prompt": "report"})),
        ScriptedTurn::call("wait_for_subagents", json!({})),
        ScriptedTurn::text("done").expect_tail("hello parent"),
    ];
    let scout = vec![
        ScriptedTurn::call("send_message", json!({"to": "parent", "text": "hello parent"})),
        ScriptedTurn::text("sent").expect_tool_result("message_id"),
    ];
    let host = host(FORKS, Scripts::new().with("lead", lead).with("scout", scout));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "main").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    let child = spawned(&host)[0].0;
    let got = received(&host, pid);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0], ("normal".to_string(), "hello parent".to_string()));
    assert!(
        events_of(&host, child).iter().any(
            |r| matches!(&r.event, AgentEvent::MessageSent { to_pid, .. } if *to_pid == pid.to_string())
        )
    );
}

/// Runs `lead` to its end with scouts whose second turn is held (gate "sent") until the lead
/// plays its third, so that what the lead sent in its second turn is there for them to read.
async fn run_with_listening_scouts(lead: Vec<ScriptedTurn>) -> (Arc<AgentHost>, relay::Log, Pid) {
    let scout = vec![
        ScriptedTurn::call("wait_for_subagents", json!({})),
        ScriptedTurn::call("wait_for_subagents", json!({})),
        ScriptedTurn::text("heard"),
    ];
    let scripts = Scripts::new().with("lead", lead).with("scout", scout);
    let gates = Gates::new().open_at("lead", 2, "sent").wait_before("scout", 1, "sent");
    let (host, log) = relay::host(FORKS, scripts, gates);
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "main").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    (host, log, pid)
}

/// The lead messages its scout by the id spawn_subagent returned; the scout's next turns are
/// held until the send has run, so the message is there for it to read.
async fn message_a_child(interrupt: bool) -> (Vec<(String, String)>, Vec<String>, Pid) {
    let lead = vec![
        ScriptedTurn::call("spawn_subagent", json!({"agent": "scout", "prompt": "listen"})),
        ScriptedTurn::call(
            "send_message",
            json!({"to": "{id:0}", "text": "for the child", "interrupt": interrupt}),
        ),
        ScriptedTurn::call("wait_for_subagents", json!({})).expect_tool_result("message_id"),
        ScriptedTurn::text("done").expect_tool_result("heard"),
    ];
    let (host, log, pid) = run_with_listening_scouts(lead).await;
    let child = spawned(&host)[0].0;
    let windows = log.windows_of(child);
    let last = texts(windows.last().expect("a request"));
    (received(&host, child), last, pid)
}

#[tokio::test]
async fn a_message_to_a_child_by_its_id_reaches_the_childs_window() {
    let (got, window, lead) = message_a_child(false).await;
    assert_eq!(got, [("normal".to_string(), "for the child".to_string())]);
    let line = format!("normal message from {lead}: for the child");
    assert!(window.iter().any(|t| t.contains(&line)), "{window:?}");
}

#[tokio::test]
async fn an_interrupt_to_a_child_is_shown_as_an_interrupt() {
    let (got, window, lead) = message_a_child(true).await;
    assert_eq!(got, [("interrupt".to_string(), "for the child".to_string())]);
    let line = format!("interrupt message from {lead}: for the child");
    assert!(window.iter().any(|t| t.contains(&line)), "{window:?}");
}

/// A turn's consecutive sends are made together (their messages share one commit) and each
/// answers as it would alone, in order: a send to nobody in the middle is refused, the others
/// reach both scouts, the second message to a scout after the first.
#[tokio::test]
async fn a_turns_consecutive_sends_answer_in_order_as_when_made_one_by_one() {
    let lead = vec![
        ScriptedTurn::call("spawn_subagent", json!({"agent": "scout", "prompt": "listen"}))
            .with_call("spawn_subagent", json!({"agent": "scout", "prompt": "listen too"})),
        ScriptedTurn::call("send_message", json!({"to": "{id:0}", "text": "one for the first"}))
            .with_call("send_message", json!({"to": "nobody", "text": "lost"}))
            .with_call("send_message", json!({"to": "{id:1}", "text": "for the second"}))
            .with_call("send_message", json!({"to": "{id:0}", "text": "two for the first"})),
        ScriptedTurn::call("wait_for_subagents", json!({})),
        ScriptedTurn::text("done"),
    ];
    let (host, _log, pid) = run_with_listening_scouts(lead).await;

    let sent =
        answers(&calls_of_turn(&host, pid, 2), |r| format!("sent to {}", r["to"].as_str().unwrap_or("?")));
    let launched = answers(&calls_of_turn(&host, pid, 1), |r| r["id"].as_str().unwrap_or("?").to_string());
    let (first, second) = (&launched[0], &launched[1]);
    assert_eq!(
        sent,
        [
            format!("sent to {first}"),
            "refused invalid_arguments".to_string(),
            format!("sent to {second}"),
            format!("sent to {first}"),
        ]
    );
    let heard = |id: &str| received(&host, id.parse().expect("a pid"));
    let normal = |text: &str| ("normal".to_string(), text.to_string());
    assert_eq!(heard(first), [normal("one for the first"), normal("two for the first")]);
    assert_eq!(heard(second), [normal("for the second")]);
    assert_eq!(refusals(&host, pid).len(), 1);
}

#[tokio::test]
async fn a_subagent_or_fork_without_a_prompt_is_refused_and_nothing_launches() {
    let lead = vec![
        ScriptedTurn::call("spawn_subagent", json!({"agent": "worker"}))
            .with_call("spawn_subagent", json!({"agent": "worker", "prompt": ""}))
            .with_call("spawn_subagent", json!({"agent": "worker", "prompt": " \n\t"}))
            .with_call("fork", json!({"prompt": "  "}))
            .with_call("fork", json!({})),
        ScriptedTurn::text("nobody to help").expect_tool_result("invalid_arguments"),
    ];
    let host = host(FORKS, Scripts::new().with("lead", lead));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "main").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    let refused = refusals(&host, pid);
    let codes: Vec<(&str, &str)> =
        refused.iter().map(|(tool, code, _)| (tool.as_str(), code.as_str())).collect();
    assert_eq!(
        codes,
        [
            ("spawn_subagent", "invalid_arguments"),
            ("spawn_subagent", "invalid_arguments"),
            ("spawn_subagent", "invalid_arguments"),
            ("fork", "invalid_arguments"),
            ("fork", "invalid_arguments"),
        ],
        "{refused:?}"
    );
    for (_, _, message) in &refused {
        assert!(message.contains("prompt"), "the refusal names the field: {message}");
    }
    assert!(spawned(&host).is_empty(), "no subagent launched");
    let children = runtime
        .processes(agentvisor::actors::store::ProcessQuery {
            parent: Some(pid),
            include_terminal: true,
            ..Default::default()
        })
        .expect("read");
    assert!(children.is_empty(), "no child process at all: {children:?}");
}

#[tokio::test]
async fn a_huge_agent_id_or_prompt_is_refused_in_words_of_bounded_length() {
    let lead = vec![
        ScriptedTurn::call("spawn_subagent", json!({"agent": "w".repeat(100_000), "prompt": "help"}))
            .with_call("spawn_subagent", json!({"agent": "worker", "prompt": "p".repeat(100_000)}))
            .with_call("fork", json!({"prompt": "p".repeat(100_000)})),
        ScriptedTurn::text("nobody to help").expect_tool_result("not_on_roster"),
    ];
    let host = host(FORKS, Scripts::new().with("lead", lead));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "main").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    let refused = refusals(&host, pid);
    let codes: Vec<&str> = refused.iter().map(|(_, code, _)| code.as_str()).collect();
    assert_eq!(codes, ["not_on_roster", "invalid_arguments", "invalid_arguments"], "{refused:?}");
    for (_, _, message) in &refused {
        assert!(message.len() < 1_000, "bounded: {} bytes", message.len());
    }
    assert!(refused[0].2.contains("(100000 characters) is not on your roster"), "{}", refused[0].2);
    for (_, _, message) in &refused[1..] {
        assert!(message.starts_with("prompt: the prompt is 100000 bytes"), "{message}");
        assert!(!message.contains("goal"), "speaks of the prompt: {message}");
    }
    assert!(spawned(&host).is_empty(), "no subagent launched");
}

/// A turn's consecutive launches are made together (their launches share one commit) and
/// each call answers as it would alone, in order: a refused call in the middle takes nothing,
/// the launches around it are made, and every child runs and is collected.
#[tokio::test]
async fn a_turns_consecutive_launches_answer_in_order_as_when_made_one_by_one() {
    let lead = vec![
        ScriptedTurn::call("spawn_subagent", json!({"agent": "worker", "prompt": "first"}))
            .with_call("spawn_subagent", json!({"agent": "loner", "prompt": "off the roster"}))
            .with_call("spawn_subagent", json!({"agent": "scout", "prompt": "second"}))
            .with_call("spawn_subagent", json!({"agent": "worker", "prompt": "third"})),
        ScriptedTurn::call("wait_for_subagents", json!({})),
        ScriptedTurn::text("done").expect_tool_result("worked").expect_tool_result("scouted"),
    ];
    let scripts = Scripts::new()
        .with("lead", lead)
        .with("worker", vec![ScriptedTurn::text("worked")])
        .with("scout", vec![ScriptedTurn::text("scouted")]);
    let host = host(FORKS, scripts);
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "main").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);

    let first_turn = calls_of_turn(&host, pid, 1);
    let launched = answers(&first_turn, |r| format!("launched {}", r["agent"].as_str().unwrap_or("?")));
    assert_eq!(launched, ["launched worker", "refused not_on_roster", "launched scout", "launched worker"]);
    let ids: Vec<&str> = first_turn.iter().filter_map(|c| c.result.as_ref()?["id"].as_str()).collect();
    let mut profiles: Vec<String> = spawned(&host)
        .into_iter()
        .map(|(child, record)| {
            assert!(ids.contains(&child.to_string().as_str()), "{child} was answered to the lead");
            match record.event {
                AgentEvent::AgentSpawned { profile, .. } => profile,
                _ => unreachable!(),
            }
        })
        .collect();
    profiles.sort();
    assert_eq!(profiles, ["scout", "worker", "worker"]);
    assert_eq!(refusals(&host, pid).len(), 1);
}
