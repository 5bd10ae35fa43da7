//! The `machines` section: states with unique ids that run declared profiles, an entry among
//! them, transitions between them, and every state reachable from the entry.

use super::super::ids::{MachineId, ProfileId, StateId};
use super::super::machine::{Machine, RawMachine, RawState, RawTransition, State};
use super::ids::{Entry, Index, excerpt, index_ids};
use super::{Problems, listing};
use crate::agent::config::report::ProblemCode;
use crate::agent::limits::{DESCRIPTION_BYTES_MAX, STATES_MAX, TRANSITIONS_MAX};
use std::collections::{BTreeMap, BTreeSet};

pub(super) fn check_machines(raw: &[RawMachine], index: &Index<'_>, problems: &mut Problems) -> Vec<Machine> {
    let mut out = Vec::new();
    for (machine, entry) in raw.iter().zip(&index.machines) {
        let before = problems.count();
        let checked = check_machine(machine, entry, index, problems);
        if problems.count() == before
            && let Some(checked) = checked
        {
            out.push(checked);
        }
    }
    out
}

fn check_machine(
    raw: &RawMachine,
    entry: &Entry,
    index: &Index<'_>,
    problems: &mut Problems,
) -> Option<Machine> {
    let path = entry.path.as_str();
    if let Some(description) = &raw.description {
        problems.over_limit(
            &format!("{path}.description"),
            None,
            description.len(),
            DESCRIPTION_BYTES_MAX,
            "bytes",
        );
    }
    if raw.states.is_empty() {
        problems.push(
            format!("{path}.states"),
            ProblemCode::MachineEmpty,
            None,
            "this machine has no states, so entering it runs nothing; add at least one state with the \
             profile it runs",
        );
        // Its entry and transitions could only name states it lacks: one cause, one problem.
        return None;
    }
    problems.over_limit(&format!("{path}.states"), None, raw.states.len(), STATES_MAX, "states");
    problems.over_limit(
        &format!("{path}.transitions"),
        None,
        raw.transitions.len(),
        TRANSITIONS_MAX,
        "transitions",
    );

    let state_ids: Vec<Option<&str>> = raw.states.iter().map(|s| s.id.as_deref()).collect();
    let (mut sections, defined) =
        index_ids(&[(&format!("{path}.states"), state_ids)], "state", "one machine's states", problems);
    let entries = sections.pop().unwrap_or_default();
    let states: Vec<Option<State>> =
        raw.states.iter().zip(&entries).map(|(s, e)| state(s, e, index, problems)).collect();
    let entry_state = entry_state(raw.entry.as_deref(), path, &defined, problems);
    let transitions = transitions(&raw.transitions, path, &defined, problems);
    if let (Some(entry_state), Some(transitions)) = (&entry_state, &transitions) {
        unreachable_states(entry_state, transitions, &entries, problems);
    }
    Some(Machine {
        id: MachineId::parse(entry.id.as_deref()?).expect("the index validated this id"),
        description: raw.description.clone(),
        entry: entry_state?,
        states: states.into_iter().collect::<Option<Vec<_>>>()?,
        transitions: transitions?,
    })
}

fn state(raw: &RawState, entry: &Entry, index: &Index<'_>, problems: &mut Problems) -> Option<State> {
    let path = format!("{}.profile", entry.path);
    let defined = || listing(index.profile_ids.iter().copied());
    let Some(profile) = raw.profile.as_deref() else {
        problems.push(
            path,
            ProblemCode::MissingField,
            None,
            format!("this state has no `profile`; name the profile it runs (defined: {})", defined()),
        );
        return None;
    };
    if !index.profile_ids.contains(profile) {
        let why = if index.machine_ids.contains(profile) {
            format!("`{profile}` is a machine, and a state runs a profile (machines do not nest)")
        } else {
            format!("no profile has the id `{}`", excerpt(profile))
        };
        problems.push(
            path,
            ProblemCode::UnknownStateProfile,
            None,
            format!("{why}; name one of the defined profiles ({})", defined()),
        );
        return None;
    }
    Some(State { id: StateId::parse(entry.id.as_deref()?).ok()?, profile: ProfileId::parse(profile).ok()? })
}

fn entry_state(
    value: Option<&str>,
    path: &str,
    defined: &BTreeSet<&str>,
    problems: &mut Problems,
) -> Option<StateId> {
    let path = format!("{path}.entry");
    let states = listing(defined.iter().copied());
    let Some(entry) = value else {
        problems.push(
            path,
            ProblemCode::MissingField,
            None,
            format!("this machine has no `entry`; name the state it is entered at (one of {states})"),
        );
        return None;
    };
    if !defined.contains(entry) {
        problems.push(
            path,
            ProblemCode::UnknownEntryState,
            None,
            format!("`{}` is not one of this machine's states ({states}); name one of them", excerpt(entry)),
        );
        return None;
    }
    StateId::parse(entry).ok()
}

fn transitions(
    raw: &[RawTransition],
    path: &str,
    defined: &BTreeSet<&str>,
    problems: &mut Problems,
) -> Option<Vec<(StateId, StateId)>> {
    let before = problems.count();
    let mut seen: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut out = Vec::with_capacity(raw.len());
    for (t, transition) in raw.iter().enumerate() {
        let at = format!("{path}.transitions[{t}]");
        let from = transition_end(transition.from.as_deref(), "from", &at, defined, problems);
        let to = transition_end(transition.to.as_deref(), "to", &at, defined, problems);
        let (Some(from), Some(to)) = (from, to) else { continue };
        if let Some(first) = seen.insert((from, to), t) {
            problems.push(
                at,
                ProblemCode::DuplicateTransition,
                None,
                format!("`{from}` → `{to}` is already transitions[{first}]; remove the repeat"),
            );
            continue;
        }
        out.extend(StateId::parse(from).ok().zip(StateId::parse(to).ok()));
    }
    (problems.count() == before).then_some(out)
}

fn transition_end<'a>(
    value: Option<&'a str>,
    field: &str,
    at: &str,
    defined: &BTreeSet<&str>,
    problems: &mut Problems,
) -> Option<&'a str> {
    let states = listing(defined.iter().copied());
    let Some(state) = value else {
        problems.push(
            format!("{at}.{field}"),
            ProblemCode::MissingField,
            None,
            format!("this transition has no `{field}`; name one of the machine's states ({states})"),
        );
        return None;
    };
    if !defined.contains(state) {
        problems.push(
            format!("{at}.{field}"),
            ProblemCode::UnknownTransitionState,
            None,
            format!("`{}` is not one of this machine's states ({states}); name one of them", excerpt(state)),
        );
        return None;
    }
    Some(state)
}

/// Reports every state that no sequence of transitions reaches from the entry: it could never
/// run.
fn unreachable_states(
    entry: &StateId,
    transitions: &[(StateId, StateId)],
    states: &[Entry],
    problems: &mut Problems,
) {
    let mut reached: BTreeSet<&str> = BTreeSet::from([entry.as_str()]);
    let mut frontier = vec![entry.as_str()];
    while let Some(from) = frontier.pop() {
        for (_, to) in transitions.iter().filter(|(f, _)| f.as_str() == from) {
            if reached.insert(to.as_str()) {
                frontier.push(to.as_str());
            }
        }
    }
    for state in states {
        let Some(id) = state.id.as_deref() else { continue };
        if !reached.contains(id) {
            problems.push(
                &state.path,
                ProblemCode::UnreachableState,
                None,
                format!(
                    "no sequence of transitions leads to `{id}` from the entry state `{entry}`, so it could \
                     never run; add a transition into it, or remove it"
                ),
            );
        }
    }
}
