//! Declared state machines from the turn loop: a root launched on a machine, an exec that
//! enters one at its entry state, `transition_state` and its refusals, what a state is and is
//! not offered (no exec, transition_state only inside, fork still available).

mod agent_support;

use agent_support::config::{PIPELINE, TEAM};
use agent_support::*;
use agentvisor::actors::Status;
use agentvisor::agent::brain::ScriptedTurn;
use agentvisor::agent::telemetry::{AgentEvent, EventRecord, SpawnVia, TransitionKind};
use serde_json::json;

/// The `(module, action)` pairs of a transition.
fn moves_of(event: &AgentEvent) -> Vec<(String, String)> {
    let AgentEvent::AgentTransition { modules, .. } = event else { panic!("not a transition: {event:?}") };
    modules.iter().map(|m| (m.module.clone(), m.action.clone())).collect()
}

/// The index of the first event of `kind` at or after `from`.
fn position(events: &[EventRecord], from: usize, kind_name: &str) -> usize {
    events[from..]
        .iter()
        .position(|r| r.event.type_name() == kind_name)
        .map(|i| i + from)
        .unwrap_or_else(|| panic!("no {kind_name} after event {from}: {events:#?}"))
}

#[tokio::test]
async fn a_root_launched_on_a_machine_starts_at_its_entry_state() {
    let planner = vec![
        ScriptedTurn::call("finish", json!({"result": "planned"}))
            .expect_system("You are the state plan of the machine pipeline"),
    ];
    let host = host(PIPELINE, Scripts::new().with("planner", planner));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "pipeline", "go").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.profile(), "planner");
    assert_eq!(done.result(), json!("planned"));

    let events = events_of(&host, pid);
    let AgentEvent::AgentSpawned { profile, via, machine, state, .. } = &events[0].event else {
        panic!("the first event is not a spawn: {:?}", events[0].event)
    };
    assert_eq!((profile.as_str(), *via), ("planner", SpawnVia::Root));
    assert_eq!((machine.as_deref(), state.as_deref()), (Some("pipeline"), Some("plan")));
    assert_eq!(
        events[1].event,
        AgentEvent::FsmState { machine: "pipeline".into(), state: "plan".into(), from: None }
    );
    assert_eq!(events[1].agent_id, events[0].agent_id);
    let identity = module(&runtime, pid, "agent.identity");
    assert_eq!(identity["machine"], json!({"machine": "pipeline", "state": "plan"}), "{identity}");
}

#[tokio::test]
async fn exec_naming_a_machine_enters_it_at_its_entry_state() {
    let boss = vec![
        ScriptedTurn::call("add_task", json!({"title": "ship the release"}))
            .with_call("write_note", json!({"page": "plan", "text": "cut a branch"})),
        ScriptedTurn::call("exec", json!({"agent": "pipeline", "prompt": "take it from here"})),
    ];
    let planner = vec![
        ScriptedTurn::call("list_tasks", json!({}))
            .expect_tail("You are now in machine pipeline at its entry state plan")
            .expect_tail("take it from here")
            .expect_system("You are the state plan of the machine pipeline"),
        ScriptedTurn::call("finish", json!({"result": "planned"})).expect_tool_result("ship the release"),
    ];
    let host = host(PIPELINE, Scripts::new().with("boss", boss).with("planner", planner));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "boss", "release it").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.profile(), "planner");

    let events = events_of(&host, pid);
    let at = position(&events, 0, "agent_transition");
    let AgentEvent::AgentTransition { kind, to_profile, to_agent_id, .. } = &events[at].event else {
        unreachable!()
    };
    assert_eq!(*kind, TransitionKind::Exec);
    // The transfer is computed against the entry state's profile (planner: tasks, no notebook,
    // no program library), not against the machine.
    assert_eq!(to_profile, "planner");
    let moves = moves_of(&events[at].event);
    assert!(moves.contains(&("history".into(), "transferred".into())), "{moves:?}");
    assert!(moves.contains(&("tasks".into(), "transferred".into())), "{moves:?}");
    assert!(moves.contains(&("notebook".into(), "dropped".into())), "{moves:?}");
    assert!(moves.contains(&("program_library".into(), "dropped".into())), "{moves:?}");

    let spawned = &events[at + 1];
    assert_eq!(&spawned.agent_id, to_agent_id);
    let AgentEvent::AgentSpawned { via, machine, state, opening, .. } = &spawned.event else {
        panic!("a transition not followed by a spawn: {:?}", spawned.event)
    };
    assert_eq!(*via, SpawnVia::Exec);
    assert_eq!((machine.as_deref(), state.as_deref()), (Some("pipeline"), Some("plan")));
    let note = opening[0].text().unwrap_or_default();
    assert!(note.contains("entry state plan"), "{note}");
    let entered = &events[at + 2];
    assert_eq!(&entered.agent_id, to_agent_id, "the entry is on the successor's stream");
    assert_eq!(
        entered.event,
        AgentEvent::FsmState { machine: "pipeline".into(), state: "plan".into(), from: None }
    );

    let tasks = module(&runtime, pid, "agent.tasks");
    assert!(tasks.to_string().contains("ship the release"), "{tasks}");
    // The dropped notebook's object is released and its name unbound.
    let space = runtime.object_space();
    let names = &space.process(pid).expect("memory").namespace;
    assert!(!names.contains_key("agent.notebook") && !names.contains_key("agent.library"), "{names:?}");
    let released = space
        .owned_by(&agentvisor::actors::kernel::objects::Owner::Process(pid))
        .filter(|oid| space.object(*oid).is_some_and(|o| o.released))
        .count();
    assert_eq!(released, 2, "the notebook's and the program library's objects");
}

