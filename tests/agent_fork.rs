//! fork and the turn loop around it: the id is a real pid that becomes a child when the turn
//! ends, the copy opens on its forker's conversation with the turn counter carried, forks are
//! additive and outlive a finish in their own turn, the capability gate, the telemetry that
//! ties a copy to its forker, and the program library cloned across the fork.

mod agent_support;

use agent_support::config::FORKS;
use agent_support::relay::{self, Gates, texts};
use agent_support::*;
use agentvisor::actors::{Pid, Status};
use agentvisor::agent::brain::{Message, ScriptedTurn};
use agentvisor::agent::run::AgentHost;
use agentvisor::agent::telemetry::{AgentEvent, EventRecord, SpawnVia, TransitionKind};
use serde_json::json;

/// The copies forked in this host, in the order they were spawned: (pid, agent_spawned record).
fn copies(host: &AgentHost) -> Vec<(Pid, EventRecord)> {
    host.telemetry()
        .records()
        .into_iter()
        .filter(|r| matches!(r.event, AgentEvent::AgentSpawned { via: SpawnVia::Fork, .. }))
        .map(|r| (r.pid.parse().expect("a pid"), EventRecord::clone(&r)))
        .collect()
}

/// The result `pid`'s agent finished with, by its `agent_finished` event (the process's own
/// result object is handed to the parent that collects it).
fn finished_with(host: &AgentHost, pid: Pid) -> Option<serde_json::Value> {
    events_of(host, pid).into_iter().find_map(|r| match r.event {
        AgentEvent::AgentFinished { result, .. } => result,
        _ => None,
    })
}

/// The `turn` numbers of `pid`'s `turn_completed` events.
fn turn_numbers(host: &AgentHost, pid: Pid) -> Vec<u64> {
    events_of(host, pid)
        .into_iter()
        .filter_map(|r| match r.event {
            AgentEvent::TurnCompleted { turn, .. } => Some(turn),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_fork_id_is_a_real_pid_collected_on_a_later_turn_not_in_its_own() {
    let lead = vec![
        // Waiting for every subagent in the fork's own turn names the fork: refused.
        ScriptedTurn::call("fork", json!({"prompt": "side"})).with_call("wait_for_subagents", json!({})),
        ScriptedTurn::call("wait_for_subagents", json!({"ids": ["{id:0}"]}))
            .expect_tool_result("fork_not_yet_child")
            .expect_tool_result("Collect it on a later turn"),
        ScriptedTurn::text("collected")
            .expect_tool_result("\"status\":\"exited\"")
            .expect_tool_result("side done"),
    ];
    let side = vec![ScriptedTurn::text("side done")];
    let scripts = Scripts::new().with("lead:main", lead).with("lead:side", side);
    let (host, log) = relay::host(FORKS, scripts, Gates::new());
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "main").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.result(), json!("collected"));

    let refused = refusals(&host, pid);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!((refused[0].0.as_str(), refused[0].1.as_str()), ("wait_for_subagents", "fork_not_yet_child"));

    // The id the call returned is the pid the copy runs as, and that process ran to its end.
    let copies = copies(&host);
    assert_eq!(copies.len(), 1);
    let copy = copies[0].0;
    let windows = log.windows_of(pid);
    let fork_result =
        texts(&windows[1]).into_iter().find(|t| t.contains("\"id\":")).expect("the fork's result");
    assert!(fork_result.contains(&format!("\"id\":\"{copy}\"")), "{fork_result}");
    assert!(refused[0].2.contains(&copy.to_string()), "the refusal names the fork: {}", refused[0].2);
    assert_eq!(finished(&runtime, copy).await.status, Status::Exited);
    assert_eq!(finished_with(&host, copy), Some(json!("side done")));
}

#[tokio::test]
async fn the_copy_opens_on_the_forkers_conversation_with_the_turn_counter_carried() {
    let lead = vec![
        ScriptedTurn::call("write_note", json!({"page": "plan", "text": "first"})),
        ScriptedTurn::call("fork", json!({"prompt": "check the plan"})),
        ScriptedTurn::call("wait_for_subagents", json!({})),
        ScriptedTurn::text("done").expect_tool_result("checked"),
    ];
    let copy_script = vec![
        ScriptedTurn::call("read_note", json!({"page": "plan"}))
            .expect_tail("You are a fork of agent")
            .expect_tail("in parallel")
            .expect_tail("check the plan"),
        ScriptedTurn::text("checked").expect_tool_result("first"),
    ];
    let scripts = Scripts::new().with("lead:main", lead).with("lead:check the plan", copy_script);
    let (host, log) = relay::host(FORKS, scripts, Gates::new());
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "main").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    let copy = copies(&host)[0].0;
    assert_eq!(finished(&runtime, copy).await.status, Status::Exited);

    // The copy's first window is the forker's, as it stood when the fork turn ended, then the
    // opening message naming the forker and the turn.
    let forker_id = events_of(&host, pid)[0].agent_id.clone();
    let first = &log.windows_of(copy)[0];
    let forker_at_fork = &log.windows_of(pid)[2];
    assert_eq!(first.len(), forker_at_fork.len() + 1, "the forker's window plus the opening");
    assert_eq!(&first[..forker_at_fork.len()], &forker_at_fork[..]);
    assert_eq!(first[0], Message::user("main"));
    let opening = first.last().and_then(Message::text).expect("an opening message");
    assert!(opening.contains(&forker_id), "{opening}");
    assert!(opening.contains("turn 2"), "{opening}");

    // The forker forked in its turn 2; the copy's turns continue from there.
    assert_eq!(turn_numbers(&host, pid), [1, 2, 3, 4]);
    assert_eq!(turn_numbers(&host, copy), [3, 4]);
}

