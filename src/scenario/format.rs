//! The scenario file format: parsing and static checks.
//!
//! See `docs/scenarios.md` for the format a person writes.

use super::error::ScenarioError;
use crate::actors::kernel::budget::Budget;
use crate::actors::kernel::status::SignalKind;
use crate::tools::BatchCall;
use crate::tools::args::CapabilityArg;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

/// Every step kind, in the order the documentation lists them.
pub const STEP_KINDS: [&str; 15] = [
    "spawn_root",
    "call",
    "batch",
    "await",
    "signal",
    "gate",
    "ungate",
    "revoke",
    "inspect",
    "wait_terminal",
    "restart",
    "expect",
    "spawn_agent",
    "agent_turn",
    "agent_events",
];

/// A parsed, statically checked scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// What it shows, for people.
    pub description: Option<String>,
    /// The steps, run in order.
    pub steps: Vec<Step>,
    /// The agent configuration (YAML or TOML) whose agents `spawn_agent` launches, as written
    /// (relative to the scenario file until [`Scenario::relative_to`] resolves it).
    pub agents: Option<PathBuf>,
}

/// One step.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Host action: launch a root process and bind its pid to a name.
    SpawnRoot(SpawnRootStep),
    /// A tool call as a named process.
    Call(CallStep),
    /// A tool batch as a named process.
    Batch(BatchStep),
    /// Prints the answer of a call that suspended.
    Await(String),
    /// Host action: signal any process.
    Signal(SignalStep),
    /// Host action: set the host-only resume gate.
    Gate(GateStep),
    /// Host action: clear the host gate.
    Ungate(PidStep),
    /// Host action: revoke a process's grants on a resource.
    Revoke(RevokeStep),
    /// Prints a process's committed row and grants.
    Inspect(PidStep),
    /// Host action: wait until a process is terminal.
    WaitTerminal(PidStep),
    /// Shuts the runtime down and reopens it on the same state directory.
    Restart,
    /// Checks an earlier step's output.
    Expect(ExpectStep),
    /// Host action: launch a root agent and bind its pid to a name.
    SpawnAgent(SpawnAgentStep),
    /// Plays the model for one turn of a named agent process.
    AgentTurn(AgentTurnStep),
    /// Prints a named agent process's telemetry.
    AgentEvents(AgentEventsStep),
}

impl Step {
    /// Whether it needs the scenario's agent configuration.
    pub fn is_agent_step(&self) -> bool {
        matches!(self, Step::SpawnAgent(_) | Step::AgentTurn(_) | Step::AgentEvents(_))
    }

    /// The step's kind, as written in the file.
    pub fn kind(&self) -> &'static str {
        match self {
            Step::SpawnRoot(_) => "spawn_root",
            Step::Call(_) => "call",
            Step::Batch(_) => "batch",
            Step::Await(_) => "await",
            Step::Signal(_) => "signal",
            Step::Gate(_) => "gate",
            Step::Ungate(_) => "ungate",
            Step::Revoke(_) => "revoke",
            Step::Inspect(_) => "inspect",
            Step::WaitTerminal(_) => "wait_terminal",
            Step::Restart => "restart",
            Step::Expect(_) => "expect",
            Step::SpawnAgent(_) => "spawn_agent",
            Step::AgentTurn(_) => "agent_turn",
            Step::AgentEvents(_) => "agent_events",
        }
    }
}

/// `{"spawn_root": {...}}`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpawnRootStep {
    /// The name its pid is bound to.
    pub name: String,
    /// Its goal.
    pub goal: String,
    /// Its image (default `puppet`).
    #[serde(default)]
    pub image: Option<String>,
    /// Its absolute working directory (default `/`).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Host-made grants, in the shape of `inherit_capabilities`.
    #[serde(default)]
    pub capabilities: Vec<CapabilityArg>,
    /// Its budget (default unlimited).
    #[serde(default)]
    pub budget: Option<Budget>,
    /// Its data-flow clearance (default: cleared for every label).
    #[serde(default)]
    pub clearance: Option<Vec<String>>,
    /// Labels the host puts on its goal, and so on its starting context (default none).
    #[serde(default)]
    pub goal_labels: Vec<String>,
}

