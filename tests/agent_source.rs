//! A session started from a prior conversation source: the new root agent opens on the source
//! agent's last checkpointed conversation, says honestly where it came from, and is a session
//! of its own; an unresolvable source fails the launch with the reason.

mod agent_support;

use agent_support::config::TEAM;
use agent_support::*;
use agentvisor::actors::Status;
use agentvisor::agent::brain::ScriptedTurn;
use agentvisor::agent::telemetry::AgentEvent;
use serde_json::json;

#[tokio::test]
async fn a_new_session_opens_on_the_source_conversation() {
    let scripts = Scripts::new()
        .with(
            "lead#1",
            vec![
                ScriptedTurn::call("write_note", json!({"page": "p", "text": "the secret is 42"})),
                ScriptedTurn::text("first done"),
            ],
        )
        .with(
            "helper",
            vec![
                ScriptedTurn::text("second done")
                    .expect_tail("started from prior conversation source")
                    .expect_tail("forked from that source session"),
            ],
        );
    let host = host(TEAM, scripts);
    let runtime = runtime(&host).await;
    host.attach_store(runtime.store());
    let (first, done) = run_root(&host, &runtime, "lead", "take notes").await;
    assert_eq!(done.result(), json!("first done"));

    let spec = host.root_spec_from_source("helper", "carry on", &first.to_string()).expect("spec");
    let second = runtime.spawn_root(spec).await.expect("spawn");
    let done = finished(&runtime, second).await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.result(), json!("second done"));

    let spawned = events_of(&host, second).into_iter().find_map(|r| match r.event {
        AgentEvent::AgentSpawned { inherited_messages, opening, parent_agent_id, .. } => {
            Some((inherited_messages, opening, parent_agent_id))
        }
        _ => None,
    });
    let (inherited, opening, parent) = spawned.expect("an agent_spawned");
    // The source's whole conversation: its prompt, two assistant turns, one tool result.
    assert_eq!(inherited, 4);
    assert!(opening[0].text().unwrap_or_default().contains(&first.to_string()));
    assert_eq!(parent, None, "a new session, not an incarnation of the source");
    // The source is untouched: its window still ends where it ended.
    let first_ids: Vec<String> = events_of(&host, first).iter().map(|r| r.agent_id.clone()).collect();
    let second_ids: Vec<String> = events_of(&host, second).iter().map(|r| r.agent_id.clone()).collect();
    assert!(second_ids.iter().all(|id| !first_ids.contains(id)), "the new session has its own agent id");
}

#[tokio::test]
async fn an_unresolvable_source_fails_the_launch_with_the_reason() {
    let host = host(TEAM, Scripts::new().with("helper", vec![ScriptedTurn::text("never")]));
    let runtime = runtime(&host).await;
    host.attach_store(runtime.store());
    let missing = "01a22a00-0000-7000-8000-000000000000";
    let spec = host.root_spec_from_source("helper", "go", missing).expect("spec");
    let pid = runtime.spawn_root(spec).await.expect("spawn");
    let done = finished(&runtime, pid).await;
    assert_eq!(done.status, Status::Failed);
    let outcome = format!("{:?}", done.outcome);
    assert!(outcome.contains("cannot be resolved") && outcome.contains("no such process"), "{outcome}");
}
