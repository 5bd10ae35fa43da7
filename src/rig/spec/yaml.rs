//! Reading a spec's YAML into the raw types, and turning the parser's refusal into the one
//! problem it reports.
//!
//! YAML is read as YAML 1.2 (`yes`/`no` are strings), duplicate keys are refused, and aliases
//! are expanded within serde-saphyr's default budget, as for agent configurations.

use super::report::{RigProblem, RigProblemCode};
use super::text::{clean, location};
use crate::rig::limits::RIG_SPEC_BYTES_MAX;
use serde::Deserialize;
use serde_path_to_error::{Path, Segment, Track};

/// Deserializes `text` into `T`, or the one problem that stops the parser.
pub(crate) fn read<T: for<'de> Deserialize<'de>>(text: &str) -> Result<T, RigProblem> {
    if text.len() > RIG_SPEC_BYTES_MAX {
        return Err(RigProblem {
            member: None,
            path: String::new(),
            line: None,
            column: None,
            code: RigProblemCode::LimitExceeded,
            message: format!(
                "the spec is {} bytes, over the limit of {RIG_SPEC_BYTES_MAX}; a rig spec is a page of YAML, \
                 so check the path",
                text.len()
            ),
        });
    }
    let options = serde_saphyr::options! { strict_booleans: true };
    let mut track = Track::new();
    let result = serde_saphyr::with_deserializer_from_str_with_options(text, options, |de| {
        T::deserialize(serde_path_to_error::Deserializer::new(de, &mut track))
    });
    result.map_err(|e| refusal(&e, &track.path()))
}

fn refusal(error: &serde_saphyr::Error, path: &Path) -> RigProblem {
    let error = error.without_snippet();
    let code = match error {
        serde_saphyr::Error::SerdeUnknownField { .. } => RigProblemCode::UnknownField,
        serde_saphyr::Error::DuplicateMappingKey { .. } => RigProblemCode::DuplicateKey,
        _ => RigProblemCode::InvalidYaml,
    };
    let said = serde_saphyr::MessageFormatter::format_message(&serde_saphyr::UserMessageFormatter, error);
    let what_to_do = match code {
        RigProblemCode::UnknownField => "; remove it or fix its spelling (docs/rigs.md lists every field)",
        RigProblemCode::DuplicateKey => "; keep one of them",
        _ => "",
    };
    let (line, column) = location(error.location().as_ref());
    RigProblem {
        member: None,
        path: spec_path(path),
        line,
        column,
        code,
        message: format!("{}{what_to_do}", clean(&crate::agent::config::plain_words(&said))),
    }
}

/// The parser's path in the spec's notation: `members[1].session_source.ref.kind`,
/// `pods[1].members[0].session_source.ref.kind`, `pods[0].edges[2].to`. Every raw field and
/// entry is a `Spanned`, whose own `value` step follows it and is dropped here, at any depth.
fn spec_path(path: &Path) -> String {
    let mut out = String::new();
    let mut segments = path.iter().peekable();
    while let Some(segment) = segments.next() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&clean(key));
            }
            Segment::Unknown => continue,
        }
        if matches!(segments.peek(), Some(Segment::Map { key }) if key == "value") {
            segments.next();
        }
    }
    out
}