#[tokio::test]
async fn forks_are_additive_two_forks_in_one_turn_both_run() {
    let lead = vec![
        ScriptedTurn::call("fork", json!({"prompt": "left"})).with_call("fork", json!({"prompt": "right"})),
        ScriptedTurn::call("wait_for_subagents", json!({})),
        ScriptedTurn::text("both").expect_tool_result("went left").expect_tool_result("went right"),
    ];
    let scripts = Scripts::new()
        .with("lead:main", lead)
        .with("lead:left", vec![ScriptedTurn::text("went left")])
        .with("lead:right", vec![ScriptedTurn::text("went right")]);
    let host = host(FORKS, scripts);
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "main").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.result(), json!("both"));
    assert!(refusals(&host, pid).is_empty(), "{:?}", refusals(&host, pid));
    let copies = copies(&host);
    assert_eq!(copies.len(), 2);
    for (copy, _) in copies {
        assert_eq!(finished(&runtime, copy).await.status, Status::Exited);
    }
}

#[tokio::test]
async fn a_fork_declared_with_finish_runs_to_its_end_before_the_forker_exits() {
    let lead = vec![
        ScriptedTurn::call("fork", json!({"prompt": "carry on"}))
            .with_call("finish", json!({"result": "handed off"})),
    ];
    let copy_script = vec![
        ScriptedTurn::call("write_note", json!({"page": "work", "text": "one"})),
        ScriptedTurn::text("carried"),
    ];
    let scripts = Scripts::new().with("lead:main", lead).with("lead:carry on", copy_script);
    let host = host(FORKS, scripts);
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "main").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.result(), json!("handed off"));
    let copy = copies(&host)[0].0;
    let copy_done = finished(&runtime, copy).await;
    assert_eq!(copy_done.status, Status::Exited, "{:?}", copy_done.outcome);
    assert_eq!(finished_with(&host, copy), Some(json!("carried")));

    // The copy finished before the forker did.
    let records = host.telemetry().records();
    let finished_at = |who: Pid| {
        records
            .iter()
            .position(|r| r.pid == who.to_string() && matches!(r.event, AgentEvent::AgentFinished { .. }))
            .expect("an agent_finished")
    };
    assert!(finished_at(copy) < finished_at(pid));
}

#[tokio::test]
async fn fork_without_the_capability_is_not_offered() {
    let loner = vec![
        ScriptedTurn::call("fork", json!({"prompt": "copy me"})),
        ScriptedTurn::text("alone").expect_tool_result("not_offered"),
    ];
    let host = host(FORKS, Scripts::new().with("loner", loner));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "loner", "try").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    let refused = refusals(&host, pid);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!((refused[0].0.as_str(), refused[0].1.as_str()), ("fork", "not_offered"));
    assert!(copies(&host).is_empty());
}

