//! The rig check: one pass over a parsed spec that names every value it cannot honour as
//! written and every required value left out, with its line. Nothing reaches a runtime adapter
//! until it passes: the `session_source` rules of v1 (fork from a native id, never on a
//! terminal) are enforced here, before launch.
//!
//! The pass goes rig id, member count, member ids (so that a duplicate is named once, on its
//! second use), then each member in file order.

mod ids;
mod member;
mod session_source;

use super::raw::{List, RawMember, RawRig};
use super::report::{RigProblem, RigProblemCode};
use super::text::location;
use crate::rig::limits::{MEMBERS_MAX, REPORT_PROBLEMS_MAX};
use crate::rig::{Member, MemberId, RigId, RigSpec, SeatRuntime};
use serde_saphyr::Location;
use std::collections::BTreeSet;

pub(crate) use ids::validate_id;

/// The members a new list of members joins: none for a rig spec, the rig's for an expansion.
pub(crate) struct Joining<'a> {
    /// The rig the members join, for messages.
    pub(crate) rig: Option<&'a str>,
    /// The ids already taken.
    pub(crate) taken: BTreeSet<&'a str>,
}

impl Joining<'_> {
    /// A new rig: no member yet.
    pub(crate) fn new_rig() -> Self {
        Joining { rig: None, taken: BTreeSet::new() }
    }
}

/// Checks a whole rig spec.
pub(crate) fn check_rig(raw: &RawRig) -> Result<RigSpec, Vec<RigProblem>> {
    let mut problems = Problems::default();
    let id = rig_id(raw, &mut problems);
    let members = check_members(&raw.members, &Joining::new_rig(), &mut problems);
    match (id, problems.finish()) {
        (Some(id), None) => {
            let spec = RigSpec { id, members };
            debug_assert_eq!(invariant_violation(&spec), None, "the rig check let a broken spec through");
            Ok(spec)
        }
        (_, Some(problems)) => Err(problems),
        (None, None) => Err(vec![RigProblem {
            member: None,
            path: "id".to_owned(),
            line: None,
            column: None,
            code: RigProblemCode::MissingField,
            message: "the rig has no `id`".to_owned(),
        }]),
    }
}

/// Checks a list of new members joining `joining`.
pub(crate) fn check_new_members(
    raw: &List<RawMember>,
    joining: &Joining<'_>,
) -> Result<Vec<Member>, Vec<RigProblem>> {
    let mut problems = Problems::default();
    let members = check_members(raw, joining, &mut problems);
    match problems.finish() {
        None => Ok(members),
        Some(problems) => Err(problems),
    }
}

fn rig_id(raw: &RawRig, problems: &mut Problems) -> Option<RigId> {
    let Some(id) = &raw.id else {
        problems.push(
            None,
            "id".to_owned(),
            None,
            RigProblemCode::MissingField,
            "the rig has no `id`; add one (letters, digits, `.`, `_`, `-`), since status and expansion name \
             the rig by it",
        );
        return None;
    };
    match validate_id(&id.value) {
        Ok(()) => Some(RigId(id.value.clone())),
        Err(e) => {
            problems.push(None, "id".to_owned(), Some(&id.referenced), e.code(), e.message(&id.value, "rig"));
            None
        }
    }
}

/// Checks every member, returning the checked ones (all of them when no problem was found).
fn check_members(raw: &List<RawMember>, joining: &Joining<'_>, problems: &mut Problems) -> Vec<Member> {
    let Some(list) = raw.as_ref().filter(|list| !list.value.is_empty()) else {
        problems.push(
            None,
            "members".to_owned(),
            raw.as_ref().map(|list| &list.referenced),
            RigProblemCode::NoMembers,
            "there are no members; add at least one under `members` (each with an `id` and a `runtime`)",
        );
        return Vec::new();
    };
    let count = joining.taken.len() + list.value.len();
    if count > MEMBERS_MAX {
        let whole = if joining.taken.is_empty() { String::new() } else { " with the rig's own".to_owned() };
        problems.push(
            None,
            "members".to_owned(),
            Some(&list.referenced),
            RigProblemCode::LimitExceeded,
            format!("this is {count} members{whole}, over the limit of {MEMBERS_MAX}; split the rig"),
        );
    }
    let ids = ids::member_ids(&list.value, joining, problems);
    list.value
        .iter()
        .zip(ids)
        .enumerate()
        .filter_map(|(index, (raw, id))| member::check_member(index, raw, id, problems))
        .collect()
}

/// What a checked spec holds that the check is there to prove; `None` when it holds.
fn invariant_violation(spec: &RigSpec) -> Option<String> {
    let mut seen = BTreeSet::new();
    for member in &spec.members {
        if !seen.insert(&member.id) {
            return Some(format!("member id {} used twice", member.id));
        }
        if member.runtime == SeatRuntime::Terminal && member.session_source.is_some() {
            return Some(format!("terminal member {} has a session source", member.id));
        }
        if member.runtime == SeatRuntime::Native && (member.agent_ref.is_none() || member.profile.is_none()) {
            return Some(format!("native member {} lacks agent_ref or profile", member.id));
        }
    }
    (spec.members.is_empty() || spec.members.len() > MEMBERS_MAX)
        .then(|| "member count out of bounds".to_owned())
}

/// The problems found so far; at most [`REPORT_PROBLEMS_MAX`] are kept, the rest counted.
#[derive(Default)]
pub(crate) struct Problems {
    kept: Vec<RigProblem>,
    left_out: usize,
}

impl Problems {
    /// Records one problem: in `member` (its id as written, when well formed), at `path`, whose
    /// value (or enclosing entry) is written `at`.
    pub(crate) fn push(
        &mut self,
        member: Option<&str>,
        path: String,
        at: Option<&Location>,
        code: RigProblemCode,
        message: impl Into<String>,
    ) {
        if self.kept.len() >= REPORT_PROBLEMS_MAX {
            self.left_out += 1;
            return;
        }
        let (line, column) = location(at);
        self.kept.push(RigProblem {
            member: member.map(str::to_owned),
            path,
            line,
            column,
            code,
            message: message.into(),
        });
    }

    /// How many problems have been recorded: an entry compares it before and after its checks
    /// to know whether it came through clean.
    pub(crate) fn count(&self) -> usize {
        self.kept.len() + self.left_out
    }

    /// The problems, or `None` if there are none.
    fn finish(mut self) -> Option<Vec<RigProblem>> {
        if self.left_out > 0 {
            self.kept.push(RigProblem {
                member: None,
                path: String::new(),
                line: None,
                column: None,
                code: RigProblemCode::TooManyProblems,
                message: format!(
                    "{} more problems left out after the first {REPORT_PROBLEMS_MAX}; fix these and check again",
                    self.left_out
                ),
            });
        }
        (!self.kept.is_empty()).then_some(self.kept)
    }
}

/// A member id the checks vouched for.
pub(crate) fn member_id(text: &str) -> MemberId {
    MemberId(text.to_owned())
}
