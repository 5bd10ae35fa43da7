//! The `profiles` section: brain, window, prompt, roster and compaction, and the rules that tie
//! capabilities to the roster and to machine states (the seed's three launch refusals among
//! them).

use super::super::capability::Capability;
use super::super::external::ExternalProfile;
use super::super::ids::{BrainId, MachineId, ProfileId, Target};
use super::super::profile::{
    Compaction, CompactionKind, CompactionStrategy, Profile, RawCompaction, RawProfile,
};
use super::super::prompt::{DEFAULT_SYSTEM_PROMPT, PromptTemplate};
use super::capabilities::{Switches, check_capabilities};
use super::ids::{Index, StateUse};
use super::{Problems, listing};
use crate::agent::config::report::ProblemCode;
use crate::agent::limits::{
    COMPACTION_TRIGGER_PERCENT_DEFAULT, DESCRIPTION_BYTES_MAX, ROSTER_MAX, SYSTEM_PROMPT_BYTES_MAX,
    WINDOW_TOKENS_MAX,
};
use std::collections::BTreeSet;
use std::num::NonZeroU32;

/// The `profiles` section: the native profiles and the external ones.
pub(super) fn check_profiles(
    raw: &[RawProfile],
    index: &Index<'_>,
    problems: &mut Problems,
) -> (Vec<Profile>, Vec<ExternalProfile>) {
    let mut native = Vec::new();
    let mut external = Vec::new();
    for (profile, entry) in raw.iter().zip(&index.profiles) {
        let before = problems.count();
        let (id, path) = (entry.id.as_deref(), entry.path.as_str());
        match profile.runtime.unwrap_or_default().external() {
            Some(runtime) => {
                let checked = super::external::check_external(profile, runtime, id, path, index, problems);
                if problems.count() == before {
                    external.extend(checked);
                }
            }
            None => {
                if profile.cli.is_some() {
                    problems.push(
                        format!("{path}.cli"),
                        ProblemCode::FieldNotForKind,
                        None,
                        "`cli` belongs to external profiles; set `runtime: claude-code` or `runtime: codex`, \
                         or remove it",
                    );
                }
                let checked = check_profile(profile, id, path, index, problems);
                if problems.count() == before {
                    native.extend(checked);
                }
            }
        }
    }
    (native, external)
}

fn check_profile(
    raw: &RawProfile,
    id: Option<&str>,
    path: &str,
    index: &Index<'_>,
    problems: &mut Problems,
) -> Option<Profile> {
    let uses: &[StateUse] =
        raw.id.as_deref().and_then(|id| index.state_uses.get(id)).map_or(&[], Vec::as_slice);
    if let Some(description) = &raw.description {
        problems.over_limit(
            &format!("{path}.description"),
            None,
            description.len(),
            DESCRIPTION_BYTES_MAX,
            "bytes",
        );
    }
    let brain = brain_ref(raw.brain.as_deref(), &format!("{path}.brain"), index, problems);
    let window_tokens = window(raw.window_tokens, path, problems);
    let system_prompt = system_prompt(raw.system_prompt.as_deref(), path, problems);
    let roster = roster(&raw.roster, path, index, problems);
    let capabilities =
        check_capabilities(&raw.capabilities, &format!("{path}.capabilities"), index, problems);
    capability_rules(raw, path, uses, index, problems);
    let compaction = compaction(&raw.compaction, brain.as_ref(), path, index, problems);
    let budget = super::budget::check_budget(raw.budget.as_ref(), path, problems);
    let guards = super::budget::check_guards(raw.guards.as_ref(), path, problems);
    Some(Profile {
        id: ProfileId::parse(id?).expect("the index validated this id"),
        description: raw.description.clone(),
        brain: brain?,
        window_tokens: window_tokens?,
        system_prompt: system_prompt?,
        roster: roster?,
        capabilities: capabilities?,
        compaction: compaction?,
        budget: budget?,
        guards: guards?,
        restart: raw.restart.unwrap_or_default(),
        supervision: raw.supervision,
    })
}

/// A reference to a declared brain, at `path`.
fn brain_ref(value: Option<&str>, path: &str, index: &Index<'_>, problems: &mut Problems) -> Option<BrainId> {
    let defined = listing(index.brain_ids.iter().copied());
    let Some(id) = value else {
        problems.push(
            path,
            ProblemCode::MissingField,
            None,
            format!("this profile has no `brain`; name one of the declared brains ({defined})"),
        );
        return None;
    };
    if !index.brain_ids.contains(id) {
        problems.push(
            path,
            ProblemCode::UnknownBrain,
            None,
            format!(
                "no brain has the id `{}`; name one of the declared brains ({defined}), or declare it under \
                 `brains`",
                super::ids::excerpt(id)
            ),
        );
        return None;
    }
    // Unique too, or the index reported the duplicate and this profile never becomes a
    // checked one.
    BrainId::parse(id).ok()
}

