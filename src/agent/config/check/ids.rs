//! The first part of the pass: every entry's id, and the facts other entries look up by id.

use super::super::ids::validate;
use super::super::parse::AgentConfig;
use super::Problems;
use crate::agent::config::report::ProblemCode;
use crate::agent::limits::ID_BYTES_MAX;
use std::collections::{BTreeMap, BTreeSet};

/// One entry of a list of entries with ids.
pub(super) struct Entry {
    /// The entry's path: `profiles.planner`, or `profiles[3]` when its id is missing, invalid
    /// or used twice (a path by id would be ambiguous or unreadable).
    pub(super) path: String,
    /// The entry's id, if valid and unique: only such an entry can become a checked one.
    pub(super) id: Option<String>,
}

/// One machine state that runs a profile.
pub(super) struct StateUse {
    /// The machine's id (or `machines[i]`).
    pub(super) machine: String,
    /// The state's id.
    pub(super) state: String,
    /// The states a transition out of it names, as written.
    pub(super) next: Vec<String>,
}

/// What the rest of the pass looks up by id.
pub(super) struct Index<'a> {
    pub(super) brains: Vec<Entry>,
    pub(super) profiles: Vec<Entry>,
    pub(super) machines: Vec<Entry>,
    /// Every valid brain id written (one used twice included, so that a reference to it is
    /// not reported as unknown on top of the duplicate).
    pub(super) brain_ids: BTreeSet<&'a str>,
    /// Every valid profile id written.
    pub(super) profile_ids: BTreeSet<&'a str>,
    /// Every valid machine id written.
    pub(super) machine_ids: BTreeSet<&'a str>,
    /// For each profile a machine runs as a state, every such state.
    pub(super) state_uses: BTreeMap<&'a str, Vec<StateUse>>,
    /// The profiles that turn `transition_state` on.
    pub(super) transition_state_profiles: BTreeSet<&'a str>,
}

impl<'a> Index<'a> {
    pub(super) fn build(raw: &'a AgentConfig, problems: &mut Problems) -> Self {
        let brain_ids: Vec<Option<&str>> = raw.brains.iter().map(|b| b.id.as_deref()).collect();
        let (mut brains, brain_set) = index_ids(&[("brains", brain_ids)], "brain", "brains", problems);
        // Profiles and machines share one namespace: a roster names either.
        let profile_ids: Vec<Option<&str>> = raw.profiles.iter().map(|p| p.id.as_deref()).collect();
        let machine_ids: Vec<Option<&str>> = raw.machines.iter().map(|m| m.id.as_deref()).collect();
        let (mut agents, _) = index_ids(
            &[("profiles", profile_ids), ("machines", machine_ids)],
            "profile or machine",
            "profiles and machines (one namespace, since a roster names either)",
            problems,
        );
        let machines = agents.pop().unwrap_or_default();
        let profiles = agents.pop().unwrap_or_default();
        let profile_set = valid_ids(raw.profiles.iter().map(|p| p.id.as_deref()));
        let machine_set = valid_ids(raw.machines.iter().map(|m| m.id.as_deref()));

        let mut state_uses: BTreeMap<&str, Vec<StateUse>> = BTreeMap::new();
        for (i, machine) in raw.machines.iter().enumerate() {
            let label = machine.id.clone().unwrap_or_else(|| format!("machines[{i}]"));
            for state in &machine.states {
                let (Some(state_id), Some(profile)) = (state.id.as_deref(), state.profile.as_deref()) else {
                    continue;
                };
                let Some(profile) = profile_set.get(profile) else { continue };
                let next = machine
                    .transitions
                    .iter()
                    .filter(|t| t.from.as_deref() == Some(state_id))
                    .filter_map(|t| t.to.clone())
                    .collect();
                state_uses.entry(profile).or_default().push(StateUse {
                    machine: label.clone(),
                    state: state_id.to_owned(),
                    next,
                });
            }
        }
        let transition_state_profiles = raw
            .profiles
            .iter()
            .filter(|p| p.capabilities.transition_state.as_ref().is_some_and(|e| e.is_enabled()))
            .filter_map(|p| p.id.as_deref())
            .collect();

        Index {
            brains: brains.pop().unwrap_or_default(),
            profiles,
            machines,
            brain_ids: brain_set,
            profile_ids: profile_set,
            machine_ids: machine_set,
            state_uses,
            transition_state_profiles,
        }
    }
}

fn valid_ids<'a>(ids: impl Iterator<Item = Option<&'a str>>) -> BTreeSet<&'a str> {
    ids.flatten().filter(|id| validate(id).is_ok()).collect()
}

/// Resolves the ids of one or more sections sharing one namespace: reports every missing,
/// invalid and repeated id, and gives every entry its path. Returns the entries of each
/// section, and every valid id written.
pub(super) fn index_ids<'a>(
    sections: &[(&str, Vec<Option<&'a str>>)],
    noun: &str,
    namespace: &str,
    problems: &mut Problems,
) -> (Vec<Vec<Entry>>, BTreeSet<&'a str>) {
    let mut uses: BTreeMap<&str, usize> = BTreeMap::new();
    for id in sections.iter().flat_map(|(_, ids)| ids.iter().flatten()) {
        if validate(id).is_ok() {
            *uses.entry(id).or_default() += 1;
        }
    }
    let mut first_use: BTreeMap<&str, String> = BTreeMap::new();
    let mut out = Vec::with_capacity(sections.len());
    for (section, ids) in sections {
        let mut entries = Vec::with_capacity(ids.len());
        for (i, id) in ids.iter().enumerate() {
            let at = format!("{section}[{i}]");
            let unique = match id {
                None => {
                    problems.push(
                        format!("{at}.id"),
                        ProblemCode::MissingField,
                        None,
                        format!("this {noun} has no `id`; add one, since everything else names it by id"),
                    );
                    None
                }
                Some(text) => match validate(text) {
                    Err(e) => {
                        problems.push(
                            format!("{at}.id"),
                            ProblemCode::InvalidId,
                            None,
                            format!("`{}` is not a valid id: {e}", excerpt(text)),
                        );
                        None
                    }
                    Ok(()) if uses.get(text).copied().unwrap_or(0) > 1 => {
                        match first_use.get(text) {
                            Some(first) => problems.push(
                                format!("{at}.id"),
                                ProblemCode::DuplicateId,
                                None,
                                format!(
                                    "`{text}` is already the id of {first}; ids of {namespace} are unique, \
                                     so rename one"
                                ),
                            ),
                            None => {
                                first_use.insert(text, at.clone());
                            }
                        }
                        None
                    }
                    Ok(()) => Some(text.to_string()),
                },
            };
            let path = match &unique {
                Some(id) => format!("{section}.{id}"),
                None => at,
            };
            entries.push(Entry { path, id: unique });
        }
        out.push(entries);
    }
    let valid = uses.into_keys().collect();
    (out, valid)
}

/// At most [`ID_BYTES_MAX`] bytes of a text, cut on a character boundary: an invalid id is
/// quoted in its problem, and may be anything.
pub(super) fn excerpt(text: &str) -> String {
    crate::actors::text::excerpt(text, ID_BYTES_MAX)
}
