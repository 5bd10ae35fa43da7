//! The rig check: one pass over a parsed spec that names every value it cannot honour as
//! written and every required value left out, with its line. Nothing reaches a runtime adapter
//! until it passes: the `session_source` rules of v1 (fork from a native id, never on a
//! terminal) are enforced here, before launch.
//!
//! A document with `pods` is OpenRig-shaped (`openrig.rs`); one without is flat. The flat pass
//! goes rig id, member count, member ids (so that a duplicate is named once, on its second
//! use), each member in file order, then edges. When a [`ConfigBook`] is at hand (a spec read
//! from a file, whose directory is known), each member's agent configuration is read and its
//! `profile` checked against it in the same pass.

mod agent_ref;
mod book;
mod edges;
mod ids;
mod member;
mod openrig;
mod session_source;

use super::raw::{List, RawMember, RawRig};
use super::report::{RigProblem, RigProblemCode};
use super::text::location;
use crate::rig::limits::{EDGES_MAX, MEMBERS_MAX, REPORT_PROBLEMS_MAX};
use crate::rig::{Member, MemberId, RigId, RigSpec, SeatRuntime};
use serde_saphyr::{Location, Spanned};
use std::collections::BTreeSet;

pub(crate) use book::{ConfigBook, profile_refusal};
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

/// Which of the two shapes a document is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shape {
    /// `id` and `members` (and an expansion's `members`).
    Flat,
    /// `name`, `version`, `pods`.
    OpenRig,
}

/// What the checks of one member need besides the member: the spec's shape, and the agent
/// configurations when they can be read.
#[derive(Clone, Copy)]
pub(super) struct Context<'a> {
    pub(super) shape: Shape,
    pub(super) book: Option<&'a ConfigBook>,
}

/// Where a list of members is written.
pub(super) struct Scope<'a> {
    /// The list's path: `members`, or `pods[1].members`.
    pub(super) path: String,
    /// For a pod's members, the pod's id, when it is well formed: their ids are qualified with it.
    /// `None` at the top level, and for a pod whose id was refused (its members then have no id).
    pub(super) pod: Option<&'a str>,
    /// Where the entry the list belongs to starts (a pod's), for a list left out.
    pub(super) at: Option<&'a Location>,
    pub(super) context: Context<'a>,
}

impl Scope<'_> {
    /// Whether the members are a pod's.
    pub(super) fn in_pod(&self) -> bool {
        self.context.shape == Shape::OpenRig
    }
}

/// Checks a whole rig spec of either shape; with `book`, each member's agent configuration too.
pub(crate) fn check_rig(raw: &RawRig, book: Option<&ConfigBook>) -> Result<RigSpec, Vec<RigProblem>> {
    let mut problems = Problems::default();
    let spec = match shape_of(raw) {
        Shape::OpenRig => openrig::check_openrig(raw, book, &mut problems),
        Shape::Flat => check_flat(raw, book, &mut problems),
    };
    match (spec, problems.finish()) {
        (Some(spec), None) => {
            debug_assert_eq!(invariant_violation(&spec), None, "the rig check let a broken spec through");
            Ok(spec)
        }
        (_, Some(problems)) => Err(problems),
        (None, None) => Err(vec![RigProblem {
            member: None,
            path: String::new(),
            line: None,
            column: None,
            code: RigProblemCode::MissingField,
            message:
                "the spec names no rig; give it an `id` and `members`, or a `name`, `version` and `pods`"
                    .to_owned(),
        }]),
    }
}

/// A document is OpenRig-shaped when it has `pods`, or when it has none of the flat shape's
/// keys but some of the OpenRig shape's (a spec whose pods are still to be written).
fn shape_of(raw: &RawRig) -> Shape {
    let flat = raw.id.is_some() || raw.members.is_some();
    let openrig = raw.name.is_some() || raw.version.is_some() || raw.summary.is_some();
    if raw.pods.is_some() || (openrig && !flat) { Shape::OpenRig } else { Shape::Flat }
}

fn check_flat(raw: &RawRig, book: Option<&ConfigBook>, problems: &mut Problems) -> Option<RigSpec> {
    for (key, value) in [("name", &raw.name), ("version", &raw.version), ("summary", &raw.summary)] {
        if let Some(value) = value {
            problems.push(
                None,
                key.to_owned(),
                Some(&value.referenced),
                RigProblemCode::MixedShapes,
                format!(
                    "`{key}` belongs to the OpenRig shape (`name`, `version`, `pods`), but this spec is flat \
                     (`id`, `members`); remove it, or write the rig's members in `pods`"
                ),
            );
        }
    }
    let id = rig_id(raw, problems);
    let scope = Scope {
        path: "members".to_owned(),
        pod: None,
        at: None,
        context: Context { shape: Shape::Flat, book },
    };
    let joining = Joining::new_rig();
    let count = raw.members.as_ref().map_or(0, |list| list.value.len());
    member_count(count, &joining, "members", raw.members.as_ref().map(|list| &list.referenced), problems);
    let checked = check_members(&raw.members, &scope, &joining, problems);
    let known: BTreeSet<String> = checked.labels.iter().flatten().cloned().collect();
    let lists = [edges::EdgeList { path: "edges".to_owned(), in_pod: false, pod: None, list: &raw.edges }];
    let edges = edges::check_edges(&lists, &known, Shape::Flat, problems);
    let mut spec = RigSpec::of_members(id?, checked.members);
    spec.edges = edges;
    Some(spec)
}

