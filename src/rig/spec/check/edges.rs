//! Edges between members: a kind of the five, and two endpoints that name different members.
//!
//! In a pod's `edges`, an endpoint is a member of that pod (its bare id) or any member
//! (qualified, `pod.member`); a top-level edge of an OpenRig spec joins members across pods, so
//! its endpoints are qualified. In a flat spec an endpoint is a member's id as written.

use super::{Problems, Shape};
use crate::rig::limits::{CONFIG_EXCERPT_BYTES_MAX, EDGES_MAX};
use crate::rig::spec::check::member::{Written, word, words, written};
use crate::rig::spec::raw::{List, RawEdge, Text};
use crate::rig::spec::report::RigProblemCode;
use crate::rig::spec::text::{bounded, excerpt};
use crate::rig::{Edge, EdgeKind};
use serde_saphyr::{Location, Spanned};
use std::collections::BTreeSet;

/// One list of edges and where it is written.
pub(super) struct EdgeList<'a> {
    /// The list's path: `edges`, or `pods[0].edges`.
    pub(super) path: String,
    /// Whether the list is a pod's.
    pub(super) in_pod: bool,
    /// For a pod's edges, the pod's id, when it is well formed.
    pub(super) pod: Option<&'a str>,
    pub(super) list: &'a List<RawEdge>,
}

/// Checks every edge of `lists`, in order, against the members' ids (`known`: qualified in an
/// OpenRig spec). Returns the edges that passed.
pub(super) fn check_edges(
    lists: &[EdgeList<'_>],
    known: &BTreeSet<String>,
    shape: Shape,
    problems: &mut Problems,
) -> Vec<Edge> {
    let mut edges = Vec::new();
    let mut count = 0;
    for list in lists {
        let Some(entries) = list.list else { continue };
        count += entries.value.len();
        if count > EDGES_MAX && count - entries.value.len() <= EDGES_MAX {
            problems.push(
                None,
                list.path.clone(),
                Some(&entries.referenced),
                RigProblemCode::LimitExceeded,
                format!("the rig has {count} edges or more, over the limit of {EDGES_MAX}; draw fewer"),
            );
        }
        for (index, entry) in entries.value.iter().enumerate() {
            let place = Place { list, index, at: &entry.referenced, shape };
            if let Some(edge) = check_edge(&place, &entry.value, known, problems) {
                edges.push(edge);
            }
        }
    }
    edges
}

/// Where an edge is written.
struct Place<'a> {
    list: &'a EdgeList<'a>,
    index: usize,
    at: &'a Location,
    shape: Shape,
}

impl Place<'_> {
    fn problem(
        &self,
        problems: &mut Problems,
        field: &str,
        at: Option<&Location>,
        code: RigProblemCode,
        message: impl Into<String>,
    ) {
        let path = format!("{}[{}].{field}", self.list.path, self.index);
        problems.push(None, path, Some(at.unwrap_or(self.at)), code, message);
    }
}

fn check_edge(
    place: &Place<'_>,
    raw: &RawEdge,
    known: &BTreeSet<String>,
    problems: &mut Problems,
) -> Option<Edge> {
    let kind = kind(place, &raw.kind, problems);
    let from = endpoint(place, "from", &raw.from, known, problems);
    let to = endpoint(place, "to", &raw.to, known, problems);
    let (kind, from, to) = (kind?, from?, to?);
    if from == to {
        let at = raw.to.as_ref().map(|to| &to.referenced);
        place.problem(
            problems,
            "to",
            at,
            RigProblemCode::SelfEdge,
            format!("this edge goes from `{from}` to itself; an edge joins two different members"),
        );
        return None;
    }
    Some(Edge { kind, from: super::member_id(&from), to: super::member_id(&to) })
}

fn kind(place: &Place<'_>, value: &Text, problems: &mut Problems) -> Option<EdgeKind> {
    let text = match written(value) {
        Written::Value(text) => text,
        Written::Absent | Written::Blank(_) => {
            place.problem(
                problems,
                "kind",
                value.as_ref().map(|v| &v.referenced),
                RigProblemCode::MissingField,
                format!("this edge has no `kind`; say what it is: {}", words(EdgeKind::ALL)),
            );
            return None;
        }
    };
    word(EdgeKind::ALL, &text.value, "an edge kind")
        .map_err(|message| {
            place.problem(problems, "kind", Some(&text.referenced), RigProblemCode::UnknownEdgeKind, message)
        })
        .ok()
}

/// The member an endpoint names (its qualified id in an OpenRig spec), if it names one.
fn endpoint(
    place: &Place<'_>,
    field: &str,
    value: &Text,
    known: &BTreeSet<String>,
    problems: &mut Problems,
) -> Option<String> {
    let text: &Spanned<String> = match written(value) {
        Written::Value(text) => text,
        Written::Absent | Written::Blank(_) => {
            place.problem(
                problems,
                field,
                value.as_ref().map(|v| &v.referenced),
                RigProblemCode::MissingField,
                format!("this edge has no `{field}`; name the member it joins"),
            );
            return None;
        }
    };
    let name = text.value.as_str();
    let refusal = match (place.shape, place.list.in_pod, place.list.pod) {
        (Shape::Flat, _, _) => named_member(name, name, known),
        (Shape::OpenRig, _, _) if name.contains('.') => named_member(name, name, known),
        (Shape::OpenRig, true, Some(pod)) => named_member(name, &format!("{pod}.{name}"), known),
        // A bare name in a pod whose id was refused: nothing to qualify it with (the pod's id is
        // reported), so it is not judged.
        (Shape::OpenRig, true, None) => return None,
        (Shape::OpenRig, false, _) => {
            let candidates: Vec<String> = known
                .iter()
                .filter(|id| id.split_once('.').is_some_and(|(_, member)| member == name))
                .map(|id| format!("`{id}`"))
                .collect();
            let hint = if candidates.is_empty() {
                String::new()
            } else {
                format!(" (perhaps {})", bounded(&candidates.join(", "), CONFIG_EXCERPT_BYTES_MAX))
            };
            Err(format!(
                "`{}` is not qualified; a top-level edge joins members across pods, so name each as \
                 `pod.member`{hint}",
                excerpt(name)
            ))
        }
    };
    refusal
        .map_err(|message| {
            place.problem(problems, field, Some(&text.referenced), RigProblemCode::UnknownEdgeMember, message)
        })
        .ok()
}

/// The member `name` (read as `qualified`) names, or why it names none.
fn named_member(name: &str, qualified: &str, known: &BTreeSet<String>) -> Result<String, String> {
    if known.contains(qualified) {
        return Ok(qualified.to_owned());
    }
    let members: Vec<String> = known.iter().map(|id| format!("`{id}`")).collect();
    let members = if members.is_empty() { "none".to_owned() } else { members.join(", ") };
    let read =
        if qualified == name { String::new() } else { format!(" (`{}` in this pod)", excerpt(qualified)) };
    Err(format!(
        "`{}`{read} names no member of the rig; name one of {}",
        excerpt(name),
        bounded(&members, CONFIG_EXCERPT_BYTES_MAX)
    ))
}
