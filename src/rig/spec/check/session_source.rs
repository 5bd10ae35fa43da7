//! A member's `session_source`, by the v1 rules: `mode: fork` from `ref.kind: native_id` with a
//! `value`. Every other mode and kind is refused here, before launch, with its own code and
//! the reason it is not accepted, so that no runtime adapter ever sees one.

use super::Problems;
use super::member::{Entry, Written, written};
use crate::rig::limits::NATIVE_ID_BYTES_MAX;
use crate::rig::spec::raw::{RawRef, RawSessionSource};
use crate::rig::spec::report::RigProblemCode;
use crate::rig::spec::text::excerpt;
use crate::rig::{NativeId, SessionSource};
use serde_saphyr::Spanned;

/// The one mode v1 accepts.
const FORK: &str = "fork";

/// The one reference kind v1 accepts.
const NATIVE_ID: &str = "native_id";

/// Why a mode other than `fork` is refused: the surface it belongs to.
fn mode_refusal(mode: &str) -> String {
    let only = "v1 supports only `mode: fork`";
    match mode {
        "rebuild" => format!(
            "`rebuild` is artifact-backed mental-model rebuild, a separate surface (seat continuity and \
             handover), not a session source; {only}, which starts a new seat from a prior native conversation"
        ),
        "resume" | "restore" => format!(
            "`{mode}` continues an existing managed seat (restore), but a rig member is a new seat; {only}, \
             which starts a new seat from a prior conversation without claiming the original continued"
        ),
        "fresh" => format!("a fresh seat needs no session source, so remove `session_source`; {only}"),
        other => format!("`{}` is not a session source mode; {only}", excerpt(other)),
    }
}

/// Why a reference kind other than `native_id` is refused, and the code it is refused with.
fn kind_refusal(kind: &str) -> (RigProblemCode, String) {
    let only = "not accepted in v1; native_id only: name the source conversation by its native id (a \
                Claude Code session id, a Codex thread id, or an agentvisor session id)";
    match kind {
        "artifact_path" => (RigProblemCode::DeferredRefKind, format!("`artifact_path` is deferred: {only}")),
        "name" => (
            RigProblemCode::WeakerRefKind,
            format!(
                "`name` is a weaker reference than a native id: a name can be ambiguous and can move to \
                 another conversation; {only}"
            ),
        ),
        "last" => (
            RigProblemCode::WeakerRefKind,
            format!(
                "`last` is a weaker reference than a native id: \"the last session\" moves as soon as another \
                 one starts; {only}"
            ),
        ),
        "artifact_set" => (
            RigProblemCode::WrongModeRefKind,
            "`artifact_set` describes an artifact-backed rebuild (the seat continuity and handover surface), \
             not a native fork; fork takes `kind: native_id` only"
                .to_owned(),
        ),
        other => (
            RigProblemCode::UnknownRefKind,
            format!("`{}` is not a reference kind; fork takes `kind: native_id` only", excerpt(other)),
        ),
    }
}

/// Checks a session source; `Some` only for a fork from a well-formed native id.
pub(super) fn check_session_source(
    entry: &Entry<'_>,
    source: &Spanned<RawSessionSource>,
    problems: &mut Problems,
) -> Option<SessionSource> {
    let fork = match written(&source.value.mode) {
        Written::Value(mode) if mode.value == FORK => true,
        Written::Value(mode) => {
            entry.problem(
                problems,
                "session_source.mode",
                Some(&mode.referenced),
                RigProblemCode::UnsupportedMode,
                mode_refusal(&mode.value),
            );
            false
        }
        Written::Absent | Written::Blank(_) => {
            let at = source.value.mode.as_ref().map(|m| &m.referenced).unwrap_or(&source.referenced);
            entry.problem(
                problems,
                "session_source.mode",
                Some(at),
                RigProblemCode::MissingField,
                "this session source has no `mode`; add `mode: fork`, the one mode v1 supports",
            );
            false
        }
    };
    let Some(reference) = &source.value.reference else {
        entry.problem(
            problems,
            "session_source.ref",
            Some(&source.referenced),
            RigProblemCode::MissingField,
            "this session source has no `ref`; add `ref: {kind: native_id, value: <the source conversation's id>}`",
        );
        return None;
    };
    let native_id = reference_id(entry, reference, problems)?;
    fork.then_some(SessionSource::Fork { native_id })
}

fn reference_id(entry: &Entry<'_>, reference: &Spanned<RawRef>, problems: &mut Problems) -> Option<NativeId> {
    match written(&reference.value.kind) {
        Written::Value(kind) if kind.value == NATIVE_ID => {}
        Written::Value(kind) => {
            let (code, message) = kind_refusal(&kind.value);
            entry.problem(problems, "session_source.ref.kind", Some(&kind.referenced), code, message);
            return None;
        }
        Written::Absent | Written::Blank(_) => {
            let at = reference.value.kind.as_ref().map(|k| &k.referenced).unwrap_or(&reference.referenced);
            entry.problem(
                problems,
                "session_source.ref.kind",
                Some(at),
                RigProblemCode::MissingField,
                "this reference has no `kind`; add `kind: native_id`, the one kind v1 supports",
            );
            return None;
        }
    }
    let value = match written(&reference.value.value) {
        Written::Value(value) => value,
        Written::Absent | Written::Blank(_) => {
            let at = reference.value.value.as_ref().map(|v| &v.referenced).unwrap_or(&reference.referenced);
            entry.problem(
                problems,
                "session_source.ref.value",
                Some(at),
                RigProblemCode::MissingRefValue,
                "`kind: native_id` needs a `value`: the source conversation's native id (a Claude Code session \
                 id, a Codex thread id, or an agentvisor session id)",
            );
            return None;
        }
    };
    let text = value.value.as_str();
    if text.len() > NATIVE_ID_BYTES_MAX {
        entry.problem(
            problems,
            "session_source.ref.value",
            Some(&value.referenced),
            RigProblemCode::LimitExceeded,
            format!(
                "this native id is {} bytes, over the limit of {NATIVE_ID_BYTES_MAX}; copy the id the runtime \
                 reported",
                text.len()
            ),
        );
        return None;
    }
    if text.starts_with('-') || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        entry.problem(
            problems,
            "session_source.ref.value",
            Some(&value.referenced),
            RigProblemCode::InvalidRefValue,
            format!(
                "`{}` is not a native id: one holds no whitespace or control character and does not start with \
                 `-` (it is passed to the runtime's fork command as an argument); copy the id the runtime reported",
                excerpt(text)
            ),
        );
        return None;
    }
    NativeId::from_token(text)
}