/// Checks a list of new members joining `joining`.
pub(crate) fn check_new_members(
    raw: &List<RawMember>,
    joining: &Joining<'_>,
) -> Result<Vec<Member>, Vec<RigProblem>> {
    let mut problems = Problems::default();
    let scope = Scope {
        path: "members".to_owned(),
        pod: None,
        at: None,
        context: Context { shape: Shape::Flat, book: None },
    };
    let count = raw.as_ref().map_or(0, |list| list.value.len());
    member_count(count, joining, "members", raw.as_ref().map(|list| &list.referenced), &mut problems);
    let members = check_members(raw, &scope, joining, &mut problems).members;
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
    checked_rig_id(id, "id", problems)
}

/// The rig id written at `path` (`id`, or an OpenRig spec's `name`), if it follows the syntax.
pub(super) fn checked_rig_id(id: &Spanned<String>, path: &str, problems: &mut Problems) -> Option<RigId> {
    match validate_id(&id.value) {
        Ok(()) => Some(RigId(id.value.clone())),
        Err(e) => {
            problems.push(None, path.to_owned(), Some(&id.referenced), e.code(), e.message(&id.value, "rig"));
            None
        }
    }
}

/// Refuses more than [`MEMBERS_MAX`] members: `count` new ones besides those `joining` has.
pub(super) fn member_count(
    count: usize,
    joining: &Joining<'_>,
    path: &str,
    at: Option<&Location>,
    problems: &mut Problems,
) {
    let count = joining.taken.len() + count;
    if count > MEMBERS_MAX {
        let whole = if joining.taken.is_empty() { String::new() } else { " with the rig's own".to_owned() };
        problems.push(
            None,
            path.to_owned(),
            at,
            RigProblemCode::LimitExceeded,
            format!("this is {count} members{whole}, over the limit of {MEMBERS_MAX}; split the rig"),
        );
    }
}

/// A list of members as checked.
pub(super) struct CheckedMembers {
    /// Every member that passed (all of them when no problem was found).
    pub(super) members: Vec<Member>,
    /// The id of every entry (qualified in a pod), when it is well formed, even if used twice:
    /// what edges may name.
    pub(super) labels: Vec<Option<String>>,
}

/// Checks every member of one list.
pub(super) fn check_members(
    raw: &List<RawMember>,
    scope: &Scope<'_>,
    joining: &Joining<'_>,
    problems: &mut Problems,
) -> CheckedMembers {
    let Some(list) = raw.as_ref().filter(|list| !list.value.is_empty()) else {
        let message = if scope.in_pod() {
            "this pod has no members; add at least one under its `members` (each with an `id` and a `runtime`)"
        } else {
            "there are no members; add at least one under `members` (each with an `id` and a `runtime`)"
        };
        problems.push(
            None,
            scope.path.clone(),
            raw.as_ref().map(|list| &list.referenced).or(scope.at),
            RigProblemCode::NoMembers,
            message,
        );
        return CheckedMembers { members: Vec::new(), labels: Vec::new() };
    };
    let ids = ids::member_ids(&list.value, scope, joining, problems);
    let members = list
        .value
        .iter()
        .zip(&ids)
        .enumerate()
        .filter_map(|(index, (raw, (label, id)))| {
            let entry = member::Entry {
                path: format!("{}[{index}]", scope.path),
                label: label.as_deref(),
                at: &raw.referenced,
            };
            member::check_member(&entry, raw, id.clone(), scope.context, problems)
        })
        .collect();
    CheckedMembers { members, labels: ids.into_iter().map(|(label, _)| label).collect() }
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
        if !spec.pods.is_empty()
            && !spec.pods.iter().any(|pod| spec.pod_members(&pod.id).any(|m| m == member))
        {
            return Some(format!("member {} is in no pod", member.id));
        }
    }
    for edge in &spec.edges {
        if edge.from == edge.to || !seen.contains(&edge.from) || !seen.contains(&edge.to) {
            return Some(format!("edge {} {} → {} joins no two members", edge.kind, edge.from, edge.to));
        }
    }
    let pods: BTreeSet<&str> = spec.pods.iter().map(|pod| pod.id.as_str()).collect();
    if pods.len() != spec.pods.len() || pods.iter().any(|pod| pod.contains('.')) {
        return Some("pod ids are not unique words".to_owned());
    }
    if spec.edges.len() > EDGES_MAX {
        return Some("edge count out of bounds".to_owned());
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
