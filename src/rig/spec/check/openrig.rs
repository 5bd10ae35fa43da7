//! The OpenRig shape: `name` (the rig's id), `version`, `summary`, and `pods`, each a group of
//! members with its own edges, plus top-level edges across pods.
//!
//! The pass goes: keys of the flat shape (`mixed_shapes`), name, version, summary, pod ids
//! (so that a duplicate is named once, on its second use), each pod's label and members in file
//! order, the member count over all pods, then the pods' edges and the top-level ones. A pod
//! member's id is qualified with its pod's: `review.alice`.

use super::edges::{EdgeList, check_edges};
use super::ids::validate_pod_word;
use super::member::{Written, written};
use super::{CheckedMembers, ConfigBook, Context, Joining, Problems, Scope, Shape};
use crate::rig::limits::{LABEL_BYTES_MAX, SUMMARY_BYTES_MAX, VERSION_BYTES_MAX};
use crate::rig::spec::raw::{RawPod, RawRig, Text};
use crate::rig::spec::report::RigProblemCode;
use crate::rig::spec::text::excerpt;
use crate::rig::{Pod, RigSpec};
use serde_saphyr::Spanned;
use std::collections::{BTreeMap, BTreeSet};

/// Checks an OpenRig-shaped spec.
pub(super) fn check_openrig(
    raw: &RawRig,
    book: Option<&ConfigBook>,
    problems: &mut Problems,
) -> Option<RigSpec> {
    mixed_shapes(raw, problems);
    let id = match &raw.name {
        Some(name) => super::checked_rig_id(name, "name", problems),
        None => {
            problems.push(
                None,
                "name".to_owned(),
                None,
                RigProblemCode::MissingField,
                "the rig has no `name`; add one (letters, digits, `.`, `_`, `-`): it is the rig's id, which \
                 status and expansion name it by",
            );
            None
        }
    };
    let version = version(&raw.version, problems);
    let summary = text(&raw.summary, "summary", SUMMARY_BYTES_MAX, true, problems);
    let Some(pods) = raw.pods.as_ref().filter(|pods| !pods.value.is_empty()) else {
        problems.push(
            None,
            "pods".to_owned(),
            raw.pods.as_ref().map(|pods| &pods.referenced),
            RigProblemCode::NoMembers,
            "there are no pods; add at least one under `pods`, each with an `id` and its `members`",
        );
        return None;
    };
    let pod_ids = pod_ids(&pods.value, problems);
    let mut members = Vec::new();
    let mut known = BTreeSet::new();
    let mut checked_pods = Vec::new();
    let joining = Joining::new_rig();
    for (index, (pod, id)) in pods.value.iter().zip(&pod_ids).enumerate() {
        let label = text(&pod.value.label, &format!("pods[{index}].label"), LABEL_BYTES_MAX, false, problems);
        let scope = Scope {
            path: format!("pods[{index}].members"),
            pod: id.as_deref(),
            at: Some(&pod.referenced),
            context: Context { shape: Shape::OpenRig, book },
        };
        let CheckedMembers { members: checked, labels } =
            super::check_members(&pod.value.members, &scope, &joining, problems);
        members.extend(checked);
        known.extend(labels.into_iter().flatten());
        if let Some(id) = id {
            checked_pods.push(Pod { id: id.clone(), label });
        }
    }
    let count =
        pods.value.iter().map(|pod| pod.value.members.as_ref().map_or(0, |list| list.value.len())).sum();
    super::member_count(count, &joining, "pods", Some(&pods.referenced), problems);
    let mut lists: Vec<EdgeList<'_>> = pods
        .value
        .iter()
        .zip(&pod_ids)
        .enumerate()
        .map(|(index, (pod, id))| EdgeList {
            path: format!("pods[{index}].edges"),
            in_pod: true,
            pod: id.as_deref(),
            list: &pod.value.edges,
        })
        .collect();
    lists.push(EdgeList { path: "edges".to_owned(), in_pod: false, pod: None, list: &raw.edges });
    let edges = check_edges(&lists, &known, Shape::OpenRig, problems);
    let id = id?;
    Some(RigSpec {
        name: Some(id.as_str().to_owned()),
        id,
        members,
        version,
        summary,
        pods: checked_pods,
        edges,
    })
}