#[tokio::test]
async fn an_agent_in_a_state_is_not_offered_exec() {
    let planner = vec![
        ScriptedTurn::call("exec", json!({"agent": "boss"})),
        ScriptedTurn::call("finish", json!({"result": "stayed"})).expect_tool_result("not_offered"),
    ];
    let (host, asked) = host_recording(PIPELINE, Scripts::new().with("planner", planner));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "pipeline", "go").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.result(), json!("stayed"));
    let refused = refusals(&host, pid);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!((refused[0].0.as_str(), refused[0].1.as_str()), ("exec", "not_offered"));
    assert!(refused[0].2.contains("transition_state"), "the refusal says what to use: {}", refused[0].2);

    let asked = asked.lock().expect("requests");
    assert!(!asked.is_empty());
    for request in asked.iter() {
        assert!(request.tools.iter().any(|t| t == "transition_state"), "{:?}", request.tools);
        assert!(!request.tools.iter().any(|t| t == "exec"), "{:?}", request.tools);
        let tools_line = request.system.lines().find(|l| l.starts_with("Your tools:")).expect("a tools line");
        assert!(!tools_line.contains("exec"), "{tools_line}");
        assert!(tools_line.contains("transition_state"), "{tools_line}");
    }
}

#[tokio::test]
async fn transition_state_makes_a_new_incarnation_in_the_next_state() {
    let planner =
        vec![ScriptedTurn::call("transition_state", json!({"state": "build", "prompt": "build it"}))];
    let builder = vec![
        ScriptedTurn::call("transition_state", json!({"state": "ship"}))
            .expect_tail("build it")
            .expect_system("You are the state build of the machine pipeline"),
    ];
    let shipper = vec![ScriptedTurn::text("shipped")];
    let scripts = Scripts::new().with("planner", planner).with("builder", builder).with("shipper", shipper);
    let (host, asked) = host_recording(PIPELINE, scripts);
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "pipeline", "go").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.profile(), "shipper");
    assert_eq!(done.result(), json!("shipped"));

    let events = events_of(&host, pid);
    let mut from = 0;
    for (previous, (state, profile)) in
        ["plan", "build"].into_iter().zip([("build", "builder"), ("ship", "shipper")])
    {
        let at = position(&events, from, "agent_transition");
        let AgentEvent::AgentTransition { kind, to_profile, to_agent_id, .. } = &events[at].event else {
            unreachable!()
        };
        assert_eq!(*kind, TransitionKind::Fsm);
        assert_eq!(to_profile, profile);
        let AgentEvent::AgentSpawned { via, machine, state: spawned_in, parent_agent_id, .. } =
            &events[at + 1].event
        else {
            panic!("a transition not followed by a spawn: {:?}", events[at + 1].event)
        };
        assert_eq!(*via, SpawnVia::Fsm);
        assert_eq!((machine.as_deref(), spawned_in.as_deref()), (Some("pipeline"), Some(state)));
        assert_eq!(parent_agent_id.as_deref(), Some(events[at].agent_id.as_str()));
        assert_eq!(&events[at + 1].agent_id, to_agent_id);
        assert_eq!(&events[at + 2].agent_id, to_agent_id);
        assert_eq!(
            events[at + 2].event,
            AgentEvent::FsmState {
                machine: "pipeline".into(),
                state: state.into(),
                from: Some(previous.into())
            }
        );
        from = at + 3;
    }
    let agent_ids: std::collections::BTreeSet<&str> = events.iter().map(|r| r.agent_id.as_str()).collect();
    assert_eq!(agent_ids.len(), 3, "a fresh agent id per state");
    // The final state's profile has no transition_state, so it is not offered it.
    let asked = asked.lock().expect("requests");
    let last = asked.last().expect("a request");
    assert_eq!(last.profile, "shipper");
    assert!(!last.tools.iter().any(|t| t == "transition_state"), "{:?}", last.tools);
}