fn window(value: Option<u64>, path: &str, problems: &mut Problems) -> Option<NonZeroU32> {
    let path = format!("{path}.window_tokens");
    match value {
        None => problems.push(
            path,
            ProblemCode::MissingField,
            None,
            "this profile has no `window_tokens`; give the window limit of its model, in tokens \
             (e.g. 128000)",
        ),
        Some(0) => problems.push(
            path,
            ProblemCode::WindowZero,
            None,
            "a window of 0 tokens holds nothing, not even the system prompt; give the window limit of \
             the profile's model, in tokens (e.g. 128000)",
        ),
        Some(n) if n > WINDOW_TOKENS_MAX => problems.push(
            path,
            ProblemCode::WindowTooLarge,
            None,
            format!(
                "{n} tokens is over the limit of {WINDOW_TOKENS_MAX}, larger than any model's window; \
                 check for an extra digit"
            ),
        ),
        Some(n) => return u32::try_from(n).ok().and_then(NonZeroU32::new),
    }
    None
}

fn system_prompt(value: Option<&str>, path: &str, problems: &mut Problems) -> Option<PromptTemplate> {
    let path = format!("{path}.system_prompt");
    let text = value.unwrap_or(DEFAULT_SYSTEM_PROMPT);
    if problems.over_limit(&path, None, text.len(), SYSTEM_PROMPT_BYTES_MAX, "bytes") {
        return None;
    }
    match PromptTemplate::parse(text) {
        Ok(template) => Some(template),
        Err(errors) => {
            for e in errors {
                problems.push(
                    &path,
                    ProblemCode::PromptTemplateInvalid,
                    None,
                    format!("{e}; fix the template"),
                );
            }
            None
        }
    }
}

pub(super) fn roster(
    ids: &[String],
    path: &str,
    index: &Index<'_>,
    problems: &mut Problems,
) -> Option<Vec<Target>> {
    let before = problems.count();
    problems.over_limit(&format!("{path}.roster"), None, ids.len(), ROSTER_MAX, "ids");
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(ids.len());
    for (j, id) in ids.iter().enumerate() {
        let at = format!("{path}.roster[{j}]");
        if !seen.insert(id.as_str()) {
            problems.push(
                at,
                ProblemCode::DuplicateRosterId,
                None,
                format!("`{}` is already on this roster; remove the repeat", super::ids::excerpt(id)),
            );
            continue;
        }
        if index.profile_ids.contains(id.as_str()) {
            roster_state_profile(id, &at, index, problems);
            out.extend(ProfileId::parse(id).ok().map(Target::Profile));
        } else if index.machine_ids.contains(id.as_str()) {
            out.extend(MachineId::parse(id).ok().map(Target::Machine));
        } else {
            let defined = roster_ids(index);
            problems.push(
                at,
                ProblemCode::UnknownRosterId,
                None,
                format!(
                    "`{}` is neither a profile nor a machine; the defined ids are {defined}",
                    super::ids::excerpt(id)
                ),
            );
        }
    }
    (problems.count() == before).then_some(out)
}

/// Every id a roster may name (profiles and machines, one namespace), sorted.
fn roster_ids(index: &Index<'_>) -> String {
    listing(index.profile_ids.union(&index.machine_ids).copied())
}

/// A roster that names a machine-state profile carrying `transition_state` would run it
/// outside its machine, where that call can never be honoured: the roster names the machine.
fn roster_state_profile(id: &str, at: &str, index: &Index<'_>, problems: &mut Problems) {
    let Some(uses) = index.state_uses.get(id) else { return };
    if !index.transition_state_profiles.contains(id) {
        return;
    }
    let machines = listing(uses.iter().map(|u| u.machine.as_str()).collect::<BTreeSet<_>>());
    problems.push(
        at,
        ProblemCode::RosterNamesStateProfile,
        Some(Capability::TransitionState),
        format!(
            "`{id}` is a machine state's profile and carries transition_state, which only a machine can \
             honour; name its machine instead ({machines}), which enters the machine at its entry state"
        ),
    );
}

