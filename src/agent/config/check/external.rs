//! External profiles (`runtime: claude-code` or `codex`): the `cli` table, and the native
//! fields such a profile must not carry.

use super::super::external::{
    CLAUDE_PERMISSION_MODES, CODEX_APPROVAL_POLICIES, CODEX_SANDBOXES, CliSettings, EnvValue,
    ExternalProfile, ExternalRuntime, RawCli, RawEnvValue,
};
use super::super::ids::ProfileId;
use super::super::profile::{RawCompaction, RawProfile};
use super::brains::is_env_var_name;
use super::capabilities::check_capabilities;
use super::ids::Index;
use super::{Problems, listing};
use crate::agent::config::report::ProblemCode;
use crate::agent::limits::{
    CLI_ARGS_MAX, CLI_ENV_MAX, CLI_MAX_TURNS_MAX, CLI_TEXT_BYTES_MAX, CLI_TIMEOUT_MS_MAX, CLI_TOOLS_MAX,
    DESCRIPTION_BYTES_MAX,
};
use std::time::Duration;

/// Checks an external profile of `runtime` at `path`.
pub(super) fn check_external(
    raw: &RawProfile,
    runtime: ExternalRuntime,
    id: Option<&str>,
    path: &str,
    index: &Index<'_>,
    problems: &mut Problems,
) -> Option<ExternalProfile> {
    native_fields(raw, runtime, path, problems);
    if let Some(description) = &raw.description {
        problems.over_limit(
            &format!("{path}.description"),
            None,
            description.len(),
            DESCRIPTION_BYTES_MAX,
            "bytes",
        );
    }
    if let Some(uses) = raw.id.as_deref().and_then(|id| index.state_uses.get(id)) {
        let machines = listing(uses.iter().map(|u| u.machine.as_str()));
        problems.push(
            path,
            ProblemCode::ExternalInMachine,
            None,
            format!(
                "a machine runs this profile as a state ({machines}), but a {} session cannot move a \
                 machine; run a native profile in that state",
                runtime.product()
            ),
        );
    }
    let on = super::capabilities::Switches::of(&raw.capabilities);
    for (name, _) in [("exec", on.exec), ("fork", on.fork), ("transition_state", on.transition_state)]
        .iter()
        .filter(|(_, on)| *on)
    {
        problems.push(
            format!("{path}.capabilities.{name}"),
            ProblemCode::FieldNotForKind,
            None,
            format!(
                "a {} session cannot {name}: its conversation is the runtime's own; turn it off (a session \
                 starts children with `subagents` or `child_processes`)",
                runtime.product()
            ),
        );
    }
    let cli = check_cli(raw.cli.as_ref(), runtime, &format!("{path}.cli"), problems);
    let roster = super::profiles::roster(&raw.roster, path, index, problems);
    let capabilities =
        check_capabilities(&raw.capabilities, &format!("{path}.capabilities"), index, problems);
    let budget = super::budget::check_budget(raw.budget.as_ref(), path, problems);
    Some(ExternalProfile {
        id: ProfileId::parse(id?).ok()?,
        description: raw.description.clone(),
        cli: cli?,
        roster: roster?,
        capabilities: capabilities?,
        budget: budget?,
        restart: raw.restart.unwrap_or_default(),
        supervision: raw.supervision,
    })
}

/// The native fields, each refused on an external profile.
fn native_fields(raw: &RawProfile, runtime: ExternalRuntime, path: &str, problems: &mut Problems) {
    let present = [
        ("brain", raw.brain.is_some()),
        ("window_tokens", raw.window_tokens.is_some()),
        ("system_prompt", raw.system_prompt.is_some()),
        ("compaction", raw.compaction != RawCompaction::default()),
        ("guards", raw.guards.is_some()),
    ];
    for (field, _) in present.iter().filter(|(_, on)| *on) {
        problems.push(
            format!("{path}.{field}"),
            ProblemCode::FieldNotForKind,
            None,
            format!(
                "`{field}` belongs to native profiles; a `{runtime}` profile runs a {} session, which \
                 brings its own model and context; remove it (the session's model is `cli.model`)",
                runtime.product()
            ),
        );
    }
}

