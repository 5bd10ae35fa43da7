//! The launch check: one pass over a whole configuration that names every value it cannot
//! honour as written and every required value left out, each with the capability that comes
//! up short. Nothing launches until it passes.
//!
//! The pass goes ids first (every section's, so that references can be resolved), then
//! brains, profiles and machines, each in file order. A reference to an id that is defined
//! but used twice is not reported again as unknown: one cause, one problem.

mod brain_settings;
mod brains;
mod budget;
mod capabilities;
mod external;
mod ids;
mod machines;
mod profiles;
mod telemetry;

use super::capability::Capability;
use super::checked::CheckedConfig;
use super::parse::AgentConfig;
use super::report::{LaunchReport, Problem, ProblemCode};
use crate::agent::limits::{BRAINS_MAX, MACHINES_MAX, PROFILES_MAX};
use ids::Index;

/// Checks a whole configuration: a [`CheckedConfig`] if every value can be honoured as
/// written, or a [`LaunchReport`] naming every problem found.
pub fn check(raw: &AgentConfig) -> Result<CheckedConfig, LaunchReport> {
    let mut problems = Problems::default();
    section_sizes(raw, &mut problems);
    let index = Index::build(raw, &mut problems);
    let brains = brains::check_brains(&raw.brains, &index, &mut problems);
    let (profiles, externals) = profiles::check_profiles(&raw.profiles, &index, &mut problems);
    let machines = machines::check_machines(&raw.machines, &index, &mut problems);
    let default_budget = match &raw.default_budget {
        None => Some(crate::agent::limits::DEFAULT_ROOT_BUDGET),
        Some(budget) => budget::check_budget(Some(budget), "", &mut problems),
    };
    let telemetry = telemetry::check_telemetry(raw.telemetry.as_ref(), &mut problems);
    if !problems.0.is_empty() {
        return Err(LaunchReport::new(problems.0));
    }
    let default_budget = default_budget.expect("a budget without problems was checked");
    let telemetry = telemetry.expect("a telemetry section without problems was checked");
    let config = CheckedConfig::new(brains, profiles, externals, machines, default_budget, telemetry);
    debug_assert_eq!(config.invariant_violation(), None, "the launch check let a broken config through");
    Ok(config)
}

fn section_sizes(raw: &AgentConfig, problems: &mut Problems) {
    if raw.profiles.is_empty() {
        problems.push(
            "profiles",
            ProblemCode::NoProfiles,
            None,
            "the configuration declares no profile, so there is nothing to launch; add one under `profiles`",
        );
    }
    for (section, len, max) in [
        ("brains", raw.brains.len(), BRAINS_MAX),
        ("profiles", raw.profiles.len(), PROFILES_MAX),
        ("machines", raw.machines.len(), MACHINES_MAX),
    ] {
        problems.over_limit(section, None, len, max, "entries");
    }
}

/// The problems found so far.
#[derive(Default)]
pub(super) struct Problems(Vec<Problem>);

impl Problems {
    /// Records one problem.
    pub(super) fn push(
        &mut self,
        path: impl Into<String>,
        code: ProblemCode,
        capability: Option<Capability>,
        message: impl Into<String>,
    ) {
        self.0.push(Problem { path: path.into(), capability, code, message: message.into() });
    }

    /// Records `limit_exceeded` if `len` is over `max`; true if it was.
    pub(super) fn over_limit(
        &mut self,
        path: &str,
        capability: Option<Capability>,
        len: usize,
        max: usize,
        unit: &str,
    ) -> bool {
        if len <= max {
            return false;
        }
        self.push(
            path,
            ProblemCode::LimitExceeded,
            capability,
            format!("this is {len} {unit}, over the limit of {max}; shorten it"),
        );
        true
    }

    /// How many problems have been recorded: an entry compares it before and after its checks
    /// to know whether it came through clean.
    pub(super) fn count(&self) -> usize {
        self.0.len()
    }
}

/// `` `a`, `b`, `c` ``, or `none` for no ids: the defined ids a refusal lists.
pub(super) fn listing<'a>(ids: impl IntoIterator<Item = &'a str>) -> String {
    let quoted: Vec<String> = ids.into_iter().map(|id| format!("`{id}`")).collect();
    if quoted.is_empty() { "none".to_owned() } else { quoted.join(", ") }
}

/// A required text: `None` (and a problem) when left out or blank.
pub(super) fn required_text<'a>(
    value: Option<&'a str>,
    path: &str,
    capability: Option<Capability>,
    what_to_do: &str,
    problems: &mut Problems,
) -> Option<&'a str> {
    match value {
        Some(text) if !text.trim().is_empty() => Some(text),
        _ => {
            problems.push(path, ProblemCode::MissingField, capability, what_to_do);
            None
        }
    }
}
