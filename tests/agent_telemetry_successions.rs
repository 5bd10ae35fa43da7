//! Where a succession's `agent_transition` sits: on the outgoing incarnation's stream, right
//! before the new incarnation's `agent_spawned`, with no other record between them, for exec,
//! one fork, two forks in one turn, and a fork and an exec in one turn.

mod agent_support;

use agent_support::config::TEAM;
use agent_support::*;
use agentvisor::agent::brain::ScriptedTurn;
use agentvisor::agent::run::AgentHost;
use agentvisor::agent::telemetry::{AgentEvent, EventRecord};
use serde_json::json;

/// A record as the assertions read it: the stream it is on (by the incarnation's profile and
/// place, see [`Names`]) and its type, with a transition's kind.
fn label(names: &Names, record: &EventRecord) -> String {
    let who = names.of(&record.agent_id);
    match &record.event {
        AgentEvent::AgentTransition { kind, to_agent_id, .. } => {
            format!("{who} transition {} -> {}", kind.as_str(), names.of(to_agent_id))
        }
        event => format!("{who} {}", event.type_name()),
    }
}

/// Short names for agent ids, in the order their `agent_spawned` records came: `lead`,
/// `lead.fork1`, `helper`, … (the profile, and `.forkN` for the Nth copy).
struct Names(Vec<(String, String)>);

impl Names {
    fn new(records: &[std::sync::Arc<EventRecord>]) -> Names {
        let mut names = Vec::new();
        let mut forks = 0;
        for record in records {
            if let AgentEvent::AgentSpawned { profile, via, .. } = &record.event {
                let name = if via.as_str() == "fork" {
                    forks += 1;
                    format!("{profile}.fork{forks}")
                } else {
                    profile.clone()
                };
                names.push((record.agent_id.clone(), name));
            }
        }
        Names(names)
    }

    fn of(&self, agent_id: &str) -> String {
        self.0.iter().find(|(id, _)| id == agent_id).map_or_else(|| agent_id.to_string(), |(_, n)| n.clone())
    }
}

/// Every record from the root process's first `turn_completed` on, labelled, up to the first
/// record of an incarnation that was not yet spawned when the root's last succession was made
/// (so the copies' own turns, which run in parallel, are left out).
fn around_successions(host: &AgentHost) -> Vec<String> {
    let records = host.telemetry().records();
    let names = Names::new(&records);
    let first_turn = records
        .iter()
        .position(|r| matches!(r.event, AgentEvent::TurnCompleted { .. }))
        .expect("a turn was taken");
    let last_spawn = records
        .iter()
        .rposition(|r| matches!(r.event, AgentEvent::AgentSpawned { .. }))
        .expect("an incarnation was spawned");
    let run = &records[first_turn..=last_spawn];
    for pair in run.windows(2) {
        assert_eq!(pair[1].seq, pair[0].seq + 1, "records are consecutive");
    }
    run.iter().map(|r| label(&names, r)).collect()
}

/// Asserts that the records around the successions are `expected`, and that every transition
/// is right before its spawn.
fn assert_successions(host: &AgentHost, expected: &[&str]) {
    assert_eq!(around_successions(host), expected);
    every_transition_right_before_its_spawn(host);
}

/// Asserts that every `agent_transition` of the host is followed, as the very next record, by
/// the `agent_spawned` of the incarnation it names, on the outgoing stream and the new one.
fn every_transition_right_before_its_spawn(host: &AgentHost) {
    let records = host.telemetry().records();
    for (i, record) in records.iter().enumerate() {
        if let AgentEvent::AgentTransition { to_agent_id, .. } = &record.event {
            let next = records.get(i + 1).expect("a record after the transition");
            assert_eq!(next.seq, record.seq + 1);
            assert!(
                matches!(next.event, AgentEvent::AgentSpawned { .. }) && next.agent_id == *to_agent_id,
                "after {record:?} came {next:?}"
            );
        }
    }
}

#[tokio::test]
async fn an_exec_transition_comes_right_before_the_successor_spawns() {
    let lead = vec![ScriptedTurn::call("exec", json!({"agent": "helper", "prompt": "go on"}))];
    let helper = vec![ScriptedTurn::text("helped")];
    let host = host(TEAM, Scripts::new().with("lead", lead).with("helper", helper));
    run_to_exit(&host, "lead", "start").await;

    assert_successions(
        &host,
        &["lead turn_completed", "lead transition exec -> helper", "helper agent_spawned"],
    );
}

#[tokio::test]
async fn a_fork_transition_comes_right_before_the_copy_spawns() {
    let lead = vec![
        ScriptedTurn::call("fork", json!({"prompt": "side"})),
        ScriptedTurn::call("wait_for_subagents", json!({})),
        ScriptedTurn::text("collected"),
    ];
    let scripts =
        Scripts::new().with("lead:start", lead).with("lead:side", vec![ScriptedTurn::text("side done")]);
    let host = host(TEAM, scripts);
    run_to_exit(&host, "lead", "start").await;

    assert_successions(
        &host,
        &["lead turn_completed", "lead transition fork -> lead.fork1", "lead.fork1 agent_spawned"],
    );
}

#[tokio::test]
async fn two_forks_in_one_turn_each_transition_right_before_its_copy() {
    let host = host(TEAM, two_forks(Vec::new()));
    run_to_exit(&host, "lead", "start").await;

    assert_successions(
        &host,
        &[
            "lead turn_completed",
            "lead transition fork -> lead.fork1",
            "lead.fork1 agent_spawned",
            "lead transition fork -> lead.fork2",
            "lead.fork2 agent_spawned",
        ],
    );
}

#[tokio::test]
async fn a_fork_and_an_exec_in_one_turn_each_transition_right_before_its_spawn() {
    let lead = vec![
        ScriptedTurn::call("fork", json!({"prompt": "side"}))
            .with_call("exec", json!({"agent": "helper", "prompt": "go on"})),
    ];
    let scripts = Scripts::new()
        .with("lead:start", lead)
        .with("lead:side", vec![ScriptedTurn::text("side done")])
        .with(
            "helper",
            vec![ScriptedTurn::call("wait_for_subagents", json!({})), ScriptedTurn::text("helped")],
        );
    let host = host(TEAM, scripts);
    run_to_exit(&host, "lead", "start").await;

    assert_successions(
        &host,
        &[
            "lead turn_completed",
            "lead transition fork -> lead.fork1",
            "lead.fork1 agent_spawned",
            "lead transition exec -> helper",
            "helper agent_spawned",
        ],
    );
}

#[tokio::test]
async fn a_machine_transition_comes_right_before_the_next_state_spawns() {
    let lead = vec![ScriptedTurn::call("exec", json!({"agent": "review"}))];
    let writer = vec![ScriptedTurn::call("transition_state", json!({"state": "check"}))];
    let checker = vec![ScriptedTurn::text("checked")];
    let scripts = Scripts::new().with("lead", lead).with("writer", writer).with("checker", checker);
    let host = host(TEAM, scripts);
    run_to_exit(&host, "lead", "start").await;

    assert_successions(
        &host,
        &[
            "lead turn_completed",
            "lead transition exec -> writer",
            "writer agent_spawned",
            "writer fsm_state",
            "writer turn_completed",
            "writer transition fsm -> checker",
            "checker agent_spawned",
        ],
    );
}