/// Refuses the flat shape's keys beside `pods`.
fn mixed_shapes(raw: &RawRig, problems: &mut Problems) {
    let flat = [
        ("id", raw.id.as_ref().map(|id| &id.referenced), "name the rig with `name` instead"),
        ("members", raw.members.as_ref().map(|list| &list.referenced), "put the members in a pod instead"),
    ];
    for (key, at, instead) in flat {
        let Some(at) = at else { continue };
        problems.push(
            None,
            key.to_owned(),
            Some(at),
            RigProblemCode::MixedShapes,
            format!(
                "`{key}` belongs to the flat shape (`id`, `members`), but this spec has `pods`, the OpenRig \
                 shape; {instead}, since a spec is written in one shape"
            ),
        );
    }
}

/// The version as text: a YAML number (`1`, `0.1`) is read as written.
fn version(value: &Text, problems: &mut Problems) -> Option<String> {
    if matches!(written(value), Written::Absent | Written::Blank(_)) {
        problems.push(
            None,
            "version".to_owned(),
            value.as_ref().map(|v| &v.referenced),
            RigProblemCode::MissingField,
            "the rig has no `version`; add one (`version: 1`, `version: 0.1`): an OpenRig spec says which \
             version of the rig it is",
        );
        return None;
    }
    text(value, "version", VERSION_BYTES_MAX, false, problems)
}

/// An optional text (`summary`, a pod's `label`, `version`): within `bytes_max`, on one line
/// unless `lines`; `None` when left out or refused.
fn text(value: &Text, path: &str, bytes_max: usize, lines: bool, problems: &mut Problems) -> Option<String> {
    let field = path.rsplit('.').next().unwrap_or(path);
    let text = match written(value) {
        Written::Absent => return None,
        Written::Blank(at) => {
            problems.push(
                None,
                path.to_owned(),
                Some(at),
                RigProblemCode::EmptyField,
                format!("`{field}` is written empty; write it or remove it"),
            );
            return None;
        }
        Written::Value(text) => text,
    };
    let len = text.value.len();
    if len > bytes_max {
        problems.push(
            None,
            path.to_owned(),
            Some(&text.referenced),
            RigProblemCode::LimitExceeded,
            format!("this `{field}` is {len} bytes, over the limit of {bytes_max}; shorten it"),
        );
        return None;
    }
    let control = |c: char| c.is_control() && !(lines && matches!(c, '\n' | '\t'));
    if text.value.chars().any(control) {
        let what = if lines { "a control character" } else { "a line break or control character" };
        problems.push(
            None,
            path.to_owned(),
            Some(&text.referenced),
            RigProblemCode::InvalidText,
            format!("`{}` holds {what}; remove it", excerpt(&text.value)),
        );
        return None;
    }
    Some(text.value.clone())
}

/// The id of every pod: `Some` for a well-formed id used once, `None` after reporting why not.
fn pod_ids(pods: &[Spanned<RawPod>], problems: &mut Problems) -> Vec<Option<String>> {
    let mut first_use: BTreeMap<&str, usize> = BTreeMap::new();
    let mut out = Vec::with_capacity(pods.len());
    for (index, pod) in pods.iter().enumerate() {
        let path = format!("pods[{index}].id");
        let Some(id) = &pod.value.id else {
            problems.push(
                None,
                path,
                Some(&pod.referenced),
                RigProblemCode::MissingField,
                "this pod has no `id`; add one (letters, digits, `_`, `-`): its members are named `<pod>.<member>`",
            );
            out.push(None);
            continue;
        };
        let text = id.value.as_str();
        if let Err(e) = validate_pod_word(text) {
            problems.push(None, path, Some(&id.referenced), e.code(), e.message(text, "pod"));
            out.push(None);
            continue;
        }
        if let Some(first) = first_use.get(text) {
            problems.push(
                None,
                path,
                Some(&id.referenced),
                RigProblemCode::DuplicateId,
                format!("`{text}` is already the id of pods[{first}]; pod ids are unique, so rename one"),
            );
            out.push(None);
            continue;
        }
        first_use.insert(text, index);
        out.push(Some(text.to_owned()));
    }
    out
}
