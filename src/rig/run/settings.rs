//! A `claude-code` or `codex` seat's command settings, from the profile its member names: the
//! same `cli` table an external agent process runs with (`agent::config::CliSettings`), so a
//! model, permission mode or sandbox, tools, max turns, environment, timeout and extra
//! arguments are configured once, for seats and processes alike.

use super::hosts::RigHosts;
use crate::rig::Member;
use crate::rig::spec::profile_refusal;
use std::time::Duration;

/// What a seat's commands run with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct SeatCli {
    /// The program instead of the adapter's own, when the profile names another than the
    /// runtime's default.
    pub(super) program: Option<String>,
    /// The profile's flags (`CliSettings::flags`).
    pub(super) flags: Vec<String>,
    /// The profile's environment, `from_env` values read now.
    pub(super) env: Vec<(String, String)>,
    /// The profile's bound on one command, if it sets one.
    pub(super) timeout: Option<Duration>,
}

/// The settings of `member`'s profile: none for a member without `agent_ref` (the runtime's
/// defaults). A profile the configuration lacks, one of another runtime, or a `from_env`
/// variable that is not set is refused with a sentence naming what to fix.
pub(super) fn seat_cli(hosts: &RigHosts, member: &Member) -> Result<SeatCli, String> {
    let (Some(agent_ref), Some(runtime)) = (&member.agent_ref, member.runtime.external()) else {
        return Ok(SeatCli::default());
    };
    let host = hosts.get(agent_ref).ok_or_else(|| {
        format!("{}: no agent configuration {agent_ref:?} is loaded for this rig", member.runtime)
    })?;
    let Some(profile_id) = &member.profile else {
        return Err(format!(
            "{}: member {} names agent_ref {agent_ref:?} but no `profile`; name one of its {} profiles",
            member.runtime,
            member.id,
            runtime.as_str()
        ));
    };
    // The spec check refuses these first (`load_rig`); a rig built another way meets the same rule.
    if let Some((code, message)) = profile_refusal(host.config(), member.runtime, agent_ref, profile_id) {
        return Err(format!("{}: {message} ({code})", member.runtime));
    }
    let profile = host.config().external(profile_id).ok_or_else(|| {
        format!("{}: `{profile_id}` is not an external profile of {agent_ref}", member.runtime)
    })?;
    let cli = profile.cli();
    let env = cli.environment().map_err(|e| format!("{}: {e}", member.runtime))?;
    Ok(SeatCli {
        program: (cli.program() != runtime.default_program()).then(|| cli.program().to_owned()),
        flags: cli.flags(),
        env,
        timeout: cli.timeout(),
    })
}