/// `{"spawn_agent": {...}}`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpawnAgentStep {
    /// The name its pid is bound to.
    pub name: String,
    /// The profile or machine it starts as.
    pub agent: String,
    /// Its opening prompt.
    #[serde(default)]
    pub prompt: String,
}

/// `{"agent_turn": {...}}`: the model's message for one turn.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentTurnStep {
    /// The name of the agent process whose turn it is.
    #[serde(rename = "as")]
    pub caller: String,
    /// What the model says, if anything.
    #[serde(default)]
    pub text: Option<String>,
    /// The calls it makes, in order; none ends the session with `text` as the result.
    #[serde(default)]
    pub tool_calls: Vec<TurnCall>,
    /// New name → JSON pointer into the step's output (e.g. `/tool_results/0/result/id`).
    #[serde(default)]
    pub bind: BTreeMap<String, String>,
}

/// One tool call of an `agent_turn`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnCall {
    /// The tool.
    pub name: String,
    /// Its arguments; strings `"$name"` are replaced by bound values (`"$$x"` is `"$x"`).
    #[serde(default)]
    pub arguments: Value,
}

/// `{"agent_events": {...}}`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentEventsStep {
    /// The name of the agent process.
    #[serde(rename = "as")]
    pub caller: String,
}

/// `{"call": {...}}`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallStep {
    /// The name of the calling process.
    #[serde(rename = "as")]
    pub caller: String,
    /// The tool.
    pub tool: String,
    /// Its arguments; strings `"$name"` are replaced by bound values (`"$$x"` is `"$x"`).
    #[serde(default)]
    pub args: Value,
    /// New name → JSON pointer into the result.
    #[serde(default)]
    pub bind: BTreeMap<String, String>,
    /// The handle a suspended call is awaited by (default `call<i>`).
    #[serde(default)]
    pub handle: Option<String>,
}

/// `{"batch": {...}}`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchStep {
    /// The name of the calling process.
    #[serde(rename = "as")]
    pub caller: String,
    /// The calls, in order.
    pub calls: Vec<BatchCall>,
    /// New name → JSON pointer into the array of answers (e.g. `/0/pid`).
    #[serde(default)]
    pub bind: BTreeMap<String, String>,
    /// The handle of a wait that suspends mid-batch (default `batch<i>`).
    #[serde(default)]
    pub handle: Option<String>,
}

/// `{"signal": {...}}`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignalStep {
    /// The target's name.
    pub pid: String,
    /// The signal.
    pub signal: SignalKind,
    /// Why.
    #[serde(default)]
    pub reason: Option<String>,
}

/// `{"gate": {...}}`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateStep {
    /// The target's name.
    pub pid: String,
    /// Why the host holds the gate.
    pub reason: String,
}

/// A step that names one process: `ungate`, `inspect`, `wait_terminal`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PidStep {
    /// The process's name.
    pub pid: String,
}

/// `{"revoke": {...}}`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevokeStep {
    /// The holder's name.
    pub pid: String,
    /// Every live grant of the holder on exactly this resource is revoked (and everything
    /// derived from it).
    pub resource: String,
}

/// One check of an `expect` step.
#[derive(Clone, Debug, PartialEq)]
pub enum Check {
    /// The value at the pointer equals this (`"$name"` strings are replaced by bound values).
    Equals(Value),
    /// The value at the pointer is absent or differs from this (`"$name"` replaced too).
    NotEquals(Value),
    /// The pointer resolves (`true`) or does not (`false`).
    Exists(bool),
}

/// `{"expect": {...}}`, with its target step resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct ExpectStep {
    /// The step whose output is checked.
    pub step: usize,
    /// A JSON pointer into that output.
    pub pointer: String,
    /// Every check must hold.
    pub checks: Vec<Check>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectBody {
    #[serde(default)]
    step: Option<usize>,
    pointer: String,
    #[serde(default, deserialize_with = "present")]
    equals: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    not_equals: Option<Value>,
    #[serde(default)]
    exists: Option<bool>,
}

