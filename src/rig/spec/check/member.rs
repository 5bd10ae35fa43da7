//! One member: its runtime, agent, profile, working directory, prompt, session source and
//! restore policy; with a [`ConfigBook`](super::ConfigBook), its profile against its agent
//! configuration.

use super::agent_ref::{AgentRef, check_agent_ref, check_sentinel};
use super::session_source::check_session_source;
use super::{Context, Problems};
use crate::agent::config::ProfileId;
use crate::rig::limits::{PATH_BYTES_MAX, PROMPT_BYTES_MAX};
use crate::rig::spec::raw::{RawMember, Text};
use crate::rig::spec::report::RigProblemCode;
use crate::rig::spec::text::excerpt;
use crate::rig::{Member, MemberId, RestorePolicy, SeatRuntime};
use serde_saphyr::{Location, Spanned};
use std::fmt;

/// The working directory of a member that names none: the rig spec's own directory.
const DEFAULT_CWD: &str = ".";

/// Where a member is, for the problems found in it.
pub(super) struct Entry<'a> {
    /// Its path: `members[1]`, or `pods[1].members[0]`.
    pub(super) path: String,
    /// Its id as written (qualified in a pod), when well formed (even if used twice): reports
    /// name the member by it.
    pub(super) label: Option<&'a str>,
    /// Where its entry starts.
    pub(super) at: &'a Location,
}

impl Entry<'_> {
    /// Records a problem in this member at `field` (a path below the member).
    pub(super) fn problem(
        &self,
        problems: &mut Problems,
        field: &str,
        at: Option<&Location>,
        code: RigProblemCode,
        message: impl Into<String>,
    ) {
        let path = format!("{}.{field}", self.path);
        problems.push(self.label, path, Some(at.unwrap_or(self.at)), code, message);
    }
}

/// A text field as written.
pub(super) enum Written<'a> {
    /// Left out (or written as null).
    Absent,
    /// Written empty or only whitespace, at this place.
    Blank(&'a Location),
    /// Written with a value.
    Value(&'a Spanned<String>),
}

/// The word of a closed list (`all`, as each is written) that `text` is, or the sentence
/// refusing it: "`text` is not `a noun`; use one of …".
pub(super) fn word<T: Copy + fmt::Display>(all: &[T], text: &str, a_noun: &str) -> Result<T, String> {
    all.iter()
        .copied()
        .find(|word| word.to_string() == text)
        .ok_or_else(|| format!("`{}` is not {a_noun}; use one of {}", excerpt(text), words(all)))
}

/// The words of a closed list, quoted, for a message: "`a`, `b`, `c`".
pub(super) fn words<T: fmt::Display>(all: &[T]) -> String {
    all.iter().map(|word| format!("`{word}`")).collect::<Vec<_>>().join(", ")
}

pub(super) fn written(value: &Text) -> Written<'_> {
    match value {
        None => Written::Absent,
        Some(text) if text.value.trim().is_empty() => Written::Blank(&text.referenced),
        Some(text) => Written::Value(text),
    }
}

/// The profile of the terminal sentinel (`runtime: terminal`, `agent_ref: builtin:terminal`).
pub(super) const NO_PROFILE: &str = "none";

/// Checks one member; `id` is its id if well formed and unique.
pub(super) fn check_member(
    entry: &Entry<'_>,
    raw: &Spanned<RawMember>,
    id: Option<MemberId>,
    context: Context<'_>,
    problems: &mut Problems,
) -> Option<Member> {
    let before = problems.count();
    let member = &raw.value;
    let runtime = runtime(entry, &member.runtime, problems);
    let native = runtime == Some(SeatRuntime::Native);
    let why_native = "a `native` member runs an agentvisor agent";
    let agent_ref = check_agent_ref(entry, &member.agent_ref, context.shape, problems);
    if native && member.agent_ref.is_none() {
        entry.problem(
            problems,
            "agent_ref",
            None,
            RigProblemCode::MissingField,
            format!("{why_native}, so it needs `agent_ref`: the agent configuration it runs"),
        );
    }
    let profile = profile(entry, &member.profile, problems);
    if native && member.profile.is_none() {
        entry.problem(
            problems,
            "profile",
            None,
            RigProblemCode::MissingField,
            format!(
                "{why_native}, so it needs `profile`: the profile (or machine) of `agent_ref` it starts as"
            ),
        );
    }
    let sentinel =
        check_sentinel(entry, runtime, &agent_ref, &member.profile, &profile, context.shape, problems);
    if let (Some(book), Some(runtime), AgentRef::Path { path, at }) = (context.book, runtime, &agent_ref) {
        // `profile: none` is the sentinel's (and refused with it), not a profile to look up.
        let profile = profile.as_ref().filter(|id| id.as_str() != NO_PROFILE).zip(member.profile.as_ref());
        let profile = profile.map(|(id, text)| (id.as_str(), &text.referenced));
        book.check_member(entry, runtime, path, at, profile, problems);
    }
    let cwd = path_text(entry, "cwd", &member.cwd, problems);
    let prompt = prompt(entry, &member.prompt, problems);
    let session_source = match (&member.session_source, runtime) {
        (None, _) => None,
        (Some(source), Some(SeatRuntime::Terminal)) => {
            entry.problem(
                problems,
                "session_source",
                Some(&source.referenced),
                RigProblemCode::TerminalSessionSource,
                "a `terminal` member has no conversation to fork from, so it takes no `session_source`; \
                 remove it, or run the seat on `native`, `claude-code` or `codex`",
            );
            None
        }
        (Some(source), _) => check_session_source(entry, source, problems),
    };
    let restore_policy = restore_policy(entry, &member.restore_policy, problems);
    if problems.count() != before {
        return None;
    }
    Some(Member {
        id: id?,
        runtime: runtime?,
        agent_ref: match agent_ref {
            AgentRef::Path { path, .. } => Some(path),
            AgentRef::Absent | AgentRef::Refused | AgentRef::Terminal(_) => None,
        },
        profile: profile.filter(|_| !sentinel),
        cwd: cwd.unwrap_or_else(|| DEFAULT_CWD.to_owned()),
        prompt,
        session_source,
        restore_policy,
    })
}

