//! Rig, pod and member ids: their syntax, and member ids used twice.

use super::{Joining, Problems, Scope, member_id};
use crate::rig::MemberId;
use crate::rig::limits::RIG_ID_BYTES_MAX;
use crate::rig::spec::raw::RawMember;
use crate::rig::spec::report::RigProblemCode;
use crate::rig::spec::text::excerpt;
use serde_saphyr::Spanned;
use std::collections::BTreeMap;

/// Why a text is not a rig or member id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum IdError {
    /// The text is empty.
    #[error("an id cannot be empty")]
    Empty,
    /// The text is longer than [`RIG_ID_BYTES_MAX`].
    #[error("an id is at most {RIG_ID_BYTES_MAX} bytes")]
    TooLong,
    /// The text has a character outside `A-Z a-z 0-9 . _ -`.
    #[error("an id is ASCII letters, digits, `.`, `_` and `-`")]
    Syntax,
    /// A pod's id, or a pod member's own id, holds a dot.
    #[error("ids in pods are qualified as `pod.member`, so a pod's id and its members' own ids hold no dot")]
    Dotted,
}

impl IdError {
    /// The problem code the error is reported with.
    pub(crate) fn code(self) -> RigProblemCode {
        match self {
            IdError::Empty => RigProblemCode::MissingField,
            IdError::TooLong | IdError::Syntax | IdError::Dotted => RigProblemCode::InvalidId,
        }
    }

    /// The message for `text`, written as the id of a `noun`.
    pub(crate) fn message(self, text: &str, noun: &str) -> String {
        match self {
            IdError::Empty => format!("the {noun} id is empty; give the {noun} an id"),
            IdError::TooLong | IdError::Syntax | IdError::Dotted => {
                format!("`{}` is not a valid {noun} id: {self}", excerpt(text))
            }
        }
    }
}

/// Checks the id syntax: 1 to [`RIG_ID_BYTES_MAX`] bytes of ASCII letters, digits, `.`, `_`
/// and `-`. Such ids are safe in paths, terminal titles and command lines.
pub(crate) fn validate_id(text: &str) -> Result<(), IdError> {
    if text.is_empty() {
        return Err(IdError::Empty);
    }
    if text.len() > RIG_ID_BYTES_MAX {
        return Err(IdError::TooLong);
    }
    if !text.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) {
        return Err(IdError::Syntax);
    }
    Ok(())
}

/// Checks a pod's id, or a pod member's own id: the id syntax without dots, since a member of
/// a pod is named `<pod>.<member>`.
pub(crate) fn validate_pod_word(text: &str) -> Result<(), IdError> {
    validate_id(text)?;
    if text.contains('.') {
        return Err(IdError::Dotted);
    }
    Ok(())
}

/// For every member: its id (qualified in a pod) when well formed, even if used twice, which
/// names it in reports; and `Some` checked id for a well-formed id used once (and not taken by
/// the rig the members join), `None` after reporting why not.
pub(super) fn member_ids(
    members: &[Spanned<RawMember>],
    scope: &Scope<'_>,
    joining: &Joining<'_>,
    problems: &mut Problems,
) -> Vec<(Option<String>, Option<MemberId>)> {
    let mut first_use: BTreeMap<&str, usize> = BTreeMap::new();
    let mut out = Vec::with_capacity(members.len());
    for (index, member) in members.iter().enumerate() {
        let path = format!("{}[{index}].id", scope.path);
        let Some(id) = &member.value.id else {
            problems.push(
                None,
                path,
                Some(&member.referenced),
                RigProblemCode::MissingField,
                "this member has no `id`; add one, since the rig names its seats by id",
            );
            out.push((None, None));
            continue;
        };
        let text = id.value.as_str();
        let (valid, noun) = if scope.in_pod() {
            (validate_pod_word(text), "pod member")
        } else {
            (validate_id(text), "member")
        };
        if let Err(e) = valid {
            problems.push(None, path, Some(&id.referenced), e.code(), e.message(text, noun));
            out.push((None, None));
            continue;
        }
        let qualified = match scope.pod {
            Some(pod) => format!("{pod}.{text}"),
            None if scope.in_pod() => {
                // The pod's id was refused (and reported): its members have no id to check yet.
                out.push((None, None));
                continue;
            }
            None => text.to_owned(),
        };
        if qualified.len() > RIG_ID_BYTES_MAX {
            problems.push(
                None,
                path,
                Some(&id.referenced),
                RigProblemCode::InvalidId,
                format!(
                    "the qualified id `{}` is {} bytes, over the limit of {RIG_ID_BYTES_MAX}; shorten the pod's \
                     id or the member's",
                    excerpt(&qualified),
                    qualified.len()
                ),
            );
            out.push((None, None));
            continue;
        }
        if joining.taken.contains(qualified.as_str()) {
            let rig = joining.rig.map(|rig| format!(" `{rig}`")).unwrap_or_default();
            problems.push(
                Some(&qualified),
                path,
                Some(&id.referenced),
                RigProblemCode::DuplicateId,
                format!(
                    "`{qualified}` is already a member of the rig{rig}; member ids are unique, so choose another"
                ),
            );
            out.push((Some(qualified), None));
            continue;
        }
        match first_use.get(text) {
            Some(first) => {
                problems.push(
                    Some(&qualified),
                    path,
                    Some(&id.referenced),
                    RigProblemCode::DuplicateId,
                    format!(
                        "`{text}` is already the id of {}[{first}]; member ids are unique, so rename one",
                        scope.path
                    ),
                );
                out.push((Some(qualified), None));
            }
            None => {
                first_use.insert(text, index);
                let id = member_id(&qualified);
                out.push((Some(qualified), Some(id)));
            }
        }
    }
    out
}