/// The `cli` table for `runtime`.
fn check_cli(
    raw: Option<&RawCli>,
    runtime: ExternalRuntime,
    path: &str,
    problems: &mut Problems,
) -> Option<CliSettings> {
    let before = problems.count();
    let mut settings = CliSettings::defaults(runtime);
    let Some(raw) = raw else { return Some(settings) };
    let claude_only: [(&str, bool); 4] = [
        ("permission_mode", raw.permission_mode.is_some()),
        ("allowed_tools", !raw.allowed_tools.is_empty()),
        ("disallowed_tools", !raw.disallowed_tools.is_empty()),
        ("max_turns", raw.max_turns.is_some()),
    ];
    let codex_only: [(&str, bool); 2] =
        [("sandbox", raw.sandbox.is_some()), ("approval_policy", raw.approval_policy.is_some())];
    let (foreign, owner) = match runtime {
        ExternalRuntime::ClaudeCode => (&codex_only[..], ExternalRuntime::Codex),
        ExternalRuntime::Codex => (&claude_only[..], ExternalRuntime::ClaudeCode),
    };
    for (field, _) in foreign.iter().filter(|(_, on)| *on) {
        problems.push(
            format!("{path}.{field}"),
            ProblemCode::FieldNotForKind,
            None,
            format!(
                "`{field}` is a {} setting; a `{runtime}` profile does not use it; remove it",
                owner.product()
            ),
        );
    }
    if let Some(program) = text(raw.program.as_deref(), &format!("{path}.program"), problems) {
        settings.program = program;
    }
    settings.model = text(raw.model.as_deref(), &format!("{path}.model"), problems);
    settings.permission_mode = one_of(
        raw.permission_mode.as_deref(),
        &CLAUDE_PERMISSION_MODES,
        &format!("{path}.permission_mode"),
        problems,
    );
    settings.sandbox = one_of(raw.sandbox.as_deref(), &CODEX_SANDBOXES, &format!("{path}.sandbox"), problems);
    settings.approval_policy = one_of(
        raw.approval_policy.as_deref(),
        &CODEX_APPROVAL_POLICIES,
        &format!("{path}.approval_policy"),
        problems,
    );
    settings.allowed_tools =
        texts(&raw.allowed_tools, CLI_TOOLS_MAX, &format!("{path}.allowed_tools"), problems);
    settings.disallowed_tools =
        texts(&raw.disallowed_tools, CLI_TOOLS_MAX, &format!("{path}.disallowed_tools"), problems);
    settings.extra_args = texts(&raw.extra_args, CLI_ARGS_MAX, &format!("{path}.extra_args"), problems);
    settings.max_turns = bounded(raw.max_turns, CLI_MAX_TURNS_MAX, &format!("{path}.max_turns"), problems)
        .and_then(|n| u32::try_from(n).ok());
    settings.timeout = bounded(raw.timeout_ms, CLI_TIMEOUT_MS_MAX, &format!("{path}.timeout_ms"), problems)
        .map(Duration::from_millis);
    settings.env = env(raw, &format!("{path}.env"), problems);
    (problems.count() == before).then_some(settings)
}

/// A non-empty text within [`CLI_TEXT_BYTES_MAX`], or a problem.
fn text(value: Option<&str>, path: &str, problems: &mut Problems) -> Option<String> {
    let value = value?;
    if value.trim().is_empty() {
        problems.push(
            path,
            ProblemCode::MissingField,
            None,
            "this is empty; give a value or leave the field out",
        );
        return None;
    }
    if problems.over_limit(path, None, value.len(), CLI_TEXT_BYTES_MAX, "bytes") {
        return None;
    }
    Some(value.to_owned())
}

fn texts(values: &[String], max: usize, path: &str, problems: &mut Problems) -> Vec<String> {
    problems.over_limit(path, None, values.len(), max, "entries");
    values.iter().enumerate().filter_map(|(i, v)| text(Some(v), &format!("{path}[{i}]"), problems)).collect()
}

fn one_of(value: Option<&str>, allowed: &[&str], path: &str, problems: &mut Problems) -> Option<String> {
    let value = value?;
    if allowed.contains(&value) {
        return Some(value.to_owned());
    }
    problems.push(
        path,
        ProblemCode::SettingOutOfRange,
        None,
        format!(
            "`{}` is not one of {}; pick one of them",
            super::ids::excerpt(value),
            listing(allowed.iter().copied())
        ),
    );
    None
}

fn bounded(value: Option<u64>, max: u64, path: &str, problems: &mut Problems) -> Option<u64> {
    match value? {
        0 => problems.push(path, ProblemCode::SettingOutOfRange, None, "0 allows nothing; give at least 1"),
        n if n > max => problems.push(
            path,
            ProblemCode::SettingOutOfRange,
            None,
            format!("{n} is over the limit of {max}; check for an extra digit"),
        ),
        n => return Some(n),
    }
    None
}

fn env(raw: &RawCli, path: &str, problems: &mut Problems) -> Vec<(String, EnvValue)> {
    problems.over_limit(path, None, raw.env.len(), CLI_ENV_MAX, "variables");
    let mut out = Vec::new();
    for (name, value) in &raw.env {
        let at = format!("{path}.{name}");
        if !is_env_var_name(name) {
            problems.push(
                &at,
                ProblemCode::InvalidEnvVarName,
                None,
                "a variable name is letters, digits and `_`, not starting with a digit",
            );
            continue;
        }
        let value = match value {
            RawEnvValue::Literal(text) => EnvValue::Literal(text.clone()),
            RawEnvValue::FromEnv { from_env } if is_env_var_name(from_env) => {
                EnvValue::FromEnv(from_env.clone())
            }
            RawEnvValue::FromEnv { .. } => {
                problems.push(
                    format!("{at}.from_env"),
                    ProblemCode::InvalidEnvVarName,
                    None,
                    "`from_env` is the NAME of a variable of agentvisor's environment (letters, digits and \
                     `_`), never the secret itself",
                );
                continue;
            }
        };
        out.push((name.clone(), value));
    }
    out
}
