//! The rig spec as written: serde types that refuse unknown fields and leave every value
//! optional, so that a missing value is reported by the check along with everything else.
//!
//! One top level holds both shapes: a flat spec (`id`, `members`) and an OpenRig spec (`name`,
//! `version`, `summary`, `pods`), with `edges` in either. Which shape a document is, and a
//! document that mixes them, is the check's to say, so that the refusal names every stray key.
//!
//! Every field (and every list entry) is a [`Spanned`], so that the check can name the line of
//! each value it refuses. `yaml.rs` relies on this when it turns a parser's path into a spec
//! path: each step into a field or an entry is followed by the wrapper's own `value` step.

use serde::Deserialize;
use serde_saphyr::Spanned;

/// A text value and where it was written. A YAML number or boolean written where a text belongs
/// is read as its text (`version: 0.1` is `"0.1"`).
pub(crate) type Text = Option<Spanned<String>>;

/// A list of entries and where it was written.
pub(crate) type List<T> = Option<Spanned<Vec<Spanned<T>>>>;

/// A rig spec's top level, of either shape.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRig {
    /// The flat shape's rig id.
    #[serde(default)]
    pub(crate) id: Text,
    /// The flat shape's members.
    #[serde(default)]
    pub(crate) members: List<RawMember>,
    /// The OpenRig shape's name (the rig's id).
    #[serde(default)]
    pub(crate) name: Text,
    /// The OpenRig shape's version.
    #[serde(default)]
    pub(crate) version: Text,
    /// The OpenRig shape's summary.
    #[serde(default)]
    pub(crate) summary: Text,
    /// The OpenRig shape's pods.
    #[serde(default)]
    pub(crate) pods: List<RawPod>,
    /// Edges between members: across pods in the OpenRig shape, between members in the flat one.
    #[serde(default)]
    pub(crate) edges: List<RawEdge>,
}

/// A `rig expand` payload: members only.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMembers {
    #[serde(default)]
    pub(crate) members: List<RawMember>,
}

/// One pod of an OpenRig spec as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPod {
    #[serde(default)]
    pub(crate) id: Text,
    #[serde(default)]
    pub(crate) label: Text,
    #[serde(default)]
    pub(crate) members: List<RawMember>,
    #[serde(default)]
    pub(crate) edges: List<RawEdge>,
}

/// One edge as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEdge {
    #[serde(default)]
    pub(crate) kind: Text,
    #[serde(default)]
    pub(crate) from: Text,
    #[serde(default)]
    pub(crate) to: Text,
}

/// One member as written (in `members`, or in a pod's `members`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMember {
    #[serde(default)]
    pub(crate) id: Text,
    #[serde(default)]
    pub(crate) runtime: Text,
    #[serde(default)]
    pub(crate) agent_ref: Text,
    #[serde(default)]
    pub(crate) profile: Text,
    #[serde(default)]
    pub(crate) cwd: Text,
    #[serde(default)]
    pub(crate) prompt: Text,
    #[serde(default)]
    pub(crate) session_source: Option<Spanned<RawSessionSource>>,
    #[serde(default)]
    pub(crate) restore_policy: Text,
}

/// A `session_source` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSessionSource {
    #[serde(default)]
    pub(crate) mode: Text,
    #[serde(default, rename = "ref")]
    pub(crate) reference: Option<Spanned<RawRef>>,
}

/// A `session_source.ref` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRef {
    #[serde(default)]
    pub(crate) kind: Text,
    #[serde(default)]
    pub(crate) value: Text,
}
