//! A profile's `budget` and `guards`: every limit at least 1, money a decimal dollar string.

use super::super::budget::{AgentBudget, Guards, RawBudget, RawGuards};
use super::Problems;
use crate::agent::config::report::ProblemCode;
use crate::agent::limits::GUARD_MAX;
use crate::agent::money::parse_usd_micros;

/// `path` is the profile's (`profiles.lead`), or empty for the top-level `default_budget`.
pub(super) fn check_budget(
    raw: Option<&RawBudget>,
    path: &str,
    problems: &mut Problems,
) -> Option<AgentBudget> {
    let Some(raw) = raw else { return Some(AgentBudget::NONE) };
    let table = if path.is_empty() { "default_budget".to_string() } else { format!("{path}.budget") };
    let before = problems.count();
    let at_least_one = |field: &str, value: Option<u64>, problems: &mut Problems| {
        if value == Some(0) {
            problems.push(
                format!("{table}.{field}"),
                ProblemCode::BudgetOutOfRange,
                None,
                format!(
                    "`{field}: 0` would stop the agent before it starts; give at least 1, or leave it out"
                ),
            );
        }
        value
    };
    let mut budget = AgentBudget::NONE;
    budget.kernel.tokens = at_least_one("tokens", raw.tokens, problems);
    budget.kernel.tool_calls = at_least_one("tool_calls", raw.tool_calls, problems);
    budget.kernel.wall_time_ms = at_least_one("wall_time_ms", raw.wall_time_ms, problems);
    budget.kernel.live_children = raw.live_children;
    budget.turns = at_least_one("turns", raw.turns, problems);
    if let Some(cost) = &raw.cost_usd {
        match parse_usd_micros(cost) {
            Ok(0) => problems.push(
                format!("{table}.cost_usd"),
                ProblemCode::BudgetOutOfRange,
                None,
                "a cost of zero would stop the agent at its first turn; give an amount such as \"0.50\"",
            ),
            Ok(micros) => budget.kernel.cost_micros = Some(micros),
            Err(e) => {
                problems.push(format!("{table}.cost_usd"), ProblemCode::InvalidMoney, None, e.to_string())
            }
        }
    }
    (problems.count() == before).then_some(budget)
}

pub(super) fn check_guards(raw: Option<&RawGuards>, path: &str, problems: &mut Problems) -> Option<Guards> {
    let mut guards = Guards::default();
    let Some(raw) = raw else { return Some(guards) };
    let before = problems.count();
    for (field, value, slot) in [
        ("malformed_turns", raw.malformed_turns, &mut guards.malformed_turns),
        ("repeated_calls", raw.repeated_calls, &mut guards.repeated_calls),
    ] {
        let Some(v) = value else { continue };
        match u32::try_from(v) {
            Ok(v) if (1..=GUARD_MAX).contains(&v) => *slot = v,
            _ => problems.push(
                format!("{path}.guards.{field}"),
                ProblemCode::BudgetOutOfRange,
                None,
                format!("`{field}` is {v}, outside 1 to {GUARD_MAX}; write a value in that range"),
            ),
        }
    }
    (problems.count() == before).then_some(guards)
}
