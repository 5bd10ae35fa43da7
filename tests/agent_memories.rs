//! Memories across a fork, by the forker's scope: isolated copies diverge; a shared copy
//! writes the profile's one instance, which its forker reads; an inherited copy writes the
//! forker's own object and notifies the other holder on `agent.memories`; a read-only copy
//! reads the forker's object and may not write it.

mod agent_support;

use agent_support::config::forks_with_memories;
use agent_support::relay::{self, Gates};
use agent_support::*;
use agentvisor::actors::kernel::mailbox::{MailboxQuery, MessageFilter};
use agentvisor::actors::runtime::Runtime;
use agentvisor::actors::{Pid, Status};
use agentvisor::agent::brain::ScriptedTurn;
use agentvisor::agent::run::{AgentHost, MEMORIES_CHANNEL};
use agentvisor::agent::telemetry::{AgentEvent, SpawnVia};
use serde_json::json;
use std::sync::Arc;

/// Runs the lead as `main` with memories in `scope`, its copies playing `copies` (by fork
/// prompt); returns the host, the runtime, the forker's pid and its one copy's pid.
async fn run_forked(
    scope: &str,
    forker: Vec<ScriptedTurn>,
    copy_prompt: &str,
    copy: Vec<ScriptedTurn>,
) -> (Arc<AgentHost>, Runtime, Pid, Pid) {
    let scripts = Scripts::new().with("lead:main", forker).with(&format!("lead:{copy_prompt}"), copy);
    let host = host(&forks_with_memories(scope), scripts);
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "main").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.result(), json!("done"));
    let copies = copies(&host);
    assert_eq!(copies.len(), 1);
    let copy_pid = copies[0];
    let copy_done = finished(&runtime, copy_pid).await;
    assert_eq!(copy_done.status, Status::Exited, "{:?}", copy_done.outcome);
    (host, runtime, pid, copy_pid)
}

/// A copy that writes `found` and ends; a forker that forks it, waits for it, and reads `found`.
fn write_then_read(scope: &str) -> (Vec<ScriptedTurn>, Vec<ScriptedTurn>) {
    let forker = vec![
        ScriptedTurn::call("fork", json!({"prompt": scope})),
        ScriptedTurn::call("wait_for_subagents", json!({})),
        ScriptedTurn::call("recall", json!({"key": "found"})).expect_tool_result("\"status\":\"exited\""),
        ScriptedTurn::text("done").expect_tool_result("copy-found"),
    ];
    let copy = vec![
        ScriptedTurn::call("remember", json!({"key": "found", "text": "copy-found"})),
        ScriptedTurn::text("remembered").expect_tool_result("\"replaced\":false"),
    ];
    (forker, copy)
}

#[tokio::test]
async fn isolated_memories_diverge_after_a_fork() {
    // Each side writes after the fork and then reads the other's key. The copy's read waits
    // (gate "written") until the forker's write has run, so a shared object would show it.
    let forker = vec![
        ScriptedTurn::call("remember", json!({"key": "before", "text": "forker-before"})),
        ScriptedTurn::call("fork", json!({"prompt": "iso"})),
        ScriptedTurn::call("remember", json!({"key": "after", "text": "forker-after"})),
        ScriptedTurn::call("wait_for_subagents", json!({})),
        ScriptedTurn::call("recall", json!({"key": "copy"})).expect_tool_result("\"status\":\"exited\""),
        ScriptedTurn::call("recall", json!({"key": "before"})).expect_tool_result("unknown_memory"),
        ScriptedTurn::text("done").expect_tool_result("forker-before"),
    ];
    let copy = vec![
        ScriptedTurn::call("recall", json!({"key": "before"}))
            .with_call("remember", json!({"key": "copy", "text": "copy-wrote"})),
        ScriptedTurn::call("recall", json!({"key": "after"})).expect_tool_result("forker-before"),
        ScriptedTurn::text("iso done").expect_tool_result("unknown_memory"),
    ];
    let scripts = Scripts::new().with("lead:main", forker).with("lead:iso", copy);
    let gates = Gates::new().open_at("lead:main", 3, "written").wait_before("lead:iso", 1, "written");
    let (host, _log) = relay::host(&forks_with_memories("isolated"), scripts, gates);
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "main").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    let copy_pid = copies(&host)[0];
    assert_eq!(finished(&runtime, copy_pid).await.status, Status::Exited);

    // The forker's object holds its writes and never the copy's.
    let mine = module(&runtime, pid, "agent.memories").to_string();
    assert!(mine.contains("forker-before") && mine.contains("forker-after"), "{mine}");
    assert!(!mine.contains("copy-wrote"), "{mine}");
    for who in [pid, copy_pid] {
        let refused = refusals(&host, who);
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert_eq!((refused[0].0.as_str(), refused[0].1.as_str()), ("recall", "unknown_memory"));
    }
    assert!(notices_of(&runtime, pid).is_empty(), "isolated memories notify nobody");
}