/// A present field is `Some`, even when it is `null`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AwaitBody {
    handle: String,
}

impl Scenario {
    /// Parses and checks a scenario. Every error names the step index and the field.
    pub fn from_json(text: &str) -> Result<Scenario, ScenarioError> {
        let value: Value = serde_json::from_str(text).map_err(|e| ScenarioError::Json {
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        Self::from_value(value)
    }

    /// Parses and checks a scenario already read as JSON.
    pub fn from_value(value: Value) -> Result<Scenario, ScenarioError> {
        let Value::Object(mut top) = value else {
            return Err(ScenarioError::Shape("a scenario is a JSON object {\"steps\": [...]}".into()));
        };
        if let Some(key) = top.keys().find(|k| !matches!(k.as_str(), "steps" | "description" | "agents")) {
            return Err(ScenarioError::Shape(format!(
                "unknown top-level field {key:?}; a scenario has `steps` and optionally `description` and `agents`"
            )));
        }
        let agents = match top.remove("agents") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if !s.is_empty() => Some(PathBuf::from(s)),
            Some(_) => {
                return Err(ScenarioError::Shape(
                    "`agents` must be the path of an agent configuration (.yaml, .yml or .toml)".into(),
                ));
            }
        };
        let description = match top.remove("description") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s),
            Some(_) => return Err(ScenarioError::Shape("`description` must be a string".into())),
        };
        let steps = match top.remove("steps") {
            Some(Value::Array(steps)) => steps,
            Some(_) => return Err(ScenarioError::Shape("`steps` must be an array".into())),
            None => return Err(ScenarioError::Shape("missing field `steps`".into())),
        };
        let mut parsed = Vec::with_capacity(steps.len());
        for (i, step) in steps.into_iter().enumerate() {
            parsed.push(parse_step(i, step, &parsed)?);
        }
        check_names(&parsed)?;
        if agents.is_none()
            && let Some(i) = parsed.iter().position(Step::is_agent_step)
        {
            return Err(invalid(
                i,
                parsed[i].kind(),
                ".",
                "agent steps need an agent configuration: add a top-level \"agents\": \"<config.yaml>\"",
            ));
        }
        Ok(Scenario { description, steps: parsed, agents })
    }

    /// This scenario with its `agents` path resolved against `dir` (the scenario file's
    /// directory); an absolute path is kept.
    pub fn relative_to(mut self, dir: &Path) -> Scenario {
        self.agents = self.agents.map(|p| if p.is_absolute() { p } else { dir.join(p) });
        self
    }

    /// Whether any step restarts the runtime (and so needs a state directory).
    pub fn restarts(&self) -> bool {
        self.steps.iter().any(|s| matches!(s, Step::Restart))
    }
}

fn invalid(step: usize, kind: &str, field: &str, message: impl Into<String>) -> ScenarioError {
    ScenarioError::InvalidStep { step, kind: kind.into(), field: field.into(), message: message.into() }
}

fn body<T: DeserializeOwned>(step: usize, kind: &str, value: Value) -> Result<T, ScenarioError> {
    serde_path_to_error::deserialize::<_, T>(value).map_err(|e| {
        let field = e.path().to_string();
        invalid(step, kind, &field, e.into_inner().to_string())
    })
}

