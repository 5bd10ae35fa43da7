//! exec and the turn loop around it: the roster refusal, the module table's three rows (a
//! dropped module's object released), the opening note, a fresh agent id per incarnation in one process, telemetry order, cost split
//! per profile, and turn finality for successions (first wins, an ending beats both).

mod agent_support;

use agent_support::config::TEAM;
use agent_support::*;
use agentvisor::actors::kernel::objects::Owner;
use agentvisor::actors::{Oid, Status};
use agentvisor::agent::brain::ScriptedTurn;
use agentvisor::agent::telemetry::{AgentEvent, SpawnVia, TransitionKind};
use serde_json::json;

#[tokio::test]
async fn a_turn_without_calls_ends_the_session_with_its_text() {
    let host = host(TEAM, Scripts::new().with("lead", vec![ScriptedTurn::text("all done")]));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "say done").await;
    assert_eq!(done.status, Status::Exited);
    assert_eq!(done.result(), json!("all done"));
    let kinds: Vec<&str> = events_of(&host, pid).iter().map(|r| r.event.type_name()).collect();
    assert_eq!(kinds, ["agent_spawned", "turn_completed", "agent_finished"]);
}

#[tokio::test]
async fn exec_off_the_roster_is_refused_listing_the_roster() {
    let script = vec![
        ScriptedTurn::call("exec", json!({"agent": "checker"})),
        ScriptedTurn::call("finish", json!({"result": "stayed"})).expect_tool_result("not_on_roster"),
    ];
    let host = host(TEAM, Scripts::new().with("lead", script));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "try").await;
    assert_eq!(done.result(), json!("stayed"));
    assert_eq!(done.profile(), "lead");
    let refused = refusals(&host, pid);
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].1, "not_on_roster");
    assert!(refused[0].2.contains("[helper, review, worker]"), "{}", refused[0].2);
}

#[tokio::test]
async fn exec_moves_the_conversation_and_the_module_table() {
    let host = host(TEAM, chain_scripts());
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "go").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.profile(), "lead");
    assert_eq!(done.result(), json!("back"));

    let events = events_of(&host, pid);
    let transitions: Vec<&AgentEvent> =
        events.iter().map(|r| &r.event).filter(|e| matches!(e, AgentEvent::AgentTransition { .. })).collect();
    assert_eq!(transitions.len(), 2);
    let AgentEvent::AgentTransition { kind, to_profile, modules, .. } = transitions[0] else {
        unreachable!()
    };
    assert_eq!(*kind, TransitionKind::Exec);
    assert_eq!(to_profile, "helper");
    let moves: Vec<(String, String)> = modules.iter().map(|m| (m.module.clone(), m.action.clone())).collect();
    assert!(moves.contains(&("history".into(), "transferred".into())), "{moves:?}");
    assert!(moves.contains(&("notebook".into(), "transferred".into())), "{moves:?}");
    assert!(moves.contains(&("program_library".into(), "transferred".into())), "{moves:?}");
    assert!(moves.contains(&("tasks".into(), "dropped".into())), "{moves:?}");
    assert!(moves.contains(&("memories".into(), "dropped".into())), "{moves:?}");
    let AgentEvent::AgentTransition { modules, .. } = transitions[1] else { unreachable!() };
    let moves: Vec<(String, String)> = modules.iter().map(|m| (m.module.clone(), m.action.clone())).collect();
    assert!(moves.contains(&("tasks".into(), "fresh".into())), "{moves:?}");

    // Each transition sits on the outgoing stream immediately before the successor's spawn.
    for (i, record) in events.iter().enumerate() {
        if let AgentEvent::AgentTransition { to_agent_id, .. } = &record.event {
            let next = &events[i + 1];
            assert_eq!(&next.agent_id, to_agent_id);
            let AgentEvent::AgentSpawned { via, parent_agent_id, .. } = &next.event else {
                panic!("a transition not followed by a spawn: {:?}", next.event)
            };
            assert_eq!(*via, SpawnVia::Exec);
            assert_eq!(parent_agent_id.as_deref(), Some(record.agent_id.as_str()));
        }
    }
    let agent_ids: std::collections::BTreeSet<&str> = events.iter().map(|r| r.agent_id.as_str()).collect();
    assert_eq!(agent_ids.len(), 3, "a fresh agent id per incarnation");

    // The fresh task list is empty; the dropped one's contents are gone with it.
    let tasks = module(&runtime, pid, "agent.tasks");
    assert_eq!(tasks["tasks"], json!([]), "{tasks}");
    let cost = module(&runtime, pid, "agent.cost");
    assert_eq!(cost["incarnations"].as_array().map(Vec::len), Some(3), "{cost}");
    assert!(cost["by_profile"]["helper"]["input_tokens"].as_u64().unwrap_or(0) > 0, "{cost}");
    assert!(cost["by_profile"]["lead"]["input_tokens"].as_u64().unwrap_or(0) > 0, "{cost}");
}