#[tokio::test]
async fn shared_memories_written_by_a_copy_are_read_by_its_forker() {
    let (forker, copy) = write_then_read("shared");
    let (host, runtime, pid, copy_pid) = run_forked("shared", forker, "shared", copy).await;
    assert!(refusals(&host, copy_pid).is_empty(), "{:?}", refusals(&host, copy_pid));
    assert!(module(&runtime, pid, "agent.memories").to_string().contains("copy-found"));
    assert!(notices_of(&runtime, pid).is_empty(), "shared memories notify nobody");
}

#[tokio::test]
async fn inherited_memories_are_shared_and_a_copys_write_notifies_its_forker() {
    let (forker, copy) = write_then_read("inherited");
    let (host, runtime, pid, _copy_pid) = run_forked("inherited", forker, "inherited", copy).await;
    assert!(module(&runtime, pid, "agent.memories").to_string().contains("copy-found"));

    let notices = notices_of(&runtime, pid);
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(notices[0].contains("changed your shared memories (remember)"), "{notices:?}");
    let received: Vec<String> = events_of(&host, pid)
        .into_iter()
        .filter_map(|r| match r.event {
            AgentEvent::MessageReceived { text, .. } => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(received, notices, "the notice is re-stated on the forker's stream");
}

#[tokio::test]
async fn a_read_only_copy_reads_its_forkers_memories_and_may_not_write_them() {
    let forker = vec![
        ScriptedTurn::call("remember", json!({"key": "before", "text": "forker-before"})),
        ScriptedTurn::call("fork", json!({"prompt": "ro"})),
        ScriptedTurn::call("wait_for_subagents", json!({})),
        ScriptedTurn::text("done").expect_tool_result("\"status\":\"exited\""),
    ];
    let copy = vec![
        ScriptedTurn::call("remember", json!({"key": "mine", "text": "copy-wrote"})),
        ScriptedTurn::call("recall", json!({"key": "before"})).expect_tool_result("read_only_memories"),
        ScriptedTurn::text("read").expect_tool_result("forker-before"),
    ];
    let (host, runtime, pid, copy_pid) = run_forked("read-only", forker, "ro", copy).await;
    let refused = refusals(&host, copy_pid);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!((refused[0].0.as_str(), refused[0].1.as_str()), ("remember", "read_only_memories"));
    let mine = module(&runtime, pid, "agent.memories").to_string();
    assert!(!mine.contains("copy-wrote"), "{mine}");
}

/// The bodies of the messages on `agent.memories` in `pid`'s mailbox, read or not.
fn notices_of(runtime: &Runtime, pid: Pid) -> Vec<String> {
    let query = MailboxQuery {
        filter: MessageFilter { channel: Some(MEMORIES_CHANNEL.to_string()), ..Default::default() },
        include_acked: true,
        limit: 64,
    };
    runtime.read_mailbox(pid, &query).expect("a mailbox").messages.into_iter().map(|m| m.body).collect()
}

/// The copies forked in this host, in spawn order.
fn copies(host: &AgentHost) -> Vec<Pid> {
    host.telemetry()
        .records()
        .into_iter()
        .filter(|r| matches!(r.event, AgentEvent::AgentSpawned { via: SpawnVia::Fork, .. }))
        .map(|r| r.pid.parse().expect("a pid"))
        .collect()
}