/// The rules between capabilities, the roster and machine states.
fn capability_rules(
    raw: &RawProfile,
    path: &str,
    uses: &[StateUse],
    index: &Index<'_>,
    problems: &mut Problems,
) {
    let on = Switches::of(&raw.capabilities);
    let caps = format!("{path}.capabilities");
    let defined = || roster_ids(index);
    if on.exec && raw.roster.is_empty() {
        problems.push(
            format!("{caps}.exec"),
            ProblemCode::ExecEmptyRoster,
            Some(Capability::Exec),
            format!(
                "exec is on but the roster is empty, so there is nothing to become; add profile or machine \
                 ids to `roster` (defined: {}), or turn exec off",
                defined()
            ),
        );
    }
    if on.exec && !uses.is_empty() {
        problems.push(
            format!("{caps}.exec"),
            ProblemCode::ExecInMachineState,
            Some(Capability::Exec),
            format!(
                "a machine runs this profile as a state ({}), and inside a process the next move belongs to \
                 the process; turn exec off (the state moves its machine with transition_state)",
                state_listing(uses)
            ),
        );
    }
    if on.fork && !on.subagents {
        problems.push(
            format!("{caps}.fork"),
            ProblemCode::ForkWithoutSubagents,
            Some(Capability::Fork),
            "fork is on without subagents, whose wait_for_subagents and send_message are what collect a \
             copy; turn subagents on (the roster may stay empty), or turn fork off",
        );
    }
    if on.subagents && !on.fork && raw.roster.is_empty() {
        problems.push(
            format!("{caps}.subagents"),
            ProblemCode::SubagentsEmptyRoster,
            Some(Capability::Subagents),
            format!(
                "subagents is on but the roster is empty and fork is off, so spawn_subagent has nothing to \
                 start and nothing is ever collected; add ids to `roster` (defined: {}), turn fork on, or \
                 turn subagents off",
                defined()
            ),
        );
    }
    if !raw.roster.is_empty() && !on.subagents && !on.exec {
        problems.push(
            format!("{path}.roster"),
            ProblemCode::RosterUnused,
            None,
            "the roster is what spawn_subagent and exec are checked against, and this profile has neither; \
             turn subagents or exec on, or remove the roster",
        );
    }
    transition_state_rules(on.transition_state, &caps, uses, problems);
}

fn transition_state_rules(enabled: bool, caps: &str, uses: &[StateUse], problems: &mut Problems) {
    let path = format!("{caps}.transition_state");
    let cap = Some(Capability::TransitionState);
    let moving: Vec<&StateUse> = uses.iter().filter(|u| !u.next.is_empty()).collect();
    if enabled && uses.is_empty() {
        problems.push(
            path,
            ProblemCode::TransitionStateOutsideMachine,
            cap,
            "transition_state moves the machine an agent stands in, and no machine runs this profile as a \
             state; turn it off, or name the profile in a machine's `states`",
        );
    } else if enabled && moving.is_empty() {
        problems.push(
            path,
            ProblemCode::TransitionStateWithoutTransitions,
            cap,
            format!(
                "every state that runs this profile ({}) is final, so transition_state would always be \
                 refused; turn it off, or add transitions out of those states",
                state_listing(uses)
            ),
        );
    } else if !enabled && let Some(first) = moving.first() {
        let next = listing(first.next.iter().map(String::as_str));
        problems.push(
            path,
            ProblemCode::TransitionStateMissing,
            cap,
            format!(
                "machine `{}` runs this profile as state `{}`, whose moves (to {next}) only transition_state \
                 can make, so the machine could never leave it; turn transition_state on",
                first.machine, first.state
            ),
        );
    }
}

/// `` `machine.state`, … `` for every state that runs a profile.
fn state_listing(uses: &[StateUse]) -> String {
    let names: Vec<String> = uses.iter().map(|u| format!("{}.{}", u.machine, u.state)).collect();
    listing(names.iter().map(String::as_str))
}

fn compaction(
    raw: &RawCompaction,
    own_brain: Option<&BrainId>,
    path: &str,
    index: &Index<'_>,
    problems: &mut Problems,
) -> Option<Compaction> {
    let path = format!("{path}.compaction");
    let kind = raw.strategy.unwrap_or_default();
    let before = problems.count();
    let summarizer = match (&raw.summarizer, kind) {
        (None, _) => None,
        (Some(_), CompactionKind::Truncate) => {
            problems.push(
                format!("{path}.summarizer"),
                ProblemCode::SummarizerWithoutSummarize,
                None,
                "the `truncate` strategy drops the oldest turns and writes no summary, so no summarizer runs; \
                 remove `summarizer`, or set `strategy: summarize`",
            );
            None
        }
        (Some(id), CompactionKind::Summarize) => {
            brain_ref(Some(id), &format!("{path}.summarizer"), index, problems)
        }
    };
    let trigger_percent = match raw.trigger_percent {
        None => Some(COMPACTION_TRIGGER_PERCENT_DEFAULT),
        Some(n @ 1..=100) => u8::try_from(n).ok(),
        Some(_) => {
            problems.push(
                format!("{path}.trigger_percent"),
                ProblemCode::CompactionTriggerOutOfRange,
                None,
                format!(
                    "`trigger_percent` is the window fill at which compaction runs, 1 to 100; set it within \
                     that, or leave it out for {COMPACTION_TRIGGER_PERCENT_DEFAULT}"
                ),
            );
            None
        }
    };
    if problems.count() != before {
        return None;
    }
    let strategy = match kind {
        CompactionKind::Truncate => CompactionStrategy::Truncate,
        CompactionKind::Summarize => {
            CompactionStrategy::Summarize { summarizer: summarizer.or(own_brain.cloned())? }
        }
    };
    Some(Compaction { strategy, trigger_percent: trigger_percent? })
}
