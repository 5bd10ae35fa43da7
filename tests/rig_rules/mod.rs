//! What every rig spec the check accepts, and every report it gives, must hold: shared by the
//! property tests of both spec shapes.

#![allow(dead_code, reason = "each test file uses its own subset of these helpers")]

use agentvisor::rig::{RigSpec, RigSpecReport, SeatRuntime};
use proptest::prelude::*;

/// A parse's result holds the rules: an accepted spec [`members_hold_the_rules`] and then
/// `also`; a report names problems, each with a code, a message on one line, and a place.
pub(crate) fn outcome(
    result: Result<RigSpec, RigSpecReport>,
    also: impl Fn(&RigSpec) -> Result<(), TestCaseError>,
) -> Result<(), TestCaseError> {
    match result {
        Ok(rig) => {
            members_hold_the_rules(&rig)?;
            also(&rig)
        }
        Err(report) => {
            prop_assert!(!report.problems.is_empty());
            for p in &report.problems {
                prop_assert!(!p.message.is_empty() && !p.code().as_str().is_empty());
                prop_assert!(!p.message.contains('\n'), "{:?}", p.message);
                prop_assert!(p.line.is_some() || !p.path.is_empty() || p.code().as_str() != "missing_field");
            }
            prop_assert_eq!(report.to_string().lines().count(), report.problems.len());
            Ok(())
        }
    }
}

/// The member rules of either shape: at least one member, ids unique, no terminal seat with a
/// session source, native seats with `agent_ref` and `profile`, a working directory.
pub(crate) fn members_hold_the_rules(rig: &RigSpec) -> Result<(), TestCaseError> {
    prop_assert!(!rig.members.is_empty());
    let mut ids = std::collections::BTreeSet::new();
    for member in &rig.members {
        prop_assert!(ids.insert(member.id.clone()), "{} twice", member.id);
        if member.runtime == SeatRuntime::Terminal {
            prop_assert!(member.session_source.is_none());
        }
        if member.runtime == SeatRuntime::Native {
            prop_assert!(member.agent_ref.is_some() && member.profile.is_some());
        }
        prop_assert!(!member.cwd.is_empty());
    }
    Ok(())
}