/// lead → helper → lead, each incarnation with its own turns (the provider keys scripts by
/// profile, and the two `lead` incarnations play one script in sequence).
fn chain_scripts() -> Scripts {
    let lead = vec![
        ScriptedTurn::call("add_task", json!({"title": "ship it"}))
            .with_call("write_note", json!({"page": "plan", "text": "step one"}))
            .with_call("save_program", json!({"description": "p", "source": "print(1)"})),
        ScriptedTurn::call("exec", json!({"agent": "helper", "prompt": "carry on"})),
    ];
    let helper = vec![
        ScriptedTurn::call("read_note", json!({"page": "plan"})).expect_tail("carry on"),
        ScriptedTurn::call("exec", json!({"agent": "lead"})).expect_tool_result("step one"),
    ];
    let lead_again =
        vec![ScriptedTurn::call("list_tasks", json!({})).expect_tail("fresh"), ScriptedTurn::text("back")];
    Scripts::new().with("lead#1", lead).with("helper", helper).with("lead#3", lead_again)
}

#[tokio::test]
async fn a_second_succession_in_a_turn_is_refused_and_the_first_stands() {
    let lead = vec![
        ScriptedTurn::call("exec", json!({"agent": "helper"})).with_call("exec", json!({"agent": "worker"})),
    ];
    let helper = vec![ScriptedTurn::text("I am the helper")];
    let host = host(TEAM, Scripts::new().with("lead", lead).with("helper", helper));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "twice").await;
    assert_eq!(done.profile(), "helper");
    let refused = refusals(&host, pid);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].1, "succession_declared");
}

#[tokio::test]
async fn an_ending_beats_a_succession_declared_in_the_same_turn() {
    // exec first, then finish: the exec was accepted but the ending wins at the turn's end.
    let lead = vec![
        ScriptedTurn::call("exec", json!({"agent": "helper"}))
            .with_call("finish", json!({"result": "ended"})),
    ];
    let host = host(TEAM, Scripts::new().with("lead", lead));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "end").await;
    assert_eq!(done.result(), json!("ended"));
    assert_eq!(done.profile(), "lead");
    assert!(events_of(&host, pid).iter().all(|r| !matches!(r.event, AgentEvent::AgentTransition { .. })));

    // finish first, then exec: the exec is refused.
    let lead = vec![
        ScriptedTurn::call("finish", json!({"result": "ended"}))
            .with_call("exec", json!({"agent": "helper"})),
    ];
    let host = agent_support::host(TEAM, Scripts::new().with("lead", lead));
    let runtime = agent_support::runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "end").await;
    assert_eq!(done.profile(), "lead");
    let refused = refusals(&host, pid);
    assert_eq!(refused[0].1, "ending_declared", "{refused:?}");
}

#[tokio::test]
async fn exec_releases_the_objects_of_the_modules_the_successor_turns_off() {
    let lead = vec![
        ScriptedTurn::call("add_task", json!({"title": "ship it"}))
            .with_call("remember", json!({"key": "k", "text": "kept"}))
            .with_call("write_note", json!({"page": "plan", "text": "step one"})),
        ScriptedTurn::call("exec", json!({"agent": "helper"})),
    ];
    let helper = vec![ScriptedTurn::text("helped").expect_tail("Dropped, and their contents are gone")];
    let host = host(TEAM, Scripts::new().with("lead", lead).with("helper", helper));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "go").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.profile(), "helper");

    // The successor binds neither dropped module's name; the notebook came across.
    let space = runtime.object_space();
    let memory = space.process(pid).expect("memory");
    for dropped in ["agent.tasks", "agent.memories"] {
        assert!(!memory.namespace.contains_key(dropped), "{dropped} is still bound");
    }
    assert!(module(&runtime, pid, "agent.notebook").to_string().contains("step one"));

    // Exactly the two dropped modules' objects are released, not emptied: their payloads are
    // deleted, and reading their OIDs answers that they are released.
    let released: Vec<Oid> = space
        .owned_by(&Owner::Process(pid))
        .filter(|oid| space.object(*oid).is_some_and(|o| o.released))
        .collect();
    assert_eq!(released.len(), 2, "{released:?}");
    for oid in released {
        assert_eq!(space.holders_of(oid).count(), 0, "no handle survives on {oid}");
        assert_eq!(runtime.payload(oid).expect("payload lookup"), None);
        let refused = space.plan_read(pid, oid).expect_err("released");
        assert_eq!(refused.code(), "object_released");
    }
}