#[tokio::test]
async fn a_disallowed_or_unknown_state_is_refused_listing_the_reachable_ones() {
    let planner = vec![
        ScriptedTurn::call("transition_state", json!({"state": "ship"})),
        ScriptedTurn::call("transition_state", json!({"state": "nowhere"}))
            .expect_tool_result("transition_not_allowed"),
        ScriptedTurn::call("finish", json!({"result": "stuck"})).expect_tool_result("transition_not_allowed"),
    ];
    let host = host(PIPELINE, Scripts::new().with("planner", planner));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "pipeline", "go").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!((done.profile().as_str(), done.result()), ("planner", json!("stuck")));
    let refused = refusals(&host, pid);
    assert_eq!(refused.len(), 2, "{refused:?}");
    for (tool, code, message) in &refused {
        assert_eq!((tool.as_str(), code.as_str()), ("transition_state", "transition_not_allowed"));
        assert!(message.contains("[build]"), "{message}");
    }
    assert!(events_of(&host, pid).iter().all(|r| !matches!(r.event, AgentEvent::AgentTransition { .. })));
}

#[tokio::test]
async fn transition_state_is_not_offered_outside_a_machine() {
    // writer enables transition_state, but launched as a plain profile it stands in no state.
    let writer = vec![
        ScriptedTurn::call("transition_state", json!({"state": "check"})),
        ScriptedTurn::call("finish", json!({"result": "plain"})).expect_tool_result("not_offered"),
    ];
    let (host, asked) = host_recording(TEAM, Scripts::new().with("writer", writer));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "writer", "go").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.result(), json!("plain"));
    let refused = refusals(&host, pid);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!((refused[0].0.as_str(), refused[0].1.as_str()), ("transition_state", "not_offered"));
    assert!(!events_of(&host, pid).iter().any(|r| matches!(r.event, AgentEvent::FsmState { .. })));
    for request in asked.lock().expect("requests").iter() {
        assert!(!request.tools.iter().any(|t| t == "transition_state"), "{:?}", request.tools);
        assert!(!request.system.contains("transition_state"), "{}", request.system);
    }
}

#[tokio::test]
async fn fork_stays_available_inside_a_state() {
    let planner = vec![
        ScriptedTurn::call("fork", json!({"prompt": "side work"})).expect_system("fork"),
        ScriptedTurn::call("wait_for_subagents", json!({})),
        ScriptedTurn::call("finish", json!({"result": "collected"})).expect_tool_result("side done"),
    ];
    let copy = vec![ScriptedTurn::call("finish", json!({"result": "side done"})).expect_tail("side work")];
    let host = host(PIPELINE, Scripts::new().with("planner:go", planner).with("planner:side work", copy));
    let runtime = runtime(&host).await;
    let pid =
        runtime.spawn_root(host.root_spec("pipeline", "go").expect("root spec")).await.expect("spawn root");
    let done = finished(&runtime, pid).await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.result(), json!("collected"));
    assert!(refusals(&host, pid).is_empty(), "{:?}", refusals(&host, pid));

    let events = events_of(&host, pid);
    let at = position(&events, 0, "agent_transition");
    let AgentEvent::AgentTransition { kind, to_profile, to_agent_id, .. } = &events[at].event else {
        unreachable!()
    };
    assert_eq!((*kind, to_profile.as_str()), (TransitionKind::Fork, "planner"));
    let copy_spawn = host.telemetry().stream(to_agent_id);
    let AgentEvent::AgentSpawned { via, profile, .. } = &copy_spawn[0].event else {
        panic!("the copy's stream does not open on its spawn: {copy_spawn:?}")
    };
    assert_eq!((*via, profile.as_str()), (SpawnVia::Fork, "planner"));
    assert_ne!(copy_spawn[0].pid, pid.to_string(), "the copy is a process of its own");
}
