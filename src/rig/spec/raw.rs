//! The rig spec as written: serde types that refuse unknown fields and leave every value
//! optional, so that a missing value is reported by the check along with everything else.
//!
//! Every field (and every list entry) is a [`Spanned`], so that the check can name the line of
//! each value it refuses. `yaml.rs` relies on this when it turns a parser's path into a spec
//! path: each step into a field or an entry is followed by the wrapper's own `value` step.

use serde::Deserialize;
use serde_saphyr::Spanned;

/// A text value and where it was written.
pub(crate) type Text = Option<Spanned<String>>;

/// A list of entries and where it was written.
pub(crate) type List<T> = Option<Spanned<Vec<Spanned<T>>>>;

/// A rig spec's top level.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRig {
    #[serde(default)]
    pub(crate) id: Text,
    #[serde(default)]
    pub(crate) members: List<RawMember>,
}

/// A `rig expand` payload: members only.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMembers {
    #[serde(default)]
    pub(crate) members: List<RawMember>,
}

/// One member as written.
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
