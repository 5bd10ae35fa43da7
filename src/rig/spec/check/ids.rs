//! Rig and member ids: their syntax, and member ids used twice.

use super::{Joining, Problems, member_id};
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
}

impl IdError {
    /// The problem code the error is reported with.
    pub(crate) fn code(self) -> RigProblemCode {
        match self {
            IdError::Empty => RigProblemCode::MissingField,
            IdError::TooLong | IdError::Syntax => RigProblemCode::InvalidId,
        }
    }

    /// The message for `text`, written as the id of a `noun`.
    pub(crate) fn message(self, text: &str, noun: &str) -> String {
        match self {
            IdError::Empty => format!("the {noun} id is empty; give the {noun} an id"),
            IdError::TooLong | IdError::Syntax => {
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

/// The id of every member: `Some` for a well-formed id used once (and not taken by the rig
/// the members join), `None` after reporting why not.
pub(super) fn member_ids(
    members: &[Spanned<RawMember>],
    joining: &Joining<'_>,
    problems: &mut Problems,
) -> Vec<Option<MemberId>> {
    let mut first_use: BTreeMap<&str, usize> = BTreeMap::new();
    let mut out = Vec::with_capacity(members.len());
    for (index, member) in members.iter().enumerate() {
        let path = format!("members[{index}].id");
        let Some(id) = &member.value.id else {
            problems.push(
                None,
                path,
                Some(&member.referenced),
                RigProblemCode::MissingField,
                "this member has no `id`; add one, since the rig names its seats by id",
            );
            out.push(None);
            continue;
        };
        let text = id.value.as_str();
        if let Err(e) = validate_id(text) {
            problems.push(None, path, Some(&id.referenced), e.code(), e.message(text, "member"));
            out.push(None);
            continue;
        }
        if joining.taken.contains(text) {
            let rig = joining.rig.map(|rig| format!(" `{rig}`")).unwrap_or_default();
            problems.push(
                Some(text),
                path,
                Some(&id.referenced),
                RigProblemCode::DuplicateId,
                format!(
                    "`{text}` is already a member of the rig{rig}; member ids are unique, so choose another"
                ),
            );
            out.push(None);
            continue;
        }
        match first_use.get(text) {
            Some(first) => {
                problems.push(
                    Some(text),
                    path,
                    Some(&id.referenced),
                    RigProblemCode::DuplicateId,
                    format!(
                        "`{text}` is already the id of members[{first}]; member ids are unique, so rename one"
                    ),
                );
                out.push(None);
            }
            None => {
                first_use.insert(text, index);
                out.push(Some(member_id(text)));
            }
        }
    }
    out
}