fn parse_step(i: usize, value: Value, earlier: &[Step]) -> Result<Step, ScenarioError> {
    let Value::Object(map) = value else {
        return Err(invalid(i, "?", ".", "a step is an object with exactly one key, its kind"));
    };
    if map.len() != 1 {
        let keys: Vec<&String> = map.keys().collect();
        return Err(invalid(i, "?", ".", format!("a step has exactly one key, its kind; found {keys:?}")));
    }
    let Some((kind, value)) = map.into_iter().next() else {
        return Err(invalid(i, "?", ".", "a step has exactly one key, its kind"));
    };
    let k = kind.as_str();
    let step = match k {
        "spawn_root" => Step::SpawnRoot(body(i, k, value)?),
        "call" => Step::Call(body(i, k, value)?),
        "batch" => Step::Batch(body(i, k, value)?),
        "await" => match value {
            Value::String(handle) => Step::Await(handle),
            other => Step::Await(body::<AwaitBody>(i, k, other)?.handle),
        },
        "signal" => Step::Signal(body(i, k, value)?),
        "gate" => Step::Gate(body(i, k, value)?),
        "ungate" => Step::Ungate(body(i, k, value)?),
        "revoke" => Step::Revoke(body(i, k, value)?),
        "inspect" => Step::Inspect(body(i, k, value)?),
        "wait_terminal" => Step::WaitTerminal(body(i, k, value)?),
        "restart" => match value {
            Value::Null => Step::Restart,
            Value::Object(m) if m.is_empty() => Step::Restart,
            _ => return Err(invalid(i, k, ".", "restart takes no fields: write {\"restart\": {}}")),
        },
        "expect" => Step::Expect(parse_expect(i, value, earlier)?),
        "spawn_agent" => Step::SpawnAgent(body(i, k, value)?),
        "agent_turn" => Step::AgentTurn(body(i, k, value)?),
        "agent_events" => Step::AgentEvents(body(i, k, value)?),
        _ => return Err(ScenarioError::UnknownStep { step: i, kind }),
    };
    Ok(step)
}

fn parse_expect(i: usize, value: Value, earlier: &[Step]) -> Result<ExpectStep, ScenarioError> {
    let b: ExpectBody = body(i, "expect", value)?;
    let step = match b.step {
        Some(s) if s >= i => {
            return Err(invalid(i, "expect", "step", format!("step {s} is not an earlier step")));
        }
        Some(s) => s,
        None => earlier
            .iter()
            .rposition(|s| !matches!(s, Step::Expect(_)))
            .ok_or_else(|| invalid(i, "expect", "step", "no earlier step to check"))?,
    };
    if !(b.pointer.is_empty() || b.pointer.starts_with('/')) {
        return Err(invalid(i, "expect", "pointer", "a JSON pointer is empty or starts with `/`"));
    }
    let mut checks = Vec::new();
    checks.extend(b.equals.map(Check::Equals));
    checks.extend(b.not_equals.map(Check::NotEquals));
    checks.extend(b.exists.map(Check::Exists));
    if checks.is_empty() {
        return Err(invalid(i, "expect", ".", "give at least one of `equals`, `not_equals`, `exists`"));
    }
    Ok(ExpectStep { step, pointer: b.pointer, checks })
}

/// A name used where a process is expected; a leading `$` is allowed.
pub(crate) fn name_ref(text: &str) -> &str {
    text.strip_prefix('$').unwrap_or(text)
}

/// Every `$name` reference in a JSON value (`$$…` is an escaped literal).
pub(crate) fn refs_in(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) if s.starts_with('$') && !s.starts_with("$$") => out.push(s[1..].to_string()),
        Value::Array(items) => items.iter().for_each(|v| refs_in(v, out)),
        Value::Object(map) => map.values().for_each(|v| refs_in(v, out)),
        _ => {}
    }
}

fn check_new_name(i: usize, kind: &str, field: &str, name: &str) -> Result<(), ScenarioError> {
    if name.is_empty() || name.starts_with('$') {
        return Err(invalid(
            i,
            kind,
            field,
            format!("{name:?} is not a name: names are non-empty and do not start with `$`"),
        ));
    }
    Ok(())
}

fn check_bind(i: usize, kind: &str, bind: &BTreeMap<String, String>) -> Result<(), ScenarioError> {
    for (name, pointer) in bind {
        check_new_name(i, kind, &format!("bind.{name}"), name)?;
        if !(pointer.is_empty() || pointer.starts_with('/')) {
            return Err(invalid(
                i,
                kind,
                &format!("bind.{name}"),
                "a JSON pointer is empty or starts with `/`",
            ));
        }
    }
    Ok(())
}

/// The default handle of a suspended call or batch.
fn default_handle(step: &Step, i: usize) -> String {
    match step {
        Step::Batch(_) => format!("batch{i}"),
        _ => format!("call{i}"),
    }
}