#[tokio::test]
async fn the_fork_transition_names_the_copy_spawned_one_level_deeper() {
    let lead = vec![
        ScriptedTurn::call("fork", json!({"prompt": "side"})),
        ScriptedTurn::call("wait_for_subagents", json!({})),
        ScriptedTurn::text("done"),
    ];
    let scripts = Scripts::new().with("lead:main", lead).with("lead:side", vec![ScriptedTurn::text("ok")]);
    let host = host(FORKS, scripts);
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "main").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);

    let events = events_of(&host, pid);
    let AgentEvent::AgentSpawned { depth: forker_depth, .. } = events[0].event else {
        panic!("{:?}", events[0])
    };
    let forker_id = events[0].agent_id.clone();
    let transitions: Vec<&EventRecord> =
        events.iter().filter(|r| matches!(r.event, AgentEvent::AgentTransition { .. })).collect();
    assert_eq!(transitions.len(), 1);
    let AgentEvent::AgentTransition { kind, to_agent_id, to_profile, turn, modules } = &transitions[0].event
    else {
        unreachable!()
    };
    assert_eq!(*kind, TransitionKind::Fork);
    assert_eq!(to_profile, "lead");
    assert_eq!(*turn, 1);
    assert!(modules.iter().any(|m| m.module == "history" && m.action == "copied"), "{modules:?}");

    let copies = copies(&host);
    assert_eq!(copies.len(), 1);
    let (copy, spawned) = &copies[0];
    assert_ne!(*copy, pid);
    assert_eq!(&spawned.agent_id, to_agent_id);
    assert_ne!(spawned.agent_id, forker_id);
    let AgentEvent::AgentSpawned { parent_agent_id, depth, profile, .. } = &spawned.event else {
        unreachable!()
    };
    assert_eq!(parent_agent_id.as_deref(), Some(forker_id.as_str()));
    assert_eq!(*depth, forker_depth + 1);
    assert_eq!(profile, "lead");
    // Every event of the copy is on its own stream under its own agent id.
    assert!(events_of(&host, *copy).iter().all(|r| &r.agent_id == to_agent_id));
}

#[tokio::test]
async fn the_program_library_is_cloned_across_a_fork() {
    let lead = vec![
        ScriptedTurn::call("save_program", json!({"description": "before", "source": "print('before')"})),
        ScriptedTurn::call("fork", json!({"prompt": "library"})),
        ScriptedTurn::call("save_program", json!({"description": "forker after", "source": "1"})),
        ScriptedTurn::call("wait_for_subagents", json!({})),
        ScriptedTurn::call("list_programs", json!({})).expect_tool_result("\"status\":\"exited\""),
        ScriptedTurn::text("done"),
    ];
    let copy_script = vec![
        ScriptedTurn::call("fetch_program", json!({"id": "000000"})),
        ScriptedTurn::call("save_program", json!({"description": "copy after", "source": "2"}))
            .expect_tool_result("print('before')"),
        ScriptedTurn::text("saved"),
    ];
    let scripts = Scripts::new().with("lead:main", lead).with("lead:library", copy_script);
    let (host, log) = relay::host(FORKS, scripts, Gates::new());
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "main").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    let copy = copies(&host)[0].0;
    assert_eq!(finished(&runtime, copy).await.status, Status::Exited);

    // The ids each library issued, as its save_program results read (a collected child's
    // objects go with it, so the results are read from what each brain was shown).
    let saved = |who: Pid| -> Vec<String> {
        let windows = log.windows_of(who);
        let last = windows.last().expect("a request");
        // A scripted brain numbers its calls by its own turns, so a copy's call ids repeat its
        // forker's: a result answers a call of the assistant message just before it.
        let mut saves: Vec<&str> = Vec::new();
        last.iter()
            .filter_map(|m| match m {
                Message::Assistant(_) => {
                    saves = m
                        .tool_calls()
                        .iter()
                        .filter(|c| c.name == "save_program")
                        .map(|c| c.id.as_str())
                        .collect();
                    None
                }
                Message::Tool { tool_call_id, text } if saves.contains(&tool_call_id.as_str()) => {
                    let value: serde_json::Value = serde_json::from_str(text).expect("a JSON result");
                    Some(value["id"].as_str().unwrap_or_else(|| panic!("{text}")).to_string())
                }
                _ => None,
            })
            .collect()
    };
    let forker = saved(pid);
    let copied = saved(copy);
    assert_eq!(forker.len(), 2, "{forker:?}");
    // The copy's window carries the forker's pre-fork save, then its own.
    assert_eq!(copied.len(), 2, "{copied:?}");
    assert_eq!(forker[0], "000000");
    assert_eq!(copied[0], forker[0]);
    assert_ne!(forker[1], copied[1], "neither issues an id the other holds");
    assert_ne!(copied[1], forker[0]);
    // The forker's library still holds the program saved before the fork next to its own.
    let library = module(&runtime, pid, "agent.library");
    let held: Vec<&str> =
        library["programs"].as_array().expect("programs").iter().filter_map(|p| p["id"].as_str()).collect();
    assert_eq!(held, [forker[0].as_str(), forker[1].as_str()], "{library}");
}
