//! How each agent process came to be what it is, read from the agent event file: its
//! incarnations in order (a root, a spawn, a fork, an exec's successor, a machine state), the
//! module transfer of each exec, the machine states it moved through, and, for a fork, the
//! process and turn it was copied at. Read incrementally: each snapshot reads only the lines
//! appended since the previous one.

use agentvisor::agent::telemetry::{EVENTS_FILE, EventFileReader};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;

/// One incarnation of an agent process.
#[derive(Clone, Debug, Default)]
struct Incarnation {
    agent_id: String,
    profile: String,
    via: String,
    parent_agent_id: Option<String>,
    machine: Option<String>,
    state: Option<String>,
    /// What became of each module when this incarnation began by exec or machine move.
    modules: Value,
    /// The predecessor's turn at which it began (exec, fork, machine move).
    turn: Option<u64>,
    turns: u64,
    outcome: Option<Value>,
}

/// The history of one process.
#[derive(Clone, Debug, Default)]
pub(crate) struct History {
    incarnations: Vec<Incarnation>,
    /// Machine states entered, in order: `(machine, state)`.
    states: Vec<(String, String)>,
    /// For a fork: the forker's pid, incarnation and turn.
    forked_from: Option<(String, String, Option<u64>)>,
    /// Forks this process made: `(child pid, child agent id, turn)`.
    forks: Vec<(String, String, Option<u64>)>,
}

impl History {
    /// The history as the page reads it.
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "incarnations": self.incarnations.iter().map(|i| json!({
                "agent_id": i.agent_id,
                "profile": i.profile,
                "via": i.via,
                "parent_agent_id": i.parent_agent_id,
                "machine": i.machine,
                "state": i.state,
                "modules": i.modules,
                "turn": i.turn,
                "turns": i.turns,
                "outcome": i.outcome,
            })).collect::<Vec<_>>(),
            "states": self.states.iter().map(|(m, s)| json!({"machine": m, "state": s})).collect::<Vec<_>>(),
            "forked_from": self.forked_from.as_ref().map(|(pid, agent, turn)| json!({"pid": pid, "agent_id": agent, "turn": turn})),
            "forks": self.forks.iter().map(|(pid, agent, turn)| json!({"pid": pid, "agent_id": agent, "turn": turn})).collect::<Vec<_>>(),
        })
    }
}

/// Histories by pid (as a `Pid` prints).
pub(crate) type Histories = HashMap<String, History>;

/// Reads the event file of a state directory as it grows.
pub(crate) struct HistoryBook {
    reader: EventFileReader,
    histories: Histories,
    /// Which process each incarnation belongs to.
    pid_of: HashMap<String, String>,
    /// A transition announced by its predecessor, by the successor's agent id:
    /// `(kind, modules, turn, predecessor pid, predecessor agent id)`.
    announced: HashMap<String, (String, Value, Option<u64>, String, String)>,
}

impl HistoryBook {
    /// A book of `state`'s event file; nothing is read until [`HistoryBook::update`].
    pub(crate) fn new(state: &Path) -> HistoryBook {
        HistoryBook {
            reader: EventFileReader::new(state.join(EVENTS_FILE)),
            histories: Histories::new(),
            pid_of: HashMap::new(),
            announced: HashMap::new(),
        }
    }

    /// Reads what was appended since the last update; returns the new records as
    /// `{line, record}` objects (`line` from 1, the file's line number).
    pub(crate) fn update(&mut self) -> anyhow::Result<Vec<Value>> {
        if !self.reader.path().exists() {
            return Ok(Vec::new());
        }
        let mut records = Vec::new();
        for line in self.reader.read_new()? {
            let record: Value = serde_json::from_str(&line.text)?;
            self.apply(&record);
            records.push(json!({ "line": line.line, "record": record }));
        }
        self.fill_fork_children();
        Ok(records)
    }

    /// The histories read so far.
    pub(crate) fn histories(&self) -> &Histories {
        &self.histories
    }

    fn apply(&mut self, record: &Value) {
        let text = |v: &Value| v.as_str().map(str::to_string);
        let (Some(pid), Some(agent_id)) = (text(&record["pid"]), text(&record["agent_id"])) else { return };
        match record["type"].as_str().unwrap_or_default() {
            "agent_spawned" => {
                self.pid_of.insert(agent_id.clone(), pid.clone());
                let announced = self.announced.remove(&agent_id);
                let parent = text(&record["parent_agent_id"]);
                let via = text(&record["via"]).unwrap_or_default();
                if via == "fork" {
                    let forker = parent.as_ref().and_then(|p| self.pid_of.get(p)).cloned();
                    let turn = announced.as_ref().and_then(|a| a.2);
                    if let (Some(forker), Some(parent)) = (forker, parent.clone()) {
                        self.histories.entry(pid.clone()).or_default().forked_from =
                            Some((forker, parent, turn));
                    }
                }
                let incarnation = Incarnation {
                    agent_id,
                    profile: text(&record["profile"]).unwrap_or_default(),
                    via,
                    parent_agent_id: parent,
                    machine: text(&record["machine"]),
                    state: text(&record["state"]),
                    modules: announced.as_ref().map_or(Value::Null, |a| a.1.clone()),
                    turn: announced.as_ref().and_then(|a| a.2),
                    turns: 0,
                    outcome: None,
                };
                self.histories.entry(pid).or_default().incarnations.push(incarnation);
            }
            "agent_transition" => {
                let Some(to) = text(&record["to_agent_id"]) else { return };
                let kind = text(&record["kind"]).unwrap_or_default();
                let turn = record["turn"].as_u64();
                if kind == "fork" {
                    // The child's pid is known once its `agent_spawned` is read.
                    self.histories.entry(pid.clone()).or_default().forks.push((
                        String::new(),
                        to.clone(),
                        turn,
                    ));
                }
                self.announced.insert(to, (kind, record["modules"].clone(), turn, pid, agent_id));
            }
            "fsm_state" => {
                if let (Some(machine), Some(state)) = (text(&record["machine"]), text(&record["state"])) {
                    self.histories.entry(pid).or_default().states.push((machine, state));
                }
            }
            "turn_completed" => {
                if let Some(inc) = self.incarnation(&pid, &agent_id) {
                    inc.turns = inc.turns.max(record["turn"].as_u64().unwrap_or(0));
                }
            }
            "agent_finished" => {
                if let Some(inc) = self.incarnation(&pid, &agent_id) {
                    inc.outcome = Some(record["outcome"].clone());
                }
            }
            _ => {}
        }
    }

    fn incarnation(&mut self, pid: &str, agent_id: &str) -> Option<&mut Incarnation> {
        self.histories.get_mut(pid)?.incarnations.iter_mut().rev().find(|i| i.agent_id == agent_id)
    }

    /// Names the child pid of each fork whose child has been seen.
    fn fill_fork_children(&mut self) {
        for history in self.histories.values_mut() {
            for (child_pid, child_agent, _) in &mut history.forks {
                if child_pid.is_empty()
                    && let Some(pid) = self.pid_of.get(child_agent)
                {
                    child_pid.clone_from(pid);
                }
            }
        }
    }
}
