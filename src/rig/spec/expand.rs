//! Checking already-parsed new members against the rig they join.

use super::report::{RigProblem, RigProblemCode, RigSpecReport};
use crate::rig::limits::MEMBERS_MAX;
use crate::rig::{Member, MemberId, RigSpec};
use std::collections::BTreeMap;

/// Checks that `members` can join `rig`: no id the rig already has, none twice, and no more
/// than [`MEMBERS_MAX`] members in all. Returns the members unchanged when they can.
///
/// The members are already checked (by [`parse_members`](super::parse_members)), so the
/// problems name them by index without a line; [`parse_expansion`](super::parse_expansion)
/// does this check with the payload's lines.
pub fn check_expansion(rig: &RigSpec, members: Vec<Member>) -> Result<Vec<Member>, RigSpecReport> {
    check_expansion_ids(rig.members.iter().map(|member| &member.id), members)
}

/// [`check_expansion`] against the ids of the members a rig already has.
pub fn check_expansion_ids<'a>(
    existing: impl IntoIterator<Item = &'a MemberId>,
    members: Vec<Member>,
) -> Result<Vec<Member>, RigSpecReport> {
    let existing: Vec<&MemberId> = existing.into_iter().collect();
    let mut problems = Vec::new();
    let total = existing.len() + members.len();
    if members.is_empty() {
        problems.push(problem(
            None,
            "members".to_owned(),
            RigProblemCode::NoMembers,
            "the expansion adds no member",
        ));
    }
    if total > MEMBERS_MAX {
        problems.push(problem(
            None,
            "members".to_owned(),
            RigProblemCode::LimitExceeded,
            &format!(
                "the rig would have {total} members, over the limit of {MEMBERS_MAX}; start another rig"
            ),
        ));
    }
    let mut first_use: BTreeMap<&MemberId, usize> = BTreeMap::new();
    for (index, member) in members.iter().enumerate() {
        let id = &member.id;
        let message = if existing.contains(&id) {
            format!("`{id}` is already a member of the rig; member ids are unique, so choose another")
        } else if let Some(first) = first_use.get(id) {
            format!("`{id}` is already the id of members[{first}]; member ids are unique, so rename one")
        } else {
            first_use.insert(id, index);
            continue;
        };
        problems.push(problem(
            Some(id),
            format!("members[{index}].id"),
            RigProblemCode::DuplicateId,
            &message,
        ));
    }
    if problems.is_empty() { Ok(members) } else { Err(RigSpecReport { problems }) }
}

fn problem(member: Option<&MemberId>, path: String, code: RigProblemCode, message: &str) -> RigProblem {
    RigProblem {
        member: member.map(|id| id.as_str().to_owned()),
        path,
        line: None,
        column: None,
        code,
        message: message.to_owned(),
    }
}