/// Every name and handle is bound by an earlier step before it is used.
fn check_names(steps: &[Step]) -> Result<(), ScenarioError> {
    let mut names: HashSet<String> = HashSet::new();
    let mut handles: HashSet<String> = HashSet::new();
    let unknown = |i: usize, name: &str| ScenarioError::UnknownName {
        step: i,
        name: name.to_string(),
        detail: ": no earlier spawn_root or spawn_agent `name` or `bind` introduces it".into(),
    };
    for (i, step) in steps.iter().enumerate() {
        let mut used: Vec<String> = Vec::new();
        match step {
            Step::SpawnRoot(s) => check_new_name(i, step.kind(), "name", &s.name)?,
            Step::Call(s) => {
                used.push(name_ref(&s.caller).to_string());
                refs_in(&s.args, &mut used);
                check_bind(i, step.kind(), &s.bind)?;
            }
            Step::Batch(s) => {
                used.push(name_ref(&s.caller).to_string());
                s.calls.iter().for_each(|c| refs_in(&c.args, &mut used));
                check_bind(i, step.kind(), &s.bind)?;
            }
            Step::Signal(s) => used.push(name_ref(&s.pid).to_string()),
            Step::Gate(s) => used.push(name_ref(&s.pid).to_string()),
            Step::Ungate(s) | Step::Inspect(s) | Step::WaitTerminal(s) => {
                used.push(name_ref(&s.pid).to_string())
            }
            Step::Revoke(s) => used.push(name_ref(&s.pid).to_string()),
            Step::Await(h) => {
                if !handles.contains(h) {
                    return Err(ScenarioError::UnknownHandle {
                        step: i,
                        handle: h.clone(),
                        detail: ": no earlier call or batch has it (the default is call<i> or batch<i>)"
                            .into(),
                    });
                }
            }
            Step::Expect(e) => e.checks.iter().for_each(|c| match c {
                Check::Equals(v) | Check::NotEquals(v) => refs_in(v, &mut used),
                Check::Exists(_) => {}
            }),
            Step::Restart => {}
            Step::SpawnAgent(s) => check_new_name(i, step.kind(), "name", &s.name)?,
            Step::AgentTurn(s) => {
                used.push(name_ref(&s.caller).to_string());
                s.tool_calls.iter().for_each(|c| refs_in(&c.arguments, &mut used));
                check_bind(i, step.kind(), &s.bind)?;
            }
            Step::AgentEvents(s) => used.push(name_ref(&s.caller).to_string()),
        }
        if let Some(name) = used.iter().find(|n| !names.contains(n.as_str())) {
            return Err(unknown(i, name));
        }
        match step {
            Step::SpawnRoot(s) => {
                names.insert(s.name.clone());
            }
            Step::SpawnAgent(s) => {
                names.insert(s.name.clone());
            }
            Step::AgentTurn(s) => names.extend(s.bind.keys().cloned()),
            Step::Call(CallStep { bind, handle, .. }) | Step::Batch(BatchStep { bind, handle, .. }) => {
                names.extend(bind.keys().cloned());
                let handle = handle.clone().unwrap_or_else(|| default_handle(step, i));
                check_new_name(i, step.kind(), "handle", &handle)?;
                handles.insert(handle);
            }
            _ => {}
        }
    }
    Ok(())
}

/// Replaces `"$name"` strings by bound values; `"$$x"` becomes `"$x"`. `lookup` answers a
/// name's value or the error to report.
pub(crate) fn substitute<E>(
    value: &Value,
    lookup: &mut dyn FnMut(&str) -> Result<Value, E>,
) -> Result<Value, E> {
    Ok(match value {
        Value::String(s) if s.starts_with("$$") => Value::String(s[1..].to_string()),
        Value::String(s) if s.starts_with('$') => lookup(&s[1..])?,
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| substitute(v, lookup)).collect::<Result<Vec<_>, E>>()?)
        }
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                out.insert(k.clone(), substitute(v, lookup)?);
            }
            Value::Object(out)
        }
        other => other.clone(),
    })
}
