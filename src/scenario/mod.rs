//! The scenario runner: drive a runtime step by step from a JSON file, one JSON line per
//! step.
//!
//! A scenario (`{"steps": [...]}`, documented in `docs/scenarios.md`) launches roots as the
//! host, makes tool calls *as* named processes (puppets, whose programs do nothing by
//! themselves), signals, gates and revokes as the host, inspects rows, restarts the runtime
//! on the same state directory, and checks earlier outputs with `expect`. Each step prints
//! exactly one line: `{"step", "kind", "result"}`, `{"step", "kind", "error": {code,
//! message}}`, or, for a call that suspended its caller, `{"step", "kind", "suspended": true,
//! "handle"}` whose answer a later `await` prints.
//!
//! Nothing here sleeps: every wait for an asynchronous consequence (a launched child
//! starting, a parent noticing a child's end, a caller suspending) is a telemetry
//! subscription plus a check of committed rows (see `settle`).
//!
//! Errors: a tool refusal or a failed host action is the step's printed `error`, and the run
//! goes on. A malformed file, a name or handle no step bound, a restart without a state
//! directory, or an output failure is a [`ScenarioError`] that stops the run.

mod agents;
mod calls;
mod error;
mod format;
mod host;
mod runner;
mod settle;

pub use error::ScenarioError;
pub use format::{
    AgentEventsStep, AgentTurnStep, BatchStep, CallStep, Check, ExpectStep, GateStep, PidStep, RevokeStep,
    STEP_KINDS, Scenario, SignalStep, SpawnAgentStep, SpawnRootStep, Step, TurnCall,
};
pub use runner::ScenarioSummary;

use runner::Runner;
use std::path::Path;

/// Runs a scenario, writing one JSON line per step to `out`.
///
/// With `state_dir` the runtime is opened on that directory (which must not be owned by
/// another live runtime) and `restart` steps reopen it; without, it runs in memory and a
/// `restart` step is an error. The runtime is shut down at the end, after every in-flight
/// call has let go of it, whether the run succeeded or not.
///
/// With an `agents` configuration (resolve it first with [`Scenario::relative_to`]), agent
/// processes run that configuration with brains the scenario drives (`agent_turn`).
///
/// A failed expectation is not an error: it is counted in the summary (see
/// [`ScenarioSummary::passed`]).
///
/// Cancel safety: dropping the future mid-run leaves the runtime without a clean shutdown
/// (an on-disk state directory is recovered by the next open, as after a crash).
///
/// With a state directory, `store_url` names a PostgreSQL database to keep the state in
/// instead of the directory's SQLite files (see [`RuntimeOptions::store_url`]).
///
/// [`RuntimeOptions::store_url`]: crate::actors::runtime::RuntimeOptions::store_url
pub async fn run_scenario(
    scenario: &Scenario,
    state_dir: Option<&Path>,
    store_url: Option<&str>,
    out: &mut dyn std::io::Write,
) -> Result<ScenarioSummary, ScenarioError> {
    let mut runner = Runner::open(state_dir, store_url, scenario.agents.as_deref(), out).await?;
    let ran = runner.run(scenario).await;
    let closed = runner.close(scenario.steps.len()).await;
    ran?;
    closed?;
    Ok(runner.summary.clone())
}
