//! A member's `agent_ref` and its prefix, and the terminal sentinel.
//!
//! `local:<path>` is relative to the spec's directory and `path:<path>` absolute; a bare path
//! (read as relative, or absolute if it is) is the flat shape's only, since an OpenRig spec
//! names every reference's kind. `builtin:terminal` is the one built-in: with `runtime:
//! terminal` and `profile: none` it is the terminal sentinel, a seat that runs no agent.

use super::Problems;
use super::Shape;
use super::member::{Entry, NO_PROFILE, path_text};
use crate::rig::SeatRuntime;
use crate::rig::spec::raw::Text;
use crate::rig::spec::report::RigProblemCode;
use crate::rig::spec::text::excerpt;
use serde_saphyr::Location;
use std::path::Path;

/// The sentinel's `agent_ref`.
const BUILTIN_TERMINAL: &str = "builtin:terminal";

/// An `agent_ref` as checked.
pub(super) enum AgentRef<'a> {
    /// Left out.
    Absent,
    /// Written, and refused (the problem is reported).
    Refused,
    /// `builtin:terminal`, written here.
    Terminal(&'a Location),
    /// A configuration's path with its prefix removed: relative to the spec's directory, or
    /// absolute; written here.
    Path {
        /// The path.
        path: String,
        /// Where the `agent_ref` is written.
        at: &'a Location,
    },
}

/// Checks an `agent_ref`: a path within its limits, with a prefix that fits it.
pub(super) fn check_agent_ref<'a>(
    entry: &Entry<'_>,
    value: &'a Text,
    shape: Shape,
    problems: &mut Problems,
) -> AgentRef<'a> {
    let Some(written) = value else { return AgentRef::Absent };
    let Some(text) = path_text(entry, "agent_ref", value, problems) else { return AgentRef::Refused };
    let at = &written.referenced;
    let mut refuse = |message: String| {
        entry.problem(problems, "agent_ref", Some(at), RigProblemCode::InvalidAgentRef, message);
        AgentRef::Refused
    };
    if let Some(rest) = text.strip_prefix("builtin:") {
        return if text == BUILTIN_TERMINAL {
            AgentRef::Terminal(at)
        } else {
            refuse(format!(
                "`builtin:{}` is not a built-in; the one built-in is `{BUILTIN_TERMINAL}`, for a terminal seat \
                 (with `runtime: terminal` and `profile: none`)",
                excerpt(rest)
            ))
        };
    }
    if let Some(rest) = text.strip_prefix("local:") {
        return if rest.is_empty() {
            refuse("`local:` names no path; write `local:<path relative to the spec's directory>`".to_owned())
        } else if Path::new(rest).is_absolute() {
            refuse(format!(
                "`local:` takes a path relative to the spec's directory, and `{0}` is absolute; write \
                 `path:{0}` for an absolute path",
                excerpt(rest)
            ))
        } else {
            AgentRef::Path { path: rest.to_owned(), at }
        };
    }
    if let Some(rest) = text.strip_prefix("path:") {
        return if rest.is_empty() {
            refuse("`path:` names no path; write `path:<absolute path>`".to_owned())
        } else if !Path::new(rest).is_absolute() {
            refuse(format!(
                "`path:` takes an absolute path, and `{0}` is relative; write `local:{0}` for a path relative \
                 to the spec's directory",
                excerpt(rest)
            ))
        } else {
            AgentRef::Path { path: rest.to_owned(), at }
        };
    }
    match shape {
        Shape::Flat => AgentRef::Path { path: text, at },
        Shape::OpenRig => {
            let (prefix, example) = if Path::new(&text).is_absolute() {
                ("path", "an absolute path")
            } else {
                ("local", "a path relative to the spec's directory")
            };
            refuse(format!(
                "an OpenRig member's `agent_ref` names its kind with a prefix (a bare path is the flat \
                 shape's): write `{prefix}:{}` for {example}, or `{BUILTIN_TERMINAL}` for a terminal",
                excerpt(&text)
            ))
        }
    }
}

/// Checks the terminal sentinel: `runtime: terminal`, `agent_ref: builtin:terminal` and
/// `profile: none` go together. Returns whether the member is the whole sentinel.
///
/// Any part of it without the rest is refused, naming what is missing, except that a flat
/// spec's terminal member may leave out both `agent_ref` and `profile` (or name its own). An
/// OpenRig terminal member writes all three. A part already refused for itself (a runtime
/// missing or unknown, a profile written empty, a refused `agent_ref`) is not judged again.
pub(super) fn check_sentinel(
    entry: &Entry<'_>,
    runtime: Option<SeatRuntime>,
    agent_ref: &AgentRef<'_>,
    written_profile: &Text,
    profile: &Option<String>,
    shape: Shape,
    problems: &mut Problems,
) -> bool {
    let refused = runtime.is_none()
        || matches!(agent_ref, AgentRef::Refused)
        || (written_profile.is_some() && profile.is_none());
    if refused {
        return false;
    }
    let parts = [
        ("runtime", "`runtime: terminal`", runtime == Some(SeatRuntime::Terminal)),
        ("agent_ref", "`agent_ref: builtin:terminal`", matches!(agent_ref, AgentRef::Terminal(_))),
        ("profile", "`profile: none`", profile.as_deref() == Some(NO_PROFILE)),
    ];
    if parts.iter().all(|(_, _, written)| *written) {
        return true;
    }
    let [(_, _, terminal), (_, _, builtin), (_, _, none)] = parts;
    if !(builtin || none || (terminal && shape == Shape::OpenRig)) {
        return false;
    }
    let missing: Vec<&str> =
        parts.iter().filter(|(_, _, written)| !written).map(|(_, text, _)| *text).collect();
    let field = parts.iter().find(|(_, _, written)| !written).map_or("runtime", |(field, _, _)| field);
    let at = match agent_ref {
        AgentRef::Terminal(at) => Some(*at),
        _ => written_profile.as_ref().filter(|_| none).map(|profile| &profile.referenced),
    };
    let openrig = if shape == Shape::OpenRig { " (an OpenRig terminal member writes all three)" } else { "" };
    entry.problem(
        problems,
        field,
        at,
        RigProblemCode::IncompleteTerminalSentinel,
        format!(
            "the terminal sentinel is `runtime: terminal`, `agent_ref: {BUILTIN_TERMINAL}` and `profile: \
             {NO_PROFILE}` together{openrig}; this member lacks {}: write all three for a terminal seat, or \
             none of them for a seat on another runtime",
            missing.join(" and ")
        ),
    );
    false
}