fn restore_policy(entry: &Entry<'_>, value: &Text, problems: &mut Problems) -> Option<RestorePolicy> {
    let text = match written(value) {
        Written::Absent => return None,
        Written::Blank(at) => {
            entry.problem(
                problems,
                "restore_policy",
                Some(at),
                RigProblemCode::EmptyField,
                format!(
                    "`restore_policy` is written empty; write one of {} or remove it",
                    words(RestorePolicy::ALL)
                ),
            );
            return None;
        }
        Written::Value(text) => text,
    };
    word(RestorePolicy::ALL, &text.value, "a restore policy")
        .map_err(|message| {
            let code = RigProblemCode::UnknownRestorePolicy;
            entry.problem(problems, "restore_policy", Some(&text.referenced), code, message)
        })
        .ok()
}

fn runtime(entry: &Entry<'_>, value: &Text, problems: &mut Problems) -> Option<SeatRuntime> {
    const KNOWN: &str = "`native`, `claude-code`, `codex` or `terminal`";
    let text = match written(value) {
        Written::Value(text) => text,
        Written::Absent | Written::Blank(_) => {
            let at = value.as_ref().map(|v| &v.referenced);
            entry.problem(
                problems,
                "runtime",
                at,
                RigProblemCode::MissingField,
                format!("this member has no `runtime`; say which it runs on: {KNOWN}"),
            );
            return None;
        }
    };
    let runtime = SeatRuntime::parse(&text.value);
    if runtime.is_none() {
        entry.problem(
            problems,
            "runtime",
            Some(&text.referenced),
            RigProblemCode::UnknownRuntime,
            format!("`{}` is not a runtime; use {KNOWN}", excerpt(&text.value)),
        );
    }
    runtime
}

/// An optional path (`agent_ref`, `cwd`): `None` when left out or refused.
pub(super) fn path_text(
    entry: &Entry<'_>,
    field: &str,
    value: &Text,
    problems: &mut Problems,
) -> Option<String> {
    let text = match written(value) {
        Written::Absent => return None,
        Written::Blank(at) => {
            entry.problem(
                problems,
                field,
                Some(at),
                RigProblemCode::EmptyField,
                format!("`{field}` is written empty; give it a path or remove it"),
            );
            return None;
        }
        Written::Value(text) => text,
    };
    let len = text.value.len();
    if len > PATH_BYTES_MAX {
        entry.problem(
            problems,
            field,
            Some(&text.referenced),
            RigProblemCode::LimitExceeded,
            format!("this path is {len} bytes, over the limit of {PATH_BYTES_MAX}; shorten it"),
        );
        return None;
    }
    if text.value.chars().any(char::is_control) {
        entry.problem(
            problems,
            field,
            Some(&text.referenced),
            RigProblemCode::InvalidText,
            format!("`{}` holds a control character, which no path should; remove it", excerpt(&text.value)),
        );
        return None;
    }
    Some(text.value.clone())
}

fn profile(entry: &Entry<'_>, value: &Text, problems: &mut Problems) -> Option<String> {
    let text = match written(value) {
        Written::Absent => return None,
        Written::Blank(at) => {
            entry.problem(
                problems,
                "profile",
                Some(at),
                RigProblemCode::EmptyField,
                "`profile` is written empty; name a profile or remove it",
            );
            return None;
        }
        Written::Value(text) => text,
    };
    match ProfileId::parse(&text.value) {
        Ok(_) => Some(text.value.clone()),
        Err(e) => {
            entry.problem(
                problems,
                "profile",
                Some(&text.referenced),
                RigProblemCode::InvalidId,
                format!("`{}` is not a valid profile id: {e}", excerpt(&text.value)),
            );
            None
        }
    }
}

fn prompt(entry: &Entry<'_>, value: &Text, problems: &mut Problems) -> Option<String> {
    let text = match written(value) {
        Written::Absent => return None,
        Written::Blank(at) => {
            entry.problem(
                problems,
                "prompt",
                Some(at),
                RigProblemCode::EmptyField,
                "`prompt` is written empty; write the seat's opening message or remove it",
            );
            return None;
        }
        Written::Value(text) => text,
    };
    let len = text.value.len();
    if len > PROMPT_BYTES_MAX {
        entry.problem(
            problems,
            "prompt",
            Some(&text.referenced),
            RigProblemCode::LimitExceeded,
            format!("this prompt is {len} bytes, over the limit of {PROMPT_BYTES_MAX}; shorten it"),
        );
        return None;
    }
    Some(text.value.clone())
}
